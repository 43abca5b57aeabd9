"""The variants an in-place call is judged in (plain, ``self`` as a view, another ``self``
dtype, a ``self`` that would broadcast): drawing them, and running a call that keeps its
arguments (:class:`InplaceRun`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.core.call import Call, as_kind, settle
from conformance.core.signature import OpSignature
from conformance.inputs.drawing import cached_booleans, cached_sampled, composite
from conformance.inputs.strategies import forward_calls
from conformance.inputs.values import draw_tensor
from opdb.dtypes import DTYPE_NAMES, dtype_name
from opdb.opdata import ArgHint, OpHints

#: How ``self`` is passed as a view: kind -> (the base, made on CPU from ``x``, the drawn
#: ``self``; ``self`` as a view of ``base``), as Python expressions, so that the check and the
#: repro snippet do the very same thing. Every view holds exactly ``x``'s values.
VIEWS: dict[str, tuple[str, str]] = {
    "transpose": ("x.transpose(-1, -2).contiguous()", "base.transpose(-1, -2)"),  # rank >= 2
    "slice": ("torch.stack([x, torch.zeros_like(x)], -1).flatten(-2)", "base[..., ::2]"),  # >= 1
    "offset": ("torch.cat([torch.zeros_like(x[:1]), x])", "base[1:]"),  # rank >= 1
    "offset0": ("torch.stack([torch.zeros_like(x), x])", "base[1]"),  # rank 0
}


_CODE = {k: (compile(b, f"<view {k}: base>", "eval"), compile(v, f"<view {k}>", "eval"))
         for k, (b, v) in VIEWS.items()}


#: The variants, ``plain`` first (where Hypothesis shrinks a variant choice to).
VARIANTS = ("plain", "view", "dtype", "broadcast")




def make_base(kind: str, x: torch.Tensor) -> torch.Tensor:
    """The base of a ``kind`` view that holds ``x`` (on ``x``'s device)."""
    return eval(_CODE[kind][0], {"torch": torch}, {"x": x})  # noqa: S307 - our own table


def make_view(kind: str, base: torch.Tensor) -> torch.Tensor:
    return eval(_CODE[kind][1], {"torch": torch}, {"base": base})  # noqa: S307 - our own table


def view_kinds(rank: int) -> tuple[str, ...]:
    """The view kinds a ``self`` of ``rank`` can be passed as."""
    if rank == 0:
        return ("offset0",)
    return (("transpose",) if rank >= 2 else ()) + ("slice", "offset")


def written_self(sig: OpSignature) -> str | None:
    """The single tensor argument an in-place overload writes first (``self``); ``None`` when it
    writes a list (``_foreach_add_``): the view, dtype and broadcast variants need one tensor."""
    for a in sig.args:
        if a.is_write and a.base == "Tensor" and not a.is_out:
            return None if a.is_list else a.name
    return None


@dataclass(frozen=True)
class InplaceCall(Call):
    """A call the in-place check judges in one of its :data:`VARIANTS`: ``detail`` is the view
    kind of ``view`` (a key of :data:`VIEWS`), ``self``'s own dtype of ``dtype`` (the control of
    a refusal), else ``None``. Its repro is the in-place one (:mod:`conformance.repro.inplace`)."""

    variant: str = field(default="plain", compare=False)
    detail: str | None = field(default=None, compare=False)


def variant_of(call: Call) -> tuple[str, str | None]:
    """``(variant, detail)`` of an :class:`InplaceCall`; ``("plain", None)`` for any other."""
    if isinstance(call, InplaceCall):
        return call.variant, call.detail
    return "plain", None


def _bounds(hint: ArgHint) -> tuple[float, float] | None:
    if hint.min is None and hint.max is None:
        return None
    return (hint.min if hint.min is not None else 0, hint.max if hint.max is not None else 3)


def _redraw(draw: Any, hints: OpHints, name: str, dtype: str, shape: tuple[int, ...]
            ) -> torch.Tensor:
    hint = hints.get(name)
    return draw_tensor(draw, dtype, shape, adversarial=True, bounds=_bounds(hint),
                       extremes=hint.extremes, label=name)


@dataclass(frozen=True)
class InplaceDraw(InplaceCall):
    """One drawn ``forward`` call as the in-place check judges it: itself (the ``plain``
    variant) and its other :data:`VARIANTS` (``variants``: every view kind ``self``'s rank
    allows, another dtype of ``self``, a ``self`` that would have to broadcast), each an
    :class:`InplaceCall`."""

    variants: tuple[Call, ...] = ()


def inplace_rotation(call: Call) -> int:
    """A function of the drawn call alone (Hypothesis replays a failing call: its variants must
    come in the same order; other calls start elsewhere)."""
    seeds = [f.seed for _, _, f in call.fills]
    return zlib.crc32(f"{call.describe()}|{seeds}".encode())


@composite
def inplace_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``inplace`` check: a ``forward`` call (``self`` at the operands' broadcast
    shape) with every other variant of :data:`VARIANTS` made from it (:class:`InplaceDraw`),
    or the plain call alone where ``self`` is not one tensor on the device."""
    call = draw(forward_calls(sig, hints))
    me = written_self(sig)
    values = dict(call.values)
    x = values.get(me) if me else None
    if me is None or not isinstance(x, torch.Tensor) or me in call.on_cpu:
        return as_kind(call, InplaceCall, variant="plain")
    others = [a.name for a in sig.tensor_args
              if a.name != me and not a.is_list and isinstance(values.get(a.name), torch.Tensor)
              and a.name not in call.on_cpu]
    broadcasts = sig.is_pointwise and bool(others)
    if broadcasts:  # self takes the operands' broadcast shape (forward may have drawn it smaller)
        try:
            full = tuple(torch.broadcast_shapes(*(values[n].shape for n in (me, *others))))
        except RuntimeError:
            full = tuple(x.shape)
        if full != tuple(x.shape):
            x = values[me] = _redraw(draw, hints, me, dtype_name(x.dtype), full)

    def variant(kind: str, detail: str | None = None, changed: dict[str, Any] | None = None
                ) -> InplaceCall:
        swapped = changed or {}
        return InplaceCall(sig=sig, values=tuple((n, swapped.get(n, values[n]))
                                                 for n, _ in call.values),
                           on_cpu=call.on_cpu, notes=call.notes, source=call.source,
                           variant=kind, detail=detail)

    made = [variant("view", kind) for kind in view_kinds(x.dim())]
    own = dtype_name(x.dtype)  # the detail keeps self's own dtype: the control of a refusal
    new = draw(cached_sampled([d for d in DTYPE_NAMES if d != own]), label="self dtype")
    made.append(variant("dtype", own, {me: _redraw(draw, hints, me, new, tuple(x.shape))}))
    if broadcasts:
        full = tuple(x.shape)
        other = values[others[0]]
        dims = [i for i, s in enumerate(full) if s != 0]
        if dims and draw(cached_booleans(), label="self size 1 where other is not?"):
            d = draw(cached_sampled(dims), label="dim")
            wide, narrow = list(full), list(full)
            wide[d], narrow[d] = max(full[d], 2), 1
        else:  # other has one more (leading) dimension than self
            wide, narrow = [2, *full], list(full)
        made.append(variant("broadcast", None, {
            others[0]: _redraw(draw, hints, others[0], dtype_name(other.dtype), tuple(wide)),
            me: _redraw(draw, hints, me, dtype_name(x.dtype), tuple(narrow))}))
    plain = variant("plain")
    h = inplace_rotation(call)
    r = h % len(made)
    return InplaceDraw(sig=sig, values=plain.values, on_cpu=plain.on_cpu, notes=plain.notes,
                       source=call.source, variants=tuple(made[r:] + made[:r]))


@dataclass(frozen=True)
class Record:
    """What one in-place call did: its result, every argument as the op saw it (afterwards),
    the base of a view ``self``, and each tensor's version counter before and after."""

    out: Any
    args: dict[str, Any]
    base: torch.Tensor | None
    versions: dict[str, tuple[int, int]]


def record_tensors(args: dict[str, Any], base: torch.Tensor | None) -> list[tuple[str, torch.Tensor]]:
    """``(label, tensor)`` for every tensor argument (list elements ``name[i]``) and the base."""
    out: list[tuple[str, torch.Tensor]] = []
    for name, v in args.items():
        if isinstance(v, torch.Tensor):
            out.append((name, v))
        elif isinstance(v, list | tuple):
            out += [(f"{name}[{i}]", t) for i, t in enumerate(v) if isinstance(t, torch.Tensor)]
    if base is not None:
        out.append(("base", base))
    return out


@dataclass(frozen=True)
class InplaceRun(InplaceCall):
    """A call that keeps its arguments: ``run`` returns a :class:`Record`, or with ``pick`` only
    one argument afterwards (or ``"base"``), which is what a CPU re-run is compared by."""

    view: str | None = None  # self passed as this kind of view (VIEWS)
    pick: str | None = None

    @classmethod
    def of(cls, call: Call, *, view: str | None) -> InplaceRun:
        variant, detail = variant_of(call)
        return cls(sig=call.sig, values=call.values, on_cpu=call.on_cpu, notes=call.notes,
                   variant=variant, detail=detail, view=view)

    def describe(self) -> str:
        text = super().describe()
        return f"{text} through self = {VIEWS[self.view][1]}" if self.view else text

    def execute(self, device: str) -> Record:
        args, kwargs = self.split(device)
        given = dict(self.values)
        names = [s.name for s in self.sig.args if s.name in given]
        passed = dict(zip(names, args, strict=False))
        passed.update(kwargs)
        base = None
        me = written_self(self.sig)
        if self.view is not None and me is not None and isinstance(given.get(me), torch.Tensor):
            base = make_base(self.view, given[me])
            base = base.clone() if device == "cpu" else base.to(device)
            passed[me] = make_view(self.view, base)
            args = [passed[n] for n in names[:len(args)]]
            kwargs = {n: passed[n] for n in kwargs}
        before = {label: t._version for label, t in record_tensors(passed, base)}
        out = self.sig.packet(*args, **kwargs)
        settle(device, (out, passed, base))  # a lazy device computes what was written now
        versions = {label: (before[label], t._version) for label, t in record_tensors(passed, base)}
        return Record(out=out, args=passed, base=base, versions=versions)

    def run(self, device: str) -> Any:
        record = self.execute(device)
        if self.pick is None:
            return record
        if self.pick == "out":
            return record.out
        return record.base if self.pick == "base" else record.args[self.pick]
