"""A vendor-like backend: add.Tensor that ignores ``alpha`` (computes self + other)."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_add = kernel("add.Tensor")


def add_tensor(self, other, *, alpha=1):
    return _add(self, other)


OVERRIDES = {"add.Tensor": add_tensor}
kernels.install(overrides=OVERRIDES)
