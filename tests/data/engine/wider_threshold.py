"""A vendor-like backend that supports more than CPU: threshold on bool tensors, which CPU
refuses only for lack of a kernel (``"threshold_cpu" not implemented for 'Bool'``)."""

from __future__ import annotations

import torch

import kernels
from kernels.registry import kernel

_threshold = kernel("threshold")


def threshold(self, threshold, value):
    if self.dtype == torch.bool:
        host = self.cpu()
        out = torch.where(host > threshold, host, torch.tensor(bool(value)))
        return out.to(self.device)
    return _threshold(self, threshold, value)


OVERRIDES = {"threshold": threshold}
kernels.install(overrides=OVERRIDES)
