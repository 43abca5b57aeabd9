"""The op database cached on disk, between runs of one torch build.

Parsing ``native_functions.yaml`` and ``derivatives.yaml`` (YAML, ~3,300 schemas through
torch's parser, the formulas' calls) takes 0.4 s on every command that loads the database; the
result changes only when its inputs do. So the built :class:`~opdb.db.OpDB` is pickled, under
a key made of everything it is made from:

- the content (SHA-256) of ``native_functions.yaml``, the ``tags.yaml`` beside it and the
  ``derivatives.yaml`` in use, and their paths as given and resolved (the records keep the
  path in their source locations);
- torch's version and commit, and the ``aten`` operators the live dispatcher knows (autogen'd
  schemas and the dispatcher's extra ops come from it: a plugin that adds an aten op gets its
  own entry);
- the source of the modules that build the database (a changed parser is a new key, with no
  version number to forget to bump), and :data:`FORMAT`.

Hashing the files costs ~2 ms; a hit unpickles in ~20 ms. Torch's parsed schemas are not
pickled (they do not pickle); :attr:`opdb.model.Overload.schema` parses one again on first use.

Where: ``$OPCONFORM_CACHE_DIR`` (``off`` disables the cache), else
``$XDG_CACHE_HOME/opconform``, else ``~/.cache/opconform``. The cache never fails a command: a
directory that cannot be made or written is skipped, a file that does not unpickle to a
database of the same key is ignored and written anew.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: Environment variable: the cache directory, or ``off`` to disable the cache.
CACHE_ENV = "OPCONFORM_CACHE_DIR"
#: Bumped when what is pickled changes in a way the modules' source does not show.
FORMAT = 1
#: Cache files kept per directory (the newest): one per torch build, YAML and dispatcher.
KEEP = 8
#: The modules whose source the key holds: whatever builds the database.
_BUILDERS = ("_yaml.py", "cache.py", "db.py", "derivatives.py", "model.py", "native.py")
_MAGIC = "opconform-opdb"
_PREFIX = "opdb-"
_SUFFIX = ".pickle"


def directory() -> Path | None:
    """The cache directory (not necessarily existing), or None when the cache is off."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is invalid, ignored
        return Path(xdg) / "opconform"
    try:
        return Path.home() / ".cache" / "opconform"
    except RuntimeError:  # no home directory
        return None


def _file_part(path: Path | None) -> bytes:
    if path is None:
        return b"-"
    try:
        content = path.read_bytes()
    except OSError:
        return b"?" + os.fsencode(str(path))
    digest = hashlib.sha256(content).hexdigest()
    return os.fsencode(f"{path}\0{os.path.realpath(path)}\0{digest}")


def _builders_part() -> bytes:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _BUILDERS:
        try:
            h.update((here / name).read_bytes())
        except OSError:  # installed without sources: the package version must do
            from importlib.metadata import PackageNotFoundError, version

            try:
                return f"opconform {version('opconform')}".encode()
            except PackageNotFoundError:
                return b"opconform ?"
    return h.hexdigest().encode()


def key(native_functions: Path, derivatives: Path | None, aten_ops: Iterable[str]) -> str:
    """The cache key of the database built from these files with this torch and dispatcher."""
    import torch

    h = hashlib.sha256()
    for part in (
        f"{_MAGIC} {FORMAT} python {sys.version_info[:2]}".encode(),
        f"torch {torch.__version__} {getattr(torch.version, 'git_version', '')}".encode(),
        _builders_part(),
        _file_part(native_functions),
        _file_part(native_functions.parent / "tags.yaml"),
        _file_part(derivatives),
        "\n".join(sorted(aten_ops)).encode(),
    ):
        h.update(part)
        h.update(b"\0\1")
    return h.hexdigest()


def _path(folder: Path, key: str) -> Path:
    return folder / f"{_PREFIX}{key[:32]}{_SUFFIX}"


def read(key: str) -> object | None:
    """What :func:`write` stored under ``key``, or None (cache off, no entry, or an unreadable
    one). The caller checks the type of what it gets."""
    folder = directory()
    if folder is None:
        return None
    try:
        with open(_path(folder, key), "rb") as fh:
            record = pickle.load(fh)  # noqa: S301 - our own file, in the user's own directory
    except Exception:  # noqa: BLE001 - missing, truncated, corrupt or stale: parse instead
        return None
    if (
        isinstance(record, tuple) and len(record) == 3 and record[0] == _MAGIC
        and record[1] == key
    ):
        return record[2]
    return None


def write(key: str, db: object) -> None:
    """Store ``db`` under ``key``; silently nothing where the directory cannot be written."""
    folder = directory()
    if folder is None:
        return
    try:
        data = pickle.dumps((_MAGIC, key, db), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a record that does not pickle: no cache, not a failure
        return
    tmp = None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # written aside and renamed: a reader (another xdist worker) never sees half a file
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".opdb-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, _path(folder, key))
        tmp = None
        _prune(folder)
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP` newest cache files (torch upgrades leave old ones behind)."""
    entries = []
    for path in folder.glob(f"{_PREFIX}*{_SUFFIX}"):
        try:
            entries.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    entries.sort(reverse=True)
    for _, path in entries[KEEP:]:
        try:
            path.unlink()
        except OSError:
            pass


__all__ = ["CACHE_ENV", "FORMAT", "KEEP", "directory", "key", "read", "write"]
