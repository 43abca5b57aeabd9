"""A vendor-like backend: ``exp`` computes float64 inputs in float32 (a device without float64
arithmetic that silently downcasts), returning a float64 tensor of float32 accuracy."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_exp = kernel("exp")


def exp(self):
    if self.dtype == torch.float64:
        return _exp(self.to(torch.float32)).to(torch.float64)
    return _exp(self)


OVERRIDES = {"exp": exp}
kernels.install(overrides=OVERRIDES)
