"""A vendor-like backend with a sticky device error, as CUDA's device-side assert is: index_select
with the last valid index faults (an off-by-one bounds check on the device), and from then on
every add and mul in the process raises too (the device is unusable until the process ends)."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_index_select, _add, _mul = kernel("index_select"), kernel("add.Tensor"), kernel("mul.Tensor")
_LOST: list[str] = []


def _alive() -> None:
    if _LOST:
        raise RuntimeError("device error: device-side assert triggered (sticky)")


def index_select(self, dim, index):
    _alive()
    size = self.shape[dim] if self.dim() else 1
    if index.numel() and int(index.max()) == size - 1:
        _LOST.append("index at the bound")
        raise RuntimeError("device error: device-side assert triggered")
    return _index_select(self, dim, index)


def add_tensor(self, other, *, alpha=1):
    _alive()
    return _add(self, other, alpha=alpha)


def mul_tensor(self, other):
    _alive()
    return _mul(self, other)


OVERRIDES = {"index_select": index_select, "add.Tensor": add_tensor, "mul.Tensor": mul_tensor}
kernels.install(overrides=OVERRIDES)
