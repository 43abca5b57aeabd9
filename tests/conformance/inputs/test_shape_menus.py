"""The shape menu (a backend that compiles per shape): every size drawn is a menu size, the
relations the hints impose still hold, and with the menu off the draws are the free ones."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings

import opdb
from conformance.checks.registry import CHECKS
from conformance.core.signature import OpSignature
from conformance.inputs.shape_menus import SIDES, fixed_shapes, is_fixed, menu
from conformance.inputs.strategies import draw_calls

MENU = {0, *SIDES}  # the menu's sides, and now and then an empty one

N = 40


def _calls(name: str, mode: str, *, fixed: bool, n: int = N) -> list[Any]:
    sig = OpSignature.of(opdb.load()[name])
    from opdb.opdata import load_hints

    strategy = draw_calls(sig, load_hints().for_op(name), CHECKS[mode].draw)
    seen: list[Any] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(call: Any) -> None:
        seen.append(call)

    with fixed_shapes(fixed):
        draw()
    return seen


def _tensors(call: Any) -> dict[str, torch.Tensor]:
    out = {}
    for name, v in call.values:
        if isinstance(v, torch.Tensor):
            out[name] = v
        elif isinstance(v, (list, tuple)):
            out.update({f"{name}[{i}]": t for i, t in enumerate(v)
                        if isinstance(t, torch.Tensor)})
    return out


def _sides(calls: list[Any]) -> set[int]:
    """The sizes drawn, less the broadcast check's deliberately conflicting pair (2 against 3:
    refused when the graph is traced, before anything compiles)."""
    return {d for c in calls if "non-broadcastable" not in c.notes
            for t in _tensors(c).values() for d in t.shape}


@pytest.mark.parametrize("name,mode", [("add.Tensor", "forward"), ("add.Tensor", "broadcast"),
                                       ("sum.dim_IntList", "forward"),
                                       ("index_select", "forward"), ("mm", "forward")])
def test_every_side_is_a_menu_size(name: str, mode: str) -> None:
    fixed = _sides(_calls(name, mode, fixed=True))
    assert fixed <= MENU, fixed
    free = _sides(_calls(name, mode, fixed=False))
    assert free - MENU, free  # the free draw has other sizes (the menu changed something)


def test_broadcast_relations_hold_on_menu_sizes() -> None:
    for call in _calls("add.Tensor", "forward", fixed=True):
        t = _tensors(call)
        torch.broadcast_shapes(t["self"].shape, t["other"].shape)  # raises if they do not


def test_index_hints_hold_on_menu_sizes() -> None:
    """index_add: the index's values lie along ``self``'s drawn dim, the source has one slice per
    index element (hints ``along``, ``length_of``), with menu sizes only."""
    calls = _calls("index_add", "forward", fixed=True)
    assert _sides(calls) <= MENU
    checked = 0
    for call in calls:
        v = dict(call.values)
        self_, index, source, dim = v["self"], v["index"], v["source"], v["dim"]
        if self_.dim() == 0 or index.numel() == 0 or self_.shape[dim] == 0:
            continue  # (size 0 along dim: the hint is left as it is, CPU refuses)
        n = self_.shape[dim]
        assert int(index.min()) >= -n and int(index.max()) < n
        assert source.shape[dim] == index.numel()
        checked += 1
    assert checked


def test_few_shapes_per_item() -> None:
    """What the menu is for: an item's calls share a handful of shapes (graphs), where the free
    draw's are mostly new."""
    def shapes(fixed: bool) -> int:
        return len({tuple(tuple(t.shape) for t in _tensors(c).values())
                    for c in _calls("eq.Scalar", "forward", fixed=fixed, n=100)})

    # the menu's 15 (ranks 0-3, sides 1, 3) and some with an empty side, where the free draw
    # has 156 to draw from
    fixed, free = shapes(True), shapes(False)
    assert fixed <= 40 and fixed < free, (fixed, free)


def test_the_menu_is_off_by_default_and_restored() -> None:
    assert not is_fixed()
    with fixed_shapes(True):
        assert is_fixed()
        with fixed_shapes(False):
            assert not is_fixed()
        assert is_fixed()
    assert not is_fixed()


def test_calls_are_not_mostly_degenerate() -> None:
    """A call of two elements or more about as often as drawn freely (a menu holding 0 and 1
    made most calls hold one element or none: cumprod_backward's promotion check passed where
    it fails), and now and then an empty one."""
    def counts(fixed: bool) -> tuple[int, int]:
        calls = _calls("sum.dim_IntList", "forward", fixed=fixed)
        return (sum(any(t.numel() >= 2 for t in _tensors(c).values()) for c in calls),
                sum(any(t.numel() == 0 for t in _tensors(c).values()) for c in calls))

    (big, empty), (free_big, _) = counts(True), counts(False)
    assert big >= free_big * 3 // 4 and empty, (big, empty, free_big)


def test_menu_keeps_the_range_order_on_its_sides_and_falls_back_to_its_first_value() -> None:
    assert menu((2, 1, 0, 3, 4)) == (3, 1)  # middle first: a side of several elements
    assert menu((0, 1, 2, 3, 4)) == (1, 3)
    assert menu((4, 3, 2, 1)) == (3, 1)
    assert menu((1, 2, 3, 4, 5, 6, 7, 8)) == (1, 3, 5)
    assert menu((7, 8)) == (7,)
