"""Inputs from the schema: Hypothesis strategies built from argument types, tags and names.

No per-op code lives here. What the schema cannot say comes from the hints data
(``opdb/data/hints.yaml``, records and loading in :mod:`opdb.opdata`): string enums, ranges and
symbolic shapes, keyed by argument name or overload name.

The strategies draw a :class:`Call` — the overload, its arguments with tensors on CPU, and which
tensors stay on CPU when the call is moved to the device under test. Modes:

* ``forward``   one dtype for all tensor arguments; ``pointwise`` ops get mutually broadcastable
                shapes, other ops one shape for all tensors (unless a shape hint says otherwise).
* ``broadcast`` mutually broadcastable shapes up to rank 4 with size-0 and size-1 dims and 0-dim
                tensors, or (sometimes) a deliberately non-broadcastable set.
* ``dtypes``    a :class:`DtypeSweep`: one ``forward`` call per dtype of the twelve, that dtype
                pinned, so each is tried deliberately (:data:`SWEEP_SHAPES` drawn sets of
                shapes among them).
* ``promotion`` each operand (Tensor / Scalar positional arguments) independently a tensor,
                a 0-dim tensor, a 0-dim CPU tensor next to device tensors, or a Python scalar, with
                its own dtype among the twelve.
* ``autograd``  ``forward``-like calls in differentiable dtypes (:class:`AutogradCall`).

Checks that draw otherwise build on these: in-place variants (:mod:`.inplace_forms`), out= forms
(:mod:`.out_forms`), forward calls laid out as views (:mod:`.layouts`). A check names its
strategy in its record (``Check.draw``); :func:`draw_calls` builds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.core.call import AutogradCall, Call
from conformance.core.fills import Fill
from conformance.core.signature import DEFAULTED, DEVICE, ArgSpec, NoStrategy, OpSignature
from conformance.inputs.dims import is_dim_name
from conformance.inputs.drawing import cached_booleans, cached_integers, cached_sampled, composite
from conformance.inputs.shape_menus import ZERO_ONE_IN, is_fixed, menu
from conformance.inputs.values import (
    draw_fill,
    fixed_fill,
    python_scalars,
    scalar_values,
    small_scalars,
)
from opdb.dtypes import (
    BOOL,
    COMPLEX,
    DTYPE_NAMES,
    FLOATING,
    INTEGRAL,
    LOW_PRECISION,
    category,
    torch_dtype,
)
from opdb.model import family_of
from opdb.opdata import ArgHint, OpHints


def tensors(name: str, shape: Sequence[int], *, specials: bool = False, safe: bool = False,
            bounds: tuple[float, float] | None = None, extremes: bool = True
            ) -> st.SearchStrategy[torch.Tensor]:
    """A CPU tensor of dtype ``name`` and ``shape``: structure drawn, values filled by a seeded
    generator (:mod:`conformance.inputs.values`). ``specials``: adversarial values (special values and
    wide/tie profiles); ``safe``: values in [1, 4] that no op refuses, no choice drawn for them
    (:func:`~conformance.inputs.values.fixed_fill`: promotion compares dtypes
    only); ``bounds``: every element in ``[lo, hi]`` (a hint's min/max)."""
    return composite(lambda draw: _draw_tensor(draw, name, shape, specials=specials, safe=safe,
                                                  bounds=bounds, extremes=extremes))()


def _draw_tensor(draw: Any, name: str, shape: Sequence[int], *, specials: bool, safe: bool,
                 bounds: tuple[float, float] | None, extremes: bool, label: str = "",
                 plan: Plan | None = None, slot: tuple[str, int | None] | None = None,
                 pinned: bool = False) -> Any:
    """Draw a tensor; with ``plan`` and ``slot`` (argument, list index) its fill is recorded
    for the engine's refills when the plan's values are adversarial."""
    if safe:
        how = fixed_fill(name, shape, bounds=bounds or (1.0, 4.0), extremes=extremes,
                         label=label)
    else:
        how = draw_fill(draw, name, shape, adversarial=specials, bounds=bounds,
                        extremes=extremes, label=label,
                        seed_only=plan is not None and plan.refilled)
    if pinned:
        how = replace(how, pinned=True)
        if plan is not None and slot is not None:
            plan.pinned.add(slot)
    if plan is not None and slot is not None and plan.specials and how.numel:
        plan.fills.append((*slot, how))
        if plan.refilled:  # checked refilled only: every refill fills it anew, so the drawn
            # values would never be read (a dtypes sweep filled twelve calls' tensors for none)
            return torch.zeros(how.shape, dtype=torch_dtype(how.name))
    return how.tensor()


@dataclass
class Plan:
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    python: dict[str, Any] = field(default_factory=dict)
    on_cpu: set[str] = field(default_factory=set)
    specials: bool = False  # adversarial values (conformance.inputs.values)
    safe: bool = False
    #: every tensor is checked refilled (Call.refill, i >= 1), never as drawn: an adversarial
    #: fill draws its seed alone (draw_fill's ``seed_only``)
    refilled: bool = False
    notes: list[str] = field(default_factory=list)
    fills: list[tuple[str, int | None, Fill]] = field(default_factory=list)
    #: (argument, list index or None) of the tensors whose dtype a hint fixes (Call.pinned)
    pinned: set[tuple[str, int | None]] = field(default_factory=set)
    target: str | None = None  # every ScalarType argument pinned to this dtype (dtype pairs)
    kind: type[Call] = Call  # the Call variant assembled (AutogradCall: its repro backpropagates)
    list_form: tuple[tuple[int, ...], int] | None = None  # first Tensor[]'s (shape, length)
    lists_zipped: bool | None = None  # later Tensor[]s take list_form (drawn at the second)


def _symbolic_shapes(draw: Any, sig: OpSignature, hints: OpHints, max_side: int,
                     order: str = "small", large: int | None = None
                     ) -> dict[str, tuple[int, ...]]:
    """Shapes of tensor arguments, and values of ``int[]`` arguments (``normalized_shape``),
    from the hints' symbolic shapes: one drawn size per letter, shared by the overload's args.
    ``large``: the size of the first shape's last letter (mm's inner ``k``)."""
    sizes: dict[str, int] = {}
    if large is not None:
        first = next((hints.get(a.name).shape for a in sig.args if not a.is_out
                      and hints.get(a.name).shape), None)
        letter = next((d for d in reversed(first or ()) if isinstance(d, str)), None)
        if letter is not None:
            sizes[letter] = large
    out: dict[str, tuple[int, ...]] = {}
    for a in sig.args:
        if a.is_out or not (a.is_tensor or a.is_list and a.base in ("int", "SymInt", "Tensor")):
            continue  # (a Tensor[]'s: the shape of each of its tensors)
        sym = hints.get(a.name).shape
        if sym is None:
            continue
        dims = []
        for d in sym:
            if isinstance(d, int):
                dims.append(d)
            else:
                if d not in sizes:
                    sizes[d] = _side(draw, 1, max_side, order, f"size {d}")
                dims.append(sizes[d])
        out[a.name] = tuple(dims)
    return out


#: How a drawn size maps Hypothesis' choice to a value (its simplest choice comes first, and
#: its early examples are simple ones): ``small`` (``lo`` first: shrinks toward it), ``large``
#: (``hi`` first: the dtypes check, which does not shrink) or ``middle`` (the middle of the
#: range first, then down to ``lo``, then up to ``hi``: shrinks toward a small tensor that
#: still holds several elements, and Hypothesis' favourite choices, the range's two ends, are
#: the middle and the largest size). The forward strategy draws ``middle``: drawn ``small``,
#: its calls at the default depth held one element or none (div.Tensor: 10 drawn calls, 0-dim
#: or [1] operands, CPU's vectorized loops never reached).
SIZE_ORDERS = ("small", "large", "middle")


@lru_cache(maxsize=256)
def _order_values(lo: int, hi: int, order: str) -> tuple[int, ...]:
    if order == "large":
        return tuple(range(hi, lo - 1, -1))
    if order == "middle":
        pivot = lo + (hi - lo + 1) // 2
        return tuple(range(pivot, lo - 1, -1)) + tuple(range(pivot + 1, hi + 1))
    return tuple(range(lo, hi + 1))


def _side(draw: Any, lo: int, hi: int, order: str, label: str, *, size: bool = True) -> int:
    """An integer in ``[lo, hi]`` in size order ``order`` (:data:`SIZE_ORDERS`); a ``size``
    (not a rank) from the shape menu when it is on (:mod:`conformance.inputs.shape_menus`)."""
    if size and is_fixed():
        # the middle choice is 0, not the first: shrinks go toward a side that is not empty
        if lo == 0 < hi and draw(cached_integers(0, ZERO_ONE_IN - 1),
                                 label=f"{label} empty?") == ZERO_ONE_IN // 2:
            return 0
        return draw(cached_sampled(menu(_order_values(lo, hi, order))), label=label)
    k = draw(cached_integers(lo, hi), label=label)
    return _order_values(lo, hi, order)[k - lo]


def _shape(draw: Any, *, max_dims: int, min_side: int, max_side: int, label: str,
           order: str = "small") -> tuple[int, ...]:
    """One shape of rank 0..max_dims (shrinks toward rank 0, then small sides). Drawn with
    cached integer strategies: :func:`hypothesis.extra.numpy.array_shapes` costs ~4x more per
    example, and shapes are drawn for every example. ``order``: which sizes come first
    (:data:`SIZE_ORDERS`)."""
    rank = _side(draw, 0, max_dims, order, f"{label} rank", size=False)
    return tuple(_side(draw, min_side, max_side, order, f"{label} side")
                 for _ in range(rank))


def _broadcastable_shapes(draw: Any, n: int, *, max_dims: int, min_side: int, max_side: int,
                          square: bool = False, order: str = "small"
                          ) -> list[tuple[int, ...]]:
    """``n`` mutually broadcastable shapes: a base shape; each operand drops some leading dims
    and has some of the others 1 (what :func:`hypothesis.extra.numpy.mutually_broadcastable_shapes`
    draws, at a fraction of its cost per example). ``square``: half the time every side of the
    base is equal (the broadcast check)."""
    base = _shape(draw, max_dims=max_dims, min_side=min_side, max_side=max_side,
                  label="broadcast base", order=order)
    if square and len(base) > 1 and draw(cached_integers(0, 1), label="broadcast base square?"):
        # every side equal: an operand of lower rank aligned against the wrong dimensions
        # (left instead of right) still fits, and computes wrong values instead of raising
        base = (base[-1],) * len(base)
    out = []
    for i in range(n):
        drop = draw(cached_integers(0, len(base)), label=f"operand {i} dropped dims")
        out.append(tuple(1 if draw(cached_integers(0, 3), label=f"operand {i} dim is 1?") == 3
                         else side for side in base[drop:]))
    return out


#: One drawn call in ``LARGE_ONE_IN`` has a large size: bugs past a threshold (a narrow
#: accumulator wrapping after 256 steps, a vector tail, a tile or block boundary) are out of
#: reach at the handful of elements per side drawn otherwise. The size is one of
#: :data:`LARGE_SIDES` along one dimension (the last of the shared shape, or of the first
#: symbolic shape: mm's inner size), the other sides as drawn; a pointwise op's operands are
#: instead all one vector of :data:`HUGE_SIDE` elements (past 2**16, cheap elementwise). Not
#: for an op whose hints cap its sides (``max_side``: costly per element, conv3d).
#:
#: On since issue 26's fixed-seed tests of other checks were given their inputs (the extra draw
#: shifts every later choice of Hypothesis' stream; a test must not depend on a seed drawing
#: its call): docs/decisions.md#large-sizes-on. Tested in tests/conformance/inputs/test_large_sizes.py.
LARGE_ONE_IN = 32
LARGE_SIDES = (257, 1025)
HUGE_SIDE = 2**16 + 1


def _large_side(draw: Any, sig: OpSignature, hints: OpHints) -> int | None:
    """The large size of this drawn call (:data:`LARGE_ONE_IN`), or ``None``."""
    # the middle choice, not 0: Hypothesis favours the simplest choice (0) far above its share,
    # and shrinks toward it; a failing small call must not shrink into a large one
    # (none from the shape menu: a large size is a graph of its own)
    if not LARGE_ONE_IN or hints.max_side is not None or is_fixed() \
            or draw(cached_integers(0, LARGE_ONE_IN - 1), label="large size?") != LARGE_ONE_IN // 2:
        return None
    sides = (*LARGE_SIDES, HUGE_SIDE) if sig.is_pointwise else LARGE_SIDES
    return sides[draw(cached_integers(0, len(sides) - 1), label="large side")]


def _enlarged(shapes: dict[str, tuple[int, ...]], free: list[str], side: int
              ) -> dict[str, tuple[int, ...]]:
    """The free (not symbolic) shapes with ``side`` as their last size (a broadcast 1 kept),
    or all of them one vector of ``side`` elements for :data:`HUGE_SIDE`."""
    out = dict(shapes)
    for name in free:
        s = shapes[name]
        if side == HUGE_SIDE:
            out[name] = (side,)
        elif s and s[-1] != 1:
            out[name] = (*s[:-1], side)
    return out


def draw_shapes(draw: Any, sig: OpSignature, hints: OpHints, *, mode: str,
            large_first: bool = False, empty: bool = True) -> dict[str, tuple[int, ...]]:
    """Shapes for the tensor arguments (list elements use the first tensor's shape);
    ``large_first``: largest first (:data:`SIZE_ORDERS`), else the ``forward`` mode's middle
    first and the others' smallest first. Now and then one size is large (:data:`LARGE_ONE_IN`).
    ``empty=False`` (or the hints' ``nonempty``): no size-0 side where the schema's shapes are
    drawn (symbolic sizes and hints keep theirs)."""
    names = [a.name for a in sig.tensor_args]
    empty = empty and not hints.nonempty
    max_side = hints.max_side or (3 if mode == "broadcast" else 4)
    order = "large" if large_first else "middle" if mode == "forward" else "small"
    large = _large_side(draw, sig, hints)
    fixed = _symbolic_shapes(draw, sig, hints, max_side, order,
                             large=large if large != HUGE_SIDE else None)
    if not names:
        return fixed
    free = [n for n in names if n not in fixed]
    if not free:
        return fixed
    if mode == "broadcast" or (sig.is_pointwise and len(free) > 1):
        max_dims = 4 if mode == "broadcast" else 3
        bshapes = _broadcastable_shapes(draw, len(free), max_dims=max_dims,
                                        min_side=0 if mode == "broadcast" and empty else 1,
                                        max_side=max_side, square=mode == "broadcast",
                                        order=order)
        shapes = dict(zip(free, bshapes, strict=True))
        if mode == "forward" and empty and draw(cached_integers(0, 9), label="size-0 dim?") == 0:
            # now and then a size-0 dimension, shared by every operand
            shapes = {k: s[:-1] + (0,) if s and s[-1] != 1 else s for k, s in shapes.items()}
    else:
        one = _shape(draw, max_dims=3, min_side=0 if empty else 1, max_side=max_side,
                     label="shape", order=order)
        shapes = dict.fromkeys(free, one)
    if large is not None and not fixed:
        shapes = _enlarged(shapes, free, large)
    shapes.update(fixed)
    return shapes


def _rank(plan: Plan, sig: OpSignature) -> int:
    for a in sig.tensor_args:
        if a.name in plan.shapes:
            return len(plan.shapes[a.name])
    return 0


def _first_shape(plan: Plan, sig: OpSignature) -> tuple[int, ...]:
    for a in sig.tensor_args:
        if a.name in plan.shapes:
            return plan.shapes[a.name]
    return ()


def _int_list(draw: Any, spec: ArgSpec, hint: ArgHint, plan: Plan, sig: OpSignature) -> list[int]:
    name = spec.name
    if name in plan.shapes:  # a symbolic shape from the hints (normalized_shape = [d])
        return list(plan.shapes[name])
    rank = _rank(plan, sig)
    hinted = hint.length is not None or hint.min is not None or hint.max is not None
    if name in ("dim", "dims") and hint.length is None and hint.max is None:
        r = max(rank, 1)
        def wrapped(d: int) -> int:
            return d % r

        # a hint's min 0: wrapped dims only (a private op whose callers wrap them: _fft_c2c)
        lo = -r if hint.min is None else max(-r, min(int(hint.min), r - 1))
        picked: list[int] = draw(st.lists(st.integers(lo, r - 1), max_size=r,
                                          unique_by=wrapped), label=name)
        return picked
    if not hinted and (name in ("size", "shape", "sizes")
                       or ("size" in name and spec.base == "SymInt")):
        first = _first_shape(plan, sig)
        numel = math.prod(first)
        n = spec.list_size  # SymInt[2] output_size: exactly that many (CPU refuses others)
        shaped = [s for s in ([list(first), [numel], [-1], list(reversed(first))] if not n
                              else [list(first[-n:]), list(reversed(first))[:n]])
                  if not n or len(s) == n]
        sizes = cached_sampled(menu(tuple(range(5))) + (0,)) if is_fixed() else st.integers(0, 4)
        return draw((st.sampled_from(shaped) if shaped else st.nothing())
                    | st.lists(sizes, min_size=n or 0, max_size=n or 3), label=name)
    length = hint.length or spec.list_size
    lo = int(hint.min) if hint.min is not None else 0
    hi = int(hint.max) if hint.max is not None else 3
    if length:
        return draw(st.lists(st.integers(lo, hi), min_size=length, max_size=length), label=name)
    return draw(st.lists(st.integers(lo, hi), max_size=3), label=name)


def _scalar(draw: Any, plan: Plan, sig: OpSignature, name: str, hint: ArgHint) -> Any:
    dt = next(iter(plan.dtypes.values()), "float32")
    if hint.min is not None or hint.max is not None:
        return draw(scalar_values(dt, bounds=_bounds(hint)), label=name)
    if plan.specials:
        return draw(scalar_values(dt, extremes=hint.extremes), label=name)
    return draw(small_scalars(dt), label=name)


def _value(draw: Any, spec: ArgSpec, hint: ArgHint, plan: Plan, sig: OpSignature,
           required: bool = False) -> Any:
    """One non-tensor argument (or ``_OMIT``); ``required``: an optional one given, not None
    (the one of its overload's ``one_of`` arguments the call gives)."""
    if hint.choices is not None:
        return draw(cached_sampled(hint.choices), label=spec.name)
    base = spec.base
    if base in DEFAULTED:
        if base == "Device":  # results go where the call runs (linspace.Tensor_Tensor, to, ...)
            return DEVICE
        # an optional argument without a default value (``Generator? generator`` of
        # ``rand.generator``) must be given: torch's binding refuses a call that leaves it out
        return _OMIT if spec.has_default_value else None
    # optional arguments take their default (None) one time in three, as tensors do: the
    # default path is the one most calls take (nan_to_num's posinf=None maps inf to finfo.max)
    if spec.optional and not required and base not in ("ScalarType",) \
            and draw(cached_integers(0, 2), label=f"{spec.name} is None?") == 0:
        return None
    if base == "ScalarType":
        if plan.target is not None:
            return torch_dtype(plan.target)
        if spec.optional and not required \
                and draw(cached_integers(0, 2), label=f"{spec.name} given?") != 0:
            return None
        return torch_dtype(draw(cached_sampled(DTYPE_NAMES), label=spec.name))
    if base in ("int", "SymInt"):
        if spec.is_list:
            return _int_list(draw, spec, hint, plan, sig)
        if is_dim_name(spec.name):  # any spelling of a dim, within its hint's bounds
            r = max(_rank(plan, sig), 1)
            lo = -r if hint.min is None else min(max(-r, int(hint.min)), r - 1)
            hi = r - 1 if hint.max is None else max(min(r - 1, int(hint.max)), lo)
            return draw(cached_integers(lo, hi), label=spec.name)
        lo = int(hint.min) if hint.min is not None else 0
        hi = int(hint.max) if hint.max is not None else 3
        return draw(cached_integers(lo, hi), label=spec.name)
    if base == "bool":
        if spec.is_list:
            n = spec.list_size or 2
            return draw(st.lists(st.booleans(), min_size=n, max_size=n), label=spec.name)
        return draw(cached_booleans(), label=spec.name)
    if base == "float":
        flo = float(hint.min) if hint.min is not None else -2.0
        fhi = float(hint.max) if hint.max is not None else 2.0
        strat = st.floats(flo, fhi, allow_subnormal=False)
        if spec.is_list:
            n = hint.length or spec.list_size or 2
            return draw(st.lists(strat, min_size=n, max_size=n), label=spec.name)
        return draw(strat, label=spec.name)
    if base == "Scalar":
        if spec.is_list:
            return draw(st.lists(st.integers(-3, 3), min_size=1, max_size=3), label=spec.name)
        if spec.name in plan.python:
            return plan.python[spec.name]
        return _scalar(draw, plan, sig, spec.name, hint)
    if base == "str":
        if spec.has_default_value:
            return _OMIT
        raise NoStrategy(f"argument 'str {spec.name}' needs its choices in opdb/data/hints.yaml")
    if spec.has_default_value:
        return _OMIT
    if spec.optional:  # given, as None (see the DEFAULTED types above)
        return None
    raise NoStrategy(f"argument '{spec.type} {spec.name}' has a type the strategies cannot draw")


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


_OMIT = _Omit()


def _tensor_arg(draw: Any, spec: ArgSpec, hint: ArgHint, plan: Plan, sig: OpSignature) -> Any:
    if spec.name in plan.python:
        return plan.python[spec.name]
    if spec.optional and spec.name not in plan.shapes:
        return None
    if spec.optional and draw(cached_integers(0, 2), label=f"{spec.name} is None?") == 0:
        return None
    shape = plan.shapes.get(spec.name, _first_shape(plan, sig))
    dtype = plan.dtypes.get(spec.name) or next(iter(plan.dtypes.values()), "float32")
    if hint.dtypes:
        dtype = draw(cached_sampled(hint.dtypes), label=f"{spec.name} dtype")
    return _draw_tensor(draw, dtype, shape, specials=plan.specials, safe=plan.safe,
                        bounds=_bounds(hint), extremes=hint.extremes, label=spec.name,
                        plan=plan, slot=(spec.name, None), pinned=bool(hint.dtypes))


def _bounds(hint: ArgHint) -> tuple[float, float] | None:
    if hint.min is None and hint.max is None:
        return None
    return (hint.min if hint.min is not None else 0, hint.max if hint.max is not None else 3)


def _tensor_list(draw: Any, spec: ArgSpec, hint: ArgHint, plan: Plan, sig: OpSignature) -> Any:
    if spec.elem_optional:  # Tensor?[] indices: 1..rank index tensors as the hint describes
        if not hint.dtypes:
            raise NoStrategy(f"argument '{spec.type} {spec.name}' needs a hint")
        n = draw(cached_integers(1, max(1, len(_first_shape(plan, sig)))), label=f"len({spec.name})")
        out: list[Any] = []
        for i in range(n):
            dt = draw(cached_sampled(hint.dtypes), label=f"{spec.name}[{i}] dtype")
            length = _side(draw, 0, 3, "small", f"{spec.name}[{i}] length")
            out.append(_draw_tensor(draw, dt, (length,), specials=False, safe=False,
                                    bounds=_bounds(hint), extremes=hint.extremes,
                                    label=f"{spec.name}[{i}]", plan=plan, slot=(spec.name, i),
                                    pinned=True))
        return out
    if hint.maybe_empty and plan.list_form is not None and draw(
            cached_booleans(), label=f"{spec.name} empty?"):
        return []  # an optional state list (hints: maybe_empty), left out as its op allows
    dtype = plan.dtypes.get(spec.name) or next(iter(plan.dtypes.values()), "float32")
    if plan.list_form is not None and plan.lists_zipped is None:
        # foreach and fused-optimizer ops zip their tensor lists (``_fused_adam_``'s six:
        # params, grads, moments, steps), which drawn apart matched once in hundreds: mostly
        # (and when shrunk) every later list takes the first's length and shape, one choice
        # per call (chosen per list, all six agreed 1 in 4); sometimes all are drawn apart
        # (lstm's hx and params differ)
        plan.lists_zipped = draw(cached_integers(0, 3), label="lists zipped?") < 3
    if plan.list_form is not None and plan.lists_zipped:
        shape, n = plan.list_form
    else:
        if any(a.name in plan.shapes for a in sig.tensor_args):
            shape = _first_shape(plan, sig)
        elif is_fixed():
            shape = _shape(draw, max_dims=2, min_side=0, max_side=3, label="list shape")
        else:
            shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
                         label="list shape")
        n = draw(cached_integers(1, 3), label=f"len({spec.name})")
        if plan.list_form is None:
            plan.list_form = (shape, n)
    # a hinted shape for this list's tensors (fused Adam's state_steps: one 0-dim step each)
    shape = plan.shapes.get(spec.name, shape)
    return [_draw_tensor(draw, dtype, shape, specials=plan.specials, safe=plan.safe, bounds=None,
                         extremes=hint.extremes, label=f"{spec.name}[{i}]", plan=plan,
                         slot=(spec.name, i)) for i in range(n)]


