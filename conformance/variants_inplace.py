"""The ``inplace`` check: what an in-place overload (``add_.Tensor``, ``relu_``, ``_foreach_mul_``)
promises beyond the values of its result.

Each example is a ``forward`` call judged in every *variant* (made by :func:`inplace_calls`, strategy
mode ``inplace``: the plain call first, the others in an order rotated by the call), each run on
CPU and on the backend with every argument kept, so that what the call did to its arguments can
be compared afterwards:

* ``plain``     ``self`` has the broadcast shape of the operands;
* ``view``      ``self`` is a view of a larger base (:data:`VIEWS`: a transpose, a step-2 slice,
                a storage offset; each kind ``self``'s rank allows), holding the same values as
                ``plain``'s;
* ``dtype``     ``self`` of another dtype than the operands (CPU refuses where the result cannot
                be cast to it: ``int64 += float32``);
* ``broadcast`` (pointwise overloads with another tensor operand) ``self`` smaller than the
                broadcast shape (``(3, 1) += (3, 4)``), which CPU refuses.

What is compared, each with its own category (:mod:`opdb.outcomes`), most severe first:
``inplace_identity`` (a result CPU returns as one of its arguments — ``self`` — is that very
argument on the backend), ``inplace_not_written`` (``self`` still holds its input values where
CPU's holds the result; a wrong result written is a ``value``/``dtype``/``shape`` failure as in
``forward``), ``inplace_input_changed`` (an argument the schema does not mark written, e.g.
``other``, is unchanged, bit for bit), ``inplace_view`` (the base of a view ``self`` holds what
CPU's base holds, where the same call on a plain ``self`` agrees), ``inplace_refusal`` (the
backend wrote where CPU refused; a refusal of another exception type is ``error_type`` as
elsewhere) and ``inplace_version`` (every tensor argument's ``_version`` moved as CPU's).
Seeded-random overloads (``uniform_``) compare dtype and shape, that ``self`` was written, and
the base outside the view; never the drawn values.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from hypothesis import strategies as st
from torch.utils._pytree import tree_flatten

from conformance import readback
from conformance.strategies import Call, OpSignature, forward_calls
from conformance.values import draw_tensor
from conformance.verdicts import CheckFailure, CpuRejected
from opdb.dtypes import DTYPE_NAMES, dtype_name, torch_dtype
from opdb.opdata import ArgHint, OpHints
from opdb.outcomes import (
    ERROR_ACCEPTS,
    INPLACE_IDENTITY,
    INPLACE_INPUT_CHANGED,
    INPLACE_NOT_WRITTEN,
    INPLACE_REFUSAL,
    INPLACE_VERSION,
    INPLACE_VIEW,
)

if TYPE_CHECKING:
    from conformance.backends import Backend
    from conformance.engine import Context

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

_NOTE = "inplace:"


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


def variant_of(call: Call) -> tuple[str, str | None]:
    """``(variant, detail)`` from the call's notes: the view kind of ``inplace:view:slice``,
    ``self``'s own dtype of ``inplace:dtype:float32``, else ``None``."""
    for note in call.notes:
        if note.startswith(_NOTE):
            parts = note[len(_NOTE):].split(":")
            return parts[0], (parts[1] if len(parts) > 1 else None)
    return "plain", None


# --------------------------------------------------------------------------- drawing


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
class InplaceDraw(Call):
    """One drawn ``forward`` call as the in-place check judges it: itself (the ``plain``
    variant) and its other :data:`VARIANTS` (``variants``: every view kind ``self``'s rank
    allows, another dtype of ``self``, a ``self`` that would have to broadcast), each a
    :class:`Call` noted ``inplace:VARIANT[:DETAIL]``."""

    variants: tuple[Call, ...] = ()


def _rotation(call: Call) -> int:
    """A function of the drawn call alone (Hypothesis replays a failing call: its variants must
    come in the same order; other calls start elsewhere)."""
    seeds = [f.seed for _, _, f in call.fills]
    return zlib.crc32(f"{call.describe()}|{seeds}".encode())


