"""Shape-only backends (``Backend.host_values`` false: ``meta``, fake tensors).

Their tensors carry sizes, strides, dtypes and devices but no values, so the engine judges every
check on what those determine — structure, device, dtype, shape, aliasing, errors — and never
reads values back (:func:`conformance.compare.outputs.compare_outputs` is told so through the context).

One thing needs care: an error. A shape-only kernel can raise only what metadata determines.
When CPU refuses a call and the backend returns a result, the refusal is held against the
backend only if CPU also refuses the same call with its tensors' values replaced
(:func:`error_depends_on_values`): an out-of-range index, a zero integer divisor or a singular
matrix is a property of values, which such a backend cannot see; a shape or dtype mismatch is not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from conformance.core.call import Call

#: Value fillings tried in turn, by name: a refusal CPU keeps for every one of them does not
#: depend on values. Zeros (a valid index everywhere), ones (a non-zero divisor), an identity in
#: the last two dimensions (an invertible, positive definite matrix).
FILLINGS: tuple[str, ...] = ("zeros", "ones", "eye")


def _refill(t: torch.Tensor, how: str) -> torch.Tensor:
    """``t`` with its values replaced, same dtype, shape, strides and storage offset (a layout
    error stays a layout error); ``eye`` is laid out contiguously where ``t`` overlaps itself."""
    if how == "eye":
        if t.dim() < 2:
            return _refill(t, "ones")
        eye = torch.eye(t.shape[-2], t.shape[-1], dtype=t.dtype).expand(t.shape)
        return torch.empty_like(t).copy_(eye)
    size = t.untyped_storage().nbytes() // max(t.element_size(), 1)
    value = 0 if how == "zeros" else 1
    flat = torch.full((max(size, 1),), value, dtype=t.dtype)
    return flat.as_strided(t.shape, t.stride(), t.storage_offset())


def refilled(call: Call, how: str) -> Call:
    """``call`` with every tensor argument's values replaced by filling ``how``; Python scalars,
    which a shape-only kernel does see, are kept."""

    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.layout == torch.strided:
            return _refill(v.detach(), how)
        if isinstance(v, list | tuple) and any(isinstance(x, torch.Tensor) for x in v):
            return type(v)(one(x) for x in v)
        return v

    return replace(call, values=tuple((name, one(v)) for name, v in call.values))


def error_depends_on_values(call: Call, run_cpu: Callable[[Call], Any]) -> bool:
    """Whether CPU accepts ``call`` (which it refused) once its tensors hold other values:
    then its refusal is about values, which a shape-only backend cannot judge."""
    for how in FILLINGS:
        try:
            run_cpu(refilled(call, how))
        except Exception:  # noqa: BLE001 - still refused: try the next filling
            continue
        return True
    return False
