"""How one result tensor's values are compared: the overload's exactness class
(``opdb/data/exactness.yaml``), tolerances (``opdb/data/tolerances.yaml``), ulps at the inputs'
scale, undefined conversions (:func:`assert_values`).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from conformance.core import readback
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from opdb.dtypes import default_tolerance, dtype_name
from opdb.outcomes import VALUE_UNSPECIFIED

if TYPE_CHECKING:
    from conformance.compare.context import Context


def loosest_tolerance(dtypes: frozenset[str], result: torch.dtype) -> tuple[float, float] | None:
    """torch.testing's default tolerance for the least precise of ``result`` and the floating
    input ``dtypes`` (float16 inputs written to a float32 ``out=`` are only float16-accurate);
    ``None`` when that is ``result``'s own default, or ``result`` is compared exactly."""
    own = default_tolerance(result)
    if own == (0.0, 0.0):
        return None
    best = own
    for name in dtypes:
        tol = default_tolerance(name)
        if tol[0] > best[0]:
            best = tol
    return None if best == own else best


def is_view(sig: OpSignature) -> bool:
    """A functional overload whose result aliases an input (``Tensor(a)``): a view, whose
    lazy conj/neg bits (``conj``, ``mH``, ``_neg_view``) are part of what it returns."""
    return sig.kind == "functional" and _aliases(sig.schema_str)


@functools.cache
def _aliases(schema: str) -> bool:
    return re.search(r"\([a-z]+\)", schema.rpartition("->")[2]) is not None


def dense(t: torch.Tensor) -> torch.Tensor:
    return t.to_dense() if t.layout != torch.strided else t


@dataclass(frozen=True)
class Comparison:
    """How one result is compared: ``exact`` (``ulps`` 0 or 1 allowed), or ``tolerance``."""

    kind: str  # "exact" | "tolerance"
    why: str
    ulps: int = 0
    rtol: float | None = None
    atol: float | None = None
    undefined_conversion: bool = False  # integral result converted from floating values
    signed_zero: bool = False  # a zero's sign is part of the answer (exact comparisons)


_WIDE_SOURCES = frozenset({torch.float64, torch.int32, torch.int64, torch.complex128})


def inputs_of(call: Call, position: tuple[int, int] | None = None,
            skip: frozenset[str] = frozenset()) -> tuple[list[torch.Tensor], list[Any]]:
    """Tensor inputs (out= arguments and ``skip`` excluded, lists flattened) and Python number
    arguments. With ``position`` ``(i, number of results)``, a list argument as long as the
    call's results (``_foreach_*``: result ``i`` comes from element ``i`` of each list) gives
    its element ``i`` only."""
    outs = {a.name for a in call.sig.args if a.is_out} | skip
    i, n = position if position is not None and position[1] >= 2 else (0, -1)
    tensors: list[torch.Tensor] = []
    numbers: list[Any] = []
    for name, value in call.values:
        if name in outs:
            continue
        if isinstance(value, list | tuple) and len(value) == n:
            value = (value[i],)
        for v in value if isinstance(value, list | tuple) else (value,):
            if isinstance(v, torch.Tensor):
                tensors.append(v)
            elif isinstance(v, int | float | complex) and not isinstance(v, bool):
                numbers.append(v)
    return tensors, numbers


def _positions_args(ctx: Context, sig: OpSignature) -> frozenset[str]:
    """Tensor arguments the hints pin to integer or bool dtypes (``index_select``'s index, a
    mask, offsets): they say where values go, not what they are, so an int64 index is no wide
    value source that a low-precision result could round from."""
    from opdb.dtypes import category

    return frozenset(a.name for a in sig.args if a.base == "Tensor" and (
        (pins := ctx.hints.get(a.name).dtypes) and all(
            category(d) in ("integral", "bool") for d in pins)))


def _representable(value: Any, dtype: torch.dtype) -> bool:
    try:
        return bool(torch.tensor(value, dtype=dtype).item() == value)
    except (RuntimeError, OverflowError, TypeError):
        return False