@st.composite
def inplace_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """Calls for the ``inplace`` check: a ``forward`` call (``self`` at the operands' broadcast
    shape) with every other variant of :data:`VARIANTS` made from it (:class:`InplaceDraw`),
    or the plain call alone where ``self`` is not one tensor on the device."""
    call = draw(forward_calls(sig, hints))
    me = written_self(sig)
    values = dict(call.values)
    x = values.get(me) if me else None
    if me is None or not isinstance(x, torch.Tensor) or me in call.on_cpu:
        return replace(call, notes=(*call.notes, _NOTE + "plain"))
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

    def variant(note: str, **changed: Any) -> Call:
        return Call(sig=sig, values=tuple((n, changed.get(n, values[n])) for n, _ in call.values),
                    on_cpu=call.on_cpu, notes=(*call.notes, _NOTE + note), source=call.source)

    made = [variant(f"view:{kind}") for kind in view_kinds(x.dim())]
    own = dtype_name(x.dtype)  # the note keeps self's own dtype: the control of a refusal
    new = draw(st.sampled_from([d for d in DTYPE_NAMES if d != own]), label="self dtype")
    made.append(variant(f"dtype:{own}", **{me: _redraw(draw, hints, me, new, tuple(x.shape))}))
    if broadcasts:
        full = tuple(x.shape)
        other = values[others[0]]
        dims = [i for i, s in enumerate(full) if s != 0]
        if dims and draw(st.booleans(), label="self size 1 where other is not?"):
            d = draw(st.sampled_from(dims), label="dim")
            wide, narrow = list(full), list(full)
            wide[d], narrow[d] = max(full[d], 2), 1
        else:  # other has one more (leading) dimension than self
            wide, narrow = [2, *full], list(full)
        made.append(variant("broadcast", **{
            others[0]: _redraw(draw, hints, others[0], dtype_name(other.dtype), tuple(wide)),
            me: _redraw(draw, hints, me, dtype_name(x.dtype), tuple(narrow))}))
    plain = variant("plain")
    h = _rotation(call)
    r = h % len(made)
    return InplaceDraw(sig=sig, values=plain.values, on_cpu=plain.on_cpu, notes=plain.notes,
                       source=call.source, variants=tuple(made[r:] + made[:r]))


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Record:
    """What one in-place call did: its result, every argument as the op saw it (afterwards),
    the base of a view ``self``, and each tensor's version counter before and after."""

    out: Any
    args: dict[str, Any]
    base: torch.Tensor | None
    versions: dict[str, tuple[int, int]]


def _tensors(args: dict[str, Any], base: torch.Tensor | None) -> list[tuple[str, torch.Tensor]]:
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
class InplaceRun(Call):
    """A call that keeps its arguments: ``run`` returns a :class:`Record`, or with ``pick`` only
    one argument afterwards (or ``"base"``), which is what a CPU re-run is compared by."""

    view: str | None = None  # self passed as this kind of view (VIEWS)
    pick: str | None = None

    @classmethod
    def of(cls, call: Call, *, view: str | None) -> InplaceRun:
        return cls(sig=call.sig, values=call.values, on_cpu=call.on_cpu, notes=call.notes,
                   view=view)

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
        before = {label: t._version for label, t in _tensors(passed, base)}
        out = self.sig.packet(*args, **kwargs)
        versions = {label: (before[label], t._version) for label, t in _tensors(passed, base)}
        return Record(out=out, args=passed, base=base, versions=versions)

    def run(self, device: str) -> Any:
        record = self.execute(device)
        if self.pick is None:
            return record
        if self.pick == "out":
            return record.out
        return record.base if self.pick == "base" else record.args[self.pick]


# --------------------------------------------------------------------------- the check


def inplace_applies(sig: OpSignature) -> str | None:
    if sig.kind != "inplace":
        return f"not an in-place overload ({sig.kind})"
    return None


