"""The checks: what "agrees with CPU" means for one example.

A check is a small record (:class:`Check`) naming the strategy mode it draws with, when it applies,
and a ``verify(ctx, call)`` function. ``verify`` runs the call on CPU and on the backend through
``ctx`` (which counts, tallies dtypes and writes the about-to-run marker) and raises
:class:`~conformance.verdicts.CheckFailure` for a disagreement. Adding a check (out=, in-place,
autograd, non-contiguous, per-dtype) is one more entry in :data:`CHECKS`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_flatten

from conformance import readback
from conformance import ties as tie_positions
from conformance.strategies import Call, OpSignature, written
from conformance.variants_inplace import inplace_applies, verify_inplace
from conformance.verdicts import CheckFailure, CpuRejected, error_line
from opdb.dtypes import DTYPE_NAMES, default_tolerance, dtype_name, torch_dtypes

if TYPE_CHECKING:
    from conformance.engine import Context
    from opdb.opdata import OpHints

def _fmt_dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _loosest(dtypes: frozenset[str], result: torch.dtype) -> tuple[float, float] | None:
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


def _leaves(out: Any) -> list[Any]:
    leaves, _ = tree_flatten(out)
    return leaves


def _label(i: int, n: int) -> str:
    return "out" if n == 1 else f"out[{i}]"


def _labels(call: Call, n: int) -> list[str]:
    """How messages name the ``n`` results of ``call``: ``out`` / ``out[i]``, or, for an
    overload that returns nothing (:attr:`Call.written`), the arguments it wrote (``self[1]``
    of ``_foreach_add_``, ``out[0]`` of ``_foreach_exp.out``), in the order ``run`` gives them."""
    if call.written:
        from conformance.strategies import written_parts

        names = [label for label, _ in written_parts(call.sig, dict(call.values))]
        if len(names) == n:
            return names
    return [_label(i, n) for i in range(n)]


def compare_outputs(ctx: Context, call: Call, expected: Any, actual: Any, *,
                    values: bool, samples: list[Any] | None = None,
                    view_bits: bool = True) -> None:
    """Structure, device, dtype, shape and (optionally) values of ``actual`` against CPU's;
    a disagreement on a call CPU answers only because its inputs are empty is not counted
    (:meth:`~conformance.engine.Context.reject_if_vacuous`). ``view_bits=False``: ``actual``
    is not what the (view) overload returned (a gradient), so its lazy conj/neg bits are not
    compared."""
    __tracebackhide__ = True
    try:
        _compare_outputs(ctx, call, expected, actual, values=values, samples=samples,
                         view_bits=view_bits)
    except CheckFailure:
        ctx.reject_if_vacuous(call)
        raise


def _compare_outputs(ctx: Context, call: Call, expected: Any, actual: Any, *,
                     values: bool, samples: list[Any] | None = None,
                     view_bits: bool = True) -> None:
    __tracebackhide__ = True
    where = call.describe()
    if not ctx.hints.values:  # hints: this op's result values are unspecified (empty_like)
        values, samples = False, None
    if (values or samples is not None) and not ctx.values_comparable():
        values, samples = False, None  # a shape-only backend (meta): judged on metadata only
    exp, act = _leaves(expected), _leaves(actual)
    extra = [_leaves(s) for s in samples or ()]
    value_range = samples is not None
    if len(exp) != len(act):
        raise CheckFailure("structure", f"returned {len(act)} values, but should return "
                                        f"{len(exp)} [{where}]")
    n = len(exp)
    labels = _labels(call, n)
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
        if view_bits and _is_view(call.sig):  # a view's lazy conj/neg bit is part of what
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
                            spread=[_part(x, i, j) for x in extra] if value_range else None)


def _compare_tensor(ctx: Context, call: Call, label: str, where: str, e: torch.Tensor,
                    a: torch.Tensor, i: int, j: int, n: int, *, values: bool,
                    spread: list[Any] | None) -> None:
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
            _assert_values(ctx, call, label, where, host, e, position=(i, n))
    except CheckFailure:
        def agrees(again: Any) -> bool:
            return _agrees(ctx, call, label, where, _part(again, i, j), e, (i, n))

        if ctx.cpu_unstable(call, agrees):
            return  # CPU's own answers differ: only dtype and shape are specified
        if _cpu_answers_so_for_views(ctx, call, label, where, host, i, j, n):
            return  # CPU's answer depends on the inputs' layout: the backend gave one of them
        raise


def _cpu_answers_so_for_views(ctx: Context, call: Call, label: str, where: str,
                              actual: torch.Tensor, i: int, j: int, n: int) -> bool:
    """Whether CPU gives the backend's answer ``actual`` (part ``j`` of result ``i``) for the
    same values laid out as step-2 views (every tensor argument that one fits, out= aside):
    asked only where a value comparison failed. ATen's vectorized loops (contiguous inputs) and
    its scalar loops (strided ones) are different code with different answers at the edges
    (float32 ``fmod(x, 1e-45)`` is NaN vectorized, 0 scalar; complex specials), so there
    CPU's contiguous answer is not a contract: a backend giving CPU's answer for the views
    agrees with CPU, and the verdict notes it (``cpu_unstable``). A wrong answer that CPU
    gives for no layout still fails."""
    from conformance.layouts import LAYOUTS, _tensors_of, with_layouts

    outs = {a.name for a in call.sig.args if a.is_out}
    strided = LAYOUTS["strided"]
    names = tuple((name, "strided") for name, value in call.values if name not in outs
                  and any(strided.fits(tuple(t.shape)) for t in _tensors_of(value)))
    if not names or call.notes and "noncontiguous" in call.notes:
        return False
    views = with_layouts(call, names)
    ctx.inflight.call(views, ctx.repro_fn, side="cpu")
    try:
        answer = views.run("cpu")
    except Exception:  # noqa: BLE001 - CPU refuses the views: no second answer
        return False
    expected = _part(answer, i, j)
    if not isinstance(expected, torch.Tensor) or not _agrees(ctx, call, label, where, actual,
                                                             expected, (i, n)):
        return False
    ctx.cpu_unstable_calls[f"{where}: CPU's answer differs for the same values as step-2 "
                           f"views, and the backend gave that one"] += 1
    return True


def _is_view(sig: OpSignature) -> bool:
    """A functional overload whose result aliases an input (``Tensor(a)``): a view, whose
    lazy conj/neg bits (``conj``, ``mH``, ``_neg_view``) are part of what it returns."""
    return sig.kind == "functional" and _aliases(sig.schema_str)


@functools.cache
def _aliases(schema: str) -> bool:
    return re.search(r"\([a-z]+\)", schema.rpartition("->")[2]) is not None


def _part(out: Any, i: int, j: int) -> Any:
    """Part ``j`` (:func:`conformance.readback.parts`) of result ``i`` of another CPU answer."""
    leaf = _leaf(out, i)
    if not isinstance(leaf, torch.Tensor):
        return leaf
    found = readback.parts(leaf)
    return found[j][1] if j < len(found) else None


def _leaf(out: Any, i: int) -> Any:
    leaves = _leaves(out)
    return leaves[i] if i < len(leaves) else None


def _agrees(ctx: Context, call: Call, label: str, where: str, again: Any,
            expected: torch.Tensor, position: tuple[int, int] | None = None) -> bool:
    """A second CPU answer ``again`` agrees with the first, as the backend's answer must."""
    if not isinstance(again, torch.Tensor) or again.shape != expected.shape \
            or again.dtype != expected.dtype:
        return False
    try:
        _assert_values(ctx, call, label, where, again, expected, position=position)
    except CheckFailure:
        return False
    return True