def _out_arg(draw: Any, spec: ArgSpec, hint: ArgHint, plan: Plan,
             drawn: Sequence[tuple[str, Any]]) -> Any:
    first = next(iter(plan.dtypes.values()), "float32")
    # mostly the operands' dtype (what most ops return); sometimes another, which CPU may refuse
    pool = hint.dtypes or (first, first, first, "float32", "int64", "bool")
    dt = draw(cached_sampled(tuple(pool)), label=f"{spec.name} dtype")
    if not spec.is_list:
        return torch.empty(0, dtype=torch_dtype(dt))
    # a Tensor[] out= (``_foreach_exp.out``, ``_fused_adam.out``, ``unbind_copy.int_out``) needs
    # one tensor per result, a count the schema does not give: the length of the first tensor
    # list among the inputs (one result per element: foreach and fused ops), else drawn (a
    # split's or unbind's count of pieces; CPU refuses the wrong ones)
    lists = [v for _, v in drawn if isinstance(v, list) and v
             and all(isinstance(t, torch.Tensor) for t in v)]
    n = len(lists[0]) if lists else draw(cached_integers(0, 4), label=f"len({spec.name})")
    return [torch.empty(0, dtype=torch_dtype(dt)) for _ in range(n)]


def assemble(draw: Any, sig: OpSignature, hints: OpHints, plan: Plan) -> Call:
    values: list[tuple[str, Any]] = []
    given = draw(cached_sampled(hints.one_of), label="one_of") if hints.one_of else None
    for spec in sig.args:
        hint = hints.get(spec.name)
        if spec.name in hints.one_of and spec.name != given:
            values.append((spec.name, None))
            continue
        if spec.is_out:
            values.append((spec.name, _out_arg(draw, spec, hint, plan, values)))
            continue
        if spec.base == "Tensor" and spec.is_list:
            v = _tensor_list(draw, spec, hint, plan, sig) if not (spec.optional and draw(
                cached_integers(0, 3), label=f"{spec.name} is None?") == 0) else None
        elif spec.base == "Tensor":
            drawn = dict(values)
            _shape_along(plan, spec.name, hint, drawn)
            v = _tensor_arg(draw, spec, _along(hint, drawn), plan, sig)
        else:
            v = _value(draw, spec, hint, plan, sig, required=spec.name == given)
        if v is _OMIT:
            continue
        if hint.device == "cpu" and spec.base == "Tensor":
            plan.on_cpu.add(spec.name)
        values.append((spec.name, v))
    return plan.kind(sig=sig, values=tuple(values), on_cpu=frozenset(plan.on_cpu),
                     notes=tuple(plan.notes), fills=tuple(plan.fills),
                     pinned=frozenset(plan.pinned))


