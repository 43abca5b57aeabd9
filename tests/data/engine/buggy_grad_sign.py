"""A vendor-like backend: tanh_backward with a sign error (tanh's gradient comes out negated)."""

from __future__ import annotations

import kernels
from kernels.registry import kernel

_tanh_backward = kernel("tanh_backward")


def tanh_backward(grad_output, output):
    return -_tanh_backward(grad_output, output)


OVERRIDES = {"tanh_backward": tanh_backward}
kernels.install(overrides=OVERRIDES)
