"""opdb.opdata: hints and tolerances — records, loading, validation against the op database."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import opdb
import opdb.opdata as opdata
from opdb.errors import InputError
from opdb.opdata import load_hints, load_tolerances


@pytest.fixture(scope="module")
def db() -> opdb.OpDB:
    return opdb.load()


def _write(tmp_path: Path, text: str, name: str = "data.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_packaged_data_is_found_inside_the_package(db):
    pkg = Path(opdb.__file__).parent
    assert Path(str(opdata.HINTS_FILE)).parent == pkg / "data"
    assert Path(str(opdata.TOLERANCES_FILE)).parent == pkg / "data"
    hints = load_hints(db=db)
    assert set(hints.ops) <= {o.name for o in db.overloads}
    assert hints.for_op("index.Tensor").get("indices").dtypes == ("int64",)
    assert hints.for_op("add.Tensor").get("eps") == hints.arguments["eps"]  # conventions apply
    file, line = hints.source["index.Tensor"]
    assert file.endswith("hints.yaml") and line > 1
    load_tolerances(db=db)


def test_device_queries_are_not_compared_by_value(db):
    """cudnn_is_acceptable answers for the device (False on CPU, True on CUDA with cuDNN): the
    first CUDA run failed it against CPU's False; only its type is compared."""
    hints = load_hints(db=db)
    for name in ("get_device", "cudnn_is_acceptable", "_use_cudnn_ctc_loss"):
        assert hints.for_op(name).values is False, name
    assert hints.for_op("add.Tensor").values is True


def test_packaged_data_names_only_what_this_torch_has(db):
    """Read strictly (as a user's file is), the packaged data names no overload, glob or
    argument the installed torch (the one CI pins) lacks."""
    hints = load_hints(opdata.HINTS_FILE, db=db)
    assert hints.ops == load_hints(db=db).ops
    load_tolerances(opdata.TOLERANCES_FILE, db=db)


def test_packaged_data_under_an_older_torch_leaves_out_what_it_lacks(db, tmp_path):
    """An older torch lacks some overloads (torch 2.11 has no get_device): the packaged data
    still loads, without them; a user's file naming them is still an error."""
    from opdb.derivatives import find_derivatives_yaml

    text = Path(db.native_functions_path).read_text(encoding="utf-8")
    gone = ("get_device", "binomial")
    blocks = text.split("\n- func: ")
    kept = [b for b in blocks if not b.startswith(tuple(f"{n}(" for n in gone))]
    assert len(kept) == len(blocks) - len(gone)
    (tmp_path / "native_functions.yaml").write_text("\n- func: ".join(kept), encoding="utf-8")
    older = opdb.load(tmp_path / "native_functions.yaml",
                      derivatives=find_derivatives_yaml(Path(db.native_functions_path)))
    hints = load_hints(db=older)
    assert not set(gone) & set(hints.ops) and "binomial" in load_hints(db=db).ops
    assert hints.for_op("index.Tensor").get("indices").dtypes == ("int64",)
    load_tolerances(db=older)
    with pytest.raises(InputError, match="'binomial' is not an overload"):
        load_hints(opdata.HINTS_FILE, db=older)


def test_records_are_frozen(db):
    hints = load_hints(db=db)
    with pytest.raises(AttributeError):
        hints.for_op("mm").max_side = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        hints.ops["mm"] = hints.ops["mm"]  # type: ignore[index]


@pytest.mark.parametrize(("text", "message", "line"), [
    ("ops:\n  - names: [add.Tensor, add.Tensr]\n", r"'add.Tensr' is not an overload", 2),
    ("ops:\n  - names: [mm]\n  - names: ['nosuch*']\n    values: unspecified\n",
     r"pattern 'nosuch\*' matches no overload", 3),
    ("ops:\n  - names: [mm]\n    args:\n      self: {shape: [n, k]}\n      mat3: {shape: [k]}\n",
     r"argument 'mat3' is not an argument of mm", 5),
    ("arguments:\n  eps: {min: 0.1}\n  epsilonn: {min: 0.1}\n",
     r"no overload has an argument named 'epsilonn'", 3),
    ("arguments:\n  eps: {min: 0.1, maks: 2}\n", r"unknown key 'maks'", 2),
    ("ops:\n  - names: [index.Tensor]\n    args:\n      indices: {dtypes: [int65]}\n",
     r"unknown dtype 'int65'", 4),
    ("ops:\n  - names: [mm]\n    max_side: 0\n", r"'max_side' must be a positive integer", 2),
    ("ops:\n  - names: [mm]\n    cpu_crashes: yes please\n", r"'cpu_crashes' must be true", 2),
    ("ops:\n  - names: [mm]\n    cpu_ignores_strides: 1\n", r"'cpu_ignores_strides' must be true",
     2),
    ("ops:\n  - names: [gather]\n    args:\n      index: {along: true}\n",
     r"'along' must name an int argument \(the dim self is indexed along\) or be a dim", 4),
    ("arguments:\n  max_exp_avg_sqs: {maybe_empty: 1}\n", r"'maybe_empty' must be true or false",
     2),
    ("ops:\n  - names: [mm]\n    nonempty: 1\n", r"'nonempty' must be true", 2),
    ("ops:\n  - names: [upsample_nearest2d.vec]\n    one_of: output_size\n",
     r"'one_of' must be a list of two or more argument names", 2),
    ("ops:\n  - names: [upsample_nearest2d.vec]\n    one_of: [output_size, input]\n",
     r"upsample_nearest2d.vec: 'one_of' names 'input', which is not an optional argument", 2),
    ("ops: [\n", r"invalid YAML", None),
])
def test_hint_errors_name_file_and_line(tmp_path, db, text, message, line):
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        load_hints(path, db=db)
    assert info.value.file == str(path)
    if line is not None:
        assert info.value.line == line


