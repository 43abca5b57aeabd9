"""``opdb.release`` / ``opdb.upgrade`` and ``conformance upgrade``, on a copy of the packaged YAML
edited the way a release edits it: an overload added and one removed, a default changed, an op
that became CompositeImplicitAutograd and one that lost it, a derivative formula that now calls
an op the backend lacks."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from opdb import packaged_native_functions
from opdb.derivatives import find_derivatives_yaml
from opdb.release import read_side, read_yaml, split_schema
from opdb.upgrade import Coverage, assess, compare, counts

#: The changes the edits make, by overload: (change kind, what mlu-like coverage asks).
EXPECTED = {
    ("my_new_op", "added"): "must",
    ("add.Tensor", "removed"): "must",
    ("sub.Tensor", "default"): "review",
    ("relu", "became_composite"): "must",
    ("matmul", "lost_composite"): "must",
    ("exp", "derivative"): "must",
}
COVERAGE = Coverage("fake", frozenset({"add.Tensor", "sub.Tensor", "relu", "exp"}), False)


def _replace_once(text: str, anchor: str, old: str, new: str) -> str:
    at = text.index(anchor)
    end = text.index(old, at)
    return text[:end] + new + text[end + len(old):]


def _remove_entry(text: str, func: str, key: str = "func") -> str:
    at = text.index(f"- {key}: {func}")
    end = text.index(f"\n- {key}:", at)
    return text[:at] + text[end + 1:]


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the edited native_functions.yaml and derivatives.yaml."""
    folder = tmp_path_factory.mktemp("newtorch")
    nf = packaged_native_functions()
    text = nf.read_text(encoding="utf-8")
    text += "\n- func: my_new_op(Tensor self) -> Tensor\n  dispatch:\n    CPU: my_new_op\n"
    text = _remove_entry(text, "add.Tensor(")
    text = text.replace("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)",
                        "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=2)", 1)
    text = _replace_once(text, "- func: relu(Tensor self)", "    CPU, CUDA: relu\n",
                         "    CompositeImplicitAutograd: relu\n")
    text = _replace_once(text, "- func: matmul(Tensor self,", "CompositeImplicitAutograd: matmul",
                         "CPU, CUDA: matmul")
    (folder / "native_functions.yaml").write_text(text, encoding="utf-8")
    derivs = find_derivatives_yaml(nf)
    assert derivs is not None
    d = derivs.read_text(encoding="utf-8")
    d = _remove_entry(d, "add.Tensor(", key="name")
    d = _replace_once(d, "- name: exp(Tensor self)", "self: grad * result.conj()",
                      "self: _cdist_backward(grad, self, self, 2.0, result)")
    (folder / "derivatives.yaml").write_text(d, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def packaged() -> object:
    return read_yaml(packaged_native_functions())


def test_split_schema_keeps_defaults_aliases_and_kwarg_only() -> None:
    name, args, ret = split_schema(
        "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert name == "add.out" and ret == "Tensor(a!)"
    assert [(a.name, a.type, a.default, a.kwarg_only, a.alias) for a in args] == [
        ("self", "Tensor", None, False, ""), ("other", "Tensor", None, False, ""),
        ("alpha", "Scalar", "1", True, ""), ("out", "Tensor", None, True, "(a!)")]
    _, args, _ = split_schema("f(int[2] stride=[1, 1], str? mode=\"a,b\") -> ()")
    assert [a.default for a in args] == ["[1, 1]", '"a,b"']


def test_same_release_has_no_changes(packaged: object) -> None:
    assert compare(packaged, packaged) == []  # type: ignore[arg-type]


def test_each_edit_is_one_change_with_its_locations(packaged: object, edited: Path) -> None:
    new = read_yaml(edited)
    changes = compare(packaged, new)  # type: ignore[arg-type]
    assert {(c.overload, c.kind) for c in changes} == set(EXPECTED)
    by = {c.kind: c for c in changes}
    assert by["default"].detail == "alpha: 1 -> 2"
    assert by["derivative"].new_backward == ("_cdist_backward",)
    assert by["removed"].new_loc is None and "native_functions.yaml:" in by["removed"].old_loc
    assert by["added"].old_loc is None and by["added"].new_loc.startswith(str(edited))
    assert "derivatives.yaml:" in by["derivative"].new_loc
    assert counts(changes)["tags"] == 0


def test_backend_levels(packaged: object, edited: Path) -> None:
    new = read_yaml(edited)
    actions = assess(compare(packaged, new), new, packaged, COVERAGE)  # type: ignore[arg-type]
    assert {(a.change.overload, a.change.kind): a.level for a in actions} == EXPECTED
    # without the kernels, the same changes ask nothing but the new kernels
    bare = assess(compare(packaged, new), new, packaged,  # type: ignore[arg-type]
                  Coverage("bare", frozenset(), False))
    levels = {(a.change.overload, a.change.kind): a.level for a in bare}
    assert levels[("add.Tensor", "removed")] == "none"
    assert levels[("relu", "became_composite")] == "none"
    assert levels[("my_new_op", "added")] == "must"
    # a fallback serves what no kernel does: a review, not a must
    fb = assess(compare(packaged, new), new, packaged,  # type: ignore[arg-type]
                Coverage("fb", frozenset(), True))
    assert {a.level for a in fb if a.change.kind in ("added", "lost_composite")} == {"none",
                                                                                     "review"}


def test_cli_markdown_json_and_exit_status(edited: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    cov = tmp_path / "cov.json"
    cov.write_text(json.dumps({"backend": "fake", "summary": {"fallback": 0}, "overloads": [
        {"name": n, "status": "native"} for n in COVERAGE.native]}))
    argv = ["upgrade", "--from-python", sys.executable, "--to", str(edited / "native_functions.yaml")]
    assert main([*argv, "--coverage", str(cov), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["backend"] == "fake" and doc["from"].startswith("torch ")
    assert doc["summary"]["by_level"] == {"must": 5, "review": 1}
    assert doc["rows"][0]["level"] == "must" and doc["rows"][-1]["change"] == "default"
    assert main([*argv, "--coverage", str(cov), "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert "| must | `matmul` | lost_composite |" in md
    # the live dispatcher's CPU: it registers add.Tensor and relu, and has no my_new_op
    assert main([*argv, "--backend", "cpu", "--format", "json"]) == 1
    rows = {(r["overload"], r["change"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[("add.Tensor", "removed")]["level"] == "must"
    assert rows[("relu", "became_composite")]["level"] == "must"
    assert rows[("my_new_op", "added")]["status"] == "missing"
    assert main(argv) == 0  # no backend: nothing to act on
    assert "my_new_op" in capsys.readouterr().out


def test_snapshots_compare_like_yaml(edited: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for name, nf in (("old", None), ("new", edited / "native_functions.yaml")):
        argv = ["ops", "--format", "json"] + ([] if nf is None else ["--native-functions", str(nf)])
        assert main(argv) == 0
        p = tmp_path / f"{name}.json"
        p.write_text(capsys.readouterr().out)
        paths.append(p)
    changes = compare(read_side(str(paths[0])), read_side(str(paths[1])))
    # a snapshot holds opdb's resolved derivatives: an in-place overload borrows its functional
    # sibling's formula (exp_, add_.Tensor), and a CompositeImplicitAutograd op's formula is
    # not its own (relu gains that status, matmul loses it), so those show as changed too
    extra = {("exp_", "derivative"), ("add_.Tensor", "derivative"), ("relu", "derivative"),
             ("matmul", "derivative")}
    assert {(c.overload, c.kind) for c in changes} == set(EXPECTED) | extra


def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upgrade", "--from-python", str(tmp_path / "nopython")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot run" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["upgrade", "--from", str(bad)]) == 2
    assert "snapshot" in capsys.readouterr().err