def _shape_along(plan: Plan, name: str, hint: ArgHint, drawn: dict[str, Any]) -> None:
    """A tensor holding one slice of ``self`` per element of an index (hint ``along: dim``,
    ``length_of: index``: index_add's, index_copy's source) gets ``self``'s drawn shape with
    its size along the drawn ``dim`` set to the index's length; drawn with ``self``'s shape,
    it fit only when the index happened to be as long as ``self`` along ``dim``."""
    if hint.along is None or hint.length_of is None:
        return
    self_, dim, index = drawn.get("self"), _along_dim(hint, drawn), drawn.get(hint.length_of)
    if not (isinstance(self_, torch.Tensor) and isinstance(dim, int)
            and isinstance(index, torch.Tensor)):
        return
    shape = list(self_.shape)
    if shape:
        shape[dim % len(shape)] = index.shape[0] if index.dim() else 1
    plan.shapes[name] = tuple(shape)


def _along_dim(hint: ArgHint, drawn: dict[str, Any]) -> Any:
    """The dim an ``along`` hint indexes ``self`` along: the drawn value of the int argument it
    names, or the dim it gives (an integer)."""
    return hint.along if isinstance(hint.along, int) else drawn.get(hint.along or "")


def _along(hint: ArgHint, drawn: dict[str, Any]) -> ArgHint:
    """An index tensor's hint (``along: dim``, or a fixed dim) with its values bounded by
    ``self``'s size along that dim: every position valid, negative ones included (``[-n, n)``)
    unless the hint's ``min`` says otherwise; size 0 leaves the hint as it is (CPU rejects)."""
    if hint.along is None or hint.length_of is not None:
        return hint
    self_, dim = drawn.get("self"), _along_dim(hint, drawn)
    if not isinstance(self_, torch.Tensor) or not isinstance(dim, int):
        return hint
    n = self_.shape[dim % self_.dim()] if self_.dim() else 1
    if not n:
        return hint
    lo = -n if hint.min is None else max(hint.min, -n)
    return replace(hint, min=lo, max=n - 1)


