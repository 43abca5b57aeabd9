"""``conformance.trace.decompositions``: decomposed overloads traced on drawn calls, in forked
workers that survive a trace that kills the process."""

from __future__ import annotations

import os

import pytest

from conformance.trace.decompositions import run_isolated, trace_all
from opdb.decompositions import Decomposition

pytestmark = pytest.mark.filterwarnings("ignore")


def test_traced_on_a_drawn_call() -> None:
    import opdb

    got = trace_all(opdb.load(), "core_aten", names=["hardswish", "linear", "nonzero"])
    assert list(got) == ["hardswish", "linear"]  # nonzero has no decomposition
    hw = got["hardswish"]
    assert hw.source == "table" and hw.calls and "clamp" in hw.calls, hw
    assert hw.example  # the call traced is said: what a decomposition calls depends on it
    assert got["linear"].source == "composite_implicit" and got["linear"].traced, got["linear"]


def test_traced_on_the_backends_device_where_a_composite_branches_on_it(reference) -> None:
    """``lstm.input``'s composite takes the mkldnn path for CPU tensors only: traced on CPU it
    calls ``mkldnn_rnn_layer`` (which mlu lacks: a false prediction), on mlu's fake tensors the
    cell's GEMMs and pointwise ops. Where nothing traces on the device, CPU's branch is kept and
    said (``device`` cpu)."""
    import opdb

    db = opdb.load()
    on_cpu = trace_all(db, "none", names=["lstm.input"])["lstm.input"]
    on_mlu = trace_all(db, "none", names=["lstm.input"], device="mlu")["lstm.input"]
    assert on_cpu.device == "cpu" and "mkldnn_rnn_layer" in (on_cpu.calls or ()), on_cpu
    assert on_mlu.device == "mlu" and on_mlu.calls and "mkldnn_rnn_layer" not in on_mlu.calls
    assert "addmm" in on_mlu.calls or "mm" in on_mlu.calls, on_mlu


def test_a_trace_that_kills_the_process_is_kept_untraced_and_the_rest_go_on() -> None:
    def one(name: str, source: str) -> Decomposition:
        if name == "b":
            os._exit(3)
        return Decomposition(name, source, ("mul.Tensor",))

    got = run_isolated({"a": "table", "b": "table", "c": "table"}, None, one)
    assert [d.traced for d in got.values()] == [True, False, True]
    assert got["b"].reason == "not traced: the trace killed the process (exit 3)"
