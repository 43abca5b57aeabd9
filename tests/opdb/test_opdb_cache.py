"""The op database cached on disk (opdb.cache): a hit is the database a parse gives, any change of
what it is made from is a miss, and a cache that cannot be read or written is only slower."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import opdb
import opdb.db
from opdb import cache

MINI = Path(__file__).parent.parent / "data" / "opdb" / "mini"


@pytest.fixture
def parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A fresh cache directory, no in-process memo, and the list of files actually parsed."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(opdb.db, "_MEMO", {})
    calls: list[Path] = []
    real = opdb.db._load

    def counting(nf: Path, *rest: object) -> opdb.OpDB:
        calls.append(nf)
        return real(nf, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(opdb.db, "_load", counting)
    return calls


def _fresh(path: object = None) -> opdb.OpDB:
    opdb.db._MEMO.clear()  # as a new process would
    return opdb.load(path)  # type: ignore[arg-type]


def _files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("opdb-*.pickle"))


def _mini(tmp_path: Path) -> Path:
    folder = tmp_path / "mini"
    shutil.copytree(MINI, folder)
    return folder / "native_functions.yaml"


def test_a_hit_is_the_database_a_parse_gives(parses: list[Path], tmp_path: Path) -> None:
    parsed = _fresh()
    assert len(parses) == 1 and len(_files(tmp_path)) == 1
    cached = _fresh()
    assert len(parses) == 1 and cached is not parsed  # unpickled, not parsed
    assert cached.overloads == parsed.overloads  # every field: dispatch, tags, kind, loc...
    assert dict(cached.derivatives) == dict(parsed.derivatives)
    assert (cached.native_functions_path, cached.derivatives_path) == (
        parsed.native_functions_path, parsed.derivatives_path)
    assert cached.extra_dispatcher_ops == parsed.extra_dispatcher_ops
    assert cached.unresolved_autogen == parsed.unresolved_autogen
    assert list(cached.families) == list(parsed.families)
    assert cached["add_.Tensor"].family == "add" and cached.autograd("mul.Tensor") == "formula"
    assert isinstance(cached["add.Tensor"].dispatch, type(parsed["add.Tensor"].dispatch))
    sample = ["add.Tensor", "add.out", "add.Scalar_out", "sum.dim_IntList", "conv2d",
              "index.Tensor", "_adaptive_avg_pool2d.out", "_foreach_add.List_out"]
    autogen = [n for n in sample if parsed[n].autogen]
    assert autogen  # the sample holds overloads whose schema comes from the dispatcher
    for name in sample:
        # torch's schema is not pickled: parsed again (autogen'd: the dispatcher's) on first use
        assert "schema" not in cached[name].__dict__
        assert str(cached[name].schema) == str(parsed[name].schema)
        assert cached[name].arguments == parsed[name].arguments
        assert cached[name].returns == parsed[name].returns
        assert cached[name].tags == parsed[name].tags
        assert dict(cached[name].dispatch) == dict(parsed[name].dispatch)
    assert cached.derivatives["mul.Tensor"] == parsed.derivatives["mul.Tensor"]


def test_a_changed_yaml_is_parsed_again(parses: list[Path], tmp_path: Path) -> None:
    nf = _mini(tmp_path)
    first = _fresh(nf)
    assert "cache_probe" not in first
    st = nf.stat()
    text = nf.read_text(encoding="utf-8")
    # same size, same mtime, other content: the key holds the content, not (size, mtime)
    changed = text.replace("tags: [core, pointwise]", "tags: [core, pointwiss]", 1)
    assert changed != text and len(changed) == len(text)
    nf.write_text(changed, encoding="utf-8")
    os.utime(nf, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = _fresh(nf)
    assert len(parses) == 2 and "pointwiss" in second["add.Tensor"].tags
    nf.write_text(changed + "\n- func: cache_probe(Tensor self) -> Tensor\n", encoding="utf-8")
    third = _fresh(nf)
    assert len(parses) == 3 and "cache_probe" in third
    nf.write_text(text, encoding="utf-8")  # back to the first: its entry is still there
    assert _fresh(nf).overloads == first.overloads and len(parses) == 3
    (nf.parent / "derivatives.yaml").write_text("[]\n", encoding="utf-8")
    assert not _fresh(nf).derivatives and len(parses) == 4  # derivatives.yaml is in the key too


def test_another_torch_build_is_another_entry(parses: list[Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    nf = _mini(tmp_path)
    _fresh(nf)
    _fresh(nf)
    assert len(parses) == 1
    monkeypatch.setattr(torch, "__version__", "0.0.1+other")
    _fresh(nf)
    assert len(parses) == 2 and len(_files(tmp_path)) == 2


def test_a_user_given_file_is_keyed_by_its_own_content(tmp_path: Path) -> None:
    a, b = _mini(tmp_path / "a"), _mini(tmp_path / "b")
    ops = ["aten::add.Tensor"]
    # the same content at another path: another key (source locations name the path)
    assert cache.key(a, None, ops) != cache.key(b, None, ops)
    key = cache.key(a, None, ops)
    assert cache.key(a, None, ops) == key
    a.write_text(a.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert cache.key(a, None, ops) != key
    assert cache.key(a, None, ops + ["aten::extra"]) != cache.key(a, None, ops)


def test_the_cli_reads_a_changed_native_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli import main

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(opdb.db, "_MEMO", {})
    nf = _mini(tmp_path)
    assert main(["ops", "--native-functions", str(nf), "--format", "csv"]) == 0
    assert "cache_probe," not in capsys.readouterr().out
    nf.write_text(nf.read_text(encoding="utf-8") + "\n- func: cache_probe(Tensor self) -> Tensor\n",
                  encoding="utf-8")
    opdb.db._MEMO.clear()
    assert main(["ops", "--native-functions", str(nf), "--format", "csv"]) == 0
    assert "cache_probe," in capsys.readouterr().out


GARBAGE = {
    "empty": lambda key: b"",
    "not a pickle": lambda key: b"not a pickle",
    "truncated": lambda key: pickle.dumps(("opconform-opdb", key, list(range(99))))[:-9],
    "short record": lambda key: pickle.dumps(("opconform-opdb",)),
    "other key": lambda key: pickle.dumps(("opconform-opdb", "0" * 64, 3)),
    "not a database": lambda key: pickle.dumps(("opconform-opdb", key, "not a db")),
    "missing class": lambda key: pickle.dumps(("opconform-opdb", key, pickle.PickleError())
                                              ).replace(b"PickleError", b"NoSuchError"),
}


@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_a_corrupt_entry_is_ignored_and_written_anew(parses: list[Path], tmp_path: Path,
                                                     garbage: str) -> None:
    nf = _mini(tmp_path)
    first = _fresh(nf)
    (entry,) = _files(tmp_path)
    key = pickle.loads(entry.read_bytes())[1]
    entry.write_bytes(GARBAGE[garbage](key))
    again = _fresh(nf)
    assert again.overloads == first.overloads and len(parses) == 2
    assert _fresh(nf).overloads == first.overloads and len(parses) == 2  # rewritten: a hit


def test_an_unwritable_directory_is_skipped(parses: list[Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))  # cannot be made
    nf = _mini(tmp_path)
    first = _fresh(nf)
    assert _fresh(nf).overloads == first.overloads and len(parses) == 2


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anyway")
def test_a_read_only_directory_is_skipped(parses: list[Path], tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        nf = _mini(tmp_path)
        first = _fresh(nf)
        assert _fresh(nf).overloads == first.overloads and len(parses) == 2
    finally:
        folder.chmod(0o700)


def test_off_caches_nothing(parses: list[Path], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    nf = _mini(tmp_path)
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.directory() is None
    _fresh(nf)
    _fresh(nf)
    assert len(parses) == 2
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    opdb.db._MEMO.clear()
    opdb.load(nf, use_cache=False)
    assert len(parses) == 3 and not (tmp_path / "cache").exists()


def test_the_directory_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.directory() == tmp_path / "opconform"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # invalid per the spec: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.directory() == tmp_path / "home" / ".cache" / "opconform"
    monkeypatch.setenv(cache.CACHE_ENV, "~/elsewhere")
    assert cache.directory() == tmp_path / "home" / "elsewhere"


def test_old_entries_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    keys = [f"{i:02x}".ljust(64, "0") for i in range(cache.KEEP + 3)]
    for i, key in enumerate(keys):
        cache.write(key, i)
        os.utime(tmp_path / f"opdb-{key[:32]}.pickle", ns=(i * 10**9, i * 10**9))
    kept = sorted(p.name for p in tmp_path.glob("opdb-*.pickle"))
    assert kept == sorted(f"opdb-{key[:32]}.pickle" for key in keys[-cache.KEEP:])
    assert cache.read(keys[-1]) == len(keys) - 1 and cache.read(keys[0]) is None
    assert not list(tmp_path.glob(".opdb-*.tmp"))


def test_coverage_imports_neither_yaml_nor_ml_dtypes(tmp_path: Path) -> None:
    # what makes `conformance coverage` fast once the cache is warm: PyYAML (0.2 s) only to
    # parse, ml_dtypes (0.7-1 s) only when a bfloat16 is used, the call machinery not at all
    code = (
        "import sys, torch\n"
        "from conformance.cli import main\n"
        "for _ in range(2):\n"
        "    assert main(['coverage', '--backend', 'mlu', '--format', 'json', '-o', sys.argv[1]]) == 0\n"
        "    import opdb.db; opdb.db._MEMO.clear()\n"
        "    sys.modules.pop('yaml', None)  # the first, a miss, parsed\n"
        "assert 'yaml' not in sys.modules and 'ml_dtypes' not in sys.modules, sys.modules.keys()\n"
        "assert 'conformance.core.call' not in sys.modules\n"
    )
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cov.json")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