def tensor_arg_dtypes(draw: Any, sig: OpSignature, hints: OpHints, pool: Sequence[str]
                       ) -> dict[str, str]:
    """One dtype for every tensor argument (mixing is the promotion check's job)."""
    shared = draw(cached_sampled(tuple(pool)), label="dtype")
    return {a.name: shared for a in (*sig.tensor_args, *tensor_lists(sig))}


def tensor_lists(sig: OpSignature) -> tuple[ArgSpec, ...]:
    """``Tensor[]`` arguments whose elements take the call's dtype (``cat``'s tensors; not
    ``Tensor?[]`` index lists, whose dtypes the hints give)."""
    return tuple(a for a in sig.args if a.base == "Tensor" and a.is_list and not a.is_out
                 and not a.elem_optional)


@composite
def forward_calls(draw: Any, sig: OpSignature, hints: OpHints, dtype: str | None = None,
                  target: str | None = None, large_first: bool = False,
                  empty: bool = True) -> Call:
    """Calls for the ``forward`` check; ``dtype`` pins the tensor arguments' shared dtype
    (arguments whose dtypes the hints fix keep those), ``target`` every ScalarType argument;
    ``large_first``: shapes drawn largest first (:func:`_shape`); ``empty``: size-0 sides
    drawn too (:func:`draw_shapes`)."""
    shapes = draw_shapes(draw, sig, hints, mode="forward", large_first=large_first,
                         empty=empty)
    return _forward_call(draw, sig, hints, shapes, dtype=dtype, target=target)


