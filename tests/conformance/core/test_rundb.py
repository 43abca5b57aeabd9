"""Checks ask the run's op database (``--native-functions``), not the installed torch's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import opdb
from conformance.checks.registry import CHECKS
from conformance.compare.gradients import grad_args
from conformance.core import rundb
from conformance.core.signature import OpSignature


@pytest.fixture(scope="module")
def relu_not_differentiable(tmp_path_factory) -> Path:
    """torch's native_functions.yaml beside a derivatives.yaml without relu's entry."""
    db = opdb.load()
    folder = tmp_path_factory.mktemp("db")
    nf = folder / "native_functions.yaml"
    nf.write_text(Path(opdb.packaged_native_functions()).read_text(encoding="utf-8"),
                  encoding="utf-8")
    text = Path(str(db.derivatives_path)).read_text(encoding="utf-8")
    entry = "- name: relu(Tensor self) -> Tensor\n  self: threshold_backward(grad, result, 0)\n" \
            "  result: auto_element_wise\n"
    assert entry in text
    (folder / "derivatives.yaml").write_text(text.replace(entry, ""), encoding="utf-8")
    return nf


def test_applies_and_grad_args_follow_the_run_database(relu_not_differentiable):
    sig = OpSignature.of(opdb.load()["relu"])
    applies = CHECKS["autograd"].applies
    assert applies(sig) is None and grad_args(sig) == ("self",)
    rundb.use(opdb.load(relu_not_differentiable))
    try:
        assert "not differentiable" in (applies(sig) or "")
        assert grad_args(sig) == ()
    finally:
        rundb.use(None)
    assert applies(sig) is None


def test_run_with_native_functions_uses_them_for_autograd(tmp_path, relu_not_differentiable):
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--backend", "mlu", "--checks", "autograd",
         "--ops", "relu", "-n", "0", "--max-examples", "2", "--native-functions",
         str(relu_not_differentiable), "-o", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    [v] = [r for r in recs if r.get("record") == "verdict" and r["overload"] == "relu"]
    assert v["verdict"] == "skip" and v["category"] == "not_applicable", v
    assert "not differentiable" in v["message"]
