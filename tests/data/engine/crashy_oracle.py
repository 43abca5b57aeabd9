"""A vendor-like backend whose process dies in the backend's ``neg`` although CPU is to blame.

It stands for an oracle call that corrupts memory (out-of-range indices, say) and lets the
process die later: CPU's ``neg`` kernel is overridden to leave the process "corrupted" (a flag,
and an abort when the interpreter exits, as a corrupted heap aborts at ``free``); the backend's
``neg`` aborts when it finds the process corrupted. Run alone, the backend's call is fine; CPU's
call kills its process.
"""

from __future__ import annotations

import atexit
import os

import torch

import kernels
from kernels.registry import kernel

_neg = kernel("neg")
CORRUPTED = False


def _abort() -> None:
    os.abort()


def neg_cpu(self):
    global CORRUPTED
    CORRUPTED = True
    atexit.register(_abort)
    return torch.zeros_like(self).sub_(self) if self.dtype != torch.bool else self.clone()


def neg_kernel(self):
    if CORRUPTED:
        os.abort()
    return _neg(self)


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("neg", neg_cpu, "CPU")
kernels.install(overrides={"neg": neg_kernel})