def verify_inplace(ctx: Context, call: Call) -> None:
    """Identity, ``self`` written, inputs untouched, refusals, views and version counters as
    CPU's (see the module docstring): a drawn call (:class:`InplaceDraw`) plain first, then in
    each of its other variants. CPU refusing the plain call refuses the example; a variant it
    refuses otherwise is passed over; of the failing variants, the one the call's rotation
    picks is the example's failure (naming that variant's call)."""
    __tracebackhide__ = True
    failures: list[CheckFailure] = []
    for i, one in enumerate((call, *(call.variants if isinstance(call, InplaceDraw) else ()))):
        try:
            _verify_variant(ctx, one)
        except CpuRejected:
            if not i:
                raise
        except CheckFailure as exc:
            exc.call = exc.call or one
            failures.append(exc)
    if failures:  # which one the example reports turns with the call: every distinct failure
        # of an item shows on some call (plain's input_changed must not hide dtype's refusal)
        raise failures[_rotation(call) % len(failures)]


def _verify_variant(ctx: Context, call: Call) -> None:
    __tracebackhide__ = True
    variant, kind = variant_of(call)
    run = InplaceRun.of(call, view=kind if variant == "view" else None)
    if variant in ("dtype", "broadcast"):
        expected, cpu_exc = ctx.run_cpu_or_error(run)
        if cpu_exc is not None:
            if not _control_accepted(ctx, call, variant, kind):
                raise CpuRejected(cpu_exc)  # refused for another reason than self's dtype/shape
            _expect_refusal(ctx, run, cpu_exc)
            return
    else:
        expected = ctx.run_cpu(run)
    actual = ctx.run_backend(run)
    if run.view is None:
        compare_records(ctx, run, expected, actual)
        return
    try:
        compare_records(ctx, run, expected, actual)
    except CheckFailure as exc:
        if exc.category in (INPLACE_IDENTITY, INPLACE_VERSION):
            raise
        _diagnose_view(ctx, run, exc)


def control(call: Call, variant: str, detail: str | None) -> Call | None:
    """The call a ``dtype``/``broadcast`` variant was made from, as far as it matters: ``self``
    in its own dtype, or expanded to the operands' broadcast shape. ``None``: none to make."""
    me = written_self(call.sig)
    values = dict(call.values)
    x = values.get(me) if me else None
    if not isinstance(x, torch.Tensor):
        return None
    if variant == "dtype" and detail in DTYPE_NAMES:
        with warnings.catch_warnings():  # complex -> real drops the imaginary part: fine here
            warnings.simplefilter("ignore")
            fixed = x.to(torch_dtype(detail))
    elif variant == "broadcast":
        shapes = [v.shape for n, v in values.items() if isinstance(v, torch.Tensor)
                  and any(a.name == n for a in call.sig.tensor_args)]
        try:
            fixed = x.expand(torch.broadcast_shapes(*shapes)).clone()
        except RuntimeError:
            return None
    else:
        return None
    return replace(call, values=tuple((n, fixed if n == me else v) for n, v in call.values))


def _control_accepted(ctx: Context, call: Call, variant: str, detail: str | None) -> bool:
    """Whether CPU accepts the :func:`control` of a variant it refused: only then is the refusal
    about ``self`` (its dtype or shape), which the backend must share."""
    plain = control(call, variant, detail)
    if plain is None:
        return False
    ctx.inflight.call(plain, ctx.repro_fn, side="cpu")
    try:
        plain.run("cpu")
    except Exception:  # noqa: BLE001 - CPU's errors are data here
        return False
    return True


def _expect_refusal(ctx: Context, run: InplaceRun, cpu_exc: BaseException) -> None:
    __tracebackhide__ = True
    from conformance.verdicts import error_line

    try:
        ctx.expect_same_error(run, cpu_exc)
    except CheckFailure as exc:
        if exc.category != ERROR_ACCEPTS:
            raise
        raise CheckFailure(INPLACE_REFUSAL, f"wrote into self, but should raise "
                                            f"{error_line(cpu_exc)} as CPU does "
                                            f"[{run.describe()}]") from None


def _diagnose_view(ctx: Context, run: InplaceRun, failure: CheckFailure) -> None:
    """A failure through a view: the same call on a plain ``self`` tells whether it is the view
    (``inplace_view``) or the op itself (that failure, as the plain variant reports it)."""
    __tracebackhide__ = True
    plain = replace(run, view=None)
    try:
        compare_records(ctx, plain, ctx.run_cpu(plain), ctx.run_backend(plain))
    except CpuRejected:
        pass
    raise CheckFailure(INPLACE_VIEW, f"through a view: {failure.message}") from None


