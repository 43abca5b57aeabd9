"""Positions of tied elements (conformance.compare.ties): compared by what they select, not as numbers."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from compare_calls import forward_verdict
from compare_calls import make_call as _call

from conformance.compare import ties
from conformance.core.verdicts import CheckFailure
from opdb.opdata import load_hints


def _hint(name: str):
    hint = load_hints().for_op(name).ties
    assert hint is not None
    return hint


def test_other_positions_of_tied_elements_pass():
    x = torch.tensor([[3.0, 1.0, 3.0, math.nan, math.nan]])
    call = _call("topk", self=x, k=3)
    cpu = torch.tensor([[3, 0, 2]])
    other = torch.tensor([[4, 2, 0]])  # the other NaN and the other 3.0 first
    assert ties.applies(call, _hint("topk"), 1)
    ties.assert_same_picks(call, _hint("topk"), "out[1]", "w", other, cpu)


def test_positions_that_select_other_values_fail():
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0]])
    call = _call("topk", self=x, k=2)
    with pytest.raises(CheckFailure, match=r"position 3 selects 2\.0, CPU's position 2 selects 3"):
        ties.assert_same_picks(call, _hint("topk"), "out[1]", "w", torch.tensor([[0, 3]]),
                               torch.tensor([[0, 2]]))
    with pytest.raises(CheckFailure, match=r"position 4, outside \[0, 4\)"):
        ties.assert_same_picks(call, _hint("topk"), "out[1]", "w", torch.tensor([[0, 4]]),
                               torch.tensor([[0, 2]]))


def test_reduced_dim_is_restored_before_gathering():
    x = torch.tensor([[1, 1, 2], [5, 4, 5]])
    call = _call("median.dim", self=x, dim=1, keepdim=False)
    hint = _hint("median.dim")
    ties.assert_same_picks(call, hint, "out[1]", "w", torch.tensor([1, 2]), torch.tensor([0, 0]))
    with pytest.raises(CheckFailure):
        ties.assert_same_picks(call, hint, "out[1]", "w", torch.tensor([2, 1]),
                               torch.tensor([0, 0]))


def test_unique_positions_are_compared_as_before():
    x = torch.tensor([2.0, 2.0])
    hint = _hint("sort.stable")
    assert not ties.applies(_call("sort.stable", self=x, stable=True), hint, 1)
    assert ties.applies(_call("sort.stable", self=x, stable=False), hint, 1)
    assert not ties.applies(_call("sort.stable", self=x, stable=False), hint, 0)  # values
    assert not ties.applies(_call("sort", self=torch.tensor(2.0)), _hint("sort"), 1)  # 0-dim


def _topk_last_of_ties(self, k, dim=-1, largest=True, sorted=True):
    """topk whose tied elements come last-position first: as right as CPU's choice."""
    host = self.cpu()
    d = dim % max(host.dim(), 1)
    if host.dim() == 0:
        values, indices = torch.topk(host, k, dim, largest, sorted)
    else:
        values, indices = torch.topk(host.flip(d), k, d, largest, sorted)
        indices = host.shape[d] - 1 - indices
    return values.to(self.device), indices.to(self.device)


def test_a_backend_breaking_ties_differently_passes(reference):
    import kernels

    kernels.install(overrides={"topk": _topk_last_of_ties})
    hints = load_hints().for_op("topk")

    def run(h):
        return forward_verdict(reference, "topk", h, max_examples=40)

    v = run(hints)
    assert v.verdict == "pass", v.message
    assert v.examples > 0
    # the same draws compared as numbers: the tied positions differ (the false failure it was)
    v = run(replace(hints, ties=None))
    assert v.verdict == "fail" and "out[1]" in v.message, v.message
