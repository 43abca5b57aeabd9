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
                pinned (``forward_calls(..., dtype=NAME)``), so each is tried deliberately.
* ``promotion`` each operand (Tensor / Scalar positional arguments) independently a tensor,
                a 0-dim tensor, a 0-dim CPU tensor next to device tensors, or a Python scalar, with
                its own dtype among the twelve.
* ``noncontiguous`` ``forward``-like calls with tensor arguments laid out as non-contiguous views
                (drawn in :mod:`conformance.layouts`, which owns the check).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any, TypeVar

import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conformance.values import (
    MOVED_HEADLINE,
    Fill,
    cached_integers,
    cached_sampled,
    draw_fill,
    python_scalars,
    refill_dtype,
    refill_target,
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
    dtype_name,
    torch_dtype,
)
from opdb.model import Argument, Overload, arguments_of, family_of, kind_of, split_name
from opdb.opdata import ArgHint, OpHints

MODES = ("forward", "broadcast", "promotion", "autograd", "dtypes", "inplace", "out")

# Base types the strategies can draw; anything else is drawn only as its default / None.
_DRAWABLE = {"Tensor", "int", "SymInt", "float", "bool", "Scalar", "ScalarType", "str"}
# Types that are always left to their default (or None): they choose placement, not values.
_DEFAULTED = {"Layout", "MemoryFormat", "Generator", "Device", "DeviceIndex"}


class NoStrategy(Exception):
    """The schema has an argument the strategies cannot draw (reason in the message)."""


class _Device:
    """Placeholder for ``Device?`` arguments of factory ops: the device the call runs on."""

    def __repr__(self) -> str:
        return "DEVICE"


DEVICE = _Device()


#: One schema argument, typed once by opdb (:class:`opdb.model.Argument`).
ArgSpec = Argument


@dataclass(frozen=True)
class OpSignature:
    """What the engine needs to know about an overload: name, kind, tags and typed arguments."""

    name: str
    base: str
    overload_name: str
    kind: str
    tags: frozenset[str]
    args: tuple[ArgSpec, ...]
    returns: tuple[str, ...]
    schema_str: str
    problem: str | None = None  # set when the schema could not be parsed (the item then skips)

    @classmethod
    def parse(cls, name: str, schema_str: str, tags: frozenset[str] | set[str] = frozenset()
              ) -> OpSignature:
        """From a schema string (``torch._C.parse_schema``), for a schema outside the op
        database; an overload of the database comes through :meth:`of`."""
        text = schema_str.split("::", 1)[1] if schema_str.startswith("aten::") else schema_str
        schema = torch._C.parse_schema(text)
        base, overload_name = split_name(name)
        kind = kind_of(schema, family_of(base)[1])
        return cls(name=name, base=base, overload_name=overload_name, kind=kind,
                   tags=frozenset(tags), args=arguments_of(schema),
                   returns=tuple(Argument.from_torch(r).type for r in schema.returns),
                   schema_str=text)

    @classmethod
    def of(cls, overload: Overload) -> OpSignature:
        """From an ``opdb.Overload``: its typed arguments, parsed once by opdb."""
        try:
            return cls(name=overload.name, base=overload.base,
                       overload_name=overload.overload_name, kind=overload.kind,
                       tags=frozenset(overload.tags), args=overload.arguments,
                       returns=overload.returns, schema_str=overload.schema_str)
        except Exception as exc:  # noqa: BLE001 - reported as the item's skip reason
            return cls(name=overload.name, base=overload.base,
                       overload_name=overload.overload_name, kind=overload.kind,
                       tags=frozenset(overload.tags), args=(), returns=(),
                       schema_str=overload.schema_str,
                       problem=f"schema could not be parsed: {type(exc).__name__}: {exc}")

    @cached_property
    def packet(self) -> Any:
        """``torch.ops.aten.<base>.<overload>`` (``default`` for an empty overload name)."""
        return getattr(getattr(torch.ops.aten, self.base), self.overload_name or "default")

    @property
    def tensor_args(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.is_tensor and not a.is_out)

    @property
    def operands(self) -> tuple[ArgSpec, ...]:
        """Positional non-optional Tensor and Scalar arguments: what promotion mixes."""
        return tuple(a for a in self.args if not a.kwarg_only and not a.optional
                     and not a.is_list and a.base in ("Tensor", "Scalar"))

    @property
    def is_pointwise(self) -> bool:
        return "pointwise" in self.tags

    @property
    def is_factory(self) -> bool:
        return not any(a.base == "Tensor" for a in self.args if not a.is_out)

    def untestable(self) -> str | None:
        """Why no strategy can be built for this overload (``None`` when one can)."""
        if self.problem:
            return self.problem
        for a in self.args:
            if a.is_out:
                continue
            if a.base in _DRAWABLE or a.base in _DEFAULTED:
                continue
            if not a.has_default:
                return f"argument '{a.type} {a.name}' has a type the strategies cannot draw"
        return None


