"""How the strategies draw: cached integer and ``sampled_from`` strategies, and a draw function
that takes their choices from Hypothesis' primitive.

Most of what the strategies draw is small integers (a rank, a side, a dtype's index, a fill's
seed: ~40 choices a forward call). Through ``draw(st.integers(lo, hi))`` each one costs a span,
a validation and the strategy's ``do_draw`` on top of the choice itself: 28 us against 6.5 us
for ``ConjectureData.draw_integer`` (one thread, Hypothesis 6.170; a third of a default run's
time was drawing). :func:`composite` is ``st.composite`` whose ``draw`` makes the choice of a
strategy from :func:`cached_integers` or :func:`cached_sampled` as that strategy's own
``do_draw`` would (the same ``draw_integer`` call with the same constraints), so a choice
sequence gives the same value either way (the example database, replay and shrinking see the
same choices); only the one-choice span around it is gone. Any other strategy, or a
Hypothesis without the primitive, is drawn as before (docs/decisions.md#engine-speed).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import cache, update_wrapper
from typing import Any

from hypothesis import strategies as st

#: ``id(strategy) -> its choice from a ConjectureData`` for the cached strategies (each is held
#: in ``_INTEGERS``/``_SAMPLED`` for the process's life, so its id is never reused)
_PRIMITIVES: dict[int, Callable[[Any], Any]] = {}
_INTEGERS: dict[tuple[int, int], st.SearchStrategy[int]] = {}
_SAMPLED: dict[tuple[Any, ...], st.SearchStrategy[Any]] = {}
_BOOLEANS: st.SearchStrategy[bool] | None = None


def cached_integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``, one object per range: drawing from an existing strategy object
    is several times cheaper than building one per draw, and :func:`composite`'s draw makes its
    choice directly."""
    key = (lo, hi)
    strategy = _INTEGERS.get(key)
    if strategy is None:
        strategy = _INTEGERS[key] = st.integers(lo, hi)
        _PRIMITIVES[id(strategy)] = _integer_choice(lo, hi)
    return strategy


def _integer_choice(lo: int, hi: int) -> Callable[[Any], int]:
    # st.integers' own do_draw: a range of more than 127 makes its ends and near-ends likelier
    weights = {lo: 2 / 128, lo + 1: 1 / 128, hi - 1: 1 / 128, hi: 2 / 128} \
        if hi - lo > 127 else None
    return lambda data: data.draw_integer(min_value=lo, max_value=hi, weights=weights)


def cached_sampled(elements: Sequence[Any]) -> st.SearchStrategy[Any]:
    """``st.sampled_from(elements)``, one object per (hashable) tuple of elements, as
    :func:`cached_integers`: a fresh strategy per draw is validated and its properties computed
    again each time (a few percent of a default run)."""
    key = tuple(elements)
    try:
        strategy = _SAMPLED.get(key)
    except TypeError:  # unhashable elements (a list among a hint's choices)
        return st.sampled_from(key)
    if strategy is None:
        strategy = _SAMPLED[key] = st.sampled_from(key)
        # one element is st.just: no choice at all, so none is made (its span neither)
        _PRIMITIVES[id(strategy)] = _sampled_choice(key) if len(key) > 1 else _only(key[0])
    return strategy


def _only(value: Any) -> Callable[[Any], Any]:
    return lambda data: value


def cached_booleans() -> st.SearchStrategy[bool]:
    """``st.booleans()``, one object, whose choice :func:`composite`'s draw makes itself
    (``ConjectureData.draw_boolean()``, as its own ``do_draw``)."""
    global _BOOLEANS
    if _BOOLEANS is None:
        _BOOLEANS = st.booleans()
        _PRIMITIVES[id(_BOOLEANS)] = lambda data: data.draw_boolean()
    return _BOOLEANS


def _sampled_choice(elements: tuple[Any, ...]) -> Callable[[Any], Any]:
    # st.sampled_from's own do_draw without a filter: one index
    top = len(elements) - 1
    return lambda data: elements[data.draw_integer(0, top)]


@cache
def _primitive_takes_our_call(kind: Any) -> bool:
    """Whether ``kind.draw_integer`` and ``kind.draw_boolean`` take the calls the cached
    strategies make (Hypothesis' ``draw_integer(min_value, max_value, *, weights)`` and
    ``draw_boolean(p)``, as of 6.170): else they are drawn through the strategy layer, as
    before."""
    try:
        params = inspect.signature(kind.draw_integer).parameters
        boolean = inspect.signature(kind.draw_boolean).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return {"min_value", "max_value", "weights"} <= set(params) and "p" in boolean


class Draw:
    """A composite strategy's ``draw`` that makes the cached strategies' choices itself."""

    __slots__ = ("data", "draw")

    def __init__(self, draw: Callable[..., Any]) -> None:
        self.draw = draw
        data = getattr(draw, "__self__", None)  # st.composite passes ConjectureData.draw
        kind: Any = type(data)
        self.data = data if data is not None and _primitive_takes_our_call(kind) else None

    def __call__(self, strategy: st.SearchStrategy[Any], label: Any = None) -> Any:
        if self.data is not None:
            fast = _PRIMITIVES.get(id(strategy))
            if fast is not None:
                return fast(self.data)
        return self.draw(strategy, label=label)


def composite(f: Callable[..., Any]) -> Callable[..., st.SearchStrategy[Any]]:
    """``st.composite`` whose ``draw`` is a :class:`Draw`."""
    def definition(draw: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return f(draw if isinstance(draw, Draw) else Draw(draw), *args, **kwargs)

    return st.composite(update_wrapper(definition, f))
