"""Disagreements judged element by element, once every other leniency of the comparison has
failed (:func:`settle`): elements whose value the contract leaves open, and elements where CPU
is the imprecise side.

CPU is the oracle, but its answer is one evaluation order in the result dtype. Two kinds of
element are not a backend's fault:

- **unspecified** — NaN against an infinity (or a finite value against an overflow) where CPU's
  own answer at that element changes when the same values come as transposed or strided views
  (a GEMM meeting ``+inf`` and an overflowing product: NaN or ``+inf`` by the order of the sum,
  the transpose flags, whether a zero ``beta`` is skipped), and the backend gave one of CPU's
  answers;
- **CPU imprecise** — the same call computed on CPU with its floating inputs in
  float64/complex128 and rounded to the result dtype (the *reference*) agrees with the backend's
  element as the comparison would have asked of CPU's, and the backend is at least as close to it
  as CPU (``native_layer_norm`` of float32 ``[[-4.2e-45], [-4.087e20]]``: CPU's variance
  overflows to NaN, float64 gives 0 and rstd 4).

Both only excuse: an element that is neither still fails, with the message the comparison gives
for what remains. No float64 result is arbitrated (there is no wider honest reference on CPU),
nor a result whose dtype's own behaviour is the contract (``arbitrate: false`` in
``opdb/data/tolerances.yaml``: ``nextafter``, casts, ``nan_to_num``); a call whose dtype argument
or out= fixes a narrower computation gets no wider answer and is not arbitrated either.
"""

from __future__ import annotations

import cmath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import torch

from conformance.compare.terms import terms_overflow
from conformance.compare.values import (
    agreement,
    assert_values,
    dense,
    first_at,
    inputs_of,
    transform_total,
)
from conformance.core import readback
from conformance.core.call import Call
from opdb.outcomes import BACKEND_PROPERTY, CPU_IMPRECISE, VALUE_UNSPECIFIED

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from conformance.compare.properties import Alternate

#: What a floating/complex tensor is widened to for the reference (float64 and complex128 are
#: already the widest CPU computes in: their results have no reference).
PRECISE: Mapping[torch.dtype, torch.dtype] = MappingProxyType({
    torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
    torch.complex32: torch.complex128, torch.complex64: torch.complex128})


#: Where CPU's own element misses the float64 reference beyond the comparison's tolerance: how
#: many times CPU's distance from it the backend's may be (the autograd check's
#: ``grad_error_factor`` for gradients is the same idea, 4 there too).
LOST_FACTOR = 4.0


def _widen(value: Any) -> tuple[Any, bool, bool]:
    """``(value widened, whether anything widened, whether something refused to)``."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in PRECISE:
            return value, False, False
        if value.layout != torch.strided or value.is_nested or value.is_meta:
            return value, False, True  # sparse, nested, meta: no plain copy to widen
        return value.detach().to(PRECISE[value.dtype]), True, False
    if isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
        parts = [_widen(v) for v in value]
        return type(value)(p[0] for p in parts), any(p[1] for p in parts), \
            any(p[2] for p in parts)
    return value, False, False


def precise_call(call: Call) -> Call | None:
    """``call`` with every floating/complex tensor argument (out= tensors and list elements
    included) widened to float64/complex128 (:data:`PRECISE`); Python numbers and ``ScalarType``
    arguments as they are (a ``dtype=float16`` argument is part of the question, and keeps the
    answer float16: ``sum(x, dtype=float16)`` casts ``x`` first) — but a factory's (a schema
    with a ``device`` argument: ``logspace``, ``fft_rfftfreq``), where ``dtype`` is only the
    result's, widens too. ``None`` where nothing widens, or a tensor that should is not
    strided."""
    values = []
    widened = False
    factory = any(a.name == "device" for a in call.sig.args)
    for name, value in call.values:
        if factory and name == "dtype" and isinstance(value, torch.dtype) and value in PRECISE:
            values.append((name, PRECISE[value]))
            widened = True
            continue
        value, changed, refused = _widen(value)
        if refused:
            return None
        widened = widened or changed
        values.append((name, value))
    return replace(call, values=tuple(values)) if widened else None


def precise_run(call: Call) -> Any:
    """CPU's answer for :func:`precise_call` of ``call`` (``call`` itself where nothing
    widens), under float64 as the default dtype: where a floating result comes from integral
    inputs and a Python float (``pairwise_distance`` of int64: ``x1 - x2 + eps``), or from no
    tensor at all, the default dtype is the precision the op computes in."""
    wide = precise_call(call) or call
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return wide.run("cpu")
    finally:
        torch.set_default_dtype(before)


def rounded_reference(ctx: Context, call: Call, answer: Any, expected: torch.Tensor
                      ) -> torch.Tensor | None:
    """The reference for ``expected``: ``answer`` (the matching part of :func:`precise_call`'s
    answer) rounded to ``expected``'s dtype; ``None`` where there is none: ``expected`` is
    float64/complex128 or integral, the tolerance data says ``arbitrate: false``, or the
    widened call did not answer wider (its dtype is fixed by an argument) or in another shape."""
    want = PRECISE.get(expected.dtype)
    if want is None or not isinstance(answer, torch.Tensor) or answer.dtype != want \
            or answer.shape != expected.shape or not ctx.arbitrates(call.sig.name, expected.dtype):
        return None
    return answer.detach().to(expected.dtype)


def distance(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per element, how far ``x`` is from ``ref`` in float64: 0 where they are equal (NaN and
    NaN too), infinite where one is NaN or an infinity the other is not, else ``|x - ref|``; a
    complex element's distance is its farther part's."""
    pairs = x.is_complex()
    if pairs:
        x, ref = torch.view_as_real(x), torch.view_as_real(ref)
    a, r = x.to(torch.float64), ref.to(torch.float64)
    far = a.isnan() | r.isnan() | a.isinf() | r.isinf()
    d = torch.where(far, torch.inf, (a - r).abs())
    d = torch.where((a == r) | (a.isnan() & r.isnan()), 0.0, d)
    return d.amax(-1) if pairs else d


