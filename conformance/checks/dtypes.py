"""The ``dtypes`` check: each of the twelve dtypes tried on purpose, per overload.

The ``forward`` check draws one dtype per example, so which dtypes an overload was tried at is
left to chance. This check draws a :class:`~conformance.inputs.strategies.DtypeSweep` (the forward
strategy once per dtype, that dtype pinned) and, for each dtype, asks three questions: does CPU
compute it, does the backend, do they agree. The answer per dtype is an outcome of
:data:`opdb.outcomes.DTYPE_OUTCOMES` (the worst over the examples), kept in
``Verdict.dtype_support``. The verdict fails when the backend refuses a dtype CPU computes
(``dtype_unsupported``, naming the dtypes), raises another error there (``error_raises``), or
disagrees at a dtype (the comparison's own category: ``value``, ``dtype``, ...). A missing
kernel (the dispatcher's error) is ``unsupported`` naming the op, as for every check; the dtypes
that reached it are ``refused`` in ``dtype_support``.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from conformance.checks.check import Check
from conformance.compare.outputs import compare_outputs
from conformance.core import readback
from conformance.core.call import Call, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import Abort, CheckFailure, CpuRejected, NotComparable, error_line
from conformance.inputs.strategies import DtypeSweep, dtype_sweeps, tensor_lists
from opdb import outcomes
from opdb.dtypes import ATEN_TYPE_NAMES, DTYPE_NAMES, SCALAR_TYPE_NAMES

if TYPE_CHECKING:
    from conformance.compare.context import Context


def dtypes_applies(sig: OpSignature) -> str | None:
    if not sig.tensor_args and not tensor_lists(sig):
        return "no tensor argument whose dtype could be pinned"
    return None


@cache
def _mentions(dtype: str) -> re.Pattern[str]:
    """A backend error about ``dtype``: names it as torch (``int16``), c10 (``Short``) or ATen
    (``int16_t``, ``at::Half``; not the bare C words ``float``/``double``, which Python's own
    messages use) spell it, or speaks of dtypes at all (``unsupported dtype``, ``data type``,
    ``ScalarType``)."""
    names = {SCALAR_TYPE_NAMES[dtype]}
    if dtype != "bool":  # Python's own word: only `torch.bool` (or c10's `Bool`) count
        names.add(dtype)
    aten = ATEN_TYPE_NAMES.get(dtype, "")
    if not aten.isalpha():
        names.add(aten)
    words = "|".join(re.escape(n) for n in sorted(names - {""}, key=len, reverse=True))
    return re.compile(rf"(?<![\w.:])(?:torch\.)?(?:{words})(?![\w])|torch\.{dtype}\b|"
                      rf"(?i:\bdtypes?\b|\bdata ?type|scalar ?type)")


def is_dtype_error(message: str, dtype: str) -> bool:
    """Whether a backend's error at ``dtype`` (where CPU computed) is a dtype refusal."""
    return outcomes.is_dtype_gap(message) or _mentions(dtype).search(message) is not None


def all_empty(call: Call) -> bool:
    """Every tensor argument is empty: CPU's kernels return before their dtype dispatch there,
    so CPU computing it says nothing about CPU supporting the dtype (a backend refusing it is
    ``raises``, not a dtype gap)."""
    import torch

    tensors = [t for _, v in call.values for t in (v if isinstance(v, list | tuple) else (v,))
               if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.numel() == 0 for t in tensors)


def _record(ctx: Context, dtype: str, outcome: str) -> None:
    ctx.dtype_support[dtype] = outcomes.worse_dtype_outcome(ctx.dtype_support.get(dtype), outcome)


#: Dtypes whose results must carry more than float32's precision.
_WIDE = frozenset({"float64", "complex128"})