def _same_scalar(e: Any, a: Any) -> bool:
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    return bool(e == a) and type(e) is type(a)


def _dense(t: torch.Tensor) -> torch.Tensor:
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


def _inputs(call: Call, position: tuple[int, int] | None = None,
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
            sig.name, family=family_of(sig.base)[0], tags=sig.tags, is_view=_is_view(sig))
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
    tensors, numbers = _inputs(call)
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
            sources, _ = _inputs(call, skip=_positions_args(ctx, call.sig))
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
    loose = _loosest(call.tensor_dtypes | through, dtype)
    return Comparison("tolerance", "default tolerances", rtol=loose[0] if loose else None,
                      atol=loose[1] if loose else None, undefined_conversion=undefined)


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """Floating values as integers that count ulps (-0.0 and 0.0 both 0; NaNs not meaningful)."""
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    i = t.contiguous().view(bits).to(torch.int64)
    mag = i & ((1 << (8 * t.element_size() - 1)) - 1)
    return torch.where(i < 0, -mag, mag)


def _mismatches(actual: torch.Tensor, expected: torch.Tensor, ulps: int,
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
        return _mismatches(actual, expected, ulps) | zeros
    if ulps == 0:
        return (actual != expected) & ~nan
    a, e = _ordered(actual), _ordered(expected)
    same_side = (a >= 0) == (e >= 0)
    near = torch.where(same_side, (a - e).abs() <= ulps,
                       (a.abs() <= ulps) & (e.abs() <= ulps) & (a.abs() + e.abs() <= ulps))
    return ~near & ~nan


def _complex_infinities_agree(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
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


def _nonfinite_agree(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """``actual`` with each element where both sides are not finite (inf or NaN in either part)
    taken as agreeing (replaced by the expected one): where the tolerance data says which
    non-finite value comes out is the evaluation order's (an FFT's butterflies meeting inf: inf
    on one plan, inf - inf = NaN on another). A finite value against a non-finite one differs."""
    if actual.shape != expected.shape or not (expected.is_floating_point()
                                              or expected.is_complex()):
        return actual

    def nonfinite(t: torch.Tensor) -> torch.Tensor:
        return ~torch.view_as_real(t).isfinite().all(-1) if t.is_complex() else ~t.isfinite()

    both = nonfinite(actual) & nonfinite(expected)
    if not bool(both.any()):
        return actual
    return torch.where(both, expected.to(actual.dtype), actual)


def _has_zero(t: torch.Tensor) -> bool:
    return (t.is_floating_point() or t.is_complex()) and bool((t == 0).any())


def _undefined_conversion(call: Call, dtype: torch.dtype) -> bool:
    """A floating input holds a value the integral ``dtype`` cannot hold (NaN, inf, out of
    range): C++'s static_cast is undefined there, on CPU and on any backend."""
    info = torch.iinfo(dtype)
    tensors, numbers = _inputs(call)
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
    return torch.exp2(torch.floor(torch.log2(m))) * info.eps


def _input_scale(tensors: list[torch.Tensor], numbers: list[Any], shape: torch.Size,
                 all_inputs: bool = False) -> torch.Tensor:
    """Per result element, the largest finite magnitude among the inputs that feed it: an input
    tensor that broadcasts to the result's ``shape`` counts at its own (broadcast) elements, any
    other input tensor (a reduction's, a convolution's) and every Python number count
    everywhere; with ``all_inputs`` (``scale: all_inputs``: a transform) every input does."""
    scale = torch.zeros(shape, dtype=torch.float64)
    everywhere = 0.0
    for v in numbers:
        if math.isfinite(abs(v)):
            everywhere = max(everywhere, float(abs(v)))
    for t in tensors:
        if t.dtype == torch.bool or t.numel() == 0 or t.device.type == "meta":
            continue
        # in float64 first: an integral minimum is its own abs() (int16's -32768)
        mag = t.detach().abs() if t.is_complex() else t.detach().to(torch.float64).abs()
        mag = torch.where(mag.isfinite(), mag.to(torch.float64), 0.0)
        try:
            if all_inputs:
                raise RuntimeError("every element feeds every result")
            scale = torch.maximum(scale, torch.broadcast_to(mag, shape))
        except RuntimeError:
            everywhere = max(everywhere, float(mag.max()))
    return scale.clamp_min(everywhere)


def _within_scale_ulps(ctx: Context, call: Call, actual: torch.Tensor, expected: torch.Tensor,
                       rtol: float, atol: float, position: tuple[int, int] | None = None
                       ) -> bool:
    """The result agrees within torch.testing's tolerance plus the overload's ``scale_ulps``
    (``opdb/data/tolerances.yaml``: 4 for every float16/bfloat16 result, more where an op sums
    terms) ulps of its dtype at the magnitude of the inputs that feed each element
    (:func:`_input_scale`), or of the expected element where that is larger. Non-finite values
    must match."""
    ulps = ctx.scale_ulps(call.sig.name, expected.dtype)
    if not ulps:
        return False
    return within_scale_ulps(*_inputs(call, position), actual, expected, rtol, atol, ulps,
                             everywhere=ctx.scale_everywhere(call.sig.name, expected.dtype))


def within_scale_ulps(tensors: list[torch.Tensor], numbers: list[Any], actual: torch.Tensor,
                      expected: torch.Tensor, rtol: float, atol: float, ulps: int, *,
                      everywhere: bool = False) -> bool:
    """:func:`_within_scale_ulps` on explicit inputs (a complex result part by part, at the
    magnitude of its inputs)."""
    if not (expected.is_floating_point() or expected.is_complex()):
        return False
    scale = _input_scale(tensors, numbers, expected.shape, everywhere)
    if expected.is_complex():
        actual, expected = torch.view_as_real(actual), torch.view_as_real(expected)
        scale = scale.unsqueeze(-1).expand(expected.shape)
    a, e = actual.to(torch.float64), expected.to(torch.float64)
    scale = torch.where(e.isfinite(), torch.maximum(scale, e.abs()), scale)
    allowed = rtol * e.abs() + atol + ulps * _ulp(scale, expected.dtype)
    near = a.isfinite() & e.isfinite() & ((a - e).abs() <= allowed)  # rtol * inf allows all
    ok = near | (a == e) | (a.isnan() & e.isnan())
    return bool(ok.all())

def _defined_elements(call: Call, expected: torch.Tensor) -> torch.Tensor | None:
    """For an elementwise conversion to the integral ``expected`` (one tensor input, of its
    shape, and no Python numbers): where that input holds a value the result dtype can hold
    (elsewhere C++'s static_cast is undefined). ``None`` for any other call: then one undefined
    element leaves the whole result unspecified (a NaN among many elements no longer hides a
    wrong rounding of the others)."""
    tensors, numbers = _inputs(call)
    if len(tensors) != 1 or numbers or tuple(tensors[0].shape) != tuple(expected.shape):
        return None
    t = tensors[0]
    if not (t.is_floating_point() or t.is_complex()):
        return None
    t = readback.plain(t)
    info = torch.iinfo(expected.dtype)
    v = (t.real if t.is_complex() else t).double()
    return v.isfinite() & (v >= info.min) & (v < info.max + 1.0)


def _assert_values(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
                   expected: torch.Tensor, *, exactness: bool = True,
                   position: tuple[int, int] | None = None) -> None:
    """``exactness=False``: tolerances even where the overload's exactness class says its
    values are exact (gradients: the backward of a data-movement op sums contributions).
    ``position``: ``(i, n)``, this is result ``i`` of ``n`` (a ``_foreach_*`` result's inputs)."""
    __tracebackhide__ = True
    # lazily conjugated/negated results (conj(), mH, fft's conjugated views) resolved on a copy
    actual, expected = readback.plain(_dense(actual)), readback.plain(_dense(expected))
    how = comparison_for(ctx, call, expected)
    if how.kind == "exact" and exactness:
        if readback.equal(actual, expected) and not (how.signed_zero and _has_zero(expected)):
            return
        bad = _mismatches(actual, expected, how.ulps, how.signed_zero)
        if not bool(bad.any()):
            return
        if how.undefined_conversion and _undefined_conversion(call, expected.dtype):
            defined = _defined_elements(call, expected)
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
    actual = _complex_infinities_agree(actual, expected)
    if ctx.nonfinite_unspecified(call.sig.name, expected.dtype):
        actual = _nonfinite_agree(actual, expected)
    if expected.is_floating_point() or expected.is_complex():
        if expected.shape == actual.shape and bool(torch.isclose(
                actual, expected, rtol=rtol, atol=atol, equal_nan=True).all()):
            return  # the common case, without assert_close's per-call overhead
        if expected.shape == actual.shape and _within_scale_ulps(ctx, call, actual, expected,
                                                                 rtol, atol, position):
            return
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol,
                                   equal_nan=True, check_device=False, check_dtype=False,
                                   check_layout=False, check_stride=False)
    except (AssertionError, RuntimeError) as exc:
        if how.undefined_conversion and _undefined_conversion(call, expected.dtype):
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


#: Seeded-random ops: how many more CPU samples are asked, when the backend's value falls outside
#: the range CPU's samples span, whether CPU's own values fall outside it too (heavy tails:
#: ``cauchy``; rare large values: ``geometric`` with p near 1). Cheap calls, asked only on a miss.
SPREAD_RERUNS = 256


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


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Check:
    """One check: the strategy mode it draws with, when it applies, and how it verifies."""

    name: str
    mode: str
    doc: str
    applies: Callable[[OpSignature], str | None]  # reason it does not apply, or None
    verify: Callable[[Context, Call], None]
    examples_factor: float = 1  # examples drawn: round(--max-examples x this), at least 1
    shrink: bool = True  # Hypothesis shrinks a failing example (off where one costs many calls)
    refills: bool = False  # checks EngineSettings.refills value fills per drawn call (values
    #                        are its subject, the call is cheap; see Call.refill)
    #: What makes two drawn calls the same example for this check (None: every draw counts).
    #: Hypothesis' generation repeats and mutates earlier draws, so with this set the engine
    #: skips a call identical to one already checked and draws another in its place.
    identity: Callable[[Call], str] | None = None
    #: Refill ``i`` of a drawn call as this check runs it (forward: one refill as views).
    prepare: Callable[[Call, int], Call] | None = None
    #: Whether an item may run in a forked child (``cpu_crashes`` hints). Not one that
    #: backpropagates: torch's autograd engine refuses in a child forked after the parent ran
    #: any backward ("Unable to handle autograd's threading in combination with fork-based
    #: multiprocessing"), which made every such example a CPU refusal
    forks: bool = True
    #: Forward calls one drawn example holds (a dtypes sweep: one per dtype). A check whose
    #: draw is a sweep searches for valid inputs as far as the forward check does (its reject
    #: budget of refused calls, 80 at the default depth: 7 sweeps), not 12 times as far: 59 of
    #: one 1/16 shard's 194 dtypes items drew 40 refused sweeps (480 calls) each before
    #: ``no_valid_inputs``, 30 of that shard's 54 s (21 s with this; 7 of its 135 items with a
    #: valid sweep then found none).
    calls_per_draw: int = 1
    #: The reason the check does not apply to an overload by its hints (per-op data, where the
    #: signature cannot tell: CPU ignoring strides for the noncontiguous check), or None.
    applies_hints: Callable[[OpHints], str | None] | None = None


def _forward_applies(sig: OpSignature) -> str | None:
    return None


#: The forward refill whose tensors are laid out as non-contiguous views
#: (:func:`conformance.layouts.refill_views`): a kernel right only for contiguous input shows
#: in the default run, at no extra call. Refill 6 keeps the drawn dtype and no forced special.
VIEW_REFILL = 6


#: The forward refill of an ``out=`` overload whose outs are given pre-sized: CPU's result
#: shape and dtype, holding a fill value (the ``out`` check's ``sized`` form,
#: :func:`sized_outs`), on both sides. Every other refill gives empty outs, which a kernel
#: resizes: one that reads its out's old contents where the out already fits (an in-place path
#: taken on ``out`` instead of ``self``) shows only here in the default run. Refill 4 keeps the
#: drawn dtype and no forced special; it costs one more CPU call (the shape probe).
SIZED_OUT_REFILL = 4
_SIZED_OUT = "out= pre-sized"


def _forward_refill(call: Call, i: int) -> Call:
    if i == SIZED_OUT_REFILL and call.sig.kind == "out" and any(
            a.is_out for a in call.sig.args) and not any(a.is_out and a.is_list
                                                          for a in call.sig.args):
        return replace(call, notes=(*call.notes, _SIZED_OUT))
    if i != VIEW_REFILL:
        return call
    from conformance.layouts import refill_views

    return refill_views(call)


def sized_outs(call: Call, probe: Any) -> Call | None:
    """``call`` with each ``out=`` tensor replaced by one of the shape and dtype CPU's answer
    ``probe`` (to the call with empty outs) gave it, filled as the ``out`` check's ``sized``
    form fills it; ``None`` where the results cannot be matched to the outs."""
    from conformance.variants_out import make_outs

    names = [a.name for a in call.sig.args if a.is_out]
    results = list(probe) if isinstance(probe, tuple | list) else [probe]
    if len(results) != len(names) or not all(isinstance(r, torch.Tensor) for r in results):
        return None
    outs, _ = make_outs("sized", [tuple(r.shape) for r in results],
                        [r.dtype for r in results], "cpu")
    given = dict(zip(names, outs, strict=True))
    return replace(call, values=tuple((n, given.get(n, v)) for n, v in call.values))


def verify_forward(ctx: Context, call: Call) -> None:
    """Values (dtype-aware tolerances), dtype and shape agree with CPU."""
    __tracebackhide__ = True
    if "noncontiguous" in call.notes:  # the view refill: a failure the layout's alone
        from conformance.layouts import verify as verify_layouts

        verify_layouts(ctx, call, strides=False)
        return
    call = written(call)  # an overload returning nothing: what it wrote is its result
    if _SIZED_OUT in call.notes:
        call = sized_outs(call, ctx.run_cpu(call)) or call
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
    try:
        actual = ctx.run_backend(call)
        compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)
    except CheckFailure as exc:
        exc.call = exc.call or call  # the pre-sized outs are part of the repro
        raise


def _promotion_applies(sig: OpSignature) -> str | None:
    if not sig.operands:
        return "no Tensor or Scalar operand whose dtype could promote"
    if not sig.tensor_args:
        return "no tensor argument"
    return None


def promotion_identity(call: Call) -> str:
    """A promotion example is its structure: operand forms, dtypes, shapes and Python scalar
    values (tensor values are a safe fill the check does not compare). Drawn calls repeat one
    in three times at the default 30 examples (mul.Tensor: 20 distinct of 30)."""
    return f"{call.describe()}|{call.notes}|{sorted(call.on_cpu)}"


def verify_promotion(ctx: Context, call: Call) -> None:
    """Result dtype (and shape) as CPU; where CPU raises, the backend raises the same type.

    A backend that refuses a call with a 0-dim CPU tensor among device operands is judged on
    the same call with that operand on the device (its verdict stands for the example, and a
    pass notes ``cpu_operand_refused``): ATen's generated device check refuses CPU operands
    except in the TensorIterator ops that opt out, so accepting one is not a promotion rule."""
    __tracebackhide__ = True
    _verify_promotion_one(ctx, call)
    for partner in zero_dim_partners(call):
        try:
            _verify_promotion_one(ctx, partner)
        except CheckFailure as exc:
            exc.call = exc.call or partner
            raise


def zero_dim_partners(call: Call) -> list[Call]:
    """``call`` again with its first 0-dim tensor operand (on the device or kept on CPU)
    retyped to each dtype where promoting it with the first operand of higher rank follows a
    rule rather than the table: ``torch.result_type`` differs from ``torch.promote_types`` (a
    wider 0-dim operand of the same category does not promote: float32 with a float64 0-dim is
    float32) or the 0-dim operand gives the result its dtype (int32 with a float16 0-dim is
    float16). Drawn at random, one such (dtype, 0-dim dtype) pair comes about once in fifty
    promotion calls; every drawn call with a 0-dim operand now tries them all (at most eleven
    small calls, dtypes only: the values are the safe fill). Empty without such a pair."""
    names = [a.name for a in call.sig.operands if a.base == "Tensor"]
    given = dict(call.values)
    tensors = [(n, given[n]) for n in names if isinstance(given.get(n), torch.Tensor)]
    lead = next((t for _, t in tensors if t.dim() > 0), None)
    zero = next(((n, t) for n, t in tensors if t.dim() == 0), None)
    if lead is None or zero is None:
        return []
    name, z = zero
    out = []
    for dtype in torch_dtypes():
        if dtype == z.dtype:
            continue
        probe = torch.ones((), dtype=dtype)
        result = torch.result_type(lead, probe)
        if result == torch.promote_types(lead.dtype, dtype) and result == lead.dtype:
            continue
        retyped = (z.real if z.is_complex() and not dtype.is_complex else z).to(dtype)
        out.append(replace(call, values=tuple((n, retyped if n == name else v)
                                               for n, v in call.values)))
    return out


def _verify_promotion_one(ctx: Context, call: Call) -> None:
    __tracebackhide__ = True
    from opdb.outcomes import CPU_OPERAND_REFUSED, ERROR_RAISES, ERROR_TYPE

    expected, cpu_exc = ctx.run_cpu_or_error(call)
    try:
        _promotion_on_backend(ctx, call, expected, cpu_exc)
    except CheckFailure as refused:
        if not call.on_cpu or refused.category not in (ERROR_RAISES, ERROR_TYPE):
            raise
        on_device = replace(call, on_cpu=frozenset())
        try:
            _promotion_on_backend(ctx, on_device, expected, cpu_exc)
        except CheckFailure as exc:
            exc.call = exc.call or on_device
            raise
        ctx.note_info(CPU_OPERAND_REFUSED, refused.message)


def _promotion_on_backend(ctx: Context, call: Call, expected: Any,
                          cpu_exc: BaseException | None) -> None:
    __tracebackhide__ = True
    if cpu_exc is not None:
        ctx.expect_same_error(call, cpu_exc)
        return
    actual = ctx.run_backend(call)
    compare_outputs(ctx, call, expected, actual, values=False)


def _broadcast_applies(sig: OpSignature) -> str | None:
    if not sig.is_pointwise:
        return "not tagged pointwise: its tensor arguments need not broadcast"
    if len([a for a in sig.tensor_args if not a.optional]) < 2:
        return "fewer than two tensor arguments to broadcast"
    return None


def _resized(t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``t``'s values, repeated or cut, in ``shape`` (same dtype)."""
    numel = math.prod(shape)
    flat = t.reshape(-1)
    if flat.numel() == 0 or numel == 0:
        return torch.zeros(shape, dtype=t.dtype)
    return flat.repeat(-(-numel // flat.numel()))[:numel].reshape(shape)


def shape_rotations(call: Call) -> list[Call]:
    """``call`` again with the operands' shapes rotated among them (each operand keeps its dtype
    and values, repeated or cut to its new shape): a kernel that broadcasts one operand but not
    another, or aligns one from the wrong end (where's condition aligned left, sub with its
    operands swapped when self is the smaller), is right for some assignments of the drawn
    shapes and wrong for others. Empty when the operands' shapes are all equal."""
    names = [a.name for a in call.sig.tensor_args if not a.optional]
    given = dict(call.values)
    tensors = [given.get(n) for n in names]
    if len(tensors) < 2 or not all(isinstance(t, torch.Tensor) for t in tensors):
        return []
    shapes = [tuple(t.shape) for t in tensors]  # type: ignore[union-attr]
    if len(set(shapes)) < 2:
        return []
    out = []
    for r in range(1, len(names)):
        moved = {n: _resized(t, shapes[(p + r) % len(names)])  # type: ignore[arg-type]
                 for p, (n, t) in enumerate(zip(names, tensors, strict=True))}
        out.append(replace(call, values=tuple((n, moved.get(n, v)) for n, v in call.values)))
    return out


def verify_broadcast(ctx: Context, call: Call) -> None:
    """Mutually broadcastable shapes give CPU's shape and values, for every rotation of the
    drawn shapes among the operands (:func:`shape_rotations`); a conflicting set raises on both."""
    __tracebackhide__ = True
    _verify_broadcast_one(ctx, call)
    for rotated in shape_rotations(call):
        try:
            _verify_broadcast_one(ctx, rotated)
        except CpuRejected:
            continue  # CPU refuses this assignment of shapes (or values): the others stand
        except CheckFailure as exc:
            exc.call = exc.call or rotated
            raise


def _verify_broadcast_one(ctx: Context, call: Call) -> None:
    __tracebackhide__ = True
    if "non-broadcastable" in call.notes:
        expected, cpu_exc = ctx.run_cpu_or_error(call)
        if cpu_exc is not None:
            ctx.expect_same_error(call, cpu_exc)
            return
    else:
        expected = ctx.run_cpu(call)
    actual = ctx.run_backend(call)
    seeded = "nondeterministic_seeded" in call.sig.tags
    compare_outputs(ctx, call, expected, actual, values=not seeded)


# --------------------------------------------------------------------------- autograd


def grad_args(sig: OpSignature) -> tuple[str, ...]:
    """Tensor arguments autograd differentiates for ``sig``: those derivatives.yaml gives a
    formula (``formula``), or every tensor argument (``decomposition``: differentiable through
    the ops it calls); ``()`` when the overload is not differentiable (``db.autograd``)."""
    from conformance.rundb import current

    db = current()
    if sig.name not in db:
        return ()
    how = db.autograd(sig.name)
    tensors = tuple(a.name for a in sig.args if a.base == "Tensor" and not a.is_out)
    if how == "decomposition":
        return tensors
    if how != "formula":
        return ()
    formula = set(db.derivatives[sig.name].inputs)
    return tuple(n for n in tensors if n in formula)


def grad_leaves(call: Call) -> list[tuple[str, str, torch.Tensor]]:
    """``(argument, label, tensor)`` for every floating/complex tensor of ``call`` that the
    autograd check differentiates, in schema order (a ``Tensor[]`` gives ``name[i]`` labels).
    Arguments kept on CPU (0-dim CPU operands) are not differentiated."""
    names = set(grad_args(call.sig))
    out: list[tuple[str, str, torch.Tensor]] = []
    for name, value in call.values:
        if name not in names or name in call.on_cpu:
            continue
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, t in items:
            if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
                out.append((name, name if i is None else f"{name}[{i}]", t))
    return out


def upstream_grads(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The upstream gradient for each differentiated output: standard-normal values from a
    generator seeded 0, on CPU (drawn, not ones, so a sign or transpose error shows; the same
    tensors go to CPU and, copied, to the backend)."""
    gen = torch.Generator().manual_seed(0)

    def draw(o: torch.Tensor) -> torch.Tensor:
        if o.is_nested:  # no single shape: one gradient per component, nested alike
            return torch.nested.as_nested_tensor(
                [torch.randn(tuple(c.shape), dtype=o.dtype, generator=gen)
                 for c in o.detach().unbind()], layout=o.layout)
        return torch.randn(tuple(o.shape), dtype=o.dtype, generator=gen)

    return [draw(o) for o in outputs]


def _with_leaves(call: Call, leaves: dict[str, torch.Tensor], wrap: Callable[[torch.Tensor], Any]
                 ) -> Call:
    """``call`` with each differentiated tensor replaced by ``wrap(leaf)``."""
    from dataclasses import replace

    values = []
    for name, value in call.values:
        if isinstance(value, list):
            value = [wrap(leaves[f"{name}[{i}]"]) if f"{name}[{i}]" in leaves else v
                     for i, v in enumerate(value)]
        elif name in leaves:
            value = wrap(leaves[name])
        values.append((name, value))
    return replace(call, values=tuple(values))


def _grad_outputs(out: Any) -> list[int]:
    """Indices (among the flattened outputs) autograd differentiates: floating/complex tensors
    that require grad (an integer ``indices`` output never does)."""
    return [i for i, o in enumerate(_leaves(out)) if isinstance(o, torch.Tensor)
            and o.requires_grad and (o.is_floating_point() or o.is_complex())]


def _backward_name(sig: OpSignature, outs: list[torch.Tensor]) -> str:
    """``AdaptiveAvgPool2DBackward0 (calls _adaptive_avg_pool2d_backward)`` for messages."""
    from conformance.rundb import current

    fns = sorted({o.grad_fn.name() for o in outs if o.grad_fn is not None})
    d = current().derivatives.get(sig.name)
    calls = f" (calls {', '.join(sorted(d.backward_bases))})" if d and d.backward_bases else ""
    return f"the backward of {sig.name}, {'/'.join(fns) or 'no grad_fn'}{calls}"


#: torch's error when autograd has no derivative for an op it reached (a ``not_implemented``
#: formula, or the fallback of an op with a kernel but no formula), naming the op
_NO_DERIVATIVE = re.compile(r"derivative for (?:aten::)?([\w.]+) is not implemented")
#: autograd's refusal of an input that requires grad where the formula has no derivative for it
_NOT_DIFFERENTIABLE = re.compile(r"is not differentiable with respect to argument '(\w+)'")


def _no_cpu_derivative(sig: OpSignature, exc: BaseException) -> None:
    """End the search as ``skip``/``cpu_unsupported`` when CPU's autograd says it implements no
    derivative for this very overload (``derivative for aten::silu_backward is not
    implemented``): the oracle cannot differentiate it on any input. An op it calls lacking
    one is just this example's rejection."""
    from conformance.verdicts import Abort, error_line

    m = _NO_DERIVATIVE.search(str(exc))
    if m and m.group(1).split(".")[0] in (sig.base, sig.name):
        raise Abort("skip", "cpu_unsupported", f"CPU (the oracle) implements no derivative "
                                               f"for it: {error_line(exc)}") from None


def _autograd_applies(sig: OpSignature) -> str | None:
    from conformance.rundb import current

    db = current()
    if sig.name not in db:
        return "not in the op database: its derivatives are unknown"
    how = db.autograd(sig.name)
    if how not in ("formula", "decomposition"):
        return f"not differentiable (autograd: {how})"
    if not grad_args(sig):
        return "no tensor argument has a derivative formula"
    return None


def verify_autograd(ctx: Context, call: Call) -> None:
    """Gradients of every differentiable output, for the same drawn upstream gradient, agree
    with CPU's for every differentiated input; the backward's own failures are named as such."""
    __tracebackhide__ = True
    from conformance.verdicts import Abort, CpuRejected, error_line, missing_op_from
    from opdb.outcomes import (
        BACKWARD_RAISES,
        ERROR_RAISES,
        FORWARD_DIFFERS,
        GRAD_META,
        GRAD_PRESENCE,
        GRAD_VALUE,
    )

    call = written(call)  # an overload returning nothing: what it wrote is its result
    where = call.describe()
    picked = grad_leaves(call)
    if not picked:
        exc = ValueError("no floating or complex tensor input to differentiate")
        ctx.cpu_errors[error_line(exc)] += 1
        raise CpuRejected(exc)
    # CPU: the forward through ctx (counted, marked), then the backward. An argument the
    # derivatives do not cover (nll_loss's weight, through nll_loss_forward) is refused as a
    # leaf by name: it is passed again as a plain input
    while True:
        labels = [label for _, label, _ in picked]
        cpu_leaves = {label: t.detach().clone().requires_grad_() for _, label, t in picked}
        out, refusal = ctx.run_cpu_or_error(_with_leaves(call, cpu_leaves, lambda t: t))
        if refusal is None:
            expected = out
            break
        _no_cpu_derivative(call.sig, refusal)
        m = _NOT_DIFFERENTIABLE.search(str(refusal))
        rest = [p for p in picked if m is None or p[0] != m.group(1)]
        if not rest or len(rest) == len(picked):
            raise CpuRejected(refusal)
        line = error_line(refusal)  # not this example's refusal: it is retried
        ctx.cpu_errors[line] -= 1
        if ctx.cpu_errors[line] <= 0:
            del ctx.cpu_errors[line]
        picked = rest
    idx = _grad_outputs(expected)
    if not idx:
        exc = ValueError("no output of this example requires grad")
        ctx.cpu_errors[error_line(exc)] += 1
        raise CpuRejected(exc)
    exp_outs = [_leaves(expected)[i] for i in idx]
    ups = upstream_grads(exp_outs)
    try:
        exp_grads = torch.autograd.grad(exp_outs, list(cpu_leaves.values()), ups,
                                        allow_unused=True)
    except Exception as exc:  # noqa: BLE001 - CPU's errors are data here
        if missing_op_from(exc) is not None:
            raise Abort("skip", "cpu_unsupported", f"CPU (the oracle) has no backward kernel: "
                                                   f"{error_line(exc)}") from None
        _no_cpu_derivative(call.sig, exc)
        ctx.cpu_errors[error_line(exc)] += 1
        raise CpuRejected(exc) from None
    seeded = "nondeterministic_seeded" in call.sig.tags
    # seeded-random (dropout, rrelu, normal_): the backend draws other random values, so its
    # forward values are not CPU's; a gradient's values are compared only where CPU's own
    # gradient repeats on a second draw (zeros_like(grad) of the samplers, dropout with p=0 or
    # train=False, rrelu outside training); elsewhere its presence, dtype and shape are
    vary = _random_grads(ctx, call, picked, idx, ups, exp_grads) if seeded else set()
    # the backend: leaves on the device; the op sees clones (so in-place overloads work)
    device = ctx.backend.device
    ctx.inflight.call(call, ctx.repro_fn, side=device)
    try:
        dev_leaves = {k: t.detach().to(device).requires_grad_() for k, t in cpu_leaves.items()}
    except Exception as exc:  # noqa: BLE001
        ctx._unsupported(exc, call)
        raise CheckFailure(ERROR_RAISES, f"copying an input to {device} raised "
                                         f"{error_line(exc)} [{where}]") from None
    actual = ctx.run_backend(_with_leaves(call, dev_leaves, torch.Tensor.clone), marker=call)
    try:
        compare_outputs(ctx, call, expected, actual, values=not seeded)
    except CheckFailure as exc:
        raise CheckFailure(FORWARD_DIFFERS, f"forward already differs from CPU, gradients not "
                                            f"compared: {exc.message}") from None
    act_all = _leaves(actual)
    missing = [i for i in idx if not getattr(act_all[i], "requires_grad", False)]
    if missing:
        raise CheckFailure(GRAD_PRESENCE, f"{_label(missing[0], len(act_all))} does not require "
                                          f"grad, but CPU's does [{where}]")
    act_outs = [act_all[i] for i in idx]
    ctx.inflight.call(call, ctx.repro_fn, side=device)
    try:
        # each upstream gradient where its output lives (an op returning CPU tensors by design,
        # _to_cpu, takes a CPU gradient on every device)
        act_grads = torch.autograd.grad(act_outs, list(dev_leaves.values()),
                                        [u.to(o.device) for u, o in zip(ups, act_outs, strict=True)],
                                        allow_unused=True)
    except Exception as exc:  # noqa: BLE001
        ctx._unsupported(exc, call)  # a missing backward kernel: unsupported, naming it
        raise CheckFailure(BACKWARD_RAISES, f"{_backward_name(call.sig, act_outs)} raised "
                                            f"{error_line(exc)}, but CPU's returned gradients "
                                            f"[{where}]") from None
    precise: dict[str, Any] = {}  # CPU's gradients in float64, computed on first need
    for label, e, a in zip(labels, exp_grads, act_grads, strict=True):
        if (e is None) != (a is None):
            has, lacks = ("CPU", device) if a is None else (device, "CPU")
            raise CheckFailure(GRAD_PRESENCE, f"grad of {label} is None on {lacks}, but a "
                                              f"tensor on {has} [{where}]")
        if e is None:
            continue
        try:
            # structure, device, dtype and shape as compare_outputs has them; values by the same
            # tolerances (not through its CPU rerun, which re-runs the forward, not the backward).
            # Not by the overload's exactness class: that is a contract on its forward values;
            # a gradient sums contributions (reflection_pad3d's backward adds the gradients of
            # every padded copy of an element, in an order CPU's kernel does not promise).
            # Nor by the forward's view contract: whether a gradient comes back as a lazy
            # conj() view (mH's backward is grad.mH()) is the formula's bookkeeping, not an
            # answer; its values are compared resolved (readback.plain)
            compare_outputs(ctx, call, e, a, values=False, view_bits=False)
            if ctx.hints.values and label not in vary and ctx.values_comparable():
                host = ctx.to_host(a)
                try:
                    _assert_values(ctx, call, "out", where, host, e, exactness=False)
                except CheckFailure:
                    if seeded:
                        # a random gradient can repeat once by chance: it is the backend's
                        # mismatch only if CPU repeats it every time
                        if not _random_grads(ctx, call, picked, idx, ups, exp_grads,
                                             reruns=RANDOM_GRAD_RERUNS, only={label}):
                            raise
                    elif not _within_cpu_error(ctx, call, picked, idx, ups, precise, label,
                                               host, e):
                        raise
        except CheckFailure as exc:
            category = GRAD_VALUE if exc.category == "value" else GRAD_META
            raise CheckFailure(category, f"grad of {label}{exc.message.removeprefix('out')}") \
                from None


_PRECISE = {torch.float16: torch.float64, torch.bfloat16: torch.float64,
            torch.float32: torch.float64, torch.complex64: torch.complex128}


def _precise_grads(ctx: Context, call: Call, picked: list[tuple[str, str, torch.Tensor]],
                   idx: list[int], ups: list[torch.Tensor]) -> dict[str, Any]:
    """CPU's gradients of ``call`` with every floating/complex tensor argument and upstream
    gradient upcast to float64/complex128 (by label; empty where CPU refuses that call)."""
    def upcast(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype in _PRECISE:
            return t.detach().to(_PRECISE[t.dtype])
        return t

    labels = {label for _, label, _ in picked}
    values = []
    for name, value in call.values:
        if isinstance(value, list):
            value = [v if f"{name}[{i}]" in labels else upcast(v) for i, v in enumerate(value)]
        elif name not in labels:
            value = upcast(value)
        values.append((name, value))
    leaves = {label: upcast(t).requires_grad_() for _, label, t in picked}
    wide = replace(call, values=tuple(values))
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        outs = _leaves(_with_leaves(wide, leaves, lambda t: t).run("cpu"))
        grads = torch.autograd.grad([outs[i] for i in idx], list(leaves.values()),
                                    [upcast(u) for u in ups], allow_unused=True)
    except Exception:  # noqa: BLE001 - CPU refuses the wider call: no reference
        return {}
    return dict(zip(leaves, grads, strict=True))


def _within_cpu_error(ctx: Context, call: Call, picked: list[tuple[str, str, torch.Tensor]],
                      idx: list[int], ups: list[torch.Tensor], precise: dict[str, Any],
                      label: str, actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """The backend's gradient ``actual`` of ``label`` is, element by element, within rtol/atol
    plus the tolerance data's ``grad_error_factor`` times CPU's own largest distance from the
    same gradient computed in float64 (``precise``: filled on first need): a gradient sums
    many terms, whose rounding in another order exceeds the forward's rtol/atol where the sum
    cancels. Non-finite elements must match CPU's."""
    factor = ctx.grad_error_factor(call.sig.name, expected.dtype)
    if not factor or expected.dtype not in _PRECISE or actual.shape != expected.shape:
        return False
    if not precise:
        precise.update(_precise_grads(ctx, call, picked, idx, ups) or {"": None})
    p = precise.get(label)
    if not isinstance(p, torch.Tensor) or p.dtype != _PRECISE[expected.dtype] \
            or p.shape != expected.shape:
        return False
    a, e = readback.plain(_dense(actual)), readback.plain(_dense(expected))
    a, e = a.to(p.dtype), e.to(p.dtype)

    def finite(t: torch.Tensor) -> torch.Tensor:
        return torch.view_as_real(t).isfinite().all(-1) if t.is_complex() else t.isfinite()

    ok = finite(e) & finite(p)
    if not bool(((a == e) | (a.isnan() & e.isnan()) | ok).all()):
        return False  # a non-finite element that is not CPU's
    if not bool(ok.any()):
        return True
    rtol, atol = ctx.tolerance(call.sig.name, expected.dtype)
    if rtol is None:
        rtol, atol = default_tolerance(expected.dtype)
    cpu_error = float((e - p).abs()[ok].max())
    allowed = rtol * p.abs() + (atol or 0.0) + factor * cpu_error
    return bool(((a - p).abs() <= allowed)[ok].all())


def _cpu_grads_again(ctx: Context, call: Call, picked: list[tuple[str, str, torch.Tensor]],
                     idx: list[int], ups: list[torch.Tensor]) -> dict[str, Any]:
    """CPU's forward and backward of ``call`` once more (a seeded-random overload: the
    generator has moved on, so other random values): each input's gradient by label (``None``
    where CPU raised or gave none)."""
    leaves = {label: t.detach().clone().requires_grad_() for _, label, t in picked}
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    again: tuple[torch.Tensor | None, ...]
    try:
        outs = _leaves(_with_leaves(call, leaves, lambda t: t).run("cpu"))
        again = torch.autograd.grad([outs[i] for i in idx], list(leaves.values()), ups,
                                    allow_unused=True)
    except Exception:  # noqa: BLE001 - CPU raising now where it answered before
        again = (None,) * len(leaves)
    return dict(zip(leaves, again, strict=True))


#: CPU reruns that must all repeat a seeded-random overload's gradient before a value
#: mismatch is the backend's (a small dropout mask repeats by chance: 1/2 per element at p=0.5)
RANDOM_GRAD_RERUNS = 12


def _random_grads(ctx: Context, call: Call, picked: list[tuple[str, str, torch.Tensor]],
                  idx: list[int], ups: list[torch.Tensor], grads: tuple[Any, ...], *,
                  reruns: int = 1, only: set[str] | None = None) -> set[str]:
    """Labels of the inputs whose CPU gradient depends on the random draw of a seeded-random
    overload: CPU's forward and backward run again ``reruns`` times and each gradient is
    compared bit for bit with the first (``only``: these labels). Those that vary are noted as
    CPU disagreeing with itself (``cpu_unstable``: their values are not compared)."""
    from conformance.engine import _bits

    first = {label: g for (_, label, _), g in zip(picked, grads, strict=True)
             if g is not None and (only is None or label in only)}
    vary: set[str] = set()
    for _ in range(reruns):
        again = _cpu_grads_again(ctx, call, picked, idx, ups)
        vary |= {label for label, g in first.items()
                 if again[label] is None or _bits(g) != _bits(again[label])}
        if vary == set(first):
            break
    if vary:
        ctx.cpu_unstable_calls[f"gradient of {', '.join(sorted(vary))} depends on the random "
                               f"draw [{call.describe()}]"] += 1
    return vary


def _dtypes_applies(sig: OpSignature) -> str | None:
    from conformance.dtype_support import dtypes_applies

    return dtypes_applies(sig)


def verify_dtypes(ctx: Context, call: Call) -> None:
    """Each of the twelve dtypes tried (conformance.dtype_support)."""
    __tracebackhide__ = True
    from conformance.dtype_support import verify_dtypes as verify

    verify(ctx, call)  # type: ignore[arg-type]  # the dtypes mode draws a DtypeSweep


#: The inplace check draws this share of ``--max-examples`` forward calls (6 of 10) and judges
#: each in every variant (plain, each view kind, another self dtype, a self that would
#: broadcast: 4-6 runs a call), where it drew 20 calls with one variant each.
INPLACE_FACTOR = 0.6


def _noncontiguous_applies(sig: OpSignature) -> str | None:
    from conformance.layouts import applies

    return applies(sig)


def _noncontiguous_hints(hints: OpHints) -> str | None:
    if hints.cpu_ignores_strides:
        return ("CPU (the oracle) ignores its inputs' strides here (hints: "
                "cpu_ignores_strides): its answer for views is no contract")
    return None


#: The noncontiguous check draws this share of ``--max-examples`` forward calls (4 of 10) and
#: checks each in every layout that fits it (about five runs a call: the draws, most of them
#: refused by CPU at ~2 refusals a valid call, cost more than the runs), where it drew 10 calls
#: with one layout each.
NONCONTIGUOUS_FACTOR = 0.4


def verify_noncontiguous(ctx: Context, call: Call) -> None:
    """The forward inputs as non-contiguous views (conformance/layouts.py): each drawn call in
    every layout that fits it."""
    __tracebackhide__ = True
    from conformance.layouts import verify as verify_layouts

    verify_layouts(ctx, call)


def _out_check() -> Check:
    """The ``out`` check (conformance/variants_out.py)."""
    from conformance.variants_out import out_applies, verify_out

    return Check("out", "out", "out= tensors written, returned, resized, cast, refused as CPU",
                 out_applies, verify_out, examples_factor=OUT_FACTOR)


#: The out check draws this share of ``--max-examples`` calls (4 of 10) and judges each in
#: four out forms (variants_out.forms_for: one CPU probe, then CPU and the backend per form),
#: where it drew 10 calls with one form each: most draws are refused by CPU, and the reject
#: budget follows the examples asked for.
OUT_FACTOR = 0.4


CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check("forward", "forward", "values, dtype and shape as CPU", _forward_applies,
              verify_forward, refills=True, prepare=_forward_refill),
        Check("promotion", "promotion", "result dtype as CPU across dtype pairs and operand forms",
              _promotion_applies, verify_promotion, examples_factor=3,
              identity=promotion_identity),
        Check("broadcast", "broadcast", "shapes and values under broadcasting as CPU",
              _broadcast_applies, verify_broadcast),
        Check("autograd", "autograd", "gradients of differentiable outputs as CPU's",
              _autograd_applies, verify_autograd, forks=False),
        Check("dtypes", "dtypes", "each of the twelve dtypes: CPU supports it, the backend "
              "supports it, values agree", _dtypes_applies, verify_dtypes, examples_factor=0.3,
              shrink=False, calls_per_draw=len(DTYPE_NAMES)),
        Check("inplace", "inplace", "in-place overloads: self returned and written, inputs and "
              "view bases as CPU's, refusals, version counters", inplace_applies, verify_inplace,
              examples_factor=INPLACE_FACTOR),
        Check("noncontiguous", "forward", "forward inputs as transposed, strided, "
              "expanded, offset and channels_last views: values as CPU, strides where a "
              "contract", _noncontiguous_applies, verify_noncontiguous,
              examples_factor=NONCONTIGUOUS_FACTOR, applies_hints=_noncontiguous_hints),
        _out_check(),
    )
}

DEFAULT_CHECKS = ("forward", "promotion", "broadcast", "dtypes")
