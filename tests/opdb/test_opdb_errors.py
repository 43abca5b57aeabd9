"""Bad input: one line naming the file and line, exit status 2, no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.cli import main

MINI = Path(__file__).parent.parent / "data" / "opdb" / "mini"
GOOD = "- func: relu(Tensor self) -> Tensor\n  variants: function, method\n"


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _assert_one_line(err: str, command: str, file: Path, line: int | None, fragment: str) -> None:
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    where = f"{file}:{line}: " if line is not None else f"{file}: "
    assert lines[0].startswith(f"conformance {command}: error: {where}"), lines[0]
    assert fragment in lines[0]


NATIVE_CASES = {
    # name: (text, line, fragment)
    "malformed": (GOOD + "- func: abs(Tensor self) -> Tensor\n  variants: [function\n", 5,
                  "malformed YAML"),
    "unparsable_schema": (GOOD + "\n- func: abs(Tensor self, Tens) -> Tensor\n", 4,
                          "unparsable schema 'abs(Tensor self, Tens) -> Tensor'"),
    "unknown_key": (GOOD + "- func: abs(Tensor self) -> Tensor\n  variants: function\n"
                    "  dispach:\n    CPU: abs\n", 5, "unknown key 'dispach' in entry 'abs'"),
    "wrong_type": (GOOD + "- func: abs(Tensor self) -> Tensor\n  structured: maybe\n", 4,
                   "key 'structured' must be a bool"),
    "no_func": (GOOD + "- variants: function\n", 3, "entry has no 'func'"),
    "duplicate": (GOOD + "\n\n" + GOOD, 5, "duplicate overload 'relu' (first at line 1)"),
    "bad_variant": ("- func: abs(Tensor self) -> Tensor\n  variants: function, methd\n", 2,
                    "illegal variant 'methd'"),
    "not_a_list": ("func: abs(Tensor self) -> Tensor\n", 1, "must be a YAML list"),
    "empty": ("# nothing\n", 1, "is empty"),
}


@pytest.mark.parametrize("case", sorted(NATIVE_CASES))
def test_bad_native_functions(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, line, fragment = NATIVE_CASES[case]
    path = tmp_path / "native_functions.yaml"
    path.write_text(text, encoding="utf-8")
    rc, out, err = _run(capsys, ["ops", "--native-functions", str(path)])
    assert rc == 2 and out == ""
    _assert_one_line(err, "ops", path, line, fragment)


def test_truncated_native_functions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (MINI / "native_functions.yaml").read_text(encoding="utf-8")
    cut = text.index("SymInt[2] output_size")  # in the middle of _adaptive_avg_pool2d's schema
    path = tmp_path / "native_functions.yaml"
    path.write_text(text[:cut], encoding="utf-8")
    line = text[:cut].count("\n") + 1
    rc, _, err = _run(capsys, ["coverage", "--backend", "cpu", "--native-functions", str(path)])
    assert rc == 2
    _assert_one_line(err, "coverage", path, line, "unparsable schema '_adaptive_avg_pool2d(Tensor self,'")


def test_truncated_inside_a_flow_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (MINI / "native_functions.yaml").read_text(encoding="utf-8")
    cut = text.index("tags: [core,") + len("tags: [core,")
    path = tmp_path / "native_functions.yaml"
    path.write_text(text[:cut], encoding="utf-8")
    rc, _, err = _run(capsys, ["ops", "--native-functions", str(path)])
    assert rc == 2
    _assert_one_line(err, "ops", path, text[:cut].count("\n") + 2, "malformed YAML")


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope" / "native_functions.yaml"
    rc, _, err = _run(capsys, ["ops", "--native-functions", str(path)])
    assert rc == 2
    _assert_one_line(err, "ops", path, None, "native_functions.yaml not found")


def test_unknown_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tags.yaml").write_text("- tag: core\n  desc: x\n", encoding="utf-8")
    path = tmp_path / "native_functions.yaml"
    path.write_text("- func: abs(Tensor self) -> Tensor\n  tags: [core, cor]\n", encoding="utf-8")
    rc, _, err = _run(capsys, ["ops", "--native-functions", str(path)])
    assert rc == 2
    _assert_one_line(err, "ops", path, 2, "unknown tag 'cor'")


DERIVATIVE_CASES = {
    "unknown_key": ("- name: relu(Tensor self) -> Tensor\n  slef: grad\n", 2,
                    "unknown key 'slef' (neither an argument nor an output"),
    "unknown_op": ("- name: relu_6(Tensor self) -> Tensor\n  self: grad\n", 1,
                   "derivative for 'relu_6', which native_functions.yaml does not define"),
    "bad_schema": ("- name: relu(Tensor self -> Tensor\n  self: grad\n", 1, "unparsable schema"),
    "malformed": ("- name: relu(Tensor self) -> Tensor\n  self: grad\n - x\n", 3, "malformed YAML"),
    "no_name": ("- self: grad\n", 1, "entry has no 'name'"),
}


@pytest.mark.parametrize("case", sorted(DERIVATIVE_CASES))
def test_bad_derivatives(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, line, fragment = DERIVATIVE_CASES[case]
    shutil.copy(MINI / "native_functions.yaml", tmp_path)
    path = tmp_path / "derivatives.yaml"
    path.write_text(text, encoding="utf-8")
    rc, out, err = _run(
        capsys, ["ops", "--native-functions", str(tmp_path / "native_functions.yaml")]
    )
    assert rc == 2 and out == ""
    _assert_one_line(err, "ops", path.resolve(), line, fragment)
