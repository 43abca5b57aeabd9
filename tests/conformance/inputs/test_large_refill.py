"""The forward check's tiled refill (conformance.inputs.large.tiled_large)."""

from __future__ import annotations

from dataclasses import replace

import torch

import opdb
from conformance.core.call import Call
from conformance.core.fills import Fill
from conformance.core.signature import OpSignature
from conformance.inputs.large import HUGE_SIDE, TILED_ONE_IN, tiled_large


def _call(name: str, seed: int = 0, **values) -> Call:
    fills = ((next(iter(values)), None, Fill("float32", (1,), seed=seed)),)
    return Call(sig=OpSignature.of(opdb.load()[name]), values=tuple(values.items()), fills=fills)


def test_tensors_sharing_the_last_size_are_tiled_past_the_thresholds() -> None:
    c = _call("add.Tensor", self=torch.arange(6.0).reshape(2, 3), other=torch.ones(1, 3),
              alpha=1)
    got = dict(tiled_large(c, None).values)
    assert got["self"].shape == (2, 258) and got["other"].shape == (1, 258)
    assert torch.equal(got["self"][:, 3:6], got["self"][:, :3])  # values repeat
    vec = dict(tiled_large(_call("neg", self=torch.ones(3)), None).values)["self"]
    assert vec.numel() >= HUGE_SIDE  # a pointwise op on a vector: past 2**16
    s = _call("sum.dim_IntList", self=torch.ones(2, 5), dim=[1], keepdim=False, dtype=None)
    assert dict(tiled_large(s, None).values)["self"].shape == (2, 260)


def test_kept_where_tiling_is_not_one_rule_or_not_this_calls_turn() -> None:
    mm = _call("mm", self=torch.ones(2, 3), mat2=torch.ones(3, 4))
    assert tiled_large(mm, None) is mm  # [m, k] @ [k, n]: no common last size
    capped = _call("neg", self=torch.ones(3))
    assert tiled_large(capped, 4) is capped  # the hints cap its sides: costly per element
    other_turn = _call("neg", seed=1, self=torch.ones(3))
    assert TILED_ONE_IN > 1 and tiled_large(other_turn, None) is other_turn
    empty = _call("neg", self=torch.ones(0))
    assert tiled_large(empty, None) is empty
    assert tiled_large(replace(capped, fills=()), None).values == capped.values
