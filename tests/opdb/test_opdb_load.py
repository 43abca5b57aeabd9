"""opdb overloads: every YAML entry and every autogen'd overload, with their fields."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import yaml

import opdb

MINI = Path(__file__).parent.parent / "data" / "opdb" / "mini" / "native_functions.yaml"


@pytest.fixture(scope="module")
def db() -> opdb.OpDB:
    return opdb.load()


@pytest.fixture(scope="module")
def raw_entries(db: opdb.OpDB) -> list[dict]:
    with open(db.native_functions_path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=yaml.CSafeLoader)


def test_family_add_has_all_six_variants(db: opdb.OpDB) -> None:
    names = [ov.name for ov in db.families["add"]]
    assert names == ["add.Tensor", "add.Scalar", "add.out", "add.Scalar_out", "add_.Tensor", "add_.Scalar"]
    kinds = [db[n].kind for n in names]
    assert kinds == ["functional", "functional", "out", "out", "inplace", "inplace"]


def test_overload_fields(db: opdb.OpDB) -> None:
    ov = db["add.Tensor"]
    assert (ov.base, ov.overload_name, ov.family, ov.kind) == ("add", "Tensor", "add", "functional")
    assert ov.schema_str == "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    assert isinstance(ov.schema, torch._C.FunctionSchema)
    assert ov.schema is ov.schema  # parsed once
    assert [a.name for a in ov.schema.arguments] == ["self", "other", "alpha"]
    assert ov.structured_delegate == "add.out" and not ov.structured
    assert ov.variants == {"function", "method"}
    assert {"core", "pointwise"} <= ov.tags
    assert ov.dispatch["SparseCPU"] == "add_sparse"  # "SparseCPU, SparseCUDA, ...: add_sparse" split
    assert not ov.autogen and ov.autogen_from is None
    lines = Path(ov.loc.file).read_text(encoding="utf-8").splitlines()
    assert lines[ov.loc.line - 1] == f"- func: {ov.schema_str}"
    out = db["add.out"]
    assert out.structured and out.kind == "out" and "out" in out.tags
    assert out.structured_inherits == "TensorIteratorBase" and not out.out_dtype_exact
    # a structured kernel of its own (no TensorIterator): CPU holds out= to the result dtype
    assert db["index_copy.out"].structured_inherits is None and db["index_copy.out"].out_dtype_exact
    assert not db["index_copy"].out_dtype_exact and not db["nansum.out"].out_dtype_exact
    assert db["add_.Tensor"].kind == "inplace" and "inplace" in db["add_.Tensor"].tags
    assert db["relu"].overload_name == "" and db["relu"].name == "relu"
    assert db["_adaptive_avg_pool2d_backward"].python_module == "nn"
    with pytest.raises(KeyError):
        db["add.NoSuchOverload"]


def test_records_are_frozen(db: opdb.OpDB) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        db["add.Tensor"].kind = "out"  # type: ignore[misc]


def test_implicit_composite_and_dunder_families(db: opdb.OpDB) -> None:
    # no dispatch table and no structured_delegate: torchgen's implicit CompositeImplicitAutograd
    assert set(db["matmul"].dispatch) >= {"CompositeImplicitAutograd"}
    assert db["prelu"].dispatch == {"CompositeImplicitAutograd": "prelu"}
    iand = db["__iand__.Tensor"]
    assert (iand.family, iand.kind) == ("__and__", "inplace")
    assert db["__and__.Tensor"] in db.families["__and__"]


def test_every_yaml_entry_is_an_overload(db: opdb.OpDB, raw_entries: list[dict]) -> None:
    from_yaml = [ov for ov in db.overloads if not ov.autogen]
    assert len(from_yaml) == len(raw_entries)
    for ov, entry in zip(from_yaml, raw_entries, strict=True):
        assert ov.schema_str == entry["func"]


def test_autogen_overloads_are_enumerated(db: opdb.OpDB, raw_entries: list[dict]) -> None:
    ov = db["add.Scalar_out"]
    assert ov.autogen and ov.autogen_from == "add_.Scalar" and ov.kind == "out"
    assert "generated" in ov.tags
    live = torch._C._dispatch_find_schema_or_throw("aten::add", "Scalar_out").schema()
    assert str(ov.schema) == str(live)
    wanted = {
        name.strip()
        for entry in raw_entries
        for name in entry.get("autogen", "").split(",")
        if name.strip()
    }
    unresolved = {name for name, _ in db.unresolved_autogen}
    got = {o.name for o in db.overloads if o.autogen}
    assert got | unresolved == wanted and not (got & unresolved)
    assert len(got) > 400
    live_names = set(torch._C._dispatch_get_all_op_names())
    assert all(f"aten::{n}" not in live_names for n in unresolved)


def test_extra_dispatcher_ops(db: opdb.OpDB) -> None:
    live = {n[len("aten::"):] for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    known = {ov.name for ov in db.overloads}
    assert set(db.extra_dispatcher_ops) == live - known
    assert live <= known | set(db.extra_dispatcher_ops)


def test_custom_path_without_tags_or_derivatives(tmp_path: Path) -> None:
    nf = tmp_path / "native_functions.yaml"
    nf.write_text(MINI.read_text(encoding="utf-8"), encoding="utf-8")
    db = opdb.load(nf)
    assert db.derivatives_path is None and not db.derivatives
    assert db.autograd("add.Tensor") == "unknown"
    assert db.autograd("matmul") == "decomposition"
    assert [ov.name for ov in db.families["add"]] == ["add.Tensor", "add.out", "add_.Tensor"]
    assert db["_adaptive_avg_pool2d.out"].autogen_from == "_adaptive_avg_pool2d"
    assert [(n, loc.line) for n, loc in db.unresolved_autogen] == [("not_in_torch.out", 22)]


def test_load_is_memoized_until_the_file_changes(tmp_path: Path) -> None:
    nf = tmp_path / "native_functions.yaml"
    nf.write_text(MINI.read_text(encoding="utf-8"), encoding="utf-8")
    first = opdb.load(nf)
    assert opdb.load(nf) is first
    nf.write_text(MINI.read_text(encoding="utf-8") + "\n- func: abs(Tensor self) -> Tensor\n",
                  encoding="utf-8")
    again = opdb.load(nf)
    assert again is not first and "abs" in again and "abs" not in first


def test_ops_of_other_namespaces_do_not_reparse(tmp_path: Path) -> None:
    # a run imports torch.distributed (c10d_functional ops) between two loads: still one parse
    nf = tmp_path / "native_functions.yaml"
    nf.write_text(MINI.read_text(encoding="utf-8"), encoding="utf-8")
    first = opdb.load(nf)
    lib = torch.library.Library("opconform_test_ns", "DEF")  # noqa: TOR901 - test-only namespace
    lib.define("extra_op(Tensor x) -> Tensor")
    try:
        assert opdb.load(nf) is first
    finally:
        lib._destroy()


def test_run_with_html_parses_the_yaml_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    import opdb.db
    from conformance.cli import main

    calls = []
    real = opdb.db._load
    monkeypatch.setattr(opdb.db, "_MEMO", {})
    monkeypatch.setenv("OPCONFORM_CACHE_DIR", str(tmp_path / "cache"))  # a miss: one parse
    monkeypatch.setattr(opdb.db, "_load", lambda *a: calls.append(a) or real(*a))
    monkeypatch.chdir(tmp_path)
    code = main(["run", "--backend", "mlu", "--ops", "abs", "--checks", "forward", "-n", "0",
                 "--max-examples", "2", "-o", str(tmp_path / "r.jsonl"),
                 "--html", str(tmp_path / "r.html")])
    assert code == 0 and (tmp_path / "r.html").is_file()
    assert len(calls) == 1


def test_typed_arguments_come_from_torchs_schema(db: opdb.OpDB) -> None:
    add = db["add.out"]
    assert add.arguments is add.arguments  # parsed once, cached
    assert [(a.name, a.type, a.kwarg_only, a.is_out, a.is_write) for a in add.arguments] == [
        ("self", "Tensor", False, False, False), ("other", "Tensor", False, False, False),
        ("alpha", "Scalar", True, False, False), ("out", "Tensor", True, True, True)]
    assert add.arguments[2].default == 1 and add.arguments[2].has_default_value
    assert add.returns == ("Tensor",)
    s = {a.name: a for a in db["sum.dim_IntList"].arguments}
    assert (s["dim"].type, s["dim"].list_size, s["dim"].optional) == ("int[1]?", 1, True)
    assert s["dtype"].base == "ScalarType" and s["dtype"].default is None  # not the JIT's int
    assert s["dtype"].has_default and not s["self"].has_default
    conv = {a.name: a for a in db["conv2d"].arguments}
    assert conv["stride"].type == "SymInt[2]" and conv["stride"].default == [1, 1]
    idx = db["index.Tensor"].arguments[1]
    assert (idx.type, idx.elem_optional, idx.is_tensor) == ("Tensor?[]", True, False)
    mem = {a.name: a for a in db["empty.memory_format"].arguments}
    assert {mem[n].base for n in ("layout", "device", "memory_format")} == {
        "Layout", "Device", "MemoryFormat"}


def test_typed_arguments_spell_every_type_as_the_yaml_does(db: opdb.OpDB) -> None:
    from torchgen.model import FunctionSchema

    for ov in db.overloads:
        if ov.autogen or "=[" in ov.schema_str:  # torchgen cannot split "[1, 1]" defaults
            continue
        fs = FunctionSchema.parse(ov.schema_str)
        spelled = [str(a.type) for a in (*fs.arguments.flat_positional,
                                         *fs.arguments.flat_kwarg_only, *fs.arguments.out)]
        # torch's parser reads DeviceIndex as int (the schema's only lossy spelling)
        assert [a.type for a in ov.arguments] == [t.replace("DeviceIndex", "int")
                                                  for t in spelled], ov.name
