"""The ``noncontiguous`` check: the ``forward`` inputs again as non-contiguous views.

Backend kernels are often right only for contiguous input: they read the storage as if it were
laid out row-major from offset 0. This check draws calls as the ``forward`` check does (its
strategy, recorded calls included) and checks each in every layout of :data:`LAYOUTS` that fits
it (:func:`layout_variants`: all the tensor arguments a layout fits laid out that way, and one
argument alone) — a view with the same shape whose values are the drawn ones (``expanded``:
replicated along one dimension):

* ``offset``        a contiguous view at a storage offset into a larger buffer
* ``transposed``    the last two dims swapped back of a contiguous tensor of the transposed shape
* ``strided``       every other element (step 2) of a tensor twice as large along one dimension
* ``channels_last`` a 4-d tensor stored NHWC (``permute(0, 2, 3, 1)`` back of a contiguous one)
* ``expanded``      stride 0: a size-1 dimension expanded (values replicated along it)

The gaps of ``offset``/``strided`` buffers hold poison (NaN for floating dtypes, the values
reversed otherwise), so a kernel that reads them shows. The view is built the same way on both
sides, on the device from a base tensor on the device (so the backend really receives a strided
tensor, made by its own view kernels), and the repro snippet writes the same construction.

Values, dtypes and shapes are compared as ``forward`` compares them. A disagreement is the
layout's only if the same values as contiguous tensors agree with CPU (the *contiguous twin*,
run on a failure only); otherwise it is the ``forward`` check's to report, and the example is
not counted here (a known NaN-propagation bug is not filed twice). A result's strides are
compared where CPU's are a contract (:func:`stride_contract`): a view of an input, an in-place
result (``self``), an op that takes ``memory_format`` (``preserve_format`` copies such as
``clone``, ``*_like``, ``to``), and an elementwise op whose inputs are all dense and
non-overlapping. A stride difference there is a ``strides`` failure; elsewhere it is noted as
``strides_informational`` on a ``pass``.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch._prims_common import check_significant_strides
from torch.utils._pytree import tree_flatten

from conformance.repro import _SHOW, _op_call, _value, bringup_lines, tensor_literal
from conformance.strategies import Call, OpSignature, written
from conformance.verdicts import CheckFailure, CpuRejected
from opdb.outcomes import STRIDES, STRIDES_INFORMATIONAL

if TYPE_CHECKING:
    from conformance.backends import Backend
    from conformance.engine import Context

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
)}


def _tensors_of(value: Any) -> list[torch.Tensor]:
    items = value if isinstance(value, list | tuple) else [value]
    return [v for v in items if isinstance(v, torch.Tensor)]


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
        return Call(sig=self.sig, values=tuple(values), on_cpu=self.on_cpu,
                    notes=tuple(n for n in self.notes if n != "noncontiguous"))


# --------------------------------------------------------------------------- drawing


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
        shapes = [tuple(t.shape) for t in _tensors_of(value)]
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
        first = next((t for _, v in call.values for t in _tensors_of(v) if t.numel()), None)
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
    that takes the fast path when ``self`` is contiguous and reads ``other`` as if it were).
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
    r = h % len(every)
    return [with_layouts(call, layouts) for layouts in every[r:] + every[:r]]


# --------------------------------------------------------------------------- the check


def applies(sig: OpSignature) -> str | None:
    if not any(a.base == "Tensor" and not a.is_out for a in sig.args):
        return "no tensor argument to lay out"
    return None


_VIEW_RETURN = re.compile(r"\([a-z]+\)")  # `-> Tensor(a)`: the result aliases an input


def stride_contract(call: LayoutCall) -> str | None:
    """Why CPU's result strides are a contract for ``call`` (``None``: they are not)."""
    sig = call.sig
    returns = sig.schema_str.rpartition("->")[2]
    if sig.kind == "functional" and _VIEW_RETURN.search(returns):
        return "a view of an input"
    if sig.kind == "inplace":
        return "an in-place result is self"
    if any(a.base == "MemoryFormat" for a in sig.args):
        return "memory_format (default preserve_format) decides them"
    tensors = {name for name, value in call.values if _tensors_of(value)}
    if sig.is_pointwise and sig.kind == "functional" and call.dense \
            and tensors <= set(call.layout_of):
        # every tensor in one dense layout (with mixed layouts TensorIterator's choice of the
        # result's is an implementation detail: then the difference is informational)
        return "an elementwise op on dense non-overlapping inputs of one layout"
    return None