_ENTRIES: dict[tuple[str, str], Any] = {}


def _exactness_entry(sig: OpSignature) -> Any:
    """The overload's entry in ``opdb/data/exactness.yaml`` (or ``None``), looked up once."""
    key = (sig.name, sig.schema_str)
    if key not in _ENTRIES:
        from opdb import exactness
        from opdb.model import family_of

        _ENTRIES[key] = exactness.load().entry_for(
            sig.name, family=family_of(sig.base)[0], tags=sig.tags, is_view=is_view(sig))
    return _ENTRIES[key]


def comparison_for(ctx: Context, call: Call, expected: torch.Tensor) -> Comparison:
    """The comparison for one result: a per-overload override (``tolerances.yaml``) first, then
    the overload's exactness class (``opdb/data/exactness.yaml``, documented there), else
    torch.testing's tolerances for the least precise floating input.

    Decided once per call *structure* in an item: it reads the arguments' dtypes and the
    non-tensor values, never a tensor's values (unless an exactness entry's ``requires`` names
    a tensor argument: then per call), and the value refills of one drawn call share it."""
    entry = _exactness_entry(call.sig)
    key = _structure_key(call, expected.dtype)
    if key is not None and not (entry is not None and any(
            isinstance(v, torch.Tensor) for n, v in call.values if n in entry.requires)):
        found = ctx.comparisons.get(key)
        if found is None:
            found = ctx.comparisons[key] = _comparison_for(ctx, call, expected)
        return found
    return _comparison_for(ctx, call, expected)


def _structure_key(call: Call, dtype: torch.dtype) -> tuple[Any, ...] | None:
    """The result dtype, the overload and each argument's dtype (tensors) or value (the rest);
    ``None`` when a value cannot be a key (unhashable)."""
    parts: list[Any] = [call.sig.name, dtype, call.on_cpu]
    for _, v in call.values:
        if isinstance(v, torch.Tensor):
            parts.append(v.dtype)
        elif isinstance(v, list | tuple):
            parts.append(tuple(x.dtype if isinstance(x, torch.Tensor) else x for x in v))
        else:
            parts.append(v)
    key = tuple(parts)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _comparison_for(ctx: Context, call: Call, expected: torch.Tensor) -> Comparison:
    dtype = expected.dtype
    name = call.sig.name
    entry = _exactness_entry(call.sig)
    tensors, numbers = inputs_of(call)
    undefined = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool) and (
        (entry is not None and entry.undefined_conversion)
        or any(isinstance(v, torch.dtype) for _, v in call.values)
        or any(a.is_out for a in call.sig.args))
    rtol, atol = ctx.tolerance(name, dtype)
    if rtol is not None:
        return Comparison("tolerance", "tolerances.yaml", rtol=rtol, atol=atol,
                          undefined_conversion=undefined)
    if not (dtype.is_floating_point or dtype.is_complex):
        return Comparison("exact", "integral and bool results are exact",
                          undefined_conversion=undefined)
    low = dtype in (torch.float16, torch.bfloat16)
    args = dict(call.values)
    involves_complex = dtype.is_complex or any(t.is_complex() for t in tensors) or any(
        isinstance(v, complex) for v in numbers)
    host_scalar = bool(numbers) or bool(call.on_cpu)
    # CPU's vectorized complex negation is 0 - z (+0.0 real parts where -0.0 is due): the sign
    # of a zero is compared for real results only
    signed_zero = entry is not None and entry.signed_zero and not involves_complex
    if entry is not None and entry.holds_for(args) and (entry.complex_ok or not involves_complex) \
            and (entry.host_scalars or not host_scalar):
        if entry.klass == "exact":
            sources, _ = inputs_of(call, skip=_positions_args(ctx, call.sig))
            wider = any(t.dtype in _WIDE_SOURCES for t in sources) or not all(
                _representable(v, dtype) for v in numbers)
            return Comparison("exact", entry.reason, ulps=1 if low and wider else 0,
                              undefined_conversion=undefined, signed_zero=signed_zero)
        if all(t.dtype == dtype for t in tensors) and all(_representable(v, dtype)
                                                          for v in numbers):
            return Comparison("exact", entry.reason,
                              ulps=entry.low_precision_ulps if low else entry.ulps,
                              signed_zero=signed_zero)
    # a ScalarType argument's dtype is one the computation passes through: a float32 input's
    # gradient through _safe_softmax(dtype=float16) is float16-accurate (1.2e-4 off, atol 1e-5)
    through = frozenset(dtype_name(v) for _, v in call.values if isinstance(v, torch.dtype))
    loose = loosest_tolerance(call.tensor_dtypes | through, dtype)
    return Comparison("tolerance", "default tolerances", rtol=loose[0] if loose else None,
                      atol=loose[1] if loose else None, undefined_conversion=undefined)


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """Floating values as integers that count ulps (-0.0 and 0.0 both 0; NaNs not meaningful)."""
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    i = t.contiguous().view(bits).to(torch.int64)
    mag = i & ((1 << (8 * t.element_size() - 1)) - 1)
    return torch.where(i < 0, -mag, mag)


