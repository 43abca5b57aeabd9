"""A backend whose oracle dies in the autograd check only: CPU's ``neg`` kills the process when
its input requires grad (a CPU kernel that crashes on what the autograd check passes it); the
backend's ``neg`` is the reference one."""

from __future__ import annotations

import os
import signal

import torch

import kernels

FORK_SAFE = True  # the reference backend's host memory: items may run in forked children

_CPU_NEG = torch.library.get_kernel("aten::neg", "CPU")


def neg_cpu(self):
    if self.requires_grad:
        os.kill(os.getpid(), signal.SIGSEGV)
    return _CPU_NEG.call_boxed(torch._C.DispatchKeySet("CPU"), self)


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("neg", neg_cpu, "CPU")
kernels.install()
