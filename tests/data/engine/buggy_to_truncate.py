"""A vendor-like backend: ``_to_copy`` converts float64 to float32 by dropping mantissa bits
(rounding toward zero) instead of rounding to nearest even."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_to_copy = kernel("_to_copy")


def to_copy(self, **kw):
    dtype, device = kw.get("dtype"), kw.get("device")
    if self.device.type == "cpu" or dtype != torch.float32 or self.dtype != torch.float64 or (
            device is not None and torch.device(device).type == "cpu"):
        return _to_copy(self, **kw)
    x = _to_copy(self, device=torch.device("cpu"))  # the values, moved with the right kernel
    near = x.to(torch.float32)
    # one float32 step toward zero where rounding to nearest went away from zero
    away = near.double().abs() > x.abs()
    bits = near.view(torch.int32)
    down = torch.where(away & near.isfinite() & (near != 0), bits - 1, bits).view(torch.float32)
    return _to_copy(down, **kw)


OVERRIDES = {"_to_copy": to_copy}
kernels.install(overrides=OVERRIDES)