def _not_finite(t: torch.Tensor) -> torch.Tensor:
    return ~torch.view_as_real(t).isfinite().all(-1) if t.is_complex() else ~t.isfinite()


@dataclass(frozen=True)
class Settlement:
    """Masks over a result's elements where the backend's answer differs from CPU's:
    ``unspecified`` (CPU's own answer changes with the layout and the backend gave one of them),
    ``assumed`` (the backend agrees with the answer one of its declared properties makes
    legitimate: :mod:`conformance.compare.properties`; ``assumed_by`` names the property of each
    such element's first match, with counts), ``imprecise`` (the backend is as close to the
    float64 reference as CPU, or closer) and ``remaining`` (none of these: a disagreement)."""

    unspecified: torch.Tensor
    imprecise: torch.Tensor
    remaining: torch.Tensor
    assumed: torch.Tensor | None = None
    assumed_by: tuple[tuple[str, int], ...] = ()
    #: elements fed by a non-finite input of an op whose contract leaves them open
    #: (``nonfinite_inputs: unspecified`` in the tolerance data)
    left_open: torch.Tensor | None = None
    #: elements where PyTorch's two implementations (CPU's kernel, ATen's composite) disagree
    #: and neither agrees with the float64 reference: PyTorch gives no answer to hold to there
    torn: torch.Tensor | None = None
    #: elements not finite on both sides where the float64 reference, rounded, is a number: an
    #: intermediate overflowed, and NaN or an infinity is the evaluation order's choice
    overflowed: torch.Tensor | None = None

    @property
    def settled(self) -> torch.Tensor:
        found = self.unspecified | self.imprecise
        for extra in (self.assumed, self.left_open, self.torn, self.overflowed):
            if extra is not None:
                found = found | extra
        return found


def fed_by_nonfinite(call: Call, shape: torch.Size,
                     position: tuple[int, int] | None = None) -> torch.Tensor:
    """Per element of a result of ``shape``: whether an input element feeding it is inf or
    NaN. Element by element (an input broadcast to the result) only for an op that computes
    each result element from the inputs' elements at its position: a pointwise op, or a
    ``_foreach_*`` op's result ``i`` from its lists' entries ``i``. Elsewhere an input holding
    inf or NaN feeds every element, even one of the result's own shape (a resampling reads its
    neighbours: upsample_bilinear2d 3x3 -> 3x3 weighs the row below by zero, 0 * NaN), as does
    an input that does not broadcast or a non-finite Python number."""
    tensors, numbers = inputs_of(call, position)
    fed = torch.zeros(shape, dtype=torch.bool)
    if any(isinstance(x, float | complex) and not cmath.isfinite(x) for x in numbers):
        return ~fed
    elementwise = call.sig.is_pointwise or call.sig.base.startswith("_foreach_")
    for t in tensors:
        if not (t.is_floating_point() or t.is_complex()) or t.is_meta:
            continue
        bad = _not_finite(readback.plain(dense(t)))
        if elementwise:
            try:
                fed |= bad.broadcast_to(shape)
                continue
            except RuntimeError:  # it does not broadcast: it feeds every element
                pass
        if bool(bad.any()):
            return torch.ones(shape, dtype=torch.bool)
    return fed