def _leaves(out: Any) -> list[Any]:
    return list(tree_flatten(out)[0])


def compare_strides(ctx: Context, call: LayoutCall, expected: Any, actual: Any) -> None:
    """Strides (of dimensions longer than 1) and, for views, storage offsets of every strided
    result as CPU's: a ``strides`` failure where :func:`stride_contract` says they are a
    contract, else an informational note (``strides_informational``)."""
    __tracebackhide__ = True
    contract = stride_contract(call)
    exp, act = _leaves(expected), _leaves(actual)
    for i, (e, a) in enumerate(zip(exp, act, strict=True)):
        if not (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor)) \
                or e.layout != torch.strided or a.layout != torch.strided:
            continue
        label = "out" if len(exp) == 1 else f"out[{i}]"
        same, _ = check_significant_strides(e, a, only_cuda=False)
        what = f"{label}.stride()={tuple(a.stride())}, but CPU's is {tuple(e.stride())}"
        if same and contract == "a view of an input" and e.numel() > 0 \
                and a.storage_offset() != e.storage_offset():
            same = False
            what = (f"{label}.storage_offset()={a.storage_offset()}, but CPU's is "
                    f"{e.storage_offset()}")
        if same:
            continue
        if contract is not None:
            raise CheckFailure(STRIDES, f"with {call.layout_text}, {what} (a contract: "
                                        f"{contract}) [{call.describe()}]")
        ctx.note_info(STRIDES_INFORMATIONAL, f"with {call.layout_text}, {what}")


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
        shapes = [tuple(t.shape) for t in _tensors_of(value)]
        if name in outs or not shapes:
            continue
        kind = next((k for k in REFILL_LAYOUTS if any(LAYOUTS[k].fits(s) for s in shapes)), None)
        if kind is not None:
            chosen.append((name, kind))
    return with_layouts(call, tuple(chosen)) if chosen else call


def verify(ctx: Context, call: Call, *, strides: bool = True) -> None:
    """Values, dtype and shape as CPU's for the same non-contiguous views; strides where CPU's
    are a contract (``strides=False``: values only, as the forward check's view refill). A
    plain drawn call is checked in each of its layout variants (:func:`verify_variants`)."""
    __tracebackhide__ = True
    from conformance.checks import compare_outputs

    if not isinstance(call, LayoutCall):
        verify_variants(ctx, call)
        return
    call = written(call)  # an overload returning nothing: what it wrote is its result
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
    actual_or_none: Any = None
    try:
        actual = actual_or_none = ctx.run_backend(call)
        compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)
    except CheckFailure as exc:
        why = _not_the_layout(ctx, call, actual_or_none, seeded)
        if why is not None:
            line = f"ValueError: {why}"
            ctx.cpu_errors[line] += 1
            raise CpuRejected(ValueError(why)) from None
        raise CheckFailure(exc.category, f"with {call.layout_text}, {exc.message}") from None
    if strides:
        compare_strides(ctx, call, expected, actual)


def verify_variants(ctx: Context, call: Call) -> None:
    """One example of the ``noncontiguous`` check: a drawn ``forward`` call checked in every
    variant of :func:`layout_variants`, the first with the drawn values, the ``j``-th with
    refill ``j`` of them (other values, same dtypes). CPU refusing the first variant refuses
    the example (as a forward call CPU refuses); a later variant CPU refuses, or one whose
    failure is not the layout's, is passed over. The first failing variant ends the example
    (the failure names that variant's call)."""
    __tracebackhide__ = True
    from conformance.verdicts import error_line

    variants = layout_variants(call)
    if not variants:  # every tensor argument None or an empty list
        none = ValueError("no tensor argument to lay out")
        ctx.cpu_errors[error_line(none)] += 1
        raise CpuRejected(none)
    for j, variant in enumerate(variants):
        laid = with_layouts(call.refill(j, move=False), variant.layouts) if j else variant
        try:
            verify(ctx, laid)
        except CpuRejected:
            if not j:
                raise
        except CheckFailure as exc:
            exc.call = exc.call or laid
            raise


