"""Results against CPU's: structure, device, dtype, shape and values of every output
(:func:`compare_outputs`), with CPU re-run where its own answer is not a contract.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_flatten

from conformance.compare import collisions
from conformance.compare import ties as tie_positions
from conformance.compare.values import assert_values, is_view
from conformance.core import readback
from conformance.core.call import Call
from conformance.core.verdicts import CheckFailure, CpuRejected, error_line
from opdb.outcomes import ATEN_COMPOSITE, BACKEND_PROPERTY

if TYPE_CHECKING:
    from conformance.compare.context import Context


def _fmt_dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def result_leaves(out: Any) -> list[Any]:
    leaves, _ = tree_flatten(out)
    return leaves


def result_label(i: int, n: int) -> str:
    return "out" if n == 1 else f"out[{i}]"


def result_labels(call: Call, n: int) -> list[str]:
    """How messages name the ``n`` results of ``call``: ``out`` / ``out[i]``, or, for an
    overload that returns nothing (:attr:`Call.written`), the arguments it wrote (``self[1]``
    of ``_foreach_add_``, ``out[0]`` of ``_foreach_exp.out``), in the order ``run`` gives them."""
    if call.written:
        from conformance.core.call import written_parts

        names = [label for label, _ in written_parts(call.sig, dict(call.values))]
        if len(names) == n:
            return names
    return [result_label(i, n) for i in range(n)]


def compare_outputs(ctx: Context, call: Call, expected: Any, actual: Any, *,
                    values: bool, samples: list[Any] | None = None,
                    view_bits: bool = True) -> None:
    """Structure, device, dtype, shape and (optionally) values of ``actual`` against CPU's;
    a disagreement on a call CPU answers only because its inputs are empty is not counted
    (:meth:`~conformance.compare.context.Context.reject_if_vacuous`). ``view_bits=False``: ``actual``
    is not what the (view) overload returned (a gradient), so its lazy conj/neg bits are not
    compared."""
    __tracebackhide__ = True
    try:
        _compare_outputs(ctx, call, expected, actual, values=values, samples=samples,
                         view_bits=view_bits)
    except CheckFailure:
        ctx.reject_if_vacuous(call)
        if samples is None and _as_composite(ctx, call, actual, values=values,
                                             view_bits=view_bits):
            return
        raise


def _as_composite(ctx: Context, call: Call, actual: Any, *, values: bool,
                  view_bits: bool) -> bool:
    """Asked where the backend's answer differs from CPU's: whether it is what ATen's own
    composite answers on CPU, where CPU's kernel overrides it (:mod:`conformance.core.
    composites`); then the example agrees and the verdict notes it (``aten_composite``)."""
    run = ctx.aten_composite(call)
    if run is None or run.error is not None:
        return False
    try:
        _compare_outputs(ctx, call, run.answer, actual, values=values, view_bits=view_bits,
                         settle=False)
    except CheckFailure:
        return False
    ctx.note_info(ATEN_COMPOSITE, f"differs from CPU's kernel as ATen's composite "
                                  f"({', '.join(run.routed)}) does, which a backend without a "
                                  f"kernel of its own computes [{call.describe()}]")
    return True


def _compare_outputs(ctx: Context, call: Call, expected: Any, actual: Any, *,
                     values: bool, samples: list[Any] | None = None,
                     view_bits: bool = True, settle: bool = True) -> None:
    """``settle``: where values differ, CPU may be asked again (its own instability, other
    layouts, float64): not where ``expected`` is not CPU's plain answer."""
    __tracebackhide__ = True
    where = call.describe()
    if not ctx.hints.values:  # hints: this op's result values are unspecified (empty_like)
        values, samples = False, None
    if (values or samples is not None) and not ctx.values_comparable():
        values, samples = False, None  # a shape-only backend (meta): judged on metadata only
    exp, act = result_leaves(expected), result_leaves(actual)
    extra = [result_leaves(s) for s in samples or ()]
    value_range = samples is not None
    if len(exp) != len(act):
        raise CheckFailure("structure", f"returned {len(act)} values, but should return "
                                        f"{len(exp)} [{where}]")
    n = len(exp)
    labels = result_labels(call, n)
    for i, (e, a) in enumerate(zip(exp, act, strict=True)):
        label = labels[i]
        if isinstance(e, torch.Tensor) != isinstance(a, torch.Tensor):
            raise CheckFailure("structure", f"{label} is {type(a).__name__}, but should be "
                                            f"{type(e).__name__} [{where}]")
        if not isinstance(e, torch.Tensor):
            if values and not _same_scalar(e, a):
                def same(again: Any, i: int = i, e: Any = e) -> bool:
                    return _same_scalar(e, _leaf(again, i))

                if ctx.cpu_unstable(call, same):
                    continue  # CPU's own answers differ: the value is not specified here
                raise CheckFailure("value", f"{label}={a!r}, but should be {e!r} [{where}]")
            continue
        try:  # CPU returned a tensor nothing can read (_add_batch_dim(x, batch_dim=-1) is
            # batched at dimension -1): no answer to compare with, the example is not counted
            e_form, e_parts = readback.form(e), readback.parts(e)
        except Exception as exc:  # noqa: BLE001
            raise CpuRejected(exc) from None
        try:
            a_form, a_parts = readback.form(a), readback.parts(a)
        except Exception as exc:  # noqa: BLE001 - the backend cannot read its own result
            ctx.device_alive(exc, None)
            raise CheckFailure("device", f"reading {label} on {ctx.backend.device} raised "
                                         f"{error_line(exc)} [{where}]") from None
        if a_form != e_form:
            raise CheckFailure("structure", f"{label} is a {a_form}, but should be a {e_form} "
                                            f"[{where}]")
        if view_bits and is_view(call.sig):  # a view's lazy conj/neg bit is part of what
            # it returns
            for bit, got, want in zip(("is_conj", "is_neg"), readback.bits(a), readback.bits(e),
                                      strict=True):
                if got != want:
                    raise CheckFailure("alias", f"{label}.{bit}()={got}, but should be {want} "
                                                f"as CPU's view has it [{where}]")
        if len(a_parts) != len(e_parts):
            raise CheckFailure("shape", f"{label} has {len(a_parts)} components, but should "
                                        f"have {len(e_parts)} [{where}]")
        for j, ((suffix, ep), (_, ap)) in enumerate(zip(e_parts, a_parts, strict=True)):
            _compare_tensor(ctx, call, f"{label}{suffix}", where, ep, ap, i, j, n, values=values,
                            spread=[_part(x, i, j) for x in extra] if value_range else None,
                            settle=settle)


def _compare_tensor(ctx: Context, call: Call, label: str, where: str, e: torch.Tensor,
                    a: torch.Tensor, i: int, j: int, n: int, *, values: bool,
                    spread: list[Any] | None, settle: bool = True) -> None:
    """Device, dtype, shape and (``values``, or ``spread``: CPU's other samples of a
    seeded-random op) values of part ``j`` of result ``i`` (of ``n``)."""
    __tracebackhide__ = True
    if ctx.hints.result_on_device and ctx.device_inputs(call) \
            and a.device.type != ctx.backend.device:
        raise CheckFailure("device", f"{label}.device={a.device}, but should be on "
                                     f"{ctx.backend.device} [{where}]")
    if a.dtype != e.dtype:
        raise CheckFailure("dtype", f"{label}.dtype={_fmt_dtype(a.dtype)}, but should be "
                                    f"{_fmt_dtype(e.dtype)} [{where}]")
    if tuple(a.shape) != tuple(e.shape):
        raise CheckFailure("shape", f"{label}.shape={tuple(a.shape)}, but should be "
                                    f"{tuple(e.shape)} [{where}]")
    if not (values or spread is not None):
        return
    host = ctx.to_host(a)
    if spread is not None:
        samples = [e] + [x for x in spread if isinstance(x, torch.Tensor)]
        try:
            _assert_in_range(label, where, host, samples)
        except CheckFailure:
            def within(again: Any) -> bool:
                return _within_spread(label, where, _part(again, i, j), samples)

            if ctx.cpu_unstable(call, within, reruns=SPREAD_RERUNS):
                return  # CPU's own samples leave its spread: it bounds nothing here
            raise
        return
    try:
        ties = ctx.hints.ties  # positions of tied elements: compared by what they pick
        if ties is not None and tie_positions.applies(call, ties, i):
            tie_positions.assert_same_picks(call, ties, label, where, readback.plain(host),
                                            readback.plain(e))
        else:
            if ctx.hints.collisions is not None and i == 0:  # elements two writes land on
                host = collisions.uncontested(ctx, call, label, where, host, e)
            assert_values(ctx, call, label, where, host, e, position=(i, n))
    except CheckFailure:
        if not settle:
            raise

        def agrees(again: Any) -> bool:
            return _agrees(ctx, call, label, where, _part(again, i, j), e, (i, n))

        if ctx.cpu_unstable(call, agrees):
            return  # CPU's own answers differ: only dtype and shape are specified
        if _settled(ctx, call, label, where, host, e, i, j, n):
            return  # CPU's answer depends on the layout, or is the imprecise one
        raise


#: The layouts CPU is asked again in, where a value comparison failed (every tensor argument
#: that one fits, out= aside), and how messages name them: ATen's vectorized loops (contiguous
#: inputs) and its scalar loops (strided ones) are different code with different answers at the
#: edges (float32 ``fmod(x, 1e-45)`` is NaN vectorized, 0 scalar; complex specials), and a GEMM
#: takes other transpose flags for transposed operands (float64 ``addmm`` of ``+inf`` and
#: ``1.7e308 * -4``: ``inf`` contiguous, NaN with ``mat2`` transposed).
REORDERINGS: tuple[tuple[str, str], ...] = (("strided", "step-2 views"),
                                            ("transposed", "transposed copies"))
#: and, last, every tensor argument of two or more dimensions as a column-major copy, size-1
#: dimensions included (:func:`conformance.inputs.layouts.column_major_call`).


def _reordered(ctx: Context, call: Call, i: int, j: int) -> Iterator[tuple[str, torch.Tensor]]:
    """CPU's answers (part ``j`` of result ``i``) for the same values laid out as each of
    :data:`REORDERINGS`, lazily, each where some tensor argument fits it and CPU answers; none
    for a call whose layout is its subject (:class:`~conformance.inputs.layouts.LayoutCall`) or
    that is compared by one of its arguments (an in-place check's ``pick``)."""
    from conformance.inputs.inplace_forms import InplaceRun
    from conformance.inputs.layouts import (
        LAYOUTS,
        LayoutCall,
        column_major_call,
        tensors_of,
        with_layouts,
    )

    if isinstance(call, LayoutCall) or (isinstance(call, InplaceRun)
                                        and call.pick not in (None, "out")):
        return
    outs = {a.name for a in call.sig.args if a.is_out}
    for kind, text in REORDERINGS:
        layout = LAYOUTS[kind]
        names = tuple((name, kind) for name, value in call.values if name not in outs
                      and any(layout.fits(tuple(t.shape)) for t in tensors_of(value)))
        if not names:
            continue
        answer = _cpu_part(ctx, with_layouts(call, names), i, j)
        if answer is not None:
            yield text, answer
    stored = column_major_call(call, frozenset(outs))
    answer = _cpu_part(ctx, stored, i, j) if stored is not None else None
    if answer is not None:
        yield "column-major copies", answer


def _cpu_part(ctx: Context, call: Call, i: int, j: int) -> torch.Tensor | None:
    """Part ``j`` of result ``i`` of CPU's answer for ``call`` (under the about-to-run marker:
    a crash there is CPU's); ``None`` where CPU refuses it or answers no tensor there."""
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        answer = _part(call.run("cpu"), i, j)
    except Exception:  # noqa: BLE001 - CPU refuses the relaid call: no second answer
        return None
    return answer if isinstance(answer, torch.Tensor) else None


def _settled(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
             expected: torch.Tensor, i: int, j: int, n: int) -> bool:
    """Asked only where a value comparison failed: whether CPU gives the backend's answer
    ``actual`` (part ``j`` of result ``i``) for the same values in another layout
    (:data:`REORDERINGS`) — CPU's contiguous answer is then no contract, and the verdict notes
    it (``cpu_unstable``) — else whether every element that differs is settled element by
    element (:func:`~conformance.compare.arbitration.settle`: an element CPU's reorderings
    leave open, one that agrees with CPU's answer under a property the backend declares
    (:mod:`conformance.compare.properties`), or one where the call computed in float64 sides
    with the backend). A wrong answer that CPU gives for no layout, and float64 does not side
    with, still fails."""
    from conformance.compare.arbitration import precise_run, rounded_reference, settle
    from conformance.compare.properties import alternates

    answers = []
    for text, answer in _reordered(ctx, call, i, j):
        if _agrees(ctx, call, label, where, actual, answer, (i, n)):
            ctx.cpu_unstable_calls[f"{where}: CPU's answer differs for the same values as "
                                   f"{text}, and the backend gave that one"] += 1
            return True
        answers.append(answer)
    if not (expected.dtype.is_floating_point or expected.is_complex()):
        return _as_property(ctx, call, label, where, actual, expected, i, j, n)
    reference = None
    if ctx.arbitrates(call.sig.name, expected.dtype):
        ctx.inflight.call(call, ctx.repro_fn, side="cpu")  # a crash is the call's on CPU
        try:
            reference = rounded_reference(ctx, call, _part(precise_run(call), i, j), expected)
        except Exception:  # noqa: BLE001 - CPU refuses the wider call: no reference
            reference = None
    declared = alternates(ctx, call, expected, lambda out: _part(out, i, j)) \
        if ctx.backend.assumes else []
    composite = None
    if reference is not None:
        run = ctx.aten_composite(call)
        if run is not None and run.error is None:
            part = _part(run.answer, i, j)
            composite = part if isinstance(part, torch.Tensor) else None
    return settle(ctx, call, label, where, actual, expected, reorderings=answers,
                  reference=reference, position=(i, n), alternates=declared,
                  composite=composite)


def _as_property(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
                 expected: torch.Tensor, i: int, j: int, n: int) -> bool:
    """An integral or bool result that differs from CPU's: whether it is CPU's answer under a
    property the backend declares (frexp's exponent of a subnormal on a device that flushes it
    is 0); then the verdict notes it (``backend_property``)."""
    from conformance.compare.properties import alternates

    if not ctx.backend.assumes:
        return False
    for alt in alternates(ctx, call, expected, lambda out: _part(out, i, j)):
        if _agrees(ctx, call, label, where, actual, alt.answer, (i, n)):
            ctx.note_info(BACKEND_PROPERTY, f"{label}: agrees with CPU's answer under the "
                                            f"backend's declared {alt.prop!r} "
                                            f"(opdb/data/backend_properties.yaml) [{where}]")
            return True
    return False


def _part(out: Any, i: int, j: int) -> Any:
    """Part ``j`` (:func:`conformance.core.readback.parts`) of result ``i`` of another CPU answer."""
    leaf = _leaf(out, i)
    if not isinstance(leaf, torch.Tensor):
        return leaf
    found = readback.parts(leaf)
    return found[j][1] if j < len(found) else None


def _leaf(out: Any, i: int) -> Any:
    leaves = result_leaves(out)
    return leaves[i] if i < len(leaves) else None


def _agrees(ctx: Context, call: Call, label: str, where: str, again: Any,
            expected: torch.Tensor, position: tuple[int, int] | None = None) -> bool:
    """A second CPU answer ``again`` agrees with the first, as the backend's answer must."""
    if not isinstance(again, torch.Tensor) or again.shape != expected.shape \
            or again.dtype != expected.dtype:
        return False
    try:
        assert_values(ctx, call, label, where, again, expected, position=position,
                      count_open=False)
    except CheckFailure:
        return False
    return True


def _same_scalar(e: Any, a: Any) -> bool:
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    return bool(e == a) and type(e) is type(a)


#: Seeded-random ops: how many more CPU samples are asked, when the backend's value falls outside
#: the range CPU's samples span, whether CPU's own values fall outside it too (heavy tails:
#: ``cauchy``; rare large values: ``geometric`` with p near 1). Cheap calls, asked only on a miss.
#: At 256, a right cauchy.out of four elements (sigma 0.1) failed: mlu's -43.4 lay past the
#: widened span [-35.5, 29.5] of CPU's first samples, and none of CPU's 1,024 rerun elements
#: did, which a Cauchy does with probability ~0.11 (all-checks run of 2026-12-04); at 1,024
#: reruns, ~1e-4.
SPREAD_RERUNS = 1024


def _within_spread(label: str, where: str, again: Any, spread: list[torch.Tensor]) -> bool:
    """Whether another CPU sample ``again`` lies in the range of CPU's first ``spread``."""
    expected = spread[0]
    if not isinstance(again, torch.Tensor) or again.shape != expected.shape \
            or again.dtype != expected.dtype:
        return False
    try:
        _assert_in_range(label, where, again, spread)
    except CheckFailure:
        return False
    return True


def _assert_in_range(label: str, where: str, actual: torch.Tensor,
                     samples: list[torch.Tensor]) -> None:
    """Seeded-random ops: the backend's values lie in the range CPU's samples span (widened)."""
    __tracebackhide__ = True
    expected = samples[0]
    if actual.numel() == 0 or expected.is_complex() or expected.dtype == torch.bool:
        return
    e = torch.cat([s.detach().reshape(-1).double() for s in samples])
    a = actual.double()
    finite = e[torch.isfinite(e)]
    if finite.numel() == 0:
        return
    lo, hi = float(finite.min()), float(finite.max())
    pad = max(1.0, 3.0 * (hi - lo), 0.5 * max(abs(lo), abs(hi)))
    bad = torch.isfinite(a) & ((a < lo - pad) | (a > hi + pad))
    if bool(bad.any()):
        v = float(a[bad][0])
        raise CheckFailure("value", f"{label} has {v!r}, outside the range CPU samples span "
                                    f"[{lo:g}, {hi:g}] (widened by {pad:g}) [{where}]")