def _forward_call(draw: Any, sig: OpSignature, hints: OpHints, shapes: dict[str, tuple[int, ...]],
                  *, dtype: str | None, target: str | None, refilled: bool = False) -> Call:
    """:func:`forward_calls` on drawn ``shapes`` (not changed: the plan takes a copy);
    ``refilled``: :attr:`Plan.refilled`."""
    dtypes = tensor_arg_dtypes(draw, sig, hints, (dtype,) if dtype else DTYPE_NAMES)
    plan = Plan(shapes=dict(shapes), dtypes=dtypes, specials=True, target=target,
                refilled=refilled)
    return assemble(draw, sig, hints, plan)


@dataclass(frozen=True)
class DtypeSweep:
    """What the ``dtypes`` mode draws: one forward call per dtype, ``(dtype, call)`` in the
    order of :data:`~opdb.dtypes.DTYPE_NAMES`, each drawn with that dtype pinned."""

    calls: tuple[tuple[str, Call], ...]

    @property
    def tensor_dtypes(self) -> frozenset[str]:
        return frozenset().union(*(c.tensor_dtypes for _, c in self.calls))

    def describe(self) -> str:
        return "; ".join(c.describe() for _, c in self.calls)


#: The refills a sweep's calls are checked with (:meth:`Call.refill`, dtype kept), in turn
#: along the dtypes (:func:`_sweep_refills`): plain values, refill 2's forced NaN, refill 5's
#: forced +inf (:data:`~conformance.inputs.values.FORCED_HEADLINE`). Drawn at random, a NaN or an infinity
#: reaches a given dtype's tensor in about one call in seven, and three sweeps are drawn at the
#: default depth: ``sort``'s NaN order or ``nan_to_num``'s float64 infinity went unseen.
SWEEP_REFILLS: tuple[int, ...] = (1, 2, 5)


