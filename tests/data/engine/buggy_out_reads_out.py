"""A vendor-like backend: ``clamp.out`` given an out of the result's shape and dtype clamps the
out's old contents in place (an in-place path taken on ``out`` instead of ``self``)."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_clamp_out = kernel("clamp.out")


def clamp_out(self, min=None, max=None, *, out):
    if tuple(out.shape) == tuple(self.shape) and out.dtype == self.dtype:
        return out.clamp_(min, max)
    return _clamp_out(self, min, max, out=out)


OVERRIDES = {"clamp.out": clamp_out}
kernels.install(overrides=OVERRIDES)
