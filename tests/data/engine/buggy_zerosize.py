"""A vendor-like backend: neg that flattens size-0 inputs (returns shape (0,) for e.g. (2, 0))."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_neg = kernel("neg")


def neg(self):
    out = _neg(self)
    if self.numel() == 0:
        return out.reshape(-1)
    return out


OVERRIDES = {"neg": neg}
kernels.install(overrides=OVERRIDES)