def test_cpu_crashes_marks_overloads_and_merges(tmp_path, db):
    path = _write(tmp_path, "ops:\n  - names: ['lcm*']\n    cpu_crashes: true\n"
                            "  - names: [lcm]\n    max_side: 3\n")
    hints = load_hints(path, db=db)
    assert hints.for_op("lcm").cpu_crashes and hints.for_op("lcm").max_side == 3
    assert hints.for_op("lcm_").cpu_crashes and not hints.for_op("gcd").cpu_crashes
    assert load_hints(db=db).for_op("_chunk_cat").cpu_crashes  # packaged: measured crashes


def test_nonempty_marks_overloads_and_merges(tmp_path, db):
    path = _write(tmp_path, "ops:\n  - names: ['cummax*']\n    nonempty: true\n"
                            "  - names: [cummax]\n    max_side: 3\n")
    hints = load_hints(path, db=db)
    assert hints.for_op("cummax").nonempty and hints.for_op("cummax").max_side == 3
    assert not hints.for_op("cummin").nonempty
    assert load_hints(db=db).for_op("_cummax_helper").nonempty  # packaged: CPU hangs there


def test_one_of_names_optional_arguments_and_merges(tmp_path, db):
    path = _write(tmp_path, "ops:\n  - names: ['upsample_nearest*d.vec']\n"
                            "    one_of: [output_size, scale_factors]\n"
                            "  - names: [upsample_nearest2d.vec]\n    max_side: 3\n")
    hints = load_hints(path, db=db)
    got = hints.for_op("upsample_nearest2d.vec")
    assert got.one_of == ("output_size", "scale_factors") and got.max_side == 3
    assert hints.for_op("upsample_nearest1d.vec").one_of and not hints.for_op("mm").one_of
    assert load_hints(db=db).for_op("upsample_bilinear2d.vec").one_of  # packaged


def test_globs_name_families(tmp_path, db):
    path = _write(tmp_path, "ops:\n  - names: ['addmv*']\n    args:\n      vec: {shape: [m]}\n")
    hints = load_hints(path, db=db)
    assert set(hints.ops) == {o.name for o in db.overloads if o.name.startswith("addmv")}
    assert hints.for_op("addmv_").get("vec").shape == ("m",)


@pytest.mark.parametrize(("text", "message", "line"), [
    ("- names: [add.Tensor]\n  rtol: 0.1\n", r"needs both 'rtol' and 'atol'", 1),
    ("- names: [add.Tensor]\n  rtol: 0.1\n  atol: 0\n", r"needs a 'reason'", 1),
    ("- names: [add.Tensor]\n  rtol: 0.1\n  atol: 0\n  reason: r\n"
     "- names: [add.Tensro]\n  rtol: 0.1\n  atol: 0\n  reason: r\n",
     r"'add.Tensro' is not an overload", 5),
    ("- names: ['special_bessel*']\n  dtypes: [float65]\n  rtol: 0\n  atol: 0\n  reason: r\n",
     r"unknown dtype 'float65'", 1),
    ("- names: [add.Tensor]\n  rtol: -1\n  atol: 0\n  reason: r\n", r"'rtol' must be", 1),
    ("- names: [add.Tensor]\n  scale_ulps: 1.5\n  reason: r\n", r"'scale_ulps' must be", 1),
    ("- names: [add.Tensor]\n  reason: r\n", r"or 'scale_ulps'", 1),
    ("- names: [add.Tensor]\n  nonfinite: any\n  reason: r\n", r"'nonfinite' must be", 1),
    ("- names: [add.Tensor]\n  grad_error_factor: 0.5\n  reason: r\n",
     r"'grad_error_factor' must be", 1),
    ("- names: [add.Tensor]\n  rtol: 1.0\n  atol: 1.0\n  scale: all_inputs\n  reason: r\n",
     r"'scale' must be one of inputs, all_inputs, terms, beside 'scale_ulps'", 1),
    ("- names: [add.Tensor]\n  scale_ulps: 2\n  scale: per_element\n  reason: r\n",
     r"'scale' must be one of inputs, all_inputs, terms", 1),
])
def test_tolerance_errors_name_file_and_line(tmp_path, db, text, message, line):
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        load_tolerances(path, db=db)
    assert (info.value.file, info.value.line) == (str(path), line)


