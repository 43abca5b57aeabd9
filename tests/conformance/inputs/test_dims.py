"""Dimension arguments in their other spelling (conformance.inputs.dims.twin_dims)."""

from __future__ import annotations

import torch

import opdb
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.dims import twin_dims


def _call(name: str, **values) -> Call:
    return Call(sig=OpSignature.of(opdb.load()[name]), values=tuple(values.items()))


def test_each_dim_in_its_other_spelling_against_the_first_tensors_rank() -> None:
    got = dict(twin_dims(_call("sum.dim_IntList", self=torch.ones(2, 3, 4), dim=[0, -1],
                               keepdim=False, dtype=None)).values)
    assert got["dim"] == [-3, 2] and got["keepdim"] is False
    got = dict(twin_dims(_call("transpose.int", self=torch.ones(2, 3), dim0=0, dim1=-1)).values)
    assert (got["dim0"], got["dim1"]) == (-2, 1)
    got = dict(twin_dims(_call("cat", tensors=[torch.ones(2, 3)], dim=-2)).values)
    assert got["dim"] == 0
    zero_dim = dict(twin_dims(_call("cumsum", self=torch.tensor(1.0), dim=0, dtype=None)).values)
    assert zero_dim["dim"] == -1  # a 0-dim tensor's dims are those of rank 1


def test_out_of_range_dims_and_calls_without_dims_are_kept() -> None:
    c = _call("cumsum", self=torch.ones(2), dim=5, dtype=None)
    assert twin_dims(c) is c
    a = _call("add.Tensor", self=torch.ones(2), other=torch.ones(2), alpha=1)
    assert twin_dims(a) is a


def test_a_dim_its_hints_bound_is_drawn_and_kept_within_them() -> None:
    """``_cummax_helper`` takes the dim cummax wrapped (hints: ``dim: {min: 0}``): CPU aborts
    or hangs on a negative one, so neither the draw nor the twin refill may give one."""
    from hypothesis import HealthCheck, given, settings

    from conformance.inputs.strategies import forward_calls
    from opdb.opdata import load_hints

    name = "_cummax_helper"
    hints = load_hints().for_op(name)
    assert hints.get("dim").min == 0
    c = _call(name, self=torch.ones(2, 3), values=torch.ones(2, 3),
              indices=torch.ones(2, 3, dtype=torch.int64), dim=1)
    assert twin_dims(c, hints) is c and dict(twin_dims(c).values)["dim"] == -1
    seen: list[int] = []

    @settings(max_examples=40, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(forward_calls(OpSignature.of(opdb.load()[name]), hints))
    def draw(call: Call) -> None:
        seen.append(dict(call.values)["dim"])

    draw()
    assert seen and min(seen) >= 0 and max(seen) > 0
