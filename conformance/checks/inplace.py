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
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_flatten

from conformance.checks.check import Check
from conformance.core import readback
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from conformance.inputs.inplace_forms import (
    InplaceDraw,
    InplaceRun,
    Record,
    inplace_calls,
    inplace_rotation,
    make_view,
    record_tensors,
    variant_of,
    written_self,
)
from opdb.dtypes import DTYPE_NAMES, dtype_name, torch_dtype
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
    from conformance.compare.context import Context


#: The inplace check draws this share of ``--max-examples`` forward calls (6 of 10) and judges
#: each in every variant (plain, each view kind, another self dtype, a self that would
#: broadcast: 4-6 runs a call): a draw costs more than a run (docs/decisions.md#variants-per-call).
INPLACE_FACTOR = 0.6


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
        raise failures[inplace_rotation(call) % len(failures)]


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
    from conformance.core.verdicts import error_line

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
    return next((label for label, a in record_tensors(record.args, None) if a is t), None)


def _lookup(record: Record, label: str) -> Any:
    name, _, rest = label.partition("[")
    v = record.args.get(name)
    return v[int(rest[:-1])] if rest and isinstance(v, list | tuple) else v


def compare_records(ctx: Context, run: InplaceRun, expected: Record, actual: Record) -> None:
    """Everything the in-place call did on the backend (``actual``) against CPU (``expected``)."""
    __tracebackhide__ = True
    from conformance.compare.outputs import compare_outputs

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
        for (label, e), (_, a) in zip(record_tensors({name: exp_v}, None),
                                      record_tensors({name: actual.args[name]}, None), strict=False):
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
    numel = sum(t.numel() for _, t in record_tensors({"x": drawn}, None))
    return numel >= min_numel and _same(act, drawn) and not _same(_host(ctx, exp_v), drawn)


def functional_sibling(sig: OpSignature) -> OpSignature | None:
    """The functional overload of an in-place one with the same arguments (``add_.Tensor`` ->
    ``add.Tensor``, ``__iand__.Scalar`` -> ``__and__.Scalar``), or ``None``."""
    from conformance.core.rundb import current

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
    want = [t for _, t in record_tensors({"x": drawn}, None)]
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


CHECK = Check("inplace", inplace_calls, "in-place overloads: self returned and written, inputs "
              "and view bases as CPU's, refusals, version counters", inplace_applies,
              verify_inplace, examples_factor=INPLACE_FACTOR)
