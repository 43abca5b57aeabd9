"""A vendor-like backend: mul_.Tensor right only for contiguous ``self``; a non-contiguous view
is copied to a contiguous buffer, the buffer updated, and the copy never written back, so the
view's base keeps its old values."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_mul_ = kernel("mul_.Tensor")


def mul_inplace(self, other):
    if self.is_contiguous():
        return _mul_(self, other)
    buffer = self.contiguous()  # a copy: the base is not updated
    return _mul_(buffer, other)


OVERRIDES = {"mul_.Tensor": mul_inplace}
kernels.install(overrides=OVERRIDES)