def _relabel(message: str, label: str) -> str:
    """compare_outputs' ``out``/``out[i]`` messages, about argument ``label`` instead."""
    return label + message.removeprefix("out") if message.startswith("out") else message


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit agreement of two host values (dtype, shape, NaN where NaN)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = (readback.plain(t.to_dense() if t.layout != torch.strided else t) for t in (a, b))
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if a.is_floating_point():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return torch.equal(a, b)


def _host(ctx: Context, v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return ctx.to_host(v.detach())
    if isinstance(v, list | tuple):
        return [_host(ctx, x) for x in v]
    return v


def _first_difference(a: torch.Tensor, b: torch.Tensor) -> str:
    """``3 of 6 elements differ, first at index (1, 0): 2.0, was 1.0`` (same dtype and shape)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"now {dtype_name(a.dtype)}{list(a.shape)}, was {dtype_name(b.dtype)}{list(b.shape)}"
    a, b = readback.plain(a), readback.plain(b)
    x, y = (torch.view_as_real(a), torch.view_as_real(b)) if a.is_complex() else (a, b)
    bad = (x != y) & ~(x.isnan() & y.isnan()) if x.is_floating_point() else x != y
    if x.dim() > a.dim():
        bad = bad.any(-1)
    n = int(bad.sum())
    flat = int(bad.reshape(-1).nonzero()[0]) if n else 0
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), a.shape))
    return (f"{n} of {a.numel()} elements differ, first at index {index}: "
            f"{a.reshape(-1)[flat].item()!r}, was {b.reshape(-1)[flat].item()!r}")


def _alias(record: Record, t: Any) -> str | None:
    """The label of the argument ``t`` is (the very object), else ``None``."""
    if not isinstance(t, torch.Tensor):
        return None
    return next((label for label, a in _tensors(record.args, None) if a is t), None)


def _lookup(record: Record, label: str) -> Any:
    name, _, rest = label.partition("[")
    v = record.args.get(name)
    return v[int(rest[:-1])] if rest and isinstance(v, list | tuple) else v


def compare_records(ctx: Context, run: InplaceRun, expected: Record, actual: Record) -> None:
    """Everything the in-place call did on the backend (``actual``) against CPU (``expected``)."""
    __tracebackhide__ = True
    from conformance.checks import compare_outputs

    where = run.describe()
    seeded = "nondeterministic_seeded" in run.sig.tags
    values = ctx.hints.values and not seeded
    # 1. results: one CPU returns as an argument must be that very argument; others as forward
    exp_out, act_out = tree_flatten(expected.out)[0], tree_flatten(actual.out)[0]
    if len(exp_out) != len(act_out):
        raise CheckFailure("structure", f"returned {len(act_out)} values, but should return "
                                        f"{len(exp_out)} [{where}]")
    fresh = []
    for i, (e, a) in enumerate(zip(exp_out, act_out, strict=True)):
        label = "out" if len(exp_out) == 1 else f"out[{i}]"
        alias = _alias(expected, e)
        if alias is None:
            fresh.append(i)
        elif a is not _lookup(actual, alias):
            what = (f"a new tensor {dtype_name(a.dtype)}{list(a.shape)}"
                    if isinstance(a, torch.Tensor) else repr(a))
            raise CheckFailure(INPLACE_IDENTITY, f"{label} is {what}, but should be the {alias} "
                                                 f"argument itself, as on CPU [{where}]")
    if fresh:
        compare_outputs(ctx, replace(run, pick="out"), [exp_out[i] for i in fresh],
                        [act_out[i] for i in fresh], values=not seeded)
    # 2. the written arguments hold CPU's result (or at least were written)
    written = {a.name for a in run.sig.args if a.is_write}
    drawn = dict(run.values)
    for name in (n for n in expected.args if n in written):
        exp_v, act_v = expected.args[name], actual.args[name]
        if not isinstance(exp_v, torch.Tensor | list | tuple):
            continue
        try:
            compare_outputs(ctx, replace(run, pick=name), exp_v, act_v, values=values)
        except CheckFailure as exc:
            if ctx.backend.host_values and _left_unchanged(ctx, drawn.get(name), exp_v, act_v) \
                    and not _functional_gives(ctx, run, drawn.get(name)):
                raise CheckFailure(INPLACE_NOT_WRITTEN, f"{name} was not written: it still "
                                                        f"holds its input values, but CPU's "
                                                        f"holds the result [{where}]") from None
            raise CheckFailure(exc.category, _relabel(exc.message, name)) from None
        if seeded and ctx.hints.values and ctx.backend.host_values and _left_unchanged(ctx, drawn.get(name), exp_v, act_v,
                                                           min_numel=16):
            raise CheckFailure(INPLACE_NOT_WRITTEN, f"{name} was not written: it still holds "
                                                    f"its input values, but CPU's was filled "
                                                    f"[{where}]")
    # 3. arguments the schema does not mark written are untouched, bit for bit
    for name, exp_v in expected.args.items():
        if not ctx.values_comparable():
            break  # a shape-only backend: judged on metadata only
        if name in written or not isinstance(exp_v, torch.Tensor | list | tuple):
            continue
        for (label, e), (_, a) in zip(_tensors({name: exp_v}, None),
                                      _tensors({name: actual.args[name]}, None), strict=False):
            host = ctx.to_host(a.detach())
            if not _same(host, e.detach()):
                raise CheckFailure(INPLACE_INPUT_CHANGED, f"{label} changed, but the call must "
                                   f"only read it: {_first_difference(host, e.detach())} "
                                   f"[{where}]")
    # 4. the base of a view self holds what CPU's does
    if expected.base is not None and actual.base is not None:
        compare_outputs(ctx, replace(run, pick="base"), expected.base, actual.base,
                        values=values)
        if not values and ctx.hints.values and ctx.backend.host_values:
            _untouched_rest(ctx, run, expected.base, actual.base, where)
    # 5. version counters moved as CPU's
    for label, (e0, e1) in expected.versions.items():
        if label not in actual.versions:
            continue
        a0, a1 = actual.versions[label]
        if a1 - a0 != e1 - e0:
            raise CheckFailure(INPLACE_VERSION, f"{label}._version went {a0} -> {a1}, but CPU's "
                                                f"went {e0} -> {e1} [{where}]")


def _left_unchanged(ctx: Context, drawn: Any, exp_v: Any, act_v: Any, min_numel: int = 0
                    ) -> bool:
    """The backend's written argument still equals what was drawn, where CPU's does not."""
    if drawn is None:
        return False
    act = _host(ctx, act_v)
    if isinstance(drawn, torch.Tensor) and isinstance(act, torch.Tensor) \
            and act.shape != drawn.shape:
        return False
    numel = sum(t.numel() for _, t in _tensors({"x": drawn}, None))
    return numel >= min_numel and _same(act, drawn) and not _same(_host(ctx, exp_v), drawn)


def functional_sibling(sig: OpSignature) -> OpSignature | None:
    """The functional overload of an in-place one with the same arguments (``add_.Tensor`` ->
    ``add.Tensor``, ``__iand__.Scalar`` -> ``__and__.Scalar``), or ``None``."""
    from conformance.rundb import current

    base = "__" + sig.base[3:] if sig.base.startswith("__i") else sig.base.removesuffix("_")
    name = f"{base}.{sig.overload_name}" if sig.overload_name else base
    db = current()
    if name == sig.name or name not in db:
        return None
    sibling = OpSignature.of(db[name])
    return sibling if [a.name for a in sibling.args] == [a.name for a in sig.args] else None


def _functional_gives(ctx: Context, run: InplaceRun, drawn: Any) -> bool:
    """Whether the backend's functional sibling of the overload returns ``drawn`` (``self``'s
    input values, cast to its dtype) too: then an unchanged ``self`` is the right write of a
    wrong value (a precision bug: ``nextafter`` computed too wide rounds back to its input),
    not a missing write."""
    sibling = functional_sibling(run.sig)
    if sibling is None or drawn is None:
        return False
    call = Call(sig=sibling, values=run.values, on_cpu=run.on_cpu)
    ctx.inflight.call(call, ctx.repro_fn, side=ctx.backend.device)
    try:
        out = call.run(ctx.backend.device)
    except Exception as exc:  # noqa: BLE001 - no answer: the missing write stands
        ctx.device_alive(exc, call)
        return False
    got = [_host(ctx, t) for t in tree_flatten(out)[0]]
    want = [t for _, t in _tensors({"x": drawn}, None)]
    return len(got) == len(want) and all(
        isinstance(g, torch.Tensor) and g.shape == w.shape and _same(g.to(w.dtype), w)
        for g, w in zip(got, want, strict=True))


def _untouched_rest(ctx: Context, run: InplaceRun, expected: torch.Tensor, actual: torch.Tensor,
                    where: str) -> None:
    """Where values are not compared (seeded-random ops), the base outside the view is."""
    assert run.view is not None
    if expected.shape != actual.shape:
        return
    mask = torch.zeros(expected.shape, dtype=torch.bool)
    make_view(run.view, mask).fill_(True)
    host = ctx.to_host(actual.detach())
    rest_e, rest_a = expected.detach()[~mask], host[~mask]
    if not _same(rest_a, rest_e):
        raise CheckFailure("value", f"base changed outside the view: "
                                    f"{_first_difference(rest_a, rest_e)} [{where}]")


# --------------------------------------------------------------------------- repro


_SHOW = '''def show(device):
    try:
        out, inputs, base, before = call(device)
    except Exception as exc:
        print(f"{device}: raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    outs = out if isinstance(out, (tuple, list)) else [out]
    returned = [next((k for k, v in inputs.items() if o is v), None) for o in outs]
    print(f"{device}: returned {returned} (the argument each result is; None: a new object)")
    for name, v in inputs.items():
        for i, t in enumerate(v if isinstance(v, list) else [v]):
            label = f"{name}[{i}]" if isinstance(v, list) else name
            print(f"{device}: {label} after the call (_version {before[label]} -> {t._version}):")
            print(t.cpu())
    if base is not None:
        print(f"{device}: base after the call:")
        print(base.cpu())
'''


def snippet(call: Call, backend: Backend, note: str | None = None) -> str:
    """The repro of an ``inplace`` example: the same variant (a view ``self`` is made from a
    literal base), then every argument, the base and the version counters printed after the
    call on CPU and on the device."""
    from conformance.repro import _op_call, _value, bringup_lines, tensor_literal

    variant, kind = variant_of(call)
    sig = call.sig
    me = written_self(sig)
    given = dict(call.values)
    view = kind if variant == "view" and me is not None \
        and isinstance(given.get(me), torch.Tensor) else None
    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {sig.name}: {sig.schema_str}")
    lines.append(f"# in-place check, variant {variant}" + (f" ({view} view)" if view else ""))
    lines.append("def call(device):")
    if view is not None:
        assert me is not None
        lines.append(f"    base = {tensor_literal(make_base(view, given[me]))}.to(device)")
    else:
        lines.append("    base = None")
    lines.append("    inputs = {")
    for name, value in call.values:
        if name == me and view is not None:
            lines.append(f"        {name!r}: {VIEWS[view][1]},")
        elif isinstance(value, torch.Tensor) or (isinstance(value, list) and any(
                isinstance(v, torch.Tensor) for v in value)):
            lines.append(f"        {name!r}: {_value(value, name not in call.on_cpu)},")
    lines.append("    }")
    lines.append("    before = {(f'{k}[{i}]' if isinstance(v, list) else k): t._version")
    lines.append("              for k, v in inputs.items()")
    lines.append("              for i, t in enumerate(v if isinstance(v, list) else [v])}")

    def text(name: str, value: Any) -> str:
        if name == me and view is not None or isinstance(value, torch.Tensor) or (
                isinstance(value, list) and any(isinstance(v, torch.Tensor) for v in value)):
            return f"inputs[{name!r}]"
        return _value(value, name not in call.on_cpu)

    lines.append(f"    out = {_op_call(call, text)}")
    lines.append("    return out, inputs, base, before")
    lines += ["", _SHOW, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"
