"""The proof backends of benchmarks/proof_backends: each is a right backend that is not CPU.

Each runs in a process of its own (one PrivateUse1 backend per process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "benchmarks"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(BENCH), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=_env(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_device_machinery_views_inplace_out_and_resize():
    """CPU semantics through the fallback: views alias, in-place and out= write the device
    tensor, out= is resized, copies go both ways."""
    out = _python("""
        import torch, proof_backends.reorder
        x = torch.randn(3, 4); a = x.to("reorder")
        v = a.t(); assert v.stride() == (1, 4) and v.cpu().equal(x.t())
        a[:, 1].mul_(0); x[:, 1].mul_(0); assert a.cpu().equal(x)
        o = torch.empty(0, device="reorder"); torch.add(a, a, out=o)
        assert o.shape == (3, 4) and o.cpu().equal(x + x)
        r = torch.empty(2, device="reorder"); r.resize_(5); assert r.cpu().shape == (5,)
        assert torch.tensor(2.0, device="reorder").mul(torch.tensor(3.0)).item() == 6.0
        print("ok")
    """)
    assert out.strip() == "ok"


def test_wide_rounds_the_float64_answer_once():
    """float32 sum of values whose float32 running sum loses the small terms: the wide
    backend gives the float64 sum rounded once."""
    out = _python("""
        import torch, proof_backends.wide
        x = torch.tensor([1e8, 1.0, -1e8, 1.0] * 3, dtype=torch.float32)
        got = x.to("wide").sum().item()
        assert got == float(x.double().sum().float()), got
        h = torch.tensor([1000.0, 0.1], dtype=torch.float16)
        assert h.to("wide").prod().item() == float((h.double().prod()).half())
        print("ok")
    """)
    assert out.strip() == "ok"


def test_ftz_flushes_inputs_and_results():
    out = _python("""
        import torch, proof_backends.ftz as m
        assert m.ASSUMES == ("ftz",)
        sub = torch.tensor([1e-40, -1e-40, 1.0], dtype=torch.float32)
        y = sub.to("ftz").mul(1.0).cpu()
        assert y.tolist() == [0.0, -0.0, 1.0] and torch.signbit(y)[1]
        tiny = torch.tensor([1.2e-38], dtype=torch.float32)
        assert tiny.to("ftz").mul(0.5).item() == 0.0          # a subnormal result
        h = torch.tensor([1e-7], dtype=torch.float16)          # float16 keeps its subnormals
        assert h.to("ftz").mul(1.0).item() != 0.0
        # DAZ reaches comparisons and indices too: a flushed subnormal equals zero
        assert sub.to("ftz").eq(0).cpu().tolist() == [True, True, False]
        assert torch.tensor([0.0, 1e-40]).to("ftz").argmax().item() == 0
        print("ok")
    """)
    assert out.strip() == "ok"


@pytest.mark.parametrize("backend", ["wide", "reorder", "ftz"])
def test_conformance_run_on_a_proof_backend_is_clean(tmp_path, backend):
    """A small default run on each proof backend: no fail (the full runs: bench_proof.py)."""
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "--backend",
         f"privateuse1:proof_backends.{backend}", "--ops", "add.Tensor|sum|mm|div.Tensor",
         "-n", "0", "--max-examples", "5", "-o", str(out)],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert out.exists(), proc.stderr[-3000:]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    verdicts = [r for r in recs if r.get("record") == "verdict"]
    assert verdicts
    bad = [(r["overload"], r["check"], r["message"]) for r in verdicts if r["verdict"] == "fail"]
    assert not bad, bad
