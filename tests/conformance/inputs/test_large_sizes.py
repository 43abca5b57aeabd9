"""Large sizes on purpose: now and then a drawn call has a side past 256 (a pointwise op's
operands a vector past 2**16), the symbolic shape's shared size included (mm's k), never for an
op whose hints cap its sides, and a failing small call does not shrink into a large one."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import opdb
from conformance.core.signature import OpSignature
from conformance.inputs import strategies
from conformance.inputs.strategies import HUGE_SIDE, forward_calls
from opdb.opdata import OpHints, load_hints


@pytest.fixture(autouse=True)
def _large_sizes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism with one drawn call in 32 large (off by default: strategies.LARGE_ONE_IN)."""
    monkeypatch.setattr(strategies, "LARGE_ONE_IN", 32)


def _largest(name: str, n: int = 400, hints: OpHints | None = None) -> list[int]:
    sig = OpSignature.of(opdb.load()[name])
    hints = hints if hints is not None else load_hints().for_op(name)
    seen: list[int] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(forward_calls(sig, hints))
    def draw(call):
        seen.append(max((max(v.shape, default=0) for _, v in call.values
                         if isinstance(v, torch.Tensor)), default=0))

    draw()
    return seen


def test_some_calls_are_large_and_most_are_not():
    sides = _largest("add.Tensor")
    large = [s for s in sides if s > 256]
    assert large and len(large) < len(sides) / 8
    assert not set(large) - {257, 1025, HUGE_SIDE}


def test_a_symbolic_shapes_shared_size_is_enlarged_consistently():
    sig = OpSignature.of(opdb.load()["mm"])
    hints = load_hints().for_op("mm")
    found = []

    @settings(max_examples=400, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(forward_calls(sig, hints))
    def draw(call):
        a, b = dict(call.values)["self"], dict(call.values)["mat2"]
        if max(a.shape) > 256:
            found.append((tuple(a.shape), tuple(b.shape)))

    draw()
    assert found and all(a[1] == b[0] and a[1] > 256 for a, b in found)


def test_an_op_whose_hints_cap_its_sides_stays_small():
    hints = load_hints().for_op("add.Tensor")
    capped = OpHints(args=hints.args, max_side=3)
    assert max(_largest("add.Tensor", 200, capped)) <= 3