def mismatches(actual: torch.Tensor, expected: torch.Tensor, ulps: int,
                signed_zero: bool = False) -> torch.Tensor:
    """Mask of elements that differ by more than ``ulps`` (NaN matches NaN; with
    ``signed_zero``, -0.0 differs from 0.0)."""
    if not (expected.is_floating_point() or expected.is_complex()):
        return actual != expected
    if expected.is_complex():
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
    nan = actual.isnan() & expected.isnan()
    if signed_zero:
        zeros = (actual == 0) & (expected == 0) & (actual.signbit() != expected.signbit())
        return mismatches(actual, expected, ulps) | zeros
    if ulps == 0:
        return (actual != expected) & ~nan
    a, e = _ordered(actual), _ordered(expected)
    same_side = (a >= 0) == (e >= 0)
    near = torch.where(same_side, (a - e).abs() <= ulps,
                       (a.abs() <= ulps) & (e.abs() <= ulps) & (a.abs() + e.abs() <= ulps))
    return ~near & ~nan


def complex_infinities_agree(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """``actual`` with each element where both sides are complex infinities taken as agreeing
    (replaced by the expected one). C99 Annex G regards a complex value with an infinite part as
    an infinity whatever its other part is (NaN included), and products, sums and dot products
    reach one with different other parts depending on their evaluation order (naive vs. BLAS
    vs. vectorized complex multiply): CPU's own dot and mm disagree on (-inf-0.85j)*(3.4e38-2j).
    An infinity against a finite value or NaN+NaNj still differs."""
    if actual.shape != expected.shape or not (actual.is_complex() and expected.is_complex()):
        return actual

    def infinite(t: torch.Tensor) -> torch.Tensor:
        return t.real.isinf() | t.imag.isinf()

    both = infinite(actual) & infinite(expected)
    if not bool(both.any()):
        return actual
    return torch.where(both, expected.to(actual.dtype), actual)


def nonfinite_apart(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor | None:
    """Where both sides are not finite (inf or NaN in either part) and still differ (NaN
    against an infinity, +inf against -inf, another NaN part): the elements ``nonfinite:
    unspecified`` leaves open, where the tolerance data says which non-finite value comes out
    is the evaluation order's (an FFT's butterflies meeting inf: inf on one plan, inf - inf =
    NaN on another; a GEMM's sum meeting inf * 0 before or after an overflow). A finite value
    against a non-finite one is not among them. ``None`` where the results cannot be compared
    element by element (other shapes, integral results)."""
    if actual.shape != expected.shape or not (expected.is_floating_point()
                                              or expected.is_complex()):
        return None

    def parts(t: torch.Tensor) -> torch.Tensor:
        return torch.view_as_real(t) if t.is_complex() else t.unsqueeze(-1)

    a, e = parts(actual), parts(expected.to(actual.dtype))
    both = ~a.isfinite().all(-1) & ~e.isfinite().all(-1)
    same = ((a == e) | (a.isnan() & e.isnan())).all(-1)
    return both & ~same


def _nonfinite_agree(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """``actual`` with the elements of :func:`nonfinite_apart` taken as agreeing (replaced by
    the expected one)."""
    apart = nonfinite_apart(actual, expected)
    if apart is None or not bool(apart.any()):
        return actual
    return torch.where(apart, expected.to(actual.dtype), actual)


def first_at(mask: torch.Tensor, *tensors: torch.Tensor) -> tuple[tuple[int, ...], list[Any]]:
    """The index of ``mask``'s first set element and each tensor's value there (the example a
    verdict's note shows)."""
    flat = int(mask.reshape(-1).nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), mask.shape))
    return index, [t.reshape(-1)[flat].item() for t in tensors]


def _has_zero(t: torch.Tensor) -> bool:
    return (t.is_floating_point() or t.is_complex()) and bool((t == 0).any())


def conversion_undefined(call: Call, dtype: torch.dtype) -> bool:
    """A floating input holds a value the integral ``dtype`` cannot hold (NaN, inf, out of
    range): C++'s static_cast is undefined there, on CPU and on any backend."""
    info = torch.iinfo(dtype)
    tensors, numbers = inputs_of(call)
    for t in tensors:
        if t.is_floating_point() or t.is_complex():
            t = readback.plain(t)
            v = torch.view_as_real(t) if t.is_complex() else t
            v = v.double()
            if bool(((~v.isfinite()) | (v < info.min) | (v >= info.max + 1.0)).any()):
                return True
    return any(isinstance(v, float) and not (info.min <= v < info.max + 1.0) for v in numbers)


def _ulp(magnitude: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` at each (float64) ``magnitude`` (subnormal spacing below the
    smallest normal)."""
    info = torch.finfo(dtype)
    m = magnitude.abs().clamp_min(info.smallest_normal)
    # the binade from frexp, exactly (floor(log2(m)) rounds to 1024 at float64's largest value,
    # whose ulp then read as inf)
    _, exponent = torch.frexp(m)
    return torch.where(m.isfinite(), torch.ldexp(torch.full_like(m, info.eps), exponent - 1), m)


def _input_scale(tensors: list[torch.Tensor], numbers: list[Any], shape: torch.Size,
                 all_inputs: bool = False) -> torch.Tensor:
    """Per result element, the largest finite magnitude among the inputs that feed it: an input
    tensor that broadcasts to the result's ``shape`` counts at its own (broadcast) elements, any
    other input tensor (a reduction's, a convolution's) and every Python number count
    everywhere. With ``all_inputs`` (``scale: all_inputs``: a transform) it is
    :func:`transform_total`, everywhere (at most float64's largest value: a total past it is
    held to ulps of that value, not excused by an infinite one)."""
    if all_inputs:
        total = min(transform_total(tensors), torch.finfo(torch.float64).max)
        return torch.full(shape, total, dtype=torch.float64)
    scale = torch.zeros(shape, dtype=torch.float64)
    everywhere = 0.0
    for v in numbers:
        if math.isfinite(abs(v)):
            everywhere = max(everywhere, float(abs(v)))
    for t in tensors:
        mag = _finite_magnitude(t)
        if mag is None:
            continue
        try:
            scale = torch.maximum(scale, torch.broadcast_to(mag, shape))
        except RuntimeError:
            everywhere = max(everywhere, float(mag.max()))
    return scale.clamp_min(everywhere)


def _finite_magnitude(t: torch.Tensor) -> torch.Tensor | None:
    """``t``'s absolute values in float64, non-finite ones as 0; ``None`` for a bool, empty or
    meta tensor (no magnitude to read)."""
    if t.dtype == torch.bool or t.numel() == 0 or t.device.type == "meta":
        return None
    t = readback.plain(dense(t.detach()))
    # in float64 first: an integral minimum is its own abs() (int16's -32768)
    mag = t.abs() if t.is_complex() else t.to(torch.float64).abs()
    return torch.where(mag.isfinite(), mag.to(torch.float64), 0.0)


#: The largest modulus of a transform's weights on its inputs: a real-output transform (irfft,
#: hfft) adds an interior input and its conjugate mirror, each weighted by a unit root.
TRANSFORM_WEIGHT = 2.0


def transform_total(tensors: list[torch.Tensor]) -> float:
    """The total magnitude of the terms each element of a transform of ``tensors`` sums (every
    input element with a weight of modulus at most :data:`TRANSFORM_WEIGHT`): their finite
    magnitudes summed, times that weight; ``inf`` where float64 overflows. A sum's rounding
    error is bounded by its terms' total (Higham 3.1), so a transform's grows with its length,
    not with its largest input; and where the total passes a dtype's range, some partial sum
    may overflow there in any evaluation order. Python numbers are no terms (a transform's are
    its length, dims and norm)."""
    total = 0.0
    for t in tensors:
        mag = _finite_magnitude(t)
        if mag is not None:
            total += float(mag.sum())
    return TRANSFORM_WEIGHT * total


def _within_scale_ulps(ctx: Context, call: Call, actual: torch.Tensor, expected: torch.Tensor,
                       rtol: float, atol: float, position: tuple[int, int] | None,
                       close: torch.Tensor) -> bool:
    """Whether every element agrees within torch.testing's tolerance (``close``, isclose's
    mask) or within it plus the overload's ``scale_ulps`` (``opdb/data/tolerances.yaml``: 4 for
    every float16/bfloat16 result, more where an op sums terms) ulps of its dtype at the
    magnitude of the inputs that feed it (:func:`_input_scale`), or of the expected element
    where that is larger: element by element, as :func:`agreement` judges (a complex element
    whose cancelled part misses the ulps but whose modulus is close, next to one that only the
    ulps cover, agrees). Non-finite values must match."""
    ulps = ctx.scale_ulps(call.sig.name, expected.dtype)
    scale = _scale_of(ctx, call, expected, position) if ulps else None
    if scale is None:
        return False
    return bool((close | scale_ulps_mask(*inputs_of(call, position), actual, expected, rtol,
                                         atol, ulps, **scale)).all())


def _scale_of(ctx: Context, call: Call, expected: torch.Tensor,
              position: tuple[int, int] | None) -> dict[str, Any] | None:
    """:func:`scale_ulps_mask`'s keywords for the overload's ``scale`` (tolerance data);
    ``None`` for ``scale: terms`` where the call on absolute values gives no answer of
    ``expected``'s shape: the inputs' magnitude is no bound for a sum of products (an
    overflowing operand's would excuse anything), so no ulps are allowed there."""
    kind = ctx.scale_kind(call.sig.name, expected.dtype)
    if kind != "terms":
        return {"everywhere": kind == "all_inputs"}
    terms = ctx.terms_scale(call, expected.shape, position)
    return None if terms is None else {"terms": terms}


def scale_ulps_mask(tensors: list[torch.Tensor], numbers: list[Any], actual: torch.Tensor,
                    expected: torch.Tensor, rtol: float, atol: float, ulps: int, *,
                    everywhere: bool = False, terms: torch.Tensor | None = None
                    ) -> torch.Tensor:
    """Per element of the floating/complex ``expected``: whether ``actual`` is within
    :func:`_within_scale_ulps`' allowance there (a complex element: both parts); ``terms``
    (``scale: terms``, :func:`~conformance.compare.terms.terms_magnitude`) replaces the
    inputs' magnitude as the scale where given."""
    scale = terms if terms is not None \
        else _input_scale(tensors, numbers, expected.shape, everywhere)
    pairs = expected.is_complex()
    if pairs:
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
        scale = scale.unsqueeze(-1).expand(expected.shape)
    a, e = actual.to(torch.float64), expected.to(torch.float64)
    scale = torch.where(e.isfinite(), torch.maximum(scale, e.abs()), scale)
    allowed = rtol * e.abs() + atol + ulps * _ulp(scale, expected.dtype)
    near = a.isfinite() & e.isfinite() & ((a - e).abs() <= allowed)  # rtol * inf allows all
    ok = near | (a == e) | (a.isnan() & e.isnan())
    return ok.all(-1) if pairs else ok


def agreement(ctx: Context, call: Call, actual: torch.Tensor, expected: torch.Tensor, *,
              position: tuple[int, int] | None = None) -> torch.Tensor:
    """Per element of the floating/complex ``expected`` (``actual`` of its shape and dtype):
    whether ``actual`` agrees there as :func:`assert_values` compares whole results (the
    overload's exactness class, else its tolerances, complex infinities, ``nonfinite:
    unspecified`` and ``scale_ulps``): the element-wise judgement that arbitration and
    unspecified elements start from (:mod:`conformance.compare.arbitration`)."""
    actual, expected = readback.plain(dense(actual)), readback.plain(dense(expected))
    how = comparison_for(ctx, call, expected)
    if how.kind == "exact":
        bad = mismatches(actual, expected, how.ulps, how.signed_zero)
        return ~(bad.any(-1) if expected.is_complex() else bad)
    rtol, atol = (how.rtol, how.atol or 0.0) if how.rtol is not None \
        else default_tolerance(expected.dtype)
    actual = complex_infinities_agree(actual, expected)
    if ctx.nonfinite_unspecified(call.sig.name, expected.dtype):
        actual = _nonfinite_agree(actual, expected)
    ok = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    ulps = ctx.scale_ulps(call.sig.name, expected.dtype)
    scale = _scale_of(ctx, call, expected, position) if ulps else None
    if scale is not None:
        ok = ok | scale_ulps_mask(*inputs_of(call, position), actual, expected, rtol, atol, ulps,
                                  **scale)
    return ok


def defined_elements(call: Call, expected: torch.Tensor) -> torch.Tensor | None:
    """For an elementwise conversion to the integral ``expected`` (one tensor input, of its
    shape, and no Python numbers): where that input holds a value the result dtype can hold
    (elsewhere C++'s static_cast is undefined). ``None`` for any other call: then one undefined
    element leaves the whole result unspecified (a NaN among many elements no longer hides a
    wrong rounding of the others)."""
    tensors, numbers = inputs_of(call)
    if len(tensors) != 1 or numbers or tuple(tensors[0].shape) != tuple(expected.shape):
        return None
    t = tensors[0]
    if not (t.is_floating_point() or t.is_complex()):
        return None
    t = readback.plain(t)
    info = torch.iinfo(expected.dtype)
    v = (t.real if t.is_complex() else t).double()
    return v.isfinite() & (v >= info.min) & (v < info.max + 1.0)


def assert_values(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
                   expected: torch.Tensor, *, exactness: bool = True,
                   position: tuple[int, int] | None = None, count_open: bool = True) -> None:
    """``exactness=False``: tolerances even where the overload's exactness class says its
    values are exact (gradients: the backward of a data-movement op sums contributions).
    ``position``: ``(i, n)``, this is result ``i`` of ``n`` (a ``_foreach_*`` result's inputs).
    ``count_open=False``: elements ``nonfinite: unspecified`` leaves open are not noted (a
    comparison of two CPU answers, which is not the backend's verdict)."""
    __tracebackhide__ = True
    # lazily conjugated/negated results (conj(), mH, fft's conjugated views) resolved on a copy
    actual, expected = readback.plain(dense(actual)), readback.plain(dense(expected))
    how = comparison_for(ctx, call, expected)
    if how.kind == "exact" and exactness:
        if readback.equal(actual, expected) and not (how.signed_zero and _has_zero(expected)):
            return
        bad = mismatches(actual, expected, how.ulps, how.signed_zero)
        if not bool(bad.any()):
            return
        if how.undefined_conversion and conversion_undefined(call, expected.dtype):
            defined = defined_elements(call, expected)
            if defined is None or not bool((bad & defined).any()):
                raise CpuRejected(ValueError("CPU's result is undefined: a floating value the "
                                             "integral result cannot hold"))
            bad = bad & defined  # an elementwise conversion: its defined elements still count
        n, total = int(bad.sum()), bad.numel()
        flat = int(bad.reshape(-1).nonzero()[0])
        if expected.is_complex():  # bad is over (..., 2) real/imag pairs
            flat //= 2
        a_v, e_v = actual.reshape(-1)[flat].item(), expected.reshape(-1)[flat].item()
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), expected.shape))
        allowed = "exactly" if how.ulps == 0 else f"within {how.ulps} ulp"
        raise CheckFailure("value", f"{label} values differ from CPU, which must agree "
                                    f"{allowed} ({how.why}): {n} of {total} elements differ, "
                                    f"first at index {index}: {a_v!r}, but should be {e_v!r} "
                                    f"[{where}]")
    rtol, atol = (how.rtol, how.atol or 0.0) if how.rtol is not None and how.kind != "exact" \
        else default_tolerance(expected.dtype)
    if actual.dtype == expected.dtype and actual.shape == expected.shape \
            and readback.equal(actual, expected):
        return  # equal values are close at any tolerance: one pass (NaN-free results, most of
        # them), not isclose's several nor assert_close's per-call overhead on integers
    actual = complex_infinities_agree(actual, expected)
    apart = nonfinite_apart(actual, expected) \
        if ctx.nonfinite_unspecified(call.sig.name, expected.dtype) else None
    if apart is None or not bool(apart.any()):
        _assert_close(ctx, call, how, label, where, actual, expected, rtol, atol, position)
        return
    _assert_close(ctx, call, how, label, where,
                  torch.where(apart, expected.to(actual.dtype), actual), expected, rtol, atol,
                  position)
    if not count_open:
        return
    # counted only once the whole comparison agrees: a failing one is the verdict, and
    # arbitration compares again (what it settles is counted there)
    n = int(apart.sum())
    index, (a, e) = first_at(apart, actual, expected)
    ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {n} of {apart.numel()} element(s) not finite on "
                  f"both sides, where which of inf, -inf and NaN comes out is this op's "
                  f"evaluation order's (first at index {index}: {a!r}, CPU {e!r}) [{where}]", n)


def _assert_close(ctx: Context, call: Call, how: Comparison, label: str, where: str,
                  actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float,
                  position: tuple[int, int] | None) -> None:
    """The tolerance comparison of :func:`assert_values`: each element close by rtol/atol or
    within the scale ulps, else torch.testing's message as the failure."""
    __tracebackhide__ = True
    if expected.is_floating_point() or expected.is_complex():
        if expected.shape == actual.shape:
            close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
            if bool(close.all()):
                return  # the common case, without assert_close's per-call overhead
            if _within_scale_ulps(ctx, call, actual, expected, rtol, atol, position, close):
                return
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol,
                                   equal_nan=True, check_device=False, check_dtype=False,
                                   check_layout=False, check_stride=False)
    except (AssertionError, RuntimeError) as exc:
        if how.undefined_conversion and conversion_undefined(call, expected.dtype):
            raise CpuRejected(ValueError("CPU's result is undefined: a floating value the "
                                         "integral result cannot hold")) from None
        if isinstance(exc, AssertionError):
            detail = " ".join(str(exc).split("\n")[1:4]).strip()
        else:  # torch.testing's own message failed (abs() of a huge complex difference)
            bad = ~torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
            flat = int(bad.reshape(-1).nonzero()[0]) if bool(bad.any()) else 0
            detail = (f"Mismatched elements: {int(bad.sum())} / {bad.numel()}, first at flat "
                      f"index {flat}: {actual.reshape(-1)[flat].item()!r}, but should be "
                      f"{expected.reshape(-1)[flat].item()!r}")
        raise CheckFailure("value", f"{label} values differ from CPU: {detail} [{where}]") \
            from None