def _single_precision(ctx: Context, call: Call, expected: object, actual: object) -> str | None:
    """A float64/complex128 result that agreed within tolerance but is CPU's result at float32
    precision: every finite element is a float32 value, and every element that differs from
    CPU's is CPU's value rounded to float32 (within 2 float32 ulps), for at least one element
    CPU's value is not a float32 value, and at least one differs by more than float64's own
    rounding (:data:`_F64_NOISE`). The backend computed in float32: torch.testing's
    float64 tolerance (rtol 1e-7) is about one float32 rounding, so the tolerance alone lets
    such a kernel pass. A backend that only differs elsewhere (0 where CPU has 1e-17) is not
    flagged here."""
    import torch
    from torch.utils._pytree import tree_flatten

    if not ctx.hints.values:
        return None
    exp, act = tree_flatten(expected)[0], tree_flatten(actual)[0]
    for i, (e, a) in enumerate(zip(exp, act, strict=False)):
        if not (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor)) \
                or e.dtype not in (torch.float64, torch.complex128) \
                or readback.form(e) != "strided tensor" or readback.form(a) != "strided tensor":
            continue
        a = ctx.to_host(a)
        e, a = (torch.view_as_real(t) if t.is_complex() else t
                for t in (readback.plain(e.detach()), readback.plain(a.detach())))
        if a.shape != e.shape:
            continue
        finite = e.isfinite() & a.isfinite()
        ef, af = e[finite], a[finite]
        if not bool((af.float().double() == af).all()):
            continue  # the backend's values carry more than float32 precision
        differ = af != ef
        if not bool(differ.any()):
            continue
        ed, ad = ef[differ], af[differ]
        tiny = torch.finfo(torch.float32).tiny
        gap = (ad - ed).abs()
        near = (gap <= _F32_ULPS * ed.abs()) & (ed.abs() >= tiny)
        if not bool(near.all()) or not bool((gap > _F64_NOISE * ed.abs()).any()):
            continue  # beyond float32 rounding, or within float64's (a float32 value exact)
        label = "out" if len(exp) == 1 else f"out[{i}]"
        return (f"{label} values hold only float32 precision (CPU's values rounded to float32 "
                f"on {int(differ.sum())} of {af.numel()} elements: computed in float32?), "
                f"e.g. {ad[0].item()!r}, but should be {ed[0].item()!r} [{call.describe()}]")
    return None


#: Two float32 ulps, relative (2 x 2**-23): how far a value computed in float32 lands.
_F32_ULPS = 2.0 ** -22

#: How far two float64 evaluations of one value land apart (2**-52 a rounding, times the steps):
#: a backend whose every differing element is this close to CPU's computed in float64, its
#: values float32 numbers because the exact results are (complex128 pow of small integers:
#: 5.5 where CPU's exp/log route gave 5.500000000000005, the all-checks run of 2026-12-04).
_F64_NOISE = 2.0 ** -40


