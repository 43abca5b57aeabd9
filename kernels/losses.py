"""Loss overloads of ``mlu``: negative log-likelihood, the half of cross-entropy after log-softmax.

``F.cross_entropy`` is composite: ``_log_softmax`` (see :mod:`kernels.nn_ops`) followed by
``nll_loss_forward`` for ``(N, C)``/``(C,)`` scores or ``nll_loss2d_forward`` for ``(N, C, H, W)``.
The maths is :func:`kernels.nn.nll_loss_forward` / :func:`kernels.nn.nll_loss_backward`.
"""

from __future__ import annotations

import numpy as np
import torch

from kernels import nn
from kernels._tensor import to_numpy
from kernels.nn_ops import define

__all__: list[str] = []


def _check(self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
           spatial: bool) -> None:
    if spatial:
        if self.dim() != 4:
            raise ValueError(f"Expected 4 dimensions (got {self.dim()})")
        if target.dim() != 3 or target.shape[0] != self.shape[0] or target.shape[1:] != self.shape[2:]:
            raise RuntimeError(
                f"only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {target.dim()}"
            )
    else:
        if self.dim() < 1 or self.dim() > 2:
            raise RuntimeError("input tensor should be 1D or 2D")
        if target.dim() > 1:
            raise RuntimeError(
                "0D or 1D target tensor expected, multi-target not supported"
            )
        if self.dim() == 2 and target.shape[0] != self.shape[0]:
            raise ValueError(
                f"Expected input batch_size ({self.shape[0]}) to match target batch_size "
                f"({target.shape[0]})."
            )
    if target.dtype not in (torch.int64, torch.uint8, torch.int32):
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    classes = self.shape[1] if self.dim() > 1 else self.shape[0]
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )


def _forward(self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
             reduction: int, ignore_index: int, spatial: bool) -> tuple[np.ndarray, np.ndarray]:
    _check(self, target, weight, spatial)
    return nn.nll_loss_forward(to_numpy(self), to_numpy(target),
                               None if weight is None else to_numpy(weight), reduction,
                               ignore_index)


def _backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
              weight: torch.Tensor | None, reduction: int, ignore_index: int,
              total_weight: torch.Tensor, spatial: bool) -> np.ndarray:
    _check(self, target, weight, spatial)
    return nn.nll_loss_backward(to_numpy(grad_output), to_numpy(self), to_numpy(target),
                                None if weight is None else to_numpy(weight), reduction,
                                ignore_index, to_numpy(total_weight))


@define("nll_loss_forward", "nll_loss_forward.output", ("output", "total_weight"))
def nll_loss_forward(self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
                     reduction: int, ignore_index: int) -> tuple[np.ndarray, np.ndarray]:
    return _forward(self, target, weight, reduction, ignore_index, spatial=False)


@define("nll_loss2d_forward", "nll_loss2d_forward.output", ("output", "total_weight"))
def nll_loss2d_forward(self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
                       reduction: int, ignore_index: int) -> tuple[np.ndarray, np.ndarray]:
    return _forward(self, target, weight, reduction, ignore_index, spatial=True)


@define("nll_loss_backward", "nll_loss_backward.grad_input", ("grad_input",))
def nll_loss_backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                      weight: torch.Tensor | None, reduction: int, ignore_index: int,
                      total_weight: torch.Tensor) -> np.ndarray:
    return _backward(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                     spatial=False)


@define("nll_loss2d_backward", "nll_loss2d_backward.grad_input", ("grad_input",))
def nll_loss2d_backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                        weight: torch.Tensor | None, reduction: int, ignore_index: int,
                        total_weight: torch.Tensor) -> np.ndarray:
    return _backward(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                     spatial=True)