@dataclass(frozen=True)
class Call:
    """One concrete call: arguments in schema order (tensors on CPU), and placement."""

    sig: OpSignature
    values: tuple[tuple[str, Any], ...]  # (argument name, value); omitted arguments are absent
    on_cpu: frozenset[str] = frozenset()  # tensor arguments kept on CPU when run on a device
    notes: tuple[str, ...] = field(default=(), compare=False)
    #: How the tensors whose values matter were filled: (argument, list index or None, Fill).
    #: Empty where values are not the subject (promotion, broadcast, autograd's finite draws).
    fills: tuple[tuple[str, int | None, Fill], ...] = field(default=(), compare=False)
    #: :meth:`run` answers with the arguments written by an overload returning nothing
    #: (:func:`written`)
    written: bool = field(default=False, compare=False)

    def refill(self, i: int, *, move: bool = True, dtype: str | None = None) -> Call:
        """The ``i``-th refill of this call (``i`` = 0: the call itself): every tensor of
        :attr:`fills` filled again (:meth:`Fill.refill`), everything else as drawn. The engine
        checks several refills per drawn call: Hypothesis draws the structure once.

        Odd refills also move the call to another dtype (:func:`~conformance.values.
        refill_dtype`): every tensor of the drawn dtype whose dtype no hint fixes (empty out=
        tensors too), and, half the time each, the ``ScalarType`` arguments (a conversion's
        target); CPU refusing the new dtype skips that refill. ``move=False``: values only.
        ``dtype``: move to this dtype instead, whatever ``i`` is (a drawn dtype CPU refused)."""
        if i == 0 or not self.fills:
            return self
        old = self._free_dtype
        to = dtype if dtype is not None and old is not None and dtype != old \
            else self.refill_dtype(i) if move else None
        # the refill's forced headline special goes to one tensor, a different one each refill
        forced = i % len(self.fills)
        kind, forcing = None, True  # kept dtype: refill i's FORCED_HEADLINE special
        if to and dtype is None:  # a scheduled move: by the moves to the same kind of dtype
            kind = self._moved_kind(i)
            forcing = kind is not None
        new = {(name, j): (replace(f, name=to) if to and f.name == old and not f.pinned
                           else f).refill(i, k, force=forcing and k == forced, kind=kind)
               for k, (name, j, f) in enumerate(self.fills)}
        values = []
        n_types = 0
        for name, value in self.values:
            if (name, None) in new:
                value = new[(name, None)]
            elif isinstance(value, list) and any((name, j) in new for j in range(len(value))):
                value = [new.get((name, j), v) for j, v in enumerate(value)]
            elif to and isinstance(value, torch.Tensor) and dtype_name(value.dtype) == old:
                value = value.to(torch_dtype(to))  # empty (out=, size-0) tensors
            elif to and isinstance(value, list) and value and all(
                    isinstance(t, torch.Tensor) and dtype_name(t.dtype) == old for t in value):
                value = [t.to(torch_dtype(to)) for t in value]  # a Tensor[] out=
            elif to and isinstance(value, torch.dtype):
                target = refill_target(self.fills[0][2].seed, i, n_types, DTYPE_NAMES)
                n_types += 1
                value = torch_dtype(target) if target else value
            values.append((name, value))
        return replace(self, values=tuple(values))

    @cached_property
    def _free_dtype(self) -> str | None:
        """The dtype of the first fill no hint pins (what refills move), if any."""
        return next((f.name for _, _, f in self.fills if not f.pinned), None)

    def refill_dtype(self, i: int) -> str | None:
        """The dtype refill ``i`` moves the call's free tensors to (``None``: it keeps them)."""
        moves = self._moves
        return moves[i] if i < len(moves) else self._refill_dtype(i)

    @cached_property
    def _moves(self) -> tuple[str | None, ...]:
        """:meth:`refill_dtype` of the first 32 refills, worked out once per drawn call."""
        return tuple(self._refill_dtype(i) for i in range(32))

    def _refill_dtype(self, i: int) -> str | None:
        old = self._free_dtype
        if i == 0 or old is None:
            return None
        return refill_dtype(self.fills[0][2].seed, i, old, DTYPE_NAMES, self._salt)

    @cached_property
    def _salt(self) -> int:
        return zlib.crc32(self.describe().encode())

    def _moved_kind(self, i: int) -> int | None:
        """The headline special forced on refill ``i``, which moves the call to another dtype:
        by how many earlier refills moved it to a dtype of the same category (floating,
        complex, integral, bool; :data:`~conformance.values.MOVED_HEADLINE`)."""
        kinds = self._move_kinds
        if i >= len(kinds) or kinds[i] is None:
            return None
        n = sum(1 for j in range(1, i) if kinds[j] == kinds[i])
        return MOVED_HEADLINE[n] if n < len(MOVED_HEADLINE) else None

    @cached_property
    def _move_kinds(self) -> tuple[str | None, ...]:
        """By refill number (below 32): the category of the dtype it moves the call to, if any."""
        return tuple(None if n is None else category(n) for n in self._moves)

    #: where the call came from: ``hypothesis`` (the schema strategies) or ``corpus``
    #: (a recorded CPU call, :mod:`conformance.corpus`)
    source: str = field(default="hypothesis", compare=False)

    def split(self, device: str) -> tuple[list[Any], dict[str, Any]]:
        """Positional args and kwargs for ``sig.packet``, tensors moved to ``device``."""
        return self._split(device)[:2]

    def _split(self, device: str) -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
        """:meth:`split`, and every argument by name as placed."""
        given = dict(self.values)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        placed: dict[str, Any] = {}
        positional = True
        for spec in self.sig.args:
            if spec.name not in given:
                positional = False
                continue
            value = placed[spec.name] = self.place(spec.name, given[spec.name], device)
            if positional and not spec.kwarg_only:
                args.append(value)
            else:
                positional = False
                kwargs[spec.name] = value
        return args, kwargs, placed

    def place(self, name: str, value: Any, device: str) -> Any:
        """Argument ``name``'s ``value`` as the call on ``device`` passes it (tensors copied or
        moved there). A check's own ``Call`` subclass may build something else here
        (:class:`conformance.layouts.LayoutCall`: non-contiguous views)."""
        return _place(value, device, name in self.on_cpu)

    def run(self, device: str) -> Any:
        """The overload's answer on ``device``; for a call marked :attr:`written` (see
        :func:`written`) of an overload that returns nothing, the arguments it wrote, as
        placed on ``device``, in schema order (a ``Tensor[]`` flattened)."""
        args, kwargs, placed = self._split(device)
        # sparse constructors validate their parts (indices in range, sizes that fit): without
        # the check CPU builds a tensor from drawn parts that reading then faults on (a to_dense
        # IndexError, or memory errors), and compares nothing
        with torch.sparse.check_sparse_tensor_invariants():
            out = self.sig.packet(*args, **kwargs)
        if not self.written:
            return out
        return tuple(value for _, value in written_parts(self.sig, placed))

    @property
    def tensor_dtypes(self) -> frozenset[str]:
        """Names (among the twelve) of the dtypes of every tensor argument."""
        names: set[str] = set()
        for _, v in self.values:
            for t in v if isinstance(v, list | tuple) else (v,):
                if isinstance(t, torch.Tensor):
                    names.add(dtype_name(t.dtype))
        return frozenset(n for n in names if n in DTYPE_NAMES)

    def describe(self) -> str:
        """``add.Tensor(int64[2, 3], float64[], alpha=2)`` for messages."""
        return self._description

    @cached_property
    def _description(self) -> str:
        parts = []
        for name, value in self.values:
            text = _brief(value, name in self.on_cpu)
            spec = next(a for a in self.sig.args if a.name == name)
            parts.append(f"{name}={text}" if spec.kwarg_only or spec.has_default else text)
        return f"{self.sig.name}({', '.join(parts)})"


