"""A vendor-like backend: ``neg`` refuses int16 (its kernel is not compiled for Short), although
CPU's supports it; every other dtype is the reference kernel's."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_neg = kernel("neg")


def neg(self):
    if self.dtype == torch.int16:
        raise NotImplementedError("\"neg_mlu\" not implemented for 'Short'")
    return _neg(self)


OVERRIDES = {"neg": neg}
kernels.install(overrides=OVERRIDES)
