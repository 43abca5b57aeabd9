"""A vendor-like backend: mul.Tensor whose broadcasting only works for equal shapes.

When the operands' shapes differ, the kernel hands back a result shaped like ``self`` (it walks
``self``'s elements only, squaring them), so any broadcast that grows ``self`` comes back the
wrong shape.
"""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_mul = kernel("mul.Tensor")


def mul_tensor(self, other):
    out = _mul(self, other)
    if isinstance(other, torch.Tensor) and tuple(self.shape) != tuple(other.shape) \
            and tuple(out.shape) != tuple(self.shape):
        return _mul(self, self)
    return out


OVERRIDES = {"mul.Tensor": mul_tensor}
kernels.install(overrides=OVERRIDES)
