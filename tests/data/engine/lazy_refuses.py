"""A vendor-like lazy backend (``LAZY = True``; ``STRIDES = False``), as torch_xla is: an error of
the computation surfaces only when a result is read back. ``sub.Tensor`` of two bool tensors,
which CPU refuses, returns a result and leaves the refusal pending; the next read-back to CPU
raises it. The harness must read results back inside the call before judging a refusal."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

LAZY = True
STRIDES = False
LAZY_STEP = "lazy_refuses.step"  # a step barrier, as torch_xla.sync is: counted here

_sub = kernel("sub.Tensor")
_to_copy = kernel("_to_copy")

#: refusals the "graph" holds until something is read back
PENDING: list[str] = []

#: how many times the harness closed the "graph"
STEPS: list[int] = []


def step() -> None:
    STEPS.append(len(STEPS))


def sub_tensor(self, other, *, alpha=1):
    if isinstance(other, torch.Tensor) and self.dtype == torch.bool and other.dtype == torch.bool:
        PENDING.append("Subtraction, the `-` operator, with two bool tensors is not supported. "
                       "Use the `^` or `logical_xor()` operator instead.")
        return torch.logical_xor(self, other)
    return _sub(self, other, alpha=alpha)


def to_copy(self, **kwargs):
    device = kwargs.get("device")
    if PENDING and device is not None and torch.device(device).type == "cpu":
        message = PENDING[-1]
        PENDING.clear()
        raise RuntimeError(message)
    return _to_copy(self, **kwargs)


OVERRIDES = {"sub.Tensor": sub_tensor, "_to_copy": to_copy}
kernels.install(overrides=OVERRIDES)
