"""The ``broadcast`` check: mutually broadcastable shapes give CPU's shape and values, for
every rotation of the drawn shapes among the operands; a conflicting set raises on both.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from conformance.checks.check import Check
from conformance.compare.outputs import compare_outputs
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from conformance.inputs.strategies import broadcast_calls

if TYPE_CHECKING:
    from conformance.compare.context import Context


def broadcast_applies(sig: OpSignature) -> str | None:
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


CHECK = Check("broadcast", broadcast_calls, "shapes and values under broadcasting as CPU",
              broadcast_applies, verify_broadcast)