def _not_the_layout(ctx: Context, call: LayoutCall, actual: Any, seeded: bool) -> str | None:
    """Why a failure of ``call`` (the views) is not the layout's, or ``None`` when it is.
    ``actual`` is the backend's answer to the views (``None``: it raised). Not the layout's:
    the backend disagrees with CPU on the contiguous twin too (the forward check's failure), its
    answer to the views is CPU's answer to the twin (CPU's own result depends on the layout
    there, e.g. how a BLAS path propagates inf and NaN), or CPU refuses the twin and the backend
    refuses the views with the same exception type (CPU's strided path skips a check its
    contiguous one makes: ``_native_batch_norm_legit`` of a 1-d input)."""
    from conformance.checks import compare_outputs

    twin = call.contiguous_twin()
    ctx.inflight.call(twin, ctx.repro_fn, side="cpu")
    try:
        expected = twin.run("cpu")
    except Exception as refusal:  # noqa: BLE001 - CPU refuses the contiguous twin
        if actual is None and _backend_refuses_like(ctx, call, refusal):
            return (f"CPU accepts these values only laid out this way (contiguous, it raises "
                    f"{type(refusal).__name__}); the backend raises that in both layouts")
        return None

    def agrees(answer: Any) -> bool:
        try:
            compare_outputs(ctx, twin, expected, answer, values=not seeded,
                            samples=[expected, *ctx.cpu_samples(twin, 7)] if seeded else None)
        except Exception:  # noqa: BLE001 - disagreed (or could not be compared)
            return False
        return True

    if actual is not None and agrees(actual):
        return ("CPU's own result for these values depends on their layout, and the backend "
                "gave CPU's result for contiguous tensors")
    ctx.inflight.call(twin, ctx.repro_fn, side=ctx.backend.device)
    try:
        again = twin.run(ctx.backend.device)
    except Exception as exc:  # noqa: BLE001 - raises without any view too
        ctx.device_alive(exc, twin)
        return "the same values as contiguous tensors fail too (the forward check's failure)"
    if not agrees(again):
        return "the same values as contiguous tensors fail too (the forward check's failure)"
    return None


def _backend_refuses_like(ctx: Context, call: Call, refusal: BaseException) -> bool:
    """Whether the backend raises ``refusal``'s exception type on ``call``."""
    ctx.inflight.call(call, ctx.repro_fn, side=ctx.backend.device)
    try:
        call.run(ctx.backend.device)
    except Exception as exc:  # noqa: BLE001
        ctx.device_alive(exc, call)
        return type(exc) is type(refusal)
    return False


# --------------------------------------------------------------------------- the repro


def snippet(call: LayoutCall, backend: Backend, *, note: str | None = None) -> str:
    """The standalone repro of a ``noncontiguous`` example: each laid-out argument is built as
    the check builds it (a base buffer on the device, then the view), and the results are shown
    with their strides."""
    layout_of = call.layout_of

    def lay(name: str, v: Any) -> str:
        on_device = name not in call.on_cpu
        kind = layout_of.get(name)
        if not isinstance(v, torch.Tensor) or kind is None or not LAYOUTS[kind].fits(
                tuple(v.shape)):
            return _value(v, on_device)
        layout = LAYOUTS[kind]
        base = tensor_literal(layout.base(v)) + (".to(device)" if on_device else "")
        return layout.code(base, tuple(v.shape))

    def text(name: str, value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(lay(name, v) for v in value) + "]"
        return lay(name, value)

    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {call.sig.name}: {call.sig.schema_str}")
    lines.append(f"# noncontiguous inputs: {call.layout_text} (a base buffer, then the view)")
    lines.append("def call(device):")
    lines.append(f"    return {_op_call(call, text)}")
    lines += ["", _SHOW_STRIDES, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"


def _with_strides(show: str) -> str:
    """repro's ``show`` printing each result's strides too."""
    shape = "shape={tuple(o.shape)}"
    assert shape in show, "repro._SHOW no longer prints shape={tuple(o.shape)}"
    return show.replace(shape, shape + " stride={o.stride() if o.layout == torch.strided "
                                       "else None}")


_SHOW_STRIDES = _with_strides(_SHOW)


def with_layouts(call: Call, layouts: tuple[tuple[str, str], ...]) -> LayoutCall:
    """``call`` with the given arguments laid out (its values, fills and source kept)."""
    notes = call.notes if "noncontiguous" in call.notes else (*call.notes, "noncontiguous")
    return LayoutCall(sig=call.sig, values=call.values, on_cpu=call.on_cpu, notes=notes,
                      fills=call.fills, source=call.source, layouts=layouts)
