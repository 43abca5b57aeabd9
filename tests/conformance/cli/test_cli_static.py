"""``conformance ops`` and ``conformance coverage`` as a user runs them."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conformance.cli import main

DATA = Path(__file__).parent.parent.parent / "data" / "opdb"
ADD_FAMILY = ["add.Tensor", "add.Scalar", "add.out", "add.Scalar_out", "add_.Tensor", "add_.Scalar"]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_ops_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, ["ops", "--match", r"^add_?\.", "--format", "json"])
    assert rc == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows if r["family"] == "add"] == [
        "add.Tensor", "add_.Tensor", "add.out", "add.Scalar", "add_.Scalar", "add.Scalar_out"
    ]  # YAML order
    by_name = {r["name"]: r for r in rows}
    t = by_name["add.Tensor"]
    for key in ("name", "base", "overload", "kind", "family", "tags", "dispatch", "autogen", "schema"):
        assert key in t
    assert (t["base"], t["overload"], t["kind"], t["autogen"]) == ("add", "Tensor", "functional", False)
    assert by_name["add.Scalar_out"]["autogen"] is True
    assert by_name["add.Scalar_out"]["autogen_from"] == "add_.Scalar"


def test_ops_filters_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, ["ops", "--kind", "inplace", "--tag", "pointwise", "--format", "csv"])
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(r["kind"] == "inplace" and "pointwise" in r["tags"].split() for r in rows)
    assert "add_.Tensor" in {r["name"] for r in rows}
    assert "add.Tensor" not in {r["name"] for r in rows}


def test_ops_table_and_extra(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, ["ops", "--match", "^add"])
    assert rc == 0
    assert out.splitlines()[0].split()[:3] == ["name", "kind", "family"]
    assert "autogen from add_.Scalar" in out
    assert re.search(r"^\d+ of \d+ overloads \(\d+ autogen'd\) from ", out, re.M)
    rc, out, _ = _run(capsys, ["ops", "--extra", "--format", "json"])
    import opdb

    assert rc == 0 and json.loads(out) == list(opdb.load().extra_dispatcher_ops)


def test_ops_without_derivatives_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nf = tmp_path / "native_functions.yaml"
    nf.write_text((DATA / "mini" / "native_functions.yaml").read_text(encoding="utf-8"))
    rc, out, err = _run(capsys, ["ops", "--native-functions", str(nf), "--format", "json"])
    assert rc == 0
    assert {r["name"]: r["autograd"] for r in json.loads(out)}["add.Tensor"] == "unknown"
    assert "no derivatives.yaml found" in err and "unknown" in err


def test_coverage_cpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "coverage.json"
    rc, out, err = _run(capsys, ["coverage", "--backend", "cpu", "--format", "json", "-o", str(dest)])
    assert rc == 0
    cov = json.loads(dest.read_text(encoding="utf-8"))
    assert out == ""  # the JSON went to the file, not also to the terminal
    assert f"wrote {dest}" in err and len(err.strip().splitlines()) == 1
    rc, out, _ = _run(capsys, ["coverage", "--backend", "cpu", "--format", "json"])
    assert rc == 0 and json.loads(out) == cov
    assert (cov["backend"], cov["dispatch_key"], cov["torch_version"]) == ("cpu", "CPU", torch.__version__)
    status = {o["name"]: o["status"] for o in cov["overloads"]}
    assert status["add.Tensor"] == "native" and status["_adaptive_avg_pool2d"] == "native"
    assert status["matmul"] == "composite_implicit"
    assert set(cov["summary"]) == {"native", "composite_explicit", "composite_implicit", "fallback", "missing"}
    assert sum(cov["summary"].values()) == len(cov["overloads"])
    assert cov["summary"]["native"] > 500
    for o in cov["overloads"]:
        assert set(o) == {"name", "status", "kind", "family", "tags"}
    for r in cov["missing_variants"]:
        assert set(r) == {"family", "present", "missing"} and r["present"] and r["missing"]
    for r in cov["missing_backward"]:
        assert set(r) == {"forward", "missing"} and r["missing"]


def test_coverage_table_sections(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, ["coverage", "--backend", "meta"])
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("backend meta (dispatch key Meta)")
    heads = [i for i, ln in enumerate(lines) if ln.startswith(("Missing variants", "Missing backward"))]
    assert len(heads) == 2 and lines[heads[0]].startswith("Missing variants")
    assert "native" in lines[2]
    assert "MetaFallbackKernel.cpp" in out  # torch's own Meta fallback, named


@pytest.mark.parametrize("argv", [
    ["coverage", "--backend", "nope"],
    ["coverage", "--backend", "privateuse1:no_such_vendor_module"],
    ["coverage", "--backend", "cpu", "--without", "add.Tensor"],
])
def test_coverage_bad_backend(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("conformance coverage: error: ")


def test_coverage_vendor_module_forward_without_backward(tmp_path: Path) -> None:
    """A vendor module (tests/data/opdb/fake_vendor.py) registers _adaptive_avg_pool2d for
    PrivateUse1 but not its backward; run as a user would, in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(DATA), os.environ.get("PYTHONPATH", "")]))
    dest = tmp_path / "cov.json"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "coverage", "--backend", "privateuse1:fake_vendor",
         "-o", str(dest)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Missing backward ops" in proc.stdout
    cov = json.loads(dest.read_text(encoding="utf-8"))
    assert (cov["backend"], cov["dispatch_key"]) == ("privateuse1:fake_vendor", "PrivateUse1")
    status = {o["name"]: o["status"] for o in cov["overloads"]}
    assert status["_adaptive_avg_pool2d"] == "native"
    assert status["_adaptive_avg_pool2d_backward"] == "missing"
    backward = {r["forward"]: r["missing"] for r in cov["missing_backward"]}
    assert backward["_adaptive_avg_pool2d"] == ["_adaptive_avg_pool2d_backward"]
    assert "mul.Tensor" not in backward
    variants = {r["family"]: r for r in cov["missing_variants"]}
    assert variants["add"]["missing"] == ["add.out"]
    assert sorted(variants["add"]["present"]) == sorted(set(ADD_FAMILY) - {"add.out"})
