"""The draw function that makes cached strategies' choices itself: same choices, same values."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import strategies as st
from hypothesis.control import BuildContext
from hypothesis.internal.conjecture.data import ConjectureData

import opdb
from conformance.core.signature import OpSignature
from conformance.inputs.drawing import (
    Draw,
    cached_booleans,
    cached_integers,
    cached_sampled,
    composite,
)
from conformance.inputs.strategies import calls
from opdb.opdata import load_hints


def _drawn(strategy, data):
    with BuildContext(data, wrapped_test=_drawn):  # what a Hypothesis test runs draws in
        return data.draw(strategy)


@pytest.mark.parametrize("mode", ["forward", "dtypes", "promotion", "autograd", "broadcast"])
@pytest.mark.parametrize("name", ["add.Tensor", "sum.dim_IntList", "index_select", "mm",
                                  "cat", "where.self", "_foreach_add.List"])
def test_a_choice_sequence_draws_the_same_call_either_way(monkeypatch, name, mode):
    """Drawn through Hypothesis' strategy layer (the fast path off), a random choice sequence
    replays through the fast path to the same call: the example database, replay and
    shrinking see the same choices."""
    sig = OpSignature.of(opdb.load()[name])
    strategy = calls(sig, load_hints().for_op(name), mode=mode)
    checked = 0
    for i in range(15):
        with monkeypatch.context() as m:
            # every choice through draw(strategy) (the caches untouched: a strategy made now
            # keeps its fast path for later tests)
            m.setattr(Draw, "__call__", lambda self, strategy, label=None:
                      self.draw(strategy, label=label))
            slow = ConjectureData(random=Random(i))
            try:
                before = _drawn(strategy, slow)
            except Exception:  # noqa: BLE001 - an overrun or invalid draw: try another
                continue
        fast = ConjectureData.for_choices(slow.choices)
        after = _drawn(strategy, fast)
        assert after.describe() == before.describe()
        assert fast.choices == slow.choices
        checked += 1
    assert checked >= 10


def test_the_fast_path_takes_the_cached_strategies_and_no_other():
    seen = []

    class Data:
        def draw_integer(self, min_value, max_value, weights=None):
            seen.append((min_value, max_value, weights))
            return max_value

        def draw_boolean(self, p=0.5):
            seen.append(("boolean", p))
            return True

        def draw(self, strategy, label=None):
            seen.append(("strategy", label))
            return "slow"

    draw = Draw(Data().draw)
    assert draw(cached_integers(2, 5)) == 5
    assert draw(cached_sampled(("a", "b", "c"))) == "c"
    assert draw(cached_sampled(("only",))) == "only"  # st.just: no choice to make, none made
    assert draw(cached_booleans()) is True
    wide = draw(cached_integers(0, 1000))
    assert wide == 1000 and seen[-1][2] is not None  # st.integers' weights past 127
    assert draw(cached_integers(0, 3).map(str), label="x") == "slow"
    assert seen == [(2, 5, None), (0, 2, None), ("boolean", 0.5), seen[3], ("strategy", "x")]


def test_the_fast_path_makes_the_choices_the_strategies_make():
    """The same choice sequence gives the same values through the fast path as through the
    strategies' own draws, and leaves the same choices behind (replay, the example database)."""
    @composite
    def fast(draw):
        return (draw(cached_booleans()), draw(cached_sampled(("only",))),
                draw(cached_integers(0, 300)), draw(cached_sampled(("a", "b", "c"))))

    @st.composite
    def slow(draw):
        return (draw(st.booleans()), draw(st.just("only")), draw(st.integers(0, 300)),
                draw(st.sampled_from(("a", "b", "c"))))

    for choices in ([True, 299, 2], [False, 0, 1], [True, 150, 0]):
        a, b = ConjectureData.for_choices(choices), ConjectureData.for_choices(choices)
        assert a.draw(fast()) == b.draw(slow())
        assert a.choices == b.choices == tuple(choices)


def test_composite_keeps_the_signature_and_wraps_draw_once():
    @composite
    def pair(draw, lo: int, hi: int) -> tuple[int, int]:
        assert isinstance(draw, Draw)
        return draw(cached_integers(lo, hi)), draw(cached_integers(lo, hi))

    data = ConjectureData.for_choices([3, 4])
    assert data.draw(pair(0, 9)) == (3, 4)
    assert data.choices == (3, 4)


def test_a_hypothesis_whose_primitive_takes_another_call_is_drawn_as_before():
    class Older:
        def draw_integer(self, lo, hi):  # not the (min_value, max_value, weights) call
            raise AssertionError("the fast path must not call this")

        def draw(self, strategy, label=None):
            return "slow"

    assert Draw(Older().draw)(cached_integers(0, 3)) == "slow"
