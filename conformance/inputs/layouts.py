"""Non-contiguous layouts: how a tensor argument is laid out as a view (:data:`LAYOUTS`), the
call that builds those views on each side (:class:`LayoutCall`), and which layouts fit a call.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from conformance.core.call import Call

Shape = tuple[int, ...]


#: Elements of poison before an ``offset`` view's first element.
OFFSET = 3


def _last_wide(shape: Shape) -> int | None:
    """The last dimension longer than 1 (where a step or an expansion changes the strides)."""
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] > 1:
            return d
    return None


def _poison(t: torch.Tensor, shape: Shape) -> torch.Tensor:
    """What fills the gaps of a buffer: NaN for floating/complex dtypes (a kernel that reads a
    gap shows as NaN), else ``t``'s values reversed (still valid indices), negated for bool."""
    n = math.prod(shape)
    if t.is_floating_point() or t.is_complex():
        return torch.full(shape, math.nan, dtype=t.dtype)
    flat = t.reshape(-1).flip(0)
    if t.dtype == torch.bool:
        flat = ~flat
    if flat.numel() == 0:
        return torch.zeros(shape, dtype=t.dtype)
    return flat.repeat(n // flat.numel() + 1)[:n].reshape(shape)


@dataclass(frozen=True)
class Layout:
    """One way to lay a tensor out: ``fits(shape)`` (the view would really be non-contiguous),
    ``base(t)`` (the CPU buffer holding ``t``'s values), ``view(base, shape)`` (run on the side's
    own tensor), ``code(expr, shape)`` (the same view, as Python source for the repro), and
    whether the view is ``dense`` (non-overlapping and dense: an elementwise result's strides
    follow it)."""

    name: str
    fits: Callable[[Shape], bool]
    base: Callable[[torch.Tensor], torch.Tensor]
    view: Callable[[torch.Tensor, Shape], torch.Tensor]
    code: Callable[[str, Shape], str]
    dense: bool

    def build(self, t: torch.Tensor, device: str | None) -> torch.Tensor:
        """``t`` laid out this way, on ``device`` (``None``: a CPU copy)."""
        base = self.base(t.detach())
        if device is not None:
            base = base.to(device)
        return self.view(base, tuple(t.shape))


def _fresh(t: torch.Tensor) -> torch.Tensor:
    """A contiguous copy with a storage of its own, exactly as large as it (``contiguous()``
    would return an already contiguous view of the drawn tensor's bigger storage)."""
    return t.clone(memory_format=torch.contiguous_format)


def _strided_base(t: torch.Tensor) -> torch.Tensor:
    d = _last_wide(tuple(t.shape))
    assert d is not None
    pair = torch.stack([t, _poison(t, tuple(t.shape))], dim=d + 1)
    return pair.flatten(d, d + 1)  # t's elements at even indices of dim d, poison between


def _strided_view(b: torch.Tensor, shape: Shape) -> torch.Tensor:
    d = _last_wide(shape)
    assert d is not None
    return b[(slice(None),) * d + (slice(None, None, 2),)]


def _strided_code(b: str, shape: Shape) -> str:
    d = _last_wide(shape)
    return f"{b}[{':, ' * (d or 0)}::2]"


def _expanded_base(t: torch.Tensor) -> torch.Tensor:
    d = _last_wide(tuple(t.shape))
    assert d is not None
    return _fresh(t.narrow(d, 0, 1))


def _offset_base(t: torch.Tensor) -> torch.Tensor:
    return torch.cat([_poison(t, (OFFSET,)), t.reshape(-1)])


def _channels_last_offset_base(t: torch.Tensor) -> torch.Tensor:
    return _offset_base(t.permute(0, 2, 3, 1))


def _channels_last_offset_view(b: torch.Tensor, s: Shape) -> torch.Tensor:
    return b[OFFSET:].view(s[0], s[2], s[3], s[1]).permute(0, 3, 1, 2)


def _transposed_fits(s: Shape) -> bool:
    return len(s) >= 2 and s[-1] > 1 and s[-2] > 1


def _swapped(s: Shape) -> list[int]:
    return [*s[:-2], s[-1], s[-2]]


def _expanded_transposed_base(t: torch.Tensor) -> torch.Tensor:
    return _fresh(t.transpose(-2, -1).narrow(-1, 0, 1))


#: The layouts, in the order a call's variants are listed (:func:`layout_variants`); ``offset``
#: is the only one that fits a 0-dim or one-element tensor.
LAYOUTS: dict[str, Layout] = {lay.name: lay for lay in (
    Layout("transposed", lambda s: len(s) >= 2 and s[-1] > 1 and s[-2] > 1,
           lambda t: _fresh(t.transpose(-2, -1)),
           lambda b, s: b.transpose(-2, -1),
           lambda b, s: f"{b}.transpose(-2, -1)", dense=True),
    Layout("strided", lambda s: _last_wide(s) is not None, _strided_base, _strided_view,
           _strided_code, dense=False),
    Layout("channels_last", lambda s: len(s) == 4 and s[1] > 1 and s[2] * s[3] > 1,
           lambda t: _fresh(t.permute(0, 2, 3, 1)),
           lambda b, s: b.permute(0, 3, 1, 2),
           lambda b, s: f"{b}.permute(0, 3, 1, 2)", dense=True),
    Layout("expanded", lambda s: _last_wide(s) is not None, _expanded_base,
           lambda b, s: b.expand(s),
           lambda b, s: f"{b}.expand({list(s)})", dense=False),
    Layout("offset", lambda s: True, _offset_base,
           lambda b, s: b[OFFSET:].view(s),
           lambda b, s: f"{b}[{OFFSET}:].view({list(s)})", dense=True),
    # Composites (issue 26): a kernel that handles each layout alone can still mishandle two at
    # once (a channels_last fast path that forgets the storage offset; a transpose of a stride-0
    # dim taken as contiguous)
    Layout("channels_last_offset", lambda s: len(s) == 4 and s[1] > 1 and s[2] * s[3] > 1,
           _channels_last_offset_base, _channels_last_offset_view,
           lambda b, s: f"{b}[{OFFSET}:].view({s[0]}, {s[2]}, {s[3]}, {s[1]})"
                        f".permute(0, 3, 1, 2)", dense=True),
    Layout("expanded_transposed", _transposed_fits, _expanded_transposed_base,
           lambda b, s: b.expand(_swapped(s)).transpose(-2, -1),
           lambda b, s: f"{b}.expand({_swapped(s)}).transpose(-2, -1)", dense=False),
)}


def tensors_of(value: Any) -> list[torch.Tensor]:
    items = value if isinstance(value, list | tuple) else [value]
    return [v for v in items if isinstance(v, torch.Tensor)]


def _reversed_dims(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` holding its values with the dimensions stored in reverse order."""
    rev = list(range(t.dim()))[::-1]
    return t.permute(rev).clone(memory_format=torch.contiguous_format).permute(rev)


def column_major_call(call: Call, skip: frozenset[str]) -> Call | None:
    """``call`` with every strided tensor argument of two or more dimensions (those named in
    ``skip`` aside: out=) as a copy stored column-major, size-1 dimensions included: a GEMM
    picks its transpose flags from the strides, and a [1, n] operand stored so is the one
    layout "transposed" (which only fits a view that is really non-contiguous) never asks
    about (complex ``mm`` of a [1, 1] by a [1, 4] meeting an infinity: NaN one way, inf the
    other). ``None`` where no argument changes."""
    def fresh(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.dim() >= 2 and v.layout == torch.strided:
            return _reversed_dims(v)
        return v

    values = []
    changed = False
    for name, value in call.values:
        if name not in skip and tensors_of(value) and any(t.dim() >= 2 for t in tensors_of(value)):
            value = [fresh(v) for v in value] if isinstance(value, list) else fresh(value)
            changed = True
        values.append((name, value))
    return replace(call, values=tuple(values)) if changed else None


@dataclass(frozen=True)
class LayoutCall(Call):
    """A :class:`Call` whose tensor arguments named in ``layouts`` are passed as views of that
    layout (each tensor of a ``Tensor[]`` argument that the layout fits); built afresh, from a
    base on the side's device, every time the call runs."""

    layouts: tuple[tuple[str, str], ...] = ()  # (argument name, layout name)

    @property
    def layout_of(self) -> dict[str, str]:
        return dict(self.layouts)

    def place(self, name: str, value: Any, device: str) -> Any:
        kind = self.layout_of.get(name)
        if kind is None:
            return super().place(name, value, device)
        layout = LAYOUTS[kind]
        target = None if device == "cpu" or name in self.on_cpu else device

        def lay(v: Any) -> Any:
            if not isinstance(v, torch.Tensor):
                return v
            if layout.fits(tuple(v.shape)):
                return layout.build(v, target)
            return Call.place(self, name, v, device)  # a list element the layout does not fit

        if isinstance(value, list):
            return [lay(v) for v in value]
        return lay(value)

    @property
    def layout_text(self) -> str:
        """``self transposed`` / ``self and other strided``: which views, for messages (no
        ``:`` or ``=``, which failure fingerprints split at)."""
        kinds: dict[str, list[str]] = {}
        for name, kind in self.layouts:
            kinds.setdefault(kind, []).append(name)
        return "; ".join(f"{' and '.join(names)} {kind}" for kind, names in kinds.items()) \
            or "contiguous"

    @property
    def dense(self) -> bool:
        """Every tensor argument is non-overlapping and dense as laid out."""
        return all(LAYOUTS[kind].dense for _, kind in self.layouts)

    def describe(self) -> str:
        return f"{super().describe()} with {self.layout_text}"

    def contiguous_twin(self) -> Call:
        """The same call on contiguous CPU tensors holding the values the views hold."""
        values = []
        for name, value in self.values:
            if name in self.layout_of:
                laid = self.place(name, value, "cpu")
                value = [_fresh(v) if isinstance(v, torch.Tensor) else v for v in laid] \
                    if isinstance(laid, list) else _fresh(laid)
            values.append((name, value))
        return Call(sig=self.sig, values=tuple(values), on_cpu=self.on_cpu, notes=self.notes)


def _candidates(call: Call) -> list[tuple[str, list[str]]]:
    """Tensor arguments (out= excluded) and the layouts that fit at least one of their tensors.
    A written argument (in-place ``self``) is never ``expanded``: writing through overlapping
    elements is refused by ATen or undefined. Nor is any argument of an op given its own
    geometry (``size`` and ``stride`` lists: ``as_strided``, ``_reshape_alias``, ``set_``):
    such an op reads the storage, and an expanded tensor's storage holds fewer elements than
    the tensor, so a geometry that fits the drawn tensor reaches past it (ATen's
    ``_reshape_alias`` does not check and reads whatever lies beyond: no result to compare)."""
    outs = {a.name for a in call.sig.args if a.is_out}
    written = {a.name for a in call.sig.args if a.is_write}
    lists = {a.name for a in call.sig.args if a.is_list}
    addresses_storage = {"size", "stride"} <= lists
    found = []
    for name, value in call.values:
        if name in outs:
            continue
        shapes = [tuple(t.shape) for t in tensors_of(value)]
        overlap_ok = name not in written and not addresses_storage
        fitting = [k for k, lay in LAYOUTS.items() if any(lay.fits(s) for s in shapes)
                   and (lay.dense or k == "strided" or overlap_ok)]
        if fitting:
            found.append((name, fitting))
    return found


def _rotation(call: Call) -> int:
    """A number that is a function of the call alone (its description and its fills' seeds, or
    for a recorded call without fills its first tensor's leading bytes): which variant of a
    drawn call comes first. Hypothesis replays and shrinks a failing call, so the order must not
    depend on anything else (an example counter would make replays flaky)."""
    key = f"{call.describe()}|{[f.seed for _, _, f in call.fills]}".encode()
    if not call.fills:
        first = next((t for _, v in call.values for t in tensors_of(v) if t.numel()), None)
        try:
            key += repr(first.detach().reshape(-1)[:16].tolist()).encode()  # type: ignore[union-attr]
        except (AttributeError, RuntimeError, TypeError):  # no tensor, or one nothing reads
            pass
    return zlib.crc32(key)


def layout_variants(call: Call) -> list[LayoutCall]:
    """The views one drawn ``forward`` call is checked in, chosen rather than drawn: for each
    layout of :data:`LAYOUTS` that fits some tensor argument, every argument it fits laid out
    that way (a kernel that mishandles the layout on any operand); with two or more tensor
    arguments, also one of them alone in one of its layouts, the others contiguous (a kernel
    that takes the fast path when ``self`` is contiguous and reads ``other`` as if it were),
    and one with each argument in a layout of its own where they differ (composites).
    The list is rotated by the call (:func:`_rotation`), so that across an item's calls each
    variant comes first in some (the check stops at a call's first failing variant; another
    layout's distinct failure shows on another call). Empty when no argument can be laid out."""
    candidates = _candidates(call)
    if not candidates:
        return []
    every = [tuple((name, kind) for name, fitting in candidates if kind in fitting)
             for kind in LAYOUTS if any(kind in fitting for _, fitting in candidates)]
    h = _rotation(call)
    if len(candidates) > 1:
        name, fitting = candidates[h % len(candidates)]
        alone = ((name, fitting[(h // len(candidates)) % len(fitting)]),)
        if alone not in every:
            every.append(alone)
        # each argument in a layout of its own (a 0-dim operand at an offset next to a
        # transposed one): a kernel right for every layout alone, wrong for the mix
        mixed = tuple((name, fitting[(h + i) % len(fitting)])
                      for i, (name, fitting) in enumerate(candidates))
        if len({kind for _, kind in mixed}) > 1 and mixed not in every:
            every.append(mixed)
    r = h % len(every)
    return [with_layouts(call, layouts) for layouts in every[r:] + every[:r]]


#: Layouts a ``forward`` refill lays its tensors out in, first fitting one per argument: a
#: transposed view (a kernel that drops a transpose flag), else every other element (one that
#: reads the storage as contiguous from offset 0).
REFILL_LAYOUTS = ("transposed", "strided")


def refill_views(call: Call) -> Call:
    """``call`` with every tensor argument that one of :data:`REFILL_LAYOUTS` fits laid out that
    way (written arguments too, never out=): the ``forward`` check's view refill, the cheap part
    of this check that runs by default. ``call`` itself when no argument fits."""
    outs = {a.name for a in call.sig.args if a.is_out}
    chosen = []
    for name, value in call.values:
        shapes = [tuple(t.shape) for t in tensors_of(value)]
        if name in outs or not shapes:
            continue
        kind = next((k for k in REFILL_LAYOUTS if any(LAYOUTS[k].fits(s) for s in shapes)), None)
        if kind is not None:
            chosen.append((name, kind))
    return with_layouts(call, tuple(chosen)) if chosen else call


def with_strides(show: str) -> str:
    """repro's ``show`` printing each result's strides too."""
    shape = "shape={tuple(o.shape)}"
    assert shape in show, "repro._SHOW no longer prints shape={tuple(o.shape)}"
    return show.replace(shape, shape + " stride={o.stride() if o.layout == torch.strided "
                                       "else None}")


def with_layouts(call: Call, layouts: tuple[tuple[str, str], ...]) -> LayoutCall:
    """``call`` with the given arguments laid out (its values, fills, pinned slots and source
    kept)."""
    return LayoutCall(sig=call.sig, values=call.values, on_cpu=call.on_cpu, notes=call.notes,
                      fills=call.fills, pinned=call.pinned, source=call.source,
                      layouts=layouts)