def test_tolerances_apply_by_overload_and_dtype(tmp_path, db):
    path = _write(tmp_path, "- names: ['special_bessel_j0*']\n  dtypes: [float64]\n"
                            "  rtol: 1.0e-6\n  atol: 1.0e-6\n  reason: series vs. Cephes\n")
    tol = load_tolerances(path, db=db)
    assert tol("special_bessel_j0.out", torch.float64) == (1e-6, 1e-6)
    assert tol("special_bessel_j0", "float64") == (1e-6, 1e-6)
    assert tol("special_bessel_j0", torch.float32) == (None, None)
    assert tol("special_bessel_j1", torch.float64) == (None, None)
    assert tol.entries[0].reason == "series vs. Cephes" and tol.entries[0].line == 1


def test_user_files_are_checked_by_the_cli(tmp_path, capsys, monkeypatch):
    from conformance.cli import main

    monkeypatch.chdir(tmp_path)
    bad = _write(tmp_path, "ops:\n  - names: [abs]\n  - names: [abss]\n", "h.yaml")
    code = main(["run", "--backend", "cpu", "--ops", "abs", "-n", "0", "-o",
                 str(tmp_path / "r.jsonl"), "--pytest-args", f"--hints {bad}"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}:3: 'abss' is not an overload of the op database" in err
    assert "Traceback" not in err


def test_ties_hint_resolves_the_output_per_overload(db):
    hints = load_hints(db=db)
    topk = hints.for_op("topk")
    assert topk.ties is not None and topk.ties.output == 1 and topk.ties.name == "indices"
    assert topk.get("sorted").choices == (True,)  # a second entry adds to the first
    assert hints.for_op("median.dim").ties.keepdim
    assert not hints.for_op("sort").ties.keepdim
    assert hints.for_op("sort.stable").ties.unless == "stable"
    assert hints.for_op("max.dim").ties is None  # documented: the first maximal index


@pytest.mark.parametrize(("text", "message"), [
    ("ops:\n  - names: [topk]\n    ties: {output: idx}\n", r"topk has no output named 'idx'"),
    ("ops:\n  - names: [topk]\n    ties: indices\n", r"'ties' must be a mapping"),
    ("ops:\n  - names: [topk]\n    ties: {output: indices, unless: k}\n",
     r"'unless' must name a bool argument"),
    ("ops:\n  - names: [topk]\n    ties: {output: indices, when: k}\n", r"unknown key 'when'"),
    ("ops:\n  - names: [argsort]\n    ties: {output: ''}\n", r"argsort has no output"),
])
def test_ties_hint_errors_name_file_and_line(tmp_path, db, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        load_hints(path, db=db)
    assert info.value.file == str(path) and info.value.line in (2, 3)  # the entry or `ties:`


def test_scale_ulps_and_tolerances_come_from_their_own_first_entries(tmp_path, db):
    path = _write(tmp_path, "- names: [add.Tensor]\n  rtol: 0.1\n  atol: 0\n  reason: r\n"
                            "- names: ['*']\n  dtypes: [float16]\n  scale_ulps: 4\n  reason: r\n")
    tol = load_tolerances(path, db=db)
    assert tol("add.Tensor", torch.float16) == (0.1, 0.0)
    assert tol.scale_ulps("add.Tensor", torch.float16) == 4
    assert tol.scale_ulps("add.Tensor", torch.float32) == 0
    assert tol("sub.Tensor", torch.float16) == (None, None)


def test_grad_error_factor_comes_from_its_own_first_entry(tmp_path, db):
    path = _write(tmp_path, "- names: [add.Tensor]\n  rtol: 0.1\n  atol: 0\n  reason: r\n"
                            "- names: ['*']\n  dtypes: [float32]\n  grad_error_factor: 4\n"
                            "  reason: r\n"
                            "- names: [add.Tensor]\n  grad_error_factor: 8\n  reason: r\n")
    tol = load_tolerances(path, db=db)
    assert tol("add.Tensor", torch.float32) == (0.1, 0.0)
    assert tol.grad_error_factor("add.Tensor", torch.float32) == 4
    assert tol.grad_error_factor("add.Tensor", torch.float64) == 8
    assert tol.grad_error_factor("sub.Tensor", torch.float64) == 0
