"""The checks: what "agrees with CPU" means for one example.

A check is a small record (:class:`Check`) naming the strategy mode it draws with, when it applies,
and a ``verify(ctx, call)`` function. ``verify`` runs the call on CPU and on the backend through
``ctx`` (which counts, tallies dtypes and writes the about-to-run marker) and raises
:class:`~conformance.verdicts.CheckFailure` for a disagreement. Adding a check (out=, in-place,
autograd, non-contiguous, per-dtype) is one more entry in :data:`CHECKS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._pytree import tree_flatten

from conformance.strategies import Call, OpSignature
from conformance.verdicts import CheckFailure
from opdb.dtypes import default_tolerance

if TYPE_CHECKING:
    from conformance.engine import Context

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


def compare_outputs(ctx: Context, call: Call, expected: Any, actual: Any, *,
                    values: bool, samples: list[Any] | None = None) -> None:
    """Structure, device, dtype, shape and (optionally) values of ``actual`` against CPU's."""
    __tracebackhide__ = True
    where = call.describe()
    if not ctx.hints.values:  # hints: this op's result values are unspecified (empty_like)
        values, samples = False, None
    exp, act = _leaves(expected), _leaves(actual)
    extra = [_leaves(s) for s in samples or ()]
    value_range = samples is not None
    if len(exp) != len(act):
        raise CheckFailure("structure", f"returned {len(act)} values, but should return "
                                        f"{len(exp)} [{where}]")
    n = len(exp)
    for i, (e, a) in enumerate(zip(exp, act, strict=True)):
        label = _label(i, n)
        if isinstance(e, torch.Tensor) != isinstance(a, torch.Tensor):
            raise CheckFailure("structure", f"{label} is {type(a).__name__}, but should be "
                                            f"{type(e).__name__} [{where}]")
        if not isinstance(e, torch.Tensor):
            if values and not _same_scalar(e, a):
                raise CheckFailure("value", f"{label}={a!r}, but should be {e!r} [{where}]")
            continue
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
        if values or value_range:
            host = ctx.to_host(a)
            if value_range:
                spread = [e] + [x[i] for x in extra if i < len(x) and isinstance(x[i], torch.Tensor)]
                _assert_in_range(label, where, host, spread)
            else:
                _assert_values(ctx, call, label, where, host, e)


def _same_scalar(e: Any, a: Any) -> bool:
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    return bool(e == a) and type(e) is type(a)


def _dense(t: torch.Tensor) -> torch.Tensor:
    return t.to_dense() if t.layout != torch.strided else t


def _assert_values(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
                   expected: torch.Tensor) -> None:
    __tracebackhide__ = True
    rtol, atol = ctx.tolerance(call.sig.name, expected.dtype)
    if rtol is None:  # no per-op override: as precise as the least precise floating input
        rtol, atol = _loosest(call.tensor_dtypes, expected.dtype) or (None, None)
    try:
        torch.testing.assert_close(_dense(actual), _dense(expected), rtol=rtol, atol=atol,
                                   equal_nan=True, check_device=False, check_dtype=False,
                                   check_layout=False, check_stride=False)
    except AssertionError as exc:
        detail = " ".join(str(exc).split("\n")[1:4]).strip()
        raise CheckFailure("value", f"{label} values differ from CPU: {detail} [{where}]") \
            from None


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
    examples_factor: int = 1


def _forward_applies(sig: OpSignature) -> str | None:
    return None


def verify_forward(ctx: Context, call: Call) -> None:
    """Values (dtype-aware tolerances), dtype and shape agree with CPU."""
    __tracebackhide__ = True
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
    actual = ctx.run_backend(call)
    compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)


def _promotion_applies(sig: OpSignature) -> str | None:
    if not sig.operands:
        return "no Tensor or Scalar operand whose dtype could promote"
    if not sig.tensor_args:
        return "no tensor argument"
    return None


def verify_promotion(ctx: Context, call: Call) -> None:
    """Result dtype (and shape) as CPU; where CPU raises, the backend raises the same type."""
    __tracebackhide__ = True
    expected, cpu_exc = ctx.run_cpu_or_error(call)
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


def verify_broadcast(ctx: Context, call: Call) -> None:
    """Mutually broadcastable shapes give CPU's shape and values; a conflicting set raises on both."""
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


CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check("forward", "forward", "values, dtype and shape as CPU", _forward_applies,
              verify_forward),
        Check("promotion", "promotion", "result dtype as CPU across dtype pairs and operand forms",
              _promotion_applies, verify_promotion, examples_factor=3),
        Check("broadcast", "broadcast", "shapes and values under broadcasting as CPU",
              _broadcast_applies, verify_broadcast),
    )
}

DEFAULT_CHECKS = ("forward", "promotion", "broadcast")