def inputs_total_overflows(call: Call, dtype: torch.dtype,
                           position: tuple[int, int] | None = None) -> bool:
    """Whether every floating/complex input tensor of ``call`` is finite and the terms' total of
    a transform of them (:func:`~conformance.compare.values.transform_total`) passes ``dtype``'s
    largest value: a finite overflow inside a sum, not an infinite input."""
    tensors, _ = inputs_of(call, position)
    for t in tensors:
        if (t.is_floating_point() or t.is_complex()) and not t.is_meta \
                and not bool(readback.plain(dense(t)).isfinite().all()):
            return False
    return transform_total(tensors) > torch.finfo(dtype).max


def _assumed(ctx: Context, call: Call, actual: torch.Tensor, rest: torch.Tensor,
             alternates: Sequence[Alternate], position: tuple[int, int] | None
             ) -> tuple[torch.Tensor, tuple[tuple[str, int], ...]]:
    """Elements of ``rest`` where ``actual`` agrees with a declared property's answer."""
    assumed = torch.zeros_like(rest)
    counts = []
    for alt in alternates:
        if not bool((rest & ~assumed).any()) or alt.answer.shape != actual.shape \
                or alt.answer.dtype != actual.dtype:
            continue
        answer = readback.plain(dense(alt.answer))
        near = agreement(ctx, call, actual, answer, position=position)
        if alt.atol is not None:
            near = near | torch.isclose(actual, answer, rtol=0.0, atol=alt.atol, equal_nan=True)
        new = rest & ~assumed & near
        if bool(new.any()):
            counts.append((alt.prop, int(new.sum())))
            assumed |= new
    return assumed, tuple(counts)


def _overflowed(ctx: Context, call: Call, actual: torch.Tensor, expected: torch.Tensor,
                open_: torch.Tensor, reference: torch.Tensor | None,
                position: tuple[int, int] | None) -> torch.Tensor:
    """Of the elements ``open_`` (not finite on one side, not settled by CPU's reorderings),
    those where an intermediate overflow decides between NaN, an infinity and a number: the
    evaluation order's, not the backend's fault."""
    overflowed = torch.zeros_like(open_)
    if reference is not None and bool(open_.any()):
        # both sides not finite where the float64 answer, rounded, is a number: an intermediate
        # overflowed in the result dtype, and whether that gives NaN (inf - inf) or an infinity
        # is the evaluation order's (_euclidean_dist of bfloat16 -2.5e38: CPU's GEMM step
        # meets inf - inf, NaN; a backend summing the products wider keeps inf; the answer is
        # 2.5e38); a finite answer of the backend's is judged below, against the reference
        overflowed = open_ & _not_finite(actual) & _not_finite(expected) \
            & ~_not_finite(reference)
    kind = ctx.scale_kind(call.sig.name, expected.dtype)
    if kind == "terms" and bool((open_ & ~overflowed & _not_finite(actual)).any()):
        # a sum of terms whose total overflows in the result's dtype: some partial sum may
        # overflow in any order, so the backend's inf or NaN is no fault even where CPU's order
        # stayed finite (a float32 mean over 771 values of 1e36: CPU finite, a pairwise sum inf)
        spill = terms_overflow(call, expected.shape, position,
                               ctx.terms_scale(call, expected.shape, position))
        if spill is not None:
            overflowed = overflowed | (open_ & _not_finite(actual)
                                       & _held(spill, actual, reference))
    if kind == "all_inputs" and bool((open_ & ~overflowed).any()) \
            and inputs_total_overflows(call, expected.dtype, position):
        # a transform (every element sums every input, with weights of modulus at most 2) of
        # finite inputs whose terms' total passes the dtype's range: some partial sum may
        # overflow in any plan, so inf on one side and a number on the other is the plan's
        # (float64 _fft_r2c of values near 1e308: CPU's pocketfft inf, NumPy's plan 1.77e308;
        # float32 irfft of [-1.1, 3.4e38, -3.8]: CPU scales by 1/n inside its plan and keeps
        # 1.7e38; cuFFT does not scale, so ATen's CUDA path, and Cambricon's, scale its result
        # after the transform, which meets inf first). A result with a float64 reference is
        # held to it where the backend gives a number, and where the reference is not finite
        spill = open_ if reference is None else open_ & _not_finite(actual)
        overflowed = overflowed | _held(spill, actual, reference)
    return overflowed