def verify_dtypes(ctx: Context, sweep: DtypeSweep) -> None:
    """Each dtype's call on CPU and on the backend; outcomes recorded, then the worst raised."""
    __tracebackhide__ = True
    seeded = "nondeterministic_seeded" in sweep.calls[0][1].sig.tags if sweep.calls else False
    differs: list[tuple[str, CheckFailure]] = []
    refused: list[tuple[str, str, Call]] = []  # (dtype, error line, call)
    raises: list[tuple[str, str, Call]] = []
    missing: list[Abort] = []
    cpu_ok = 0
    uncompared = False
    for dtype, call in sweep.calls:
        if dtype not in call.tensor_dtypes:
            continue  # the hints fix every tensor drawn here (or an optional one was None)
        call = written(call)  # an overload returning nothing: what it wrote is its result
        try:
            expected = ctx.run_cpu(call)
        except CpuRejected:
            ctx.end_example(counted=False, agreed=False)
            _record(ctx, dtype, outcomes.DTYPE_CPU_REJECTS)
            continue
        cpu_ok += 1
        samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
        try:
            actual = ctx.run_backend(call)
        except CpuRejected:  # CPU accepted it only for its empty inputs (Context.run_backend)
            ctx.end_example(counted=False, agreed=False)
            _record(ctx, dtype, outcomes.DTYPE_CPU_REJECTS)
            cpu_ok -= 1
            continue
        except Abort as stop:  # the dispatcher's missing kernel, at this dtype
            ctx.end_example(counted=True, agreed=False)
            if stop.verdict != "unsupported":
                raise
            missing.append(stop)
            refused.append((dtype, stop.message, call))
            _record(ctx, dtype, outcomes.DTYPE_REFUSED)
            continue
        except CheckFailure as exc:  # error_raises: the backend's own error is its context
            ctx.end_example(counted=True, agreed=False)
            line = error_line(exc.__context__) if exc.__context__ is not None else exc.message
            if is_dtype_error(line, dtype) and not all_empty(call):
                refused.append((dtype, line, call))
                _record(ctx, dtype, outcomes.DTYPE_REFUSED)
            else:
                raises.append((dtype, line, call))
                _record(ctx, dtype, outcomes.DTYPE_RAISES)
            continue
        try:
            compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)
        except CpuRejected:  # CPU's own result is undefined there: not counted
            ctx.end_example(counted=False, agreed=False)
            continue
        except NotComparable:
            ctx.end_example(counted=True, agreed=False)
            uncompared = True
            _record(ctx, dtype, outcomes.DTYPE_UNCOMPARED)
            continue
        except CheckFailure as exc:
            ctx.end_example(counted=True, agreed=False)
            exc.call = call
            differs.append((dtype, exc))
            _record(ctx, dtype, outcomes.DTYPE_DIFFERS)
            continue
        if not ctx.backend.host_values:  # a shape-only backend: agreed on metadata only
            ctx.end_example(counted=True, agreed=True)
            _record(ctx, dtype, outcomes.DTYPE_UNCOMPARED)
            continue
        narrow = _single_precision(ctx, call, expected, actual) if dtype in _WIDE else None
        if narrow is not None:
            ctx.end_example(counted=True, agreed=False)
            differs.append((dtype, CheckFailure("value", narrow, call=call)))
            _record(ctx, dtype, outcomes.DTYPE_DIFFERS)
            continue
        ctx.end_example(counted=True, agreed=True)
        _record(ctx, dtype, outcomes.DTYPE_OK)
    if cpu_ok == 0:
        raise CpuRejected(ValueError("CPU rejected the example at every dtype"))
    if missing:  # a missing kernel is `unsupported` naming the op, as for every check (the
        raise missing[0]  # dtypes that reached it are `refused` in dtype_support)
    if differs:
        dtype, first = differs[0]
        raise CheckFailure(first.category, f"at {dtype}: {first.message}", call=first.call)
    if refused:
        names = ", ".join(d for d, _, _ in refused)
        dtype, line, call = refused[0]
        raise CheckFailure(outcomes.DTYPE_UNSUPPORTED,
                           f"refuses {names}, which CPU supports; at {dtype}: {line}",
                           call=call)
    if raises:
        dtype, line, call = raises[0]
        names = ", ".join(d for d, _, _ in raises)
        raise CheckFailure(outcomes.ERROR_RAISES, f"raised where CPU returned a result at "
                                                  f"{names}; at {dtype}: {line}", call=call)
    if uncompared:
        raise NotComparable("tensors on the backend hold no values")


def summary(support: dict[str, str]) -> str:
    """``ok: float32, float64; cpu_rejects: bool`` (for messages and the CLI)."""
    by: dict[str, list[str]] = {}
    for dtype, outcome in support.items():
        by.setdefault(outcome, []).append(dtype)
    return "; ".join(f"{o}: {', '.join(by[o])}" for o in outcomes.DTYPE_OUTCOMES if o in by)


# verify_dtypes takes the DtypeSweep its strategy draws (a Call of twelve calls)
CHECK = Check("dtypes", dtype_sweeps, "each of the twelve dtypes: CPU supports it, the backend "
              "supports it, values agree", dtypes_applies,
              verify_dtypes,  # type: ignore[arg-type]
              examples_factor=0.3,
              shrink=False, calls_per_draw=len(DTYPE_NAMES), recorded="dtypes")
