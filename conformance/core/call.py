"""One concrete call of an overload (:class:`Call`): arguments in schema order with tensors on
CPU, placement, value fills for refills, and how it runs on a device.
"""

from __future__ import annotations

import functools
import math
import traceback
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, TypeVar

import torch

from conformance.core.fills import MOVED_HEADLINE, Fill, refill_dtype, refill_target
from conformance.core.lazy import LAZY_DEVICES, step
from conformance.core.signature import DEVICE, OpSignature
from opdb.dtypes import (
    DTYPE_NAMES,
    category,
    dtype_name,
    torch_dtype,
)

T = TypeVar("T")


def typed_leaves(args: Iterable[tuple[str, Any]], kind: type[T]) -> tuple[T, ...]:
    """The values of type ``kind`` among named arguments, those inside (nested) tuples too,
    in order: the tensors of a recorded call (:class:`TensorSpec`) or of a corpus spec."""
    out: list[T] = []

    def walk(a: Any) -> None:
        if isinstance(a, kind):
            out.append(a)
        elif isinstance(a, tuple):
            for x in a:
                walk(x)

    for _, a in args:
        walk(a)
    return tuple(out)


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
    #: (argument, list index or None) of the tensors whose dtype a hint fixes: a refill's dtype
    #: move leaves them, empty ones too (an empty tensor has no fill to say it is pinned: an
    #: empty int64 index beside an int64 ``self`` was moved to float, and CPU refused the refill)
    pinned: frozenset[tuple[str, int | None]] = field(default=frozenset(), compare=False)
    #: :meth:`run` answers with the arguments written by an overload returning nothing
    #: (:func:`written`)
    written: bool = field(default=False, compare=False)
    #: ``(drawn call, i, move, dtype)`` on the call :meth:`refill` made: the about-to-run
    #: marker keeps a refill as its drawn call (once) and these, not as its tensors
    #: (:mod:`conformance.core.callcodec`). Not an argument: a copy of the call
    #: (``dataclasses.replace``: a check changing it) has none, and is kept whole.
    origin: tuple[Any, ...] | None = field(default=None, init=False, compare=False, repr=False)

    def refill(self, i: int, *, move: bool = True, dtype: str | None = None) -> Call:
        """The ``i``-th refill of this call (``i`` = 0: the call itself): every tensor of
        :attr:`fills` filled again (:meth:`Fill.refill`), everything else as drawn. The engine
        checks several refills per drawn call: Hypothesis draws the structure once.

        Odd refills also move the call to another dtype (:func:`~conformance.core.fills.
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
            elif to and isinstance(value, torch.Tensor) and dtype_name(value.dtype) == old \
                    and (name, None) not in self.pinned:
                value = value.to(torch_dtype(to))  # empty (out=, size-0) tensors
            elif to and isinstance(value, list) and value and all(
                    isinstance(t, torch.Tensor) and dtype_name(t.dtype) == old for t in value):
                value = [t if (name, j) in self.pinned else t.to(torch_dtype(to))
                         for j, t in enumerate(value)]  # a Tensor[] out=, empty tensors
            elif to and isinstance(value, torch.dtype):
                target = refill_target(self.fills[0][2].seed, i, n_types, DTYPE_NAMES)
                n_types += 1
                value = torch_dtype(target) if target else value
            values.append((name, value))
        new_call = replace(self, values=tuple(values))
        object.__setattr__(new_call, "origin", (self, i, move, dtype))
        if not to:  # the same dtypes and shapes: described as this call is (worked out once
            # per drawn call, not per refill: the marker names every call)
            for cached in ("_description", "tensor_dtypes"):
                if cached in self.__dict__:
                    new_call.__dict__[cached] = self.__dict__[cached]
        return new_call

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
        complex, integral, bool; :data:`~conformance.core.fills.MOVED_HEADLINE`)."""
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
    #: (a recorded CPU call, :mod:`conformance.inputs.corpus`)
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
        (:class:`conformance.inputs.layouts.LayoutCall`: non-contiguous views)."""
        return place_value(value, device, name in self.on_cpu)

    def run(self, device: str) -> Any:
        """The overload's answer on ``device``; for a call marked :attr:`written` (see
        :func:`written`) of an overload that returns nothing, the arguments it wrote, as
        placed on ``device``, in schema order (a ``Tensor[]`` flattened)."""
        args, kwargs, placed = self._split(device)
        # sparse constructors validate their parts (indices in range, sizes that fit): without
        # the check CPU builds a tensor from drawn parts that reading then faults on (a to_dense
        # IndexError, or memory errors), and compares nothing
        with torch.sparse.check_sparse_tensor_invariants():
            out = settle(device, self.sig.packet(*args, **kwargs))
        if not self.written:
            return out
        return settle(device, tuple(value for _, value in written_parts(self.sig, placed)))

    @cached_property
    def tensor_dtypes(self) -> frozenset[str]:
        """Names (among the twelve) of the dtypes of every tensor argument (read once per
        call: every example's bookkeeping asks, and a tensor's dtype never changes)."""
        names: set[str] = set()
        for _, v in self.values:
            for t in v if isinstance(v, list | tuple) else (v,):
                if isinstance(t, torch.Tensor):
                    names.add(dtype_name(t.dtype))
        return frozenset(n for n in names if n in DTYPE_NAMES)

    def argument(self, name: str) -> Any:
        """The call's value of argument ``name``, or its schema default where the call omits
        it (``None`` for a name the schema lacks)."""
        for given, value in self.values:
            if given == name:
                return value
        return next((a.default for a in self.sig.args if a.name == name), None)

    def describe(self) -> str:
        """``add.Tensor(int64[2, 3], float64[], alpha=2)`` for messages."""
        return self._description

    @cached_property
    def _description(self) -> str:
        named, on_cpu = self.sig.named_args, self.on_cpu
        parts = [f"{name}={brief(value, name in on_cpu)}" if name in named
                 else brief(value, name in on_cpu) for name, value in self.values]
        return f"{self.sig.name}({', '.join(parts)})"


def settle(device: str, results: Any) -> Any:
    """``results`` (what a call on ``device`` returned or wrote), computed now where the device
    is lazy (:data:`LAZY_DEVICES`): every tensor in them is read back once
    (:func:`conformance.core.readback.materialize`). What the computation raises is then raised
    by the call that asked for it, before the check judges a refusal (a lazy backend refusing
    only on read-back was an ``error_accepts``), and what it takes (compiling a graph per new
    shape) is spent under the call's about-to-run marker, not in whatever reads it first.
    Then the device's step barrier (:data:`~conformance.core.lazy.LAZY_DEVICES`) closes the
    graph, so the next call starts a fresh one. Returns ``results``. Every way a check runs a
    call on a device goes through here."""
    if device in LAZY_DEVICES:
        from conformance.core.readback import materialize

        try:
            materialize(results)
        except BaseException as exc:
            # results whose graph failed must not outlive their error: a step computes every
            # live tensor, and one such tensor makes each later step raise (torch_xla: "Check
            # failed: tensor_data") until it is freed
            results = None
            traceback.clear_frames(exc.__traceback__)
            raise
        step(device)
    return results


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


@dataclass(frozen=True)
class AutogradCall(Call):
    """A call the ``autograd`` check differentiates (schema-drawn or recorded): its repro
    backpropagates too (:mod:`conformance.repro.autograd`)."""


def as_kind(call: Call, kind: type[_C], **extra: Any) -> _C:
    """``call`` as a :class:`Call` variant ``kind`` (every field of ``call`` kept, ``extra``
    set): the type of a call says which repro it gets and what a check reads from it."""
    kept = {f.name: getattr(call, f.name) for f in fields(Call) if f.init}
    return kind(**kept, **extra)


def written(call: _C) -> _C:
    """``call`` answering with what it wrote (:meth:`Call.run`) where its overload returns
    nothing, else itself; a check's own ``Call`` subclass (layout views) stays what it is."""
    if call.written or not written_results(call.sig):
        return call
    return replace(call, written=True)


def brief(value: Any, on_cpu: bool = False) -> str:
    if isinstance(value, torch.Tensor):
        where = " on cpu" if on_cpu else ""
        return f"{dtype_name(value.dtype)}{list(value.shape)}{where}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(brief(v) for v in value) + "]"
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    return repr(value)


@functools.cache
def indexed_device(device: str) -> torch.device:
    """``device`` as its tensors carry it, with its index (``mlu:0``, ``cuda:0``), as a program
    passes ``x.device``: torch's fake kernels compare a ``device=`` argument with the tensors'
    exactly (``_assert_tensor_metadata`` under torch.compile: "Expected: mlu, Got: mlu:0", on
    every indexed device), eager kernels by type."""
    return torch.empty(0, device=device).device


def place_value(value: Any, device: str, keep_on_cpu: bool) -> Any:
    if value is DEVICE:
        return indexed_device(device)
    if isinstance(value, torch.Tensor):
        return value.clone() if keep_on_cpu or device == "cpu" else value.to(device)
    if isinstance(value, list) and value and any(isinstance(v, torch.Tensor) for v in value):
        return [place_value(v, device, keep_on_cpu) for v in value]
    return value
