"""A vendor-like backend: sub.Tensor on two bool tensors raises TypeError where CPU raises
RuntimeError: both refuse, with different exception types (cosmetic)."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_sub = kernel("sub.Tensor")


def sub_tensor(self, other, *, alpha=1):
    if isinstance(other, torch.Tensor) and self.dtype == torch.bool and other.dtype == torch.bool:
        raise TypeError("sub: bool tensors are not supported")
    return _sub(self, other, alpha=alpha)


OVERRIDES = {"sub.Tensor": sub_tensor}
kernels.install(overrides=OVERRIDES)
