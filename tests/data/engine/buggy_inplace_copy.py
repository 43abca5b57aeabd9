"""A vendor-like backend: mul_.Tensor computes the product into a new tensor and leaves
``self`` unchanged ("in-place returns a copy, so the optimizer never updates")."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_mul = kernel("mul.Tensor")


def mul_inplace(self, other):
    return _mul(self, other).to(self.dtype)  # a new tensor; self never written


OVERRIDES = {"mul_.Tensor": mul_inplace}
kernels.install(overrides=OVERRIDES)