def _sweep_refills(calls: Sequence[Call]) -> list[int]:
    """The refill each call of a sweep (one per dtype, in :data:`DTYPE_NAMES` order) is
    checked with: :data:`SWEEP_REFILLS` in turn along the dtypes, from an offset set by the
    first call's seed, so every sweep gives a NaN and an infinity to some dtypes of each
    category with three or more (floating: one or two of the four). Picked by each call's own
    seed, a sweep's calls all drawn simplest (seed 0: Hypothesis' first sweep, the largest
    shapes) got the plain refill at every dtype."""
    lead = calls[0].fills[0][2].seed if calls and calls[0].fills else 0
    return [SWEEP_REFILLS[(j + lead) % len(SWEEP_REFILLS)] for j in range(len(calls))]


#: Sets of shapes a sweep draws; dtype ``j`` of :data:`DTYPE_NAMES` takes set ``j % 3``, so each
#: set serves one dtype of each kind (float16, float64 and two integers; bfloat16, complex64 ...).
#: Drawn per dtype, shapes and fills were most of a sweep's choices; one set for all twelve
#: cut the shapes an item tries for valid input twelvefold (an op refusing most shapes,
#: histogramdd's "at least 2 dimensions", found none in its budget of sweeps); three cost
#: about what one does (7-10 ms a sweep against 11-18 ms drawn apart).
SWEEP_SHAPES = 3


