"""A vendor-like backend with two kernels that never return.

``neg`` sleeps in a loop (the GIL is released: a watchdog thread can still run); ``abs`` spins
in C holding the GIL (catastrophic regex backtracking), as a native kernel stuck in a loop would.
"""

from __future__ import annotations

import re
import time

import kernels

FORK_SAFE = True  # the reference backend's host memory: items may run in forked children


def neg_kernel(self):
    while True:
        time.sleep(0.05)


def abs_kernel(self):
    re.match(r"(a+)+$", "a" * 64 + "b")  # exponential backtracking, GIL held throughout
    raise AssertionError("unreachable in practice")


OVERRIDES = {"neg": neg_kernel, "abs": abs_kernel}
kernels.install(overrides=OVERRIDES)
