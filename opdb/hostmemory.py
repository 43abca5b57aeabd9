"""ATen composites that read host memory (``opdb/data/host_composites.yaml``).

Some CompositeImplicit/Explicit kernels read their tensors through host pointers (``data_ptr``,
``accessor``) without checking the device: every backend inherits them, and on one whose memory
is not host memory (``conformance.core.backends.Backend.host_memory`` false) they dereference
device addresses and kill the process. A crash of such an op there is a kernel the backend
needs (``unsupported``/``host_composite``), which this data lets the harness say. Entries are
read key by key like the other per-op data (:mod:`opdb.opdata`): ``names`` (globs allowed,
checked against the op database) and a ``reason``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from opdb.errors import InputError
from opdb.opdata import LINE, database, entry_list, expand_names, take

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    from opdb.db import OpDB
    from opdb.opdata import DataPath

#: The packaged data file.
HOST_COMPOSITES_FILE: Traversable = resources.files("opdb") / "data" / "host_composites.yaml"

_KEYS = {"names", "reason"}


@dataclass(frozen=True)
class HostComposite:
    """One overload whose ATen composite reads host memory, why (``reason``) and where it is
    said (``file``, ``line``)."""

    name: str
    reason: str
    file: str
    line: int | None


@dataclass(frozen=True)
class HostComposites:
    """Every listed overload, by name."""

    entries: Mapping[str, HostComposite]

    def get(self, overload: str) -> HostComposite | None:
        return self.entries.get(overload)


def load_host_composites(path: DataPath | None = None, *, db: OpDB | None = None,
                         strict: bool | None = None) -> HostComposites:
    """The entries of ``path`` (default: the packaged file), names validated against ``db``
    (default: :func:`opdb.load`). ``strict`` (default: for a user's file): a name the database
    lacks is an :class:`InputError` naming file and line; the packaged file, written for the
    newest torch, skips such names under an older one."""
    strict = strict if strict is not None else path is not None
    file, data = entry_list(path, HOST_COMPOSITES_FILE)
    known = [o.name for o in database(db).overloads] if data else []
    entries: dict[str, HostComposite] = {}
    for entry in data:
        if not isinstance(entry, Mapping):
            raise InputError("each entry must be a mapping", file=file)
        take(entry, _KEYS, file, "host-composite entry")
        line = entry.get(LINE)
        names = entry.get("names")
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not names or not all(isinstance(n, str)
                                                               for n in names):
            raise InputError("'names' must be a non-empty list of overload names", file=file,
                             line=line)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError("an entry needs a 'reason' (where ATen reads host memory)",
                             file=file, line=line)
        for name in expand_names(names, known, file=file, line=line, strict=strict):
            entries[name] = HostComposite(name, " ".join(reason.split()), file, line)
    return HostComposites(entries)


__all__ = ["HOST_COMPOSITES_FILE", "HostComposite", "HostComposites", "load_host_composites"]
