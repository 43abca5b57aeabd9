"""opdb overloads: every YAML entry and every autogen'd overload, with their fields."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
import yaml

import opdb

MINI = Path(__file__).parent / "data" / "opdb" / "mini" / "native_functions.yaml"


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
