"""A vendor-like backend that compiles a graph per input shape (``COMPILES_PER_SHAPE = True``, as
torch_xla does): the reference kernels otherwise."""

from __future__ import annotations

import kernels

COMPILES_PER_SHAPE = True


def install() -> None:
    kernels.install(without=())