def _held(spill: torch.Tensor, actual: torch.Tensor,
          reference: torch.Tensor | None) -> torch.Tensor:
    """``spill`` less the elements where a non-finite rounded float64 answer is one to hold
    to: NaN stays open there, as terms that each overflow the result dtype meet as inf - inf in
    any order that rounds them to it (float32 addmm_: beta * self = 7.3e47 and alpha * a * b =
    -1.2e51 are +inf and -inf in float32, NaN; CPU -inf, float64 -1.2e51 rounded -inf); a
    finite value or another infinity still fails."""
    if reference is None:
        return spill
    return spill & (~_not_finite(reference) | actual.isnan())


def classify(ctx: Context, call: Call, actual: torch.Tensor, expected: torch.Tensor, *,
             reorderings: Sequence[torch.Tensor], reference: torch.Tensor | None,
             position: tuple[int, int] | None = None,
             alternates: Sequence[Alternate] = (),
             composite: torch.Tensor | None = None) -> Settlement | None:
    """Sorts the elements where ``actual`` disagrees with CPU's ``expected`` (as
    :func:`~conformance.compare.values.agreement` judges) into a :class:`Settlement`.
    ``reorderings``: CPU's answers for the same values laid out otherwise (same dtype and shape);
    ``reference``: :func:`rounded_reference` or ``None``; ``alternates``: the answers the
    backend's declared properties make legitimate (:func:`conformance.compare.properties.
    alternates`); ``composite``: ATen's composite's answer on CPU where CPU's kernel overrides
    it (:mod:`conformance.core.composites`). ``None`` for a result that is not floating/complex,
    or where no element disagrees."""
    if not (expected.is_floating_point() or expected.is_complex()) \
            or actual.shape != expected.shape or actual.dtype != expected.dtype:
        return None
    bad = ~agreement(ctx, call, actual, expected, position=position)
    if not bool(bad.any()):
        return None
    # an element NaN or infinite on one side whose value CPU gives otherwise for the same
    # values in another layout: which of them comes out is the evaluation order's
    loose = bad & (_not_finite(actual) | _not_finite(expected))
    unspecified = torch.zeros_like(bad)
    for again in reorderings:
        if bool(loose.any()) and again.shape == expected.shape and again.dtype == expected.dtype:
            unspecified |= loose & agreement(ctx, call, actual, again, position=position)
    overflowed = _overflowed(ctx, call, actual, expected, loose & ~unspecified, reference,
                             position)
    left_open = torch.zeros_like(bad)
    if ctx.nonfinite_inputs_unspecified(call.sig.name, expected.dtype):
        left_open = bad & ~unspecified & fed_by_nonfinite(call, expected.shape, position)
    rest = bad & ~unspecified & ~left_open & ~overflowed
    assumed, assumed_by = _assumed(ctx, call, actual, rest, alternates, position)
    rest = rest & ~assumed
    torn = torch.zeros_like(bad)
    if composite is not None and reference is not None and bool(rest.any()) \
            and composite.shape == expected.shape and composite.dtype == expected.dtype:
        # an input where PyTorch's own implementations answer apart, each far from float64
        # (native_layer_norm's extremes: CPU's one-pass variance overflows, the composite's
        # centred steps cancel): no contract there
        torn = rest & ~agreement(ctx, call, composite, expected, position=position) \
            & ~agreement(ctx, call, composite, reference, position=position) \
            & ~agreement(ctx, call, expected, reference, position=position)
        rest = rest & ~torn
    imprecise = torch.zeros_like(bad)
    if reference is not None and bool(rest.any()):
        # the backend agrees with the reference as it had to agree with CPU, and is no farther
        # from it than CPU: a NaN where the reference has a number is infinitely far, so a
        # backend keeping CPU's NaN is never excused by it, nor one dropping a NaN it keeps
        near = agreement(ctx, call, actual, reference, position=position)
        cpu_error = distance(expected, reference)
        closer = distance(actual, reference) <= cpu_error
        # where CPU itself misses the reference by more than the comparison allows (a float32
        # GEMM over K = 1025 terms: both sides' sums carry ~1e-4 of rounding), that rounding is
        # the evaluation order's, and a backend within LOST_FACTOR times CPU's own error of the
        # reference is as right as CPU; a wrong kernel (a term dropped, a narrow accumulator)
        # misses by far more, and an element CPU gets within tolerance is not loosened at all
        lost = ~agreement(ctx, call, expected, reference, position=position) \
            & cpu_error.isfinite() \
            & (distance(actual, reference) <= LOST_FACTOR * cpu_error)
        imprecise = rest & ((near & closer) | lost)
    return Settlement(unspecified=unspecified, imprecise=imprecise,
                      remaining=rest & ~imprecise, assumed=assumed, assumed_by=assumed_by,
                      left_open=left_open, torn=torn, overflowed=overflowed)


