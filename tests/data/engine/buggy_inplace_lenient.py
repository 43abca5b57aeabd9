"""A vendor-like backend: sub_.Tensor casts any result into ``self`` (int64 -= float32 is
truncated instead of refused as CPU refuses it) and uses ``other`` as scratch space (negates
it in place); relu_ bumps the version counter twice."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_sub = kernel("sub.Tensor")
_add_ = kernel("add_.Tensor")
_relu_ = kernel("relu_")


def sub_inplace(self, other, *, alpha=1):
    result = _sub(self, other, alpha=alpha)
    if result.dtype != self.dtype and result.shape == self.shape:
        return self.copy_(result)  # no cast check: the result is truncated into self
    other.neg_()  # scratch: other now holds -other
    return _add_(self, other, alpha=alpha)


def relu_inplace(self):
    torch.autograd.graph.increment_version(self)  # one bump too many
    return _relu_(self)


OVERRIDES = {"sub_.Tensor": sub_inplace, "relu_": relu_inplace}
kernels.install(overrides=OVERRIDES)
