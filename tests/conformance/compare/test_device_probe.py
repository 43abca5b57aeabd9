"""After a backend call raises, is its device still usable (a sticky error, as CUDA's device-side
assert)? A refusal CPU shares is probed only where it matters (``Context.settle_device``): before
a failure is judged and when the search ends, or never once a later backend call works."""

from __future__ import annotations

import pytest
import torch
from compare_calls import make_call, make_context

from conformance.core import backends
from conformance.core.verdicts import Abort
from opdb.outcomes import DEVICE_LOST


@pytest.fixture()
def probes(monkeypatch: pytest.MonkeyPatch):
    """The device probe, counted; ``lost`` set: what it reports (the device no longer works)."""
    state: dict = {"n": 0, "lost": None}

    def device_error(backend):
        state["n"] += 1
        return state["lost"]

    monkeypatch.setattr(backends, "device_error", device_error)
    return state


def test_a_shared_refusal_is_probed_once_where_it_matters(probes) -> None:
    call = make_call("sub.Tensor", self=torch.ones(2, dtype=torch.bool),
                     other=torch.ones(2, dtype=torch.bool))
    ctx = make_context(call, backend="mlu")
    ctx.stop_if_unsupported(RuntimeError("refused"), call, probe=False)
    ctx.stop_if_unsupported(RuntimeError("refused"), call, probe=False)
    assert probes["n"] == 0  # two agreements with CPU: no probe yet
    ctx.settle_device()
    assert probes["n"] == 1
    ctx.settle_device()
    assert probes["n"] == 1  # proven: not asked again
    ctx.stop_if_unsupported(RuntimeError("refused"), call, probe=False)
    ctx.mark_ok(backend_ok=True)  # a later backend call worked: so does its device
    ctx.settle_device()
    assert probes["n"] == 1
    ctx.stop_if_unsupported(RuntimeError("refused"), call)  # a failure's: probed at once
    assert probes["n"] == 2


def test_a_lost_device_is_blamed_on_the_first_unproven_refusal(probes) -> None:
    first = make_call("sub.Tensor", self=torch.ones(2, dtype=torch.bool),
                      other=torch.ones(2, dtype=torch.bool))
    later = make_call("sub.Tensor", self=torch.ones(3), other=torch.ones(3))
    ctx = make_context(first, backend="mlu")
    ctx.stop_if_unsupported(RuntimeError("device-side assert triggered"), first, probe=False)
    ctx.stop_if_unsupported(RuntimeError("device unusable"), later, probe=False)
    probes["lost"] = "device-side assert triggered (sticky)"
    with pytest.raises(Abort) as stop:
        ctx.settle_device()
    assert stop.value.category == DEVICE_LOST and stop.value.call is first
    assert "after this call raised RuntimeError: device-side assert triggered" in \
        stop.value.message and "1 more refusal(s)" in stop.value.message
    # a failure's immediate probe blames the unproven refusal before it too
    ctx = make_context(first, backend="mlu")
    ctx.stop_if_unsupported(RuntimeError("device-side assert triggered"), first, probe=False)
    with pytest.raises(Abort) as stop:
        ctx.stop_if_unsupported(RuntimeError("device unusable"), later)
    assert stop.value.call is first