def dtype_sweeps(sig: OpSignature, hints: OpHints) -> st.SearchStrategy[DtypeSweep]:
    """Sweeps for the ``dtypes`` check: the forward strategy once per dtype, dtype pinned; for a
    conversion with a ``ScalarType`` argument (``dtype_pairs`` in ``opdb/data/exactness.yaml``)
    once per (dtype, target) pair of the twelve. The check does not shrink, so shapes are drawn
    largest first: Hypothesis' first examples are its simplest, and at three sweeps over half of
    the calls had one element or none (one rounding of a conversion per pair).

    The twelve calls of a sweep share :data:`SWEEP_SHAPES` drawn sets of shapes; each dtype
    draws its own values and other arguments (a Python scalar drawn for its dtype), and its
    tensors' seeds alone (checked refilled: :attr:`Plan.refilled`). Drawn apart, shapes and
    fills were most of a sweep's 350 choices (add.Tensor) and Hypothesis' drawing half of the
    check's time, while what one dtype is tried on is as before: its shapes are the forward
    strategy's (one call in four or five all size-0, one in 32 large), its values its own
    (docs/decisions.md#engine-speed)."""
    return _sweeps(sig, hints, pairs=_dtype_pairs(sig))


@composite
def _sweeps(draw: Any, sig: OpSignature, hints: OpHints, *, pairs: bool) -> DtypeSweep:
    shapes = [draw_shapes(draw, sig, hints, mode="forward", large_first=True)
              for _ in range(SWEEP_SHAPES)]
    cs = [_forward_call(draw, sig, hints, shapes[j % SWEEP_SHAPES], dtype=d,
                        target=d if pairs else None, refilled=not pairs)
          for j, d in enumerate(DTYPE_NAMES)]
    if pairs:  # one call drawn per dtype, refilled for each of the twelve targets
        return DtypeSweep(tuple((d, _retarget(c.refill(j, move=False), t))
                                for d, c in zip(DTYPE_NAMES, cs, strict=True)
                                for j, t in enumerate(DTYPE_NAMES)))
    # values from each call's seeded refill: the check does not shrink, and Hypothesis' first
    # examples are its simplest (profile ``small``, no specials) at every dtype
    return DtypeSweep(tuple((d, c.refill(i, move=False))
                            for d, c, i in zip(DTYPE_NAMES, cs, _sweep_refills(cs), strict=True)))


def _retarget(call: Call, target: str) -> Call:
    """``call`` with every ``ScalarType`` argument set to ``target``."""
    dt = torch_dtype(target)
    return replace(call, values=tuple((n, dt if isinstance(v, torch.dtype) else v)
                                      for n, v in call.values))


def _dtype_pairs(sig: OpSignature) -> bool:
    """Whether ``sig`` converts to a ``ScalarType`` argument's dtype (the data says so)."""
    if not any(a.base == "ScalarType" and not a.is_list for a in sig.args):
        return False
    from opdb import exactness

    entry = exactness.load().entry_for(sig.name, family=family_of(sig.base)[0], tags=sig.tags,
                                       is_view=False)
    return entry is not None and entry.dtype_pairs


#: Dtypes the ``autograd`` check draws: those torch differentiates, less the low-precision ones
#: (their gradients round at every step of a backward formula; the forward check covers them).
AUTOGRAD_DTYPES: tuple[str, ...] = tuple(n for n in FLOATING + COMPLEX if n not in LOW_PRECISION)


@composite
def autograd_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``autograd`` check: as ``forward`` draws them, in differentiable dtypes
    and finite values (:class:`AutogradCall`s, so the repro backpropagates too)."""
    # no size-0 dimensions: an empty gradient shows nothing, and CPU's own backward of some ops
    # (native_batch_norm) dies of SIGFPE on one, which would lose the whole item
    shapes = {k: tuple(max(d, 1) for d in s)
              for k, s in draw_shapes(draw, sig, hints, mode="forward").items()}
    dtypes = tensor_arg_dtypes(draw, sig, hints, AUTOGRAD_DTYPES)
    plan = Plan(shapes=shapes, dtypes=dtypes, kind=AutogradCall)
    return assemble(draw, sig, hints, plan)


@composite
def broadcast_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``broadcast`` check: broadcastable shapes, or (1 in 5) a conflicting set."""
    shapes = draw_shapes(draw, sig, hints, mode="broadcast")
    notes = []
    names = [a.name for a in sig.tensor_args if not a.optional]
    if len(names) >= 2 and draw(cached_integers(0, 4), label="non-broadcastable?") == 0:
        # make the first two operands disagree in one trailing dimension (neither is 1)
        a, b = names[0], names[1]
        sa, sb = list(shapes[a]) or [2], list(shapes[b]) or [3]
        sa[-1], sb[-1] = 2, 3
        shapes[a], shapes[b] = tuple(sa), tuple(sb)
        notes.append("non-broadcastable")
    dtype = draw(cached_sampled(("float32", "int64", "bool", "float64")), label="dtype")
    plan = Plan(shapes=shapes, dtypes={a.name: dtype for a in sig.tensor_args}, notes=notes)
    return assemble(draw, sig, hints, plan)


#: Promotion operand forms.
OPERAND_KINDS = ("tensor", "zerodim", "cpu_zerodim", "python")


