"""A vendor-like backend: the reference backend with add.Tensor promoting int+float wrongly.

int64 + float32 should give float32 (the float operand's dtype); this kernel returns float64
whenever one operand is integral and the other floating — a classic hand-written-table bug.
"""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_add = kernel("add.Tensor")


def add_tensor(self, other, *, alpha=1):
    out = _add(self, other, alpha=alpha)
    dtypes = [t.dtype for t in (self, other) if isinstance(t, torch.Tensor)]
    if any(not d.is_floating_point and d != torch.bool and not d.is_complex for d in dtypes) \
            and any(d.is_floating_point for d in dtypes) and out.dtype != torch.float64:
        return out.to(torch.float64)
    return out


OVERRIDES = {"add.Tensor": add_tensor}
kernels.install(overrides=OVERRIDES)
