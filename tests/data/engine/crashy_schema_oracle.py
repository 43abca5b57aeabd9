"""A vendor-like backend (the reference one, unchanged) run against a CPU whose
``smooth_l1_loss_backward`` kills the process on inputs no recorded call has.

It stands for a CPU backward kernel that segfaults on what the schema strategies draw (an empty
tensor, an integer dtype) while the calls recorded from real forwards (the packaged corpus:
float tensors, ``reduction=1``, ``beta=1.0``) are fine: the item must still earn a verdict, on
those recorded calls, and the oracle's death must not be held against the backend.
"""

from __future__ import annotations

import os
import signal

import torch

import kernels

FORK_SAFE = True  # the reference backend's host memory: items may run in forked children


def smooth_l1_loss_backward_cpu(grad_output, self, target, reduction, beta):
    recorded = (reduction == 1 and beta == 1.0 and grad_output.dim() == 0
                and self.dtype in (torch.float32, torch.float64) and self.numel() > 0)
    if not recorded:
        os.kill(os.getpid(), signal.SIGSEGV)
    out = torch.empty_like(self)  # CPU's own out= kernel, registered apart from this one
    return torch.ops.aten.smooth_l1_loss_backward.grad_input(
        grad_output, self, target, reduction, beta, grad_input=out)


OVERRIDES: dict[str, object] = {}
_lib = torch.library.Library("aten", "IMPL")
_lib.impl("smooth_l1_loss_backward", smooth_l1_loss_backward_cpu, "CPU")
kernels.install(overrides=OVERRIDES)