_CATEGORY_MEMBERS = {"bool": BOOL, "integral": INTEGRAL, "floating": FLOATING, "complex": COMPLEX}


#: A Python scalar of the next category promotes a tensor's category (int tensor * 0.5 is
#: float32, float tensor * 1j complex); of the same or a lower one it leaves the dtype.
_NEXT_CATEGORY = {"bool": "integral", "integral": "floating", "floating": "complex",
                  "complex": "complex"}


def related(lead: str, kind: str = "python") -> tuple[str, ...]:
    """Dtypes for a later Python-scalar or 0-dim operand where promotion rules are most often
    got wrong, given the first operand's dtype ``lead``. A Python scalar: the next category up
    (the scalar's kind sets the result's category: int tensor * 0.5 is float32, not float64;
    float tensor * 1j complex). A 0-dim tensor: its own category too (a wider 0-dim operand of
    the same category does not promote: float32 + float64 0-dim is float32) and the next one
    up (whose dtype it does give: int32 * float64 0-dim is float64)."""
    up = _CATEGORY_MEMBERS[_NEXT_CATEGORY[category(lead)]]
    if kind == "python":
        return up
    return tuple(dict.fromkeys(_CATEGORY_MEMBERS[category(lead)] + up))


@composite
def promotion_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``promotion`` check: each operand its own form and dtype."""
    operands = sig.operands
    shapes = draw_shapes(draw, sig, hints, mode="forward")
    dtypes: dict[str, str] = {a.name: "float32" for a in sig.tensor_args}
    python: dict[str, Any] = {}
    on_cpu: set[str] = set()
    notes: list[str] = []
    kinds: dict[str, str] = {}
    lead: str | None = None  # the first operand's dtype (a tensor's, or a scalar's kind)
    for i, spec in enumerate(operands):
        dt = draw(cached_sampled(DTYPE_NAMES), label=f"{spec.name} dtype")
        if spec.base == "Scalar":
            kind = "python"
            dt = draw(cached_sampled(("bool", "int64", "float64", "complex128")),
                      label=f"{spec.name} scalar kind")
        elif i == 0 or len(operands) == 1:
            kind = draw(cached_sampled(("tensor", "tensor", "zerodim")), label=f"{spec.name} form")
        else:
            kind = draw(cached_sampled(OPERAND_KINDS), label=f"{spec.name} form")
        if lead is not None and kind != "tensor" \
                and draw(cached_integers(0, 1), label=f"{spec.name} related?"):
            dt = draw(cached_sampled(related(lead, kind)), label=f"{spec.name} related dtype")
        lead = dt if lead is None else lead
        kinds[spec.name] = kind
        if kind == "python":
            python[spec.name] = draw(python_scalars(dt, bounds=_bounds(hints.get(spec.name))),
                                     label=f"{spec.name} value")
            notes.append(f"{spec.name}=python {type(python[spec.name]).__name__}")
            continue
        dtypes[spec.name] = dt
        if kind in ("zerodim", "cpu_zerodim") and sig.is_pointwise:
            shapes[spec.name] = ()
        if kind == "cpu_zerodim":
            if sig.is_pointwise:
                on_cpu.add(spec.name)
                notes.append(f"{spec.name}=0-dim cpu tensor")
    # a tensor argument that is not an operand (e.g. an optional weight) follows the first operand
    first = next((dtypes[a.name] for a in operands if a.name in dtypes), "float32")
    for a in sig.tensor_args:
        if a.name not in {o.name for o in operands}:
            dtypes[a.name] = first
    plan = Plan(shapes=shapes, dtypes=dtypes, python=python, on_cpu=on_cpu, safe=True,
                 notes=notes)
    return assemble(draw, sig, hints, plan)


#: Builds the calls one check draws for an overload (a :class:`~conformance.checks.check.Check`'s
#: ``draw``): ``(signature, hints) -> strategy``.
StrategyFn = Callable[[OpSignature, OpHints], st.SearchStrategy[Any]]


def draw_calls(sig: OpSignature, hints: OpHints, draw: StrategyFn) -> st.SearchStrategy[Any]:
    """The strategy ``draw`` builds for ``sig``; raises :class:`NoStrategy` up front when the
    schema has an argument no strategy can draw (or one that needs a hint it lacks)."""
    reason = sig.untestable()
    if reason:
        raise NoStrategy(reason)
    for spec in sig.args:
        if spec.is_list and spec.base == "Tensor" and spec.elem_optional and not spec.is_out \
                and hints.get(spec.name).dtypes is None:
            raise NoStrategy(f"argument '{spec.type} {spec.name}' needs 'dtypes' (and min/max) "
                             f"in opdb/data/hints.yaml")
        if spec.base == "str" and not spec.has_default_value and hints.get(spec.name).choices is None:
            raise NoStrategy(f"argument 'str {spec.name}' needs its choices in opdb/data/hints.yaml")
    return draw(sig, hints)


#: The schema strategies of this module by name (the checks that draw with another one, in-place
#: and out=, name theirs in their :class:`~conformance.checks.check.Check` record).
STRATEGIES: dict[str, StrategyFn] = {
    "forward": forward_calls, "broadcast": broadcast_calls, "promotion": promotion_calls,
    "autograd": autograd_calls, "dtypes": dtype_sweeps,
}


def calls(sig: OpSignature, hints: OpHints, *, mode: str) -> st.SearchStrategy[Any]:
    """:func:`draw_calls` with the strategy of this module named ``mode`` (a key of
    :data:`STRATEGIES`)."""
    if mode not in STRATEGIES:
        raise ValueError(f"mode must be one of {tuple(STRATEGIES)}, not {mode!r}")
    return draw_calls(sig, hints, STRATEGIES[mode])
