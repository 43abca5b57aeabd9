"""A vendor-like backend whose abs kernel kills the process (as a segfault in native code would)."""

from __future__ import annotations

import os
import signal

import kernels

FORK_SAFE = True  # the reference backend's host memory: items may run in forked children


def abs_kernel(self):
    os.kill(os.getpid(), signal.SIGSEGV)


OVERRIDES = {"abs": abs_kernel}
kernels.install(overrides=OVERRIDES)