def settle(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
           expected: torch.Tensor, *, reorderings: Sequence[torch.Tensor],
           reference: torch.Tensor | None, position: tuple[int, int] | None = None,
           alternates: Sequence[Alternate] = (), composite: torch.Tensor | None = None) -> bool:
    """Whether every element of ``actual`` (result ``label``) that disagrees with CPU's
    ``expected`` is settled (:func:`classify`): then the example agrees and the verdict notes
    the elements (``value_unspecified``, ``cpu_imprecise``, with their count). Where some are
    settled and others not, the comparison fails on the others alone (its message counts and
    shows those); where none is, ``False`` (the caller's failure stands)."""
    __tracebackhide__ = True
    actual, expected = readback.plain(dense(actual)), readback.plain(dense(expected))
    reorderings = [readback.plain(dense(t)) for t in reorderings]
    if reference is not None:
        reference = readback.plain(dense(reference))
    try:
        if composite is not None:
            composite = readback.plain(dense(composite))
        found = classify(ctx, call, actual, expected, reorderings=reorderings,
                         reference=reference, position=position, alternates=alternates,
                         composite=composite)
    except RuntimeError:  # a dtype some element-wise step has no kernel for: the failure stands
        return False
    if found is None or not bool(found.settled.any()):
        return False
    if bool(found.remaining.any()):
        narrowed = torch.where(found.settled, expected, actual)
        assert_values(ctx, call, label, where, narrowed, expected, position=position)
        return False  # the whole comparison passes what the element-wise one did not: stand
    total = expected.numel()
    if bool(found.unspecified.any()):
        n = int(found.unspecified.sum())
        index, (a, e) = first_at(found.unspecified, actual, expected)
        ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {n} of {total} element(s) whose value CPU's "
                      f"own answer changes with the operands' layout, and the backend gave one "
                      f"of CPU's (first at index {index}: {a!r}, CPU {e!r}) [{where}]", n)
    if found.left_open is not None and bool(found.left_open.any()):
        n = int(found.left_open.sum())
        index, (a, e) = first_at(found.left_open, actual, expected)
        ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {n} of {total} element(s) fed by an inf or "
                      f"NaN input, whose value this op's contract leaves open (first at index "
                      f"{index}: {a!r}, CPU {e!r}) [{where}]", n)
    if found.overflowed is not None and bool(found.overflowed.any()):
        n = int(found.overflowed.sum())
        index, (a, e) = first_at(found.overflowed, actual, expected)
        ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {n} of {total} element(s) where an "
                      f"intermediate overflows (both sides not finite where the call computed in "
                      f"float64 gives a number, or the total magnitude the element sums passes "
                      f"the dtype's range): "
                      f"NaN or an infinity there is the evaluation order's (first at index "
                      f"{index}: {a!r}, CPU {e!r}) [{where}]", n)
    if found.torn is not None and bool(found.torn.any()):
        assert composite is not None  # torn elements are judged against it
        n = int(found.torn.sum())
        index, (a, e, c) = first_at(found.torn, actual, expected, composite)
        ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {n} of {total} element(s) where CPU's kernel "
                      f"and ATen's composite answer apart and neither is near the call computed "
                      f"in float64 (first at index {index}: {a!r}, CPU {e!r}, composite {c!r}) "
                      f"[{where}]", n)
    for prop, n in found.assumed_by:
        ctx.note_info(BACKEND_PROPERTY, f"{label}: {n} of {total} element(s) agree with CPU's "
                      f"answer under the backend's declared {prop!r} "
                      f"(opdb/data/backend_properties.yaml) [{where}]", n)
    if bool(found.imprecise.any()):
        assert reference is not None  # imprecise elements are judged against it
        n = int(found.imprecise.sum())
        index, (a, e, r) = first_at(found.imprecise, actual, expected, reference)
        ctx.note_info(CPU_IMPRECISE, f"{label}: {n} of {total} element(s) where the backend is "
                      f"as close as CPU to the call computed in float64 (first at index {index}: "
                      f"{a!r}, CPU {e!r}, float64 {r!r}) [{where}]", n)
    return True