def written_results(sig: OpSignature) -> tuple[str, ...]:
    """Arguments that stand for the results of an overload that returns nothing and writes its
    arguments (``_foreach_div_.List(Tensor(a!)[] self, Tensor[] other) -> ()``,
    ``_foreach_exp.out(Tensor[] self, *, Tensor(a!)[] out) -> ()``): the value checks compare
    them, autograd differentiates them after the call; ``()`` for an overload with returns.
    (Without them, the value checks compared ``None`` with ``None``: a kernel that wrote
    nothing passed.)"""
    if sig.returns:
        return ()
    return tuple(a.name for a in sig.args if a.is_write and a.base == "Tensor")


def written_parts(sig: OpSignature, values: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The results of an overload that returns nothing, from its arguments' ``values`` by
    name: ``(label, tensor)`` per written argument in schema order, a ``Tensor[]`` flattened
    (``self[1]``), one left out (``None``) skipped. What :meth:`Call.run` answers and how
    messages name each part."""
    parts: list[tuple[str, Any]] = []
    for name in written_results(sig):
        value = values.get(name)
        if isinstance(value, list):
            parts += [(f"{name}[{j}]", v) for j, v in enumerate(value)]
        elif value is not None:
            parts.append((name, value))
    return parts


_C = TypeVar("_C", bound=Call)


def written(call: _C) -> _C:
    """``call`` answering with what it wrote (:meth:`Call.run`) where its overload returns
    nothing, else itself; a check's own ``Call`` subclass (layout views) stays what it is."""
    if call.written or not written_results(call.sig):
        return call
    return replace(call, written=True)


def _brief(value: Any, on_cpu: bool = False) -> str:
    if isinstance(value, torch.Tensor):
        where = " on cpu" if on_cpu else ""
        return f"{dtype_name(value.dtype)}{list(value.shape)}{where}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


def _place(value: Any, device: str, keep_on_cpu: bool) -> Any:
    if value is DEVICE:
        return torch.device(device)
    if isinstance(value, torch.Tensor):
        return value.clone() if keep_on_cpu or device == "cpu" else value.to(device)
    if isinstance(value, list) and value and any(isinstance(v, torch.Tensor) for v in value):
        return [_place(v, device, keep_on_cpu) for v in value]
    return value


# --------------------------------------------------------------------------- tensors


def tensors(name: str, shape: Sequence[int], *, specials: bool = False, safe: bool = False,
            bounds: tuple[float, float] | None = None, extremes: bool = True
            ) -> st.SearchStrategy[torch.Tensor]:
    """A CPU tensor of dtype ``name`` and ``shape``: structure drawn, values filled by a seeded
    generator (:mod:`conformance.values`). ``specials``: adversarial values (special values and
    wide/tie profiles); ``safe``: values in [1, 4] that no op refuses (promotion compares dtypes
    only); ``bounds``: every element in ``[lo, hi]`` (a hint's min/max)."""
    return st.composite(lambda draw: _draw_tensor(draw, name, shape, specials=specials, safe=safe,
                                                  bounds=bounds, extremes=extremes))()


def _draw_tensor(draw: Any, name: str, shape: Sequence[int], *, specials: bool, safe: bool,
                 bounds: tuple[float, float] | None, extremes: bool, label: str = "",
                 plan: _Plan | None = None, slot: tuple[str, int | None] | None = None,
                 pinned: bool = False) -> Any:
    """Draw a tensor; with ``plan`` and ``slot`` (argument, list index) its fill is recorded
    for the engine's refills when the plan's values are adversarial."""
    if safe and bounds is None:
        bounds = (1.0, 4.0)
    how = draw_fill(draw, name, shape, adversarial=specials, bounds=bounds, extremes=extremes,
                    label=label)
    if pinned:
        how = replace(how, pinned=True)
    if plan is not None and slot is not None and plan.specials and how.numel:
        plan.fills.append((*slot, how))
    return how.tensor()


# --------------------------------------------------------------------------- drawing


@dataclass
class _Plan:
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    python: dict[str, Any] = field(default_factory=dict)
    on_cpu: set[str] = field(default_factory=set)
    specials: bool = False  # adversarial values (conformance.values)
    safe: bool = False
    notes: list[str] = field(default_factory=list)
    fills: list[tuple[str, int | None, Fill]] = field(default_factory=list)
    target: str | None = None  # every ScalarType argument pinned to this dtype (dtype pairs)
    list_form: tuple[tuple[int, ...], int] | None = None  # first Tensor[]'s (shape, length)
    lists_zipped: bool | None = None  # later Tensor[]s take list_form (drawn at the second)


def _symbolic_shapes(draw: Any, sig: OpSignature, hints: OpHints, max_side: int,
                     order: str = "small") -> dict[str, tuple[int, ...]]:
    """Shapes of tensor arguments, and values of ``int[]`` arguments (``normalized_shape``),
    from the hints' symbolic shapes: one drawn size per letter, shared by the overload's args."""
    sizes: dict[str, int] = {}
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


def _side(draw: Any, lo: int, hi: int, order: str, label: str) -> int:
    """An integer in ``[lo, hi]`` in size order ``order`` (:data:`SIZE_ORDERS`)."""
    k = draw(cached_integers(lo, hi), label=label)
    return _order_values(lo, hi, order)[k - lo]


def _shape(draw: Any, *, max_dims: int, min_side: int, max_side: int, label: str,
           order: str = "small") -> tuple[int, ...]:
    """One shape of rank 0..max_dims (shrinks toward rank 0, then small sides). Drawn with
    cached integer strategies: :func:`hypothesis.extra.numpy.array_shapes` costs ~4x more per
    example, and shapes are drawn for every example. ``order``: which sizes come first
    (:data:`SIZE_ORDERS`)."""
    rank = _side(draw, 0, max_dims, order, f"{label} rank")
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


def _shapes(draw: Any, sig: OpSignature, hints: OpHints, *, mode: str,
            large_first: bool = False) -> dict[str, tuple[int, ...]]:
    """Shapes for the tensor arguments (list elements use the first tensor's shape);
    ``large_first``: largest first (:data:`SIZE_ORDERS`), else the ``forward`` mode's middle
    first and the others' smallest first."""
    names = [a.name for a in sig.tensor_args]
    max_side = hints.max_side or (3 if mode == "broadcast" else 4)
    order = "large" if large_first else "middle" if mode == "forward" else "small"
    fixed = _symbolic_shapes(draw, sig, hints, max_side, order)
    if not names:
        return fixed
    free = [n for n in names if n not in fixed]
    if not free:
        return fixed
    if mode == "broadcast" or (sig.is_pointwise and len(free) > 1):
        max_dims = 4 if mode == "broadcast" else 3
        bshapes = _broadcastable_shapes(draw, len(free), max_dims=max_dims,
                                        min_side=0 if mode == "broadcast" else 1,
                                        max_side=max_side, square=mode == "broadcast",
                                        order=order)
        shapes = dict(zip(free, bshapes, strict=True))
        if mode == "forward" and draw(cached_integers(0, 9), label="size-0 dim?") == 0:
            # now and then a size-0 dimension, shared by every operand
            shapes = {k: s[:-1] + (0,) if s and s[-1] != 1 else s for k, s in shapes.items()}
    else:
        one = _shape(draw, max_dims=3, min_side=0, max_side=max_side, label="shape",
                     order=order)
        shapes = dict.fromkeys(free, one)
    shapes.update(fixed)
    return shapes


def _rank(plan: _Plan, sig: OpSignature) -> int:
    for a in sig.tensor_args:
        if a.name in plan.shapes:
            return len(plan.shapes[a.name])
    return 0


def _first_shape(plan: _Plan, sig: OpSignature) -> tuple[int, ...]:
    for a in sig.tensor_args:
        if a.name in plan.shapes:
            return plan.shapes[a.name]
    return ()


def _int_list(draw: Any, spec: ArgSpec, hint: ArgHint, plan: _Plan, sig: OpSignature) -> list[int]:
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
        return draw((st.sampled_from(shaped) if shaped else st.nothing())
                    | st.lists(st.integers(0, 4), min_size=n or 0, max_size=n or 3), label=name)
    length = hint.length or spec.list_size
    lo = int(hint.min) if hint.min is not None else 0
    hi = int(hint.max) if hint.max is not None else 3
    if length:
        return draw(st.lists(st.integers(lo, hi), min_size=length, max_size=length), label=name)
    return draw(st.lists(st.integers(lo, hi), max_size=3), label=name)


def _scalar(draw: Any, plan: _Plan, sig: OpSignature, name: str, hint: ArgHint) -> Any:
    dt = next(iter(plan.dtypes.values()), "float32")
    if hint.min is not None or hint.max is not None:
        return draw(scalar_values(dt, bounds=_bounds(hint)), label=name)
    if plan.specials:
        return draw(scalar_values(dt, extremes=hint.extremes), label=name)
    return draw(small_scalars(dt), label=name)


def _value(draw: Any, spec: ArgSpec, hint: ArgHint, plan: _Plan, sig: OpSignature) -> Any:
    """One non-tensor argument (or ``_OMIT``)."""
    if hint.choices is not None:
        return draw(cached_sampled(hint.choices), label=spec.name)
    base = spec.base
    if base in _DEFAULTED:
        if base == "Device":  # results go where the call runs (linspace.Tensor_Tensor, to, ...)
            return DEVICE
        return _OMIT if spec.has_default else None
    # optional arguments take their default (None) one time in three, as tensors do: the
    # default path is the one most calls take (nan_to_num's posinf=None maps inf to finfo.max)
    if spec.optional and base not in ("ScalarType",) \
            and draw(cached_integers(0, 2), label=f"{spec.name} is None?") == 0:
        return None
    if base == "ScalarType":
        if plan.target is not None:
            return torch_dtype(plan.target)
        if spec.optional and draw(cached_integers(0, 2), label=f"{spec.name} given?") != 0:
            return None
        return torch_dtype(draw(cached_sampled(DTYPE_NAMES), label=spec.name))
    if base in ("int", "SymInt"):
        if spec.is_list:
            return _int_list(draw, spec, hint, plan, sig)
        if spec.name == "dim" or spec.name.endswith("_dim") or spec.name in ("dim0", "dim1"):
            r = max(_rank(plan, sig), 1)
            return draw(cached_integers(-r, r - 1), label=spec.name)
        lo = int(hint.min) if hint.min is not None else 0
        hi = int(hint.max) if hint.max is not None else 3
        return draw(cached_integers(lo, hi), label=spec.name)
    if base == "bool":
        if spec.is_list:
            n = spec.list_size or 2
            return draw(st.lists(st.booleans(), min_size=n, max_size=n), label=spec.name)
        return draw(st.booleans(), label=spec.name)
    if base == "float":
        flo = float(hint.min) if hint.min is not None else -2.0
        fhi = float(hint.max) if hint.max is not None else 2.0
        strat = st.floats(flo, fhi, allow_subnormal=False)
        if spec.is_list:
            n = spec.list_size or 2
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
    if spec.has_default:
        return _OMIT
    raise NoStrategy(f"argument '{spec.type} {spec.name}' has a type the strategies cannot draw")


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


_OMIT = _Omit()


def _tensor_arg(draw: Any, spec: ArgSpec, hint: ArgHint, plan: _Plan, sig: OpSignature) -> Any:
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


def _tensor_list(draw: Any, spec: ArgSpec, hint: ArgHint, plan: _Plan, sig: OpSignature) -> Any:
    if spec.elem_optional:  # Tensor?[] indices: 1..rank index tensors as the hint describes
        if not hint.dtypes:
            raise NoStrategy(f"argument '{spec.type} {spec.name}' needs a hint")
        n = draw(cached_integers(1, max(1, len(_first_shape(plan, sig)))), label=f"len({spec.name})")
        out: list[Any] = []
        for i in range(n):
            dt = draw(cached_sampled(hint.dtypes), label=f"{spec.name}[{i}] dtype")
            length = draw(cached_integers(0, 3), label=f"{spec.name}[{i}] length")
            out.append(_draw_tensor(draw, dt, (length,), specials=False, safe=False,
                                    bounds=_bounds(hint), extremes=hint.extremes,
                                    label=f"{spec.name}[{i}]", plan=plan, slot=(spec.name, i),
                                    pinned=True))
        return out
    if hint.maybe_empty and plan.list_form is not None and draw(
            st.booleans(), label=f"{spec.name} empty?"):
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
        shape = _first_shape(plan, sig) if any(a.name in plan.shapes for a in sig.tensor_args) \
            else draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
                      label="list shape")
        n = draw(cached_integers(1, 3), label=f"len({spec.name})")
        if plan.list_form is None:
            plan.list_form = (shape, n)
    # a hinted shape for this list's tensors (fused Adam's state_steps: one 0-dim step each)
    shape = plan.shapes.get(spec.name, shape)
    return [_draw_tensor(draw, dtype, shape, specials=plan.specials, safe=plan.safe, bounds=None,
                         extremes=hint.extremes, label=f"{spec.name}[{i}]", plan=plan,
                         slot=(spec.name, i)) for i in range(n)]


