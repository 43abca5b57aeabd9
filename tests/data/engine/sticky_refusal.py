"""A vendor-like backend whose device is left unusable by a call it refuses as CPU does: sub of
two bool tensors raises CPU's own error (an agreement), but the refusal trips a device-side
assert, and from then on every add and sub in the process raises (the device probe's add too)."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_sub, _add = kernel("sub.Tensor"), kernel("add.Tensor")
LOST: list[str] = []


def _alive() -> None:
    if LOST:
        raise RuntimeError("device error: device-side assert triggered (sticky)")


def sub_tensor(self, other, *, alpha=1):
    _alive()
    if isinstance(other, torch.Tensor) and self.dtype == other.dtype == torch.bool:
        LOST.append("bool subtraction")
    return _sub(self, other, alpha=alpha)  # raises CPU's refusal for two bools


def add_tensor(self, other, *, alpha=1):
    _alive()
    return _add(self, other, alpha=alpha)


OVERRIDES = {"sub.Tensor": sub_tensor, "add.Tensor": add_tensor}
kernels.install(overrides=OVERRIDES)
