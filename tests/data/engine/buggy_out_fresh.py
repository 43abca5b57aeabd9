"""A vendor-like backend: add.out that returns a new tensor and never writes ``out``."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_add = kernel("add.Tensor")


def add_out(self, other, *, alpha=1, out):
    return _add(self, other, alpha=alpha)  # a new tensor; out is left as it was given


OVERRIDES = {"add.out": add_out}
kernels.install(overrides=OVERRIDES)