def _out_arg(draw: Any, spec: ArgSpec, hint: ArgHint, plan: _Plan,
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


def _assemble(draw: Any, sig: OpSignature, hints: OpHints, plan: _Plan) -> Call:
    values: list[tuple[str, Any]] = []
    for spec in sig.args:
        hint = hints.get(spec.name)
        if spec.is_out:
            values.append((spec.name, _out_arg(draw, spec, hint, plan, values)))
            continue
        if spec.base == "Tensor" and spec.is_list:
            v = _tensor_list(draw, spec, hint, plan, sig) if not (spec.optional and draw(
                st.integers(0, 3), label=f"{spec.name} is None?") == 0) else None
        elif spec.base == "Tensor":
            drawn = dict(values)
            _shape_along(plan, spec.name, hint, drawn)
            v = _tensor_arg(draw, spec, _along(hint, drawn), plan, sig)
        else:
            v = _value(draw, spec, hint, plan, sig)
        if v is _OMIT:
            continue
        if hint.device == "cpu" and spec.base == "Tensor":
            plan.on_cpu.add(spec.name)
        values.append((spec.name, v))
    return Call(sig=sig, values=tuple(values), on_cpu=frozenset(plan.on_cpu),
                notes=tuple(plan.notes), fills=tuple(plan.fills))


def _shape_along(plan: _Plan, name: str, hint: ArgHint, drawn: dict[str, Any]) -> None:
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


def _tensor_arg_dtypes(draw: Any, sig: OpSignature, hints: OpHints, pool: Sequence[str]
                       ) -> dict[str, str]:
    """One dtype for every tensor argument (mixing is the promotion check's job)."""
    shared = draw(cached_sampled(tuple(pool)), label="dtype")
    return {a.name: shared for a in (*sig.tensor_args, *tensor_lists(sig))}


def tensor_lists(sig: OpSignature) -> tuple[ArgSpec, ...]:
    """``Tensor[]`` arguments whose elements take the call's dtype (``cat``'s tensors; not
    ``Tensor?[]`` index lists, whose dtypes the hints give)."""
    return tuple(a for a in sig.args if a.base == "Tensor" and a.is_list and not a.is_out
                 and not a.elem_optional)


@st.composite
def forward_calls(draw: Any, sig: OpSignature, hints: OpHints, dtype: str | None = None,
                  target: str | None = None, large_first: bool = False) -> Call:
    """Calls for the ``forward`` check; ``dtype`` pins the tensor arguments' shared dtype
    (arguments whose dtypes the hints fix keep those), ``target`` every ScalarType argument;
    ``large_first``: shapes drawn largest first (:func:`_shape`)."""
    shapes = _shapes(draw, sig, hints, mode="forward", large_first=large_first)
    dtypes = _tensor_arg_dtypes(draw, sig, hints, (dtype,) if dtype else DTYPE_NAMES)
    plan = _Plan(shapes=shapes, dtypes=dtypes, specials=True, target=target)
    return _assemble(draw, sig, hints, plan)



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
#: forced +inf (:data:`~conformance.values.FORCED_HEADLINE`). Drawn at random, a NaN or an infinity
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


def dtype_sweeps(sig: OpSignature, hints: OpHints) -> st.SearchStrategy[DtypeSweep]:
    """Sweeps for the ``dtypes`` check: the forward strategy once per dtype, dtype pinned; for a
    conversion with a ``ScalarType`` argument (``dtype_pairs`` in ``opdb/data/exactness.yaml``)
    once per (dtype, target) pair of the twelve. The check does not shrink, so shapes are drawn
    largest first: Hypothesis' first examples are its simplest, and at three sweeps over half of
    the calls had one element or none (one rounding of a conversion per pair)."""
    if _dtype_pairs(sig):  # one call drawn per dtype, refilled for each of the twelve targets
        return st.builds(lambda *cs: DtypeSweep(tuple(
            (d, _retarget(c.refill(j, move=False), t)) for d, c in zip(DTYPE_NAMES, cs, strict=True)
            for j, t in enumerate(DTYPE_NAMES))),
            *(forward_calls(sig, hints, dtype=d, target=d, large_first=True)
              for d in DTYPE_NAMES))
    # values from each call's seeded refill: the check does not shrink, and Hypothesis' first
    # examples are its simplest (profile ``small``, no specials) at every dtype
    return st.builds(lambda *cs: DtypeSweep(tuple(
        (d, c.refill(i, move=False)) for d, c, i in zip(DTYPE_NAMES, cs, _sweep_refills(cs),
                                                         strict=True))),
        *(forward_calls(sig, hints, dtype=d, large_first=True) for d in DTYPE_NAMES))


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


@st.composite
def autograd_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``autograd`` check: as ``forward`` draws them, in differentiable dtypes
    and finite values (noted ``autograd``, so the repro backpropagates too)."""
    # no size-0 dimensions: an empty gradient shows nothing, and CPU's own backward of some ops
    # (native_batch_norm) dies of SIGFPE on one, which would lose the whole item
    shapes = {k: tuple(max(d, 1) for d in s)
              for k, s in _shapes(draw, sig, hints, mode="forward").items()}
    dtypes = _tensor_arg_dtypes(draw, sig, hints, AUTOGRAD_DTYPES)
    plan = _Plan(shapes=shapes, dtypes=dtypes, notes=["autograd"])
    return _assemble(draw, sig, hints, plan)


@st.composite
def broadcast_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``broadcast`` check: broadcastable shapes, or (1 in 5) a conflicting set."""
    shapes = _shapes(draw, sig, hints, mode="broadcast")
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
    plan = _Plan(shapes=shapes, dtypes={a.name: dtype for a in sig.tensor_args}, notes=notes)
    return _assemble(draw, sig, hints, plan)


#: Promotion operand forms.
OPERAND_KINDS = ("tensor", "zerodim", "cpu_zerodim", "python")

_CATEGORY_MEMBERS = {"bool": BOOL, "integral": INTEGRAL, "floating": FLOATING, "complex": COMPLEX}
#: A Python scalar of the next category promotes a tensor's category (int tensor * 0.5 is
#: float32, float tensor * 1j complex); of the same or a lower one it leaves the dtype.
_NEXT_CATEGORY = {"bool": "integral", "integral": "floating", "floating": "complex",
                  "complex": "complex"}


def _related(lead: str, kind: str = "python") -> tuple[str, ...]:
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


@st.composite
def promotion_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``promotion`` check: each operand its own form and dtype."""
    operands = sig.operands
    shapes = _shapes(draw, sig, hints, mode="forward")
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
            dt = draw(cached_sampled(_related(lead, kind)), label=f"{spec.name} related dtype")
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
    plan = _Plan(shapes=shapes, dtypes=dtypes, python=python, on_cpu=on_cpu, safe=True,
                 notes=notes)
    return _assemble(draw, sig, hints, plan)


def calls(sig: OpSignature, hints: OpHints, *, mode: str) -> st.SearchStrategy[Any]:
    """The strategy for ``mode`` (one of :data:`MODES`); raises :class:`NoStrategy` up front."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
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
    if mode == "inplace":  # the in-place check's variants of forward calls (its own module)
        from conformance.variants_inplace import inplace_calls

        return inplace_calls(sig, hints)
    if mode == "out":  # the out check's own strategy (conformance/variants_out.py)
        from conformance.variants_out import out_calls

        return out_calls(sig, hints)
    factory = {"forward": forward_calls, "broadcast": broadcast_calls,
               "promotion": promotion_calls, "autograd": autograd_calls,
               "dtypes": dtype_sweeps}[mode]
    return factory(sig, hints)
