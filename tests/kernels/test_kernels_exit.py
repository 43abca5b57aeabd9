"""Interpreter exit right after a backward through mlu tensors ends cleanly (exit status 0).

Autograd runs mlu backward on its device thread, which releases the finished graph task (and the
Python objects its thread-local state holds) after ``backward()`` returns. Without
``kernels._device.drain_autograd_thread`` at exit, that release could ask for the GIL while the
interpreter finalizes and CPython ends the thread with ``pthread_exit``, whose unwind through
noexcept C++ frames aborts: "terminate called without an active exception", exit 134 (about
three runs in ten of the workload below, before the fix).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parents[1]

# The benchmark's CNN case in small: two threads, backward through mlu tensors, then exit.
WORKLOAD = """
import torch, kernels
torch.set_num_threads(2)
kernels.install()
x = torch.randn(64, 64, device="mlu", requires_grad=True)
for _ in range(3):
    y = x
    for _ in range(150):
        y = (y * 1.0001).tanh()
    y.sum().backward()
"""

RUNS = 8


@pytest.mark.slow
def test_exit_after_mlu_backward_is_clean_every_time() -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}
    failures = []
    for i in range(RUNS):
        proc = subprocess.run([sys.executable, "-c", WORKLOAD], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            failures.append(f"run {i}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    assert not failures, f"{len(failures)} of {RUNS} runs did not exit cleanly:\n" + "\n".join(failures)


def test_drain_waits_for_the_autograd_thread_and_is_cheap_when_idle() -> None:
    import torch

    import kernels
    from kernels import _device

    kernels.install()
    x = torch.randn(8, device="mlu", requires_grad=True)
    (x * x).sum().backward()
    assert _device._autograd_thread_started()
    assert _device.drain_autograd_thread(timeout=30)
    assert _device.drain_autograd_thread(timeout=30)  # again: nothing pending, still True


def test_drain_is_a_no_op_without_an_autograd_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels import _device

    monkeypatch.setattr(_device, "_autograd_thread_started", lambda: False)
    assert _device.drain_autograd_thread(timeout=0.0)
