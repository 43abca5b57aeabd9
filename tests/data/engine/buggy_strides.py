"""A vendor-like backend with right values in layouts CPU does not give: neg returns a
contiguous result for a transposed input (CPU's elementwise result follows the input's dense
layout: a contract), and mm returns a column-major result (CPU promises no strides there)."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_neg = kernel("neg")
_mm = kernel("mm")


def neg(self):
    return _neg(self).contiguous()


def mm(self, mat2):
    out = _mm(self, mat2)
    return out.t().contiguous().t() if out.dim() == 2 else out


OVERRIDES = {"neg": neg, "mm": mm}
kernels.install(overrides=OVERRIDES)
