"""Shape menus: sizes drawn from a small set, for a backend that compiles per shape.

A backend that compiles a graph for every new input shape (XLA:
:attr:`conformance.core.backends.Backend.compiles_per_shape`) spent its run compiling: drawn
freely, every example and every shrink step was a new shape, and torch_xla on CPU decided ~0.1
items/s (630 graphs for ``eq.Scalar`` alone). With the menu on, every size the strategies draw
(a shape's sides, a symbolic letter's size, an index tensor's length, an output size list) is one
of a few: the graphs of an item's examples, of its other checks and of its shrink are compiled
once and reused. Values are not part of a graph and stay drawn as ever; the relations the hints impose
(broadcasting, shared letters, index ranges) are drawn as ever, on menu sizes.

The menu is on for the Hypothesis run of one item (:func:`fixed_shapes`, set by the engine); off,
the strategies draw exactly as they do without this module (the same choices, so the same
examples for a seed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: The sides of the menu, where a drawn range allows them: a broadcast 1 and two odd sizes (no
#: power of two a kernel could special-case; 5 only where a hint lets sides pass the default 3
#: or 4). Two or three sizes per range: at rank 3 and the default sides ``1..4``, 15 shapes
#: instead of 85. Size 0 is not among them: in a menu of three, Hypothesis' favourite choices
#: (either end) made it so frequent that most calls held one element or none (``sum.dim_IntList``
#: forward: 9 calls in 60 with two elements or more, 30 drawn freely; ``cumprod_backward``'s
#: promotion check, whose kernel returns early under two elements, then passed where it fails).
SIDES: tuple[int, ...] = (1, 3, 5)

#: Where a range allows size 0 (an empty dimension), one side in ``ZERO_ONE_IN`` is 0 (drawn
#: apart: about as many calls with an empty tensor as drawn freely), the others from the menu.
ZERO_ONE_IN = 8

_FIXED = False  # the menu is on for the item drawing now


@contextmanager
def fixed_shapes(on: bool) -> Iterator[None]:
    """The menu on (``on``) or off for the draws inside the block, as it was however the block
    ends."""
    global _FIXED
    before, _FIXED = _FIXED, on
    try:
        yield
    finally:
        _FIXED = before


def is_fixed() -> bool:
    """Whether sizes are drawn from the menu now."""
    return _FIXED


def menu(values: tuple[int, ...]) -> tuple[int, ...]:
    """The menu's sides for a drawn range of sizes ``values`` (in the order its simplest choice
    comes first): each value as the nearest side of :data:`SIDES` in the range (a tie to the
    larger), repeats dropped, so the order is kept: the forward strategy's middle-first range
    (2, 1, 0, 3, 4) starts at 3, as its free draw starts at a size that holds several elements
    (kept in order instead, its first side was 1, and at 40 drawn calls 5 held two elements or
    more, 26 drawn freely). The range's first value where it holds none of the sides. Ranks
    are not narrowed: 0 to 3 (4) is a small set already, and an op that takes one rank only
    would lose every input."""
    lo, hi = min(values), max(values)
    sides = [s for s in SIDES if lo <= s <= hi]
    if not sides:
        return values[:1]
    return tuple(dict.fromkeys(min(sides, key=lambda s: (abs(s - v), -s)) for v in values))
