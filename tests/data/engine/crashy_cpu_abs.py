"""A backend whose oracle dies: CPU's ``abs`` kills the process (as an out-of-range read in a
native CPU kernel would); the backend's ``abs`` is the reference one."""

from __future__ import annotations

import os
import signal

import torch

import kernels

FORK_SAFE = True  # the reference backend's host memory: items may run in forked children


def abs_cpu(self):
    os.kill(os.getpid(), signal.SIGSEGV)


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("abs", abs_cpu, "CPU")
kernels.install()
