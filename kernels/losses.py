"""Loss overloads of ``mlu``: negative log-likelihood (cross-entropy's second half), MSE,
smooth-L1, Huber and binary cross-entropy, each with its backward.

``F.cross_entropy`` is composite: ``_log_softmax`` (see :mod:`kernels.nn_ops`) followed by
``nll_loss_forward`` for ``(N, C)``/``(C,)`` scores or ``nll_loss2d_forward`` for ``(N, C, H, W)``.
The maths is :func:`kernels.nn.nll_loss_forward` / :func:`kernels.nn.nll_loss_backward`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from kernels import nn
from kernels._define import check_same_shape_or_broadcast, define
from kernels._semantics import (
    FLOATING,
    REAL,
    opmath,
    promote,
    scalar_type_name,
)
from kernels._tensor import np_dtype, to_numpy

__all__: list[str] = []


def _check(self: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None,
           spatial: bool, forward: bool = True) -> None:
    if spatial:  # ATen's check_inputs_nll_loss2d, in its order
        if target.dim() != 3:
            raise RuntimeError(
                f"only batches of spatial targets supported (3D tensors) but got targets of "
                f"dimension: {target.dim()}"
            )
        if self.dim() != 4:
            raise RuntimeError(
                f"only batches of spatial inputs supported (4D tensors), but got input of "
                f"dimension: {self.dim()}"
            )
        if target.shape[0] != self.shape[0] or target.shape[1:] != self.shape[2:]:
            raise RuntimeError(
                f"input and target batch or spatial sizes don't match: target {list(target.shape)}"
                f", input {list(self.shape)}"
            )
    else:
        if self.dim() < 1 or self.dim() > 2:
            raise RuntimeError("input tensor should be 1D or 2D")
        if target.dim() > 1:
            raise RuntimeError(
                "0D or 1D target tensor expected, multi-target not supported"
            )
        # ATen's nll_loss_forward meta: a 1-D input takes one target (ValueError), a batch
        # one target per row (RuntimeError; a 0-dim target has no size(0): IndexError). The
        # backward's meta has only the second check, for a 1-D input with a 1-D target too
        if forward and self.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(
                f"For 1D input, 1D target must have size 1, but got target size: "
                f"{target.shape[0]}"
            )
        batched = self.dim() == 2 or (not forward and target.dim() == 1)
        if batched and target.dim() == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if batched and target.shape[0] != self.shape[0]:
            raise RuntimeError(
                f"size mismatch (got input: {list(self.shape)}, target: {list(target.shape)})"
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
             reduction: int, ignore_index: int, *, spatial: bool) -> tuple[np.ndarray, np.ndarray]:
    _check(self, target, weight, spatial)
    return nn.nll_loss_forward(to_numpy(self), to_numpy(target),
                               None if weight is None else to_numpy(weight), reduction,
                               ignore_index)


def _backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
              weight: torch.Tensor | None, reduction: int, ignore_index: int,
              total_weight: torch.Tensor, *, spatial: bool) -> np.ndarray:
    if total_weight.numel() != 1:
        raise RuntimeError(
            f"expected total_weight to be a single element tensor, got: {list(total_weight.shape)}"
            f" ({total_weight.numel()} elements)"
        )
    _check(self, target, weight, spatial, forward=False)
    return nn.nll_loss_backward(to_numpy(grad_output), to_numpy(self), to_numpy(target),
                                None if weight is None else to_numpy(weight), reduction,
                                ignore_index, to_numpy(total_weight))


#: (functional, out=) overloads -> (CPU's kernel name in its dtype refusal, impl)
NLL_ROWS: dict[tuple[str, str], tuple[str, Callable[..., Any]]] = {
    ("nll_loss_forward", "nll_loss_forward.output"):
        ("nll_loss_out_frame", partial(_forward, spatial=False)),
    ("nll_loss2d_forward", "nll_loss2d_forward.output"):
        ("nll_loss2d_forward_out_frame", partial(_forward, spatial=True)),
    ("nll_loss_backward", "nll_loss_backward.grad_input"):
        ("nll_loss_backward_out_frame", partial(_backward, spatial=False)),
    ("nll_loss2d_backward", "nll_loss2d_backward.grad_input"):
        ("nll_loss2d_backward_out_frame", partial(_backward, spatial=True)),
}

for (_functional, _out), (_kernel_name, _impl) in NLL_ROWS.items():
    define(_functional, _out, dtypes=FLOATING, kernel_name=_kernel_name)(_impl)


# --------------------------------------------------------------------------------------------
# pointwise losses: a loss formula and its derivative, reduced by ``reduction``


def _reduce(loss: np.ndarray, reduction: int, dtype: np.dtype) -> np.ndarray:
    if reduction == 0:
        return loss.astype(dtype, copy=False)
    total = loss.sum(dtype=loss.dtype)
    if reduction == 1:
        total = total / loss.size if loss.size else np.asarray(np.nan, loss.dtype)
    return np.asarray(total, dtype=dtype)


def _norm(grad: np.ndarray, reduction: int, numel: int) -> np.ndarray:
    return grad / numel if reduction == 1 else grad


def c_cast(value: float, dtype: np.dtype) -> np.ndarray:
    """A Python number as C++ converts it to ``scalar_t``: truncation toward zero, wraparound."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)


def _triple(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.dtype]:
    """``(self, target, grad)`` in the computation dtype of a TensorIterator over the three
    (opmath float32 for half types, int64 for integers), and the result's NumPy dtype."""
    check_same_shape_or_broadcast(self, target, grad_output)
    result = np_dtype(promote(self, target, grad_output))
    # C++ promotes integer operands to int before arithmetic; half types compute in float32
    compute = np.dtype(np.int64) if result.kind in "iu" else opmath(np.empty(0, result)).dtype
    arrays = [to_numpy(a).astype(compute, copy=False) for a in (self, target, grad_output)]
    return arrays[0], arrays[1], arrays[2], result


def _pair(self: torch.Tensor, target: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    check_same_shape_or_broadcast(self, target)
    x, t = to_numpy(self), to_numpy(target)
    dtype = np_dtype(torch.result_type(self, target))
    return opmath(x), opmath(t), dtype


@define("mse_loss", "mse_loss.out",
        dtypes=FLOATING, kernel_name="mse_cpu",
        dtype_args=(0, 1), castable_out=True)
def mse_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1) -> np.ndarray:
    x, t, dtype = _pair(self, target)
    d = x - t
    return _reduce(d * d, reduction, dtype)


@define("mse_loss_backward", "mse_loss_backward.grad_input", ("grad_input",),
        dtypes=REAL, kernel_name="mse_backward_cpu_out",
        dtype_args=(0, 1, 2), castable_out=True, result_like=1)
def mse_loss_backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                      reduction: int) -> np.ndarray:
    x, t, g, np_dtype = _triple(grad_output, self, target)
    norm = (2.0 / x.size if x.size else np.nan) if reduction == 1 else 2.0
    scale = c_cast(norm, np_dtype).astype(x.dtype)  # ATen: value.to<scalar_t>()
    # computed in the promoted dtype; the functional writes it into grad_input =
    # zeros_like(self) (``result_like``: bfloat16 grad, float16 self: float16).
    # ATen's lambda is ``scalar_val * (self - target) * grad`` on scalar_t: for a half type
    # each of the three operations rounds to it (c10::Half/BFloat16 operators and
    # Vectorized<Half> return the half type), so 2 * 65504 overflows to inf and
    # times a zero grad gives NaN; integers compute in int and are truncated once.
    if np_dtype.kind not in "biu":  # float16, bfloat16 (ml_dtypes: kind "V"), float32/64
        def step(a: np.ndarray) -> np.ndarray:
            return a.astype(np_dtype).astype(x.dtype)
    else:
        def step(a: np.ndarray) -> np.ndarray:
            return a
    with np.errstate(all="ignore"):
        return step(step(scale * step(x - t)) * g).astype(np_dtype)


@define("smooth_l1_loss", "smooth_l1_loss.out",
        dtypes=FLOATING, kernel_name="smooth_l1_cpu",
        dtype_args=(0, 1), castable_out=True)
def smooth_l1_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1,
                   beta: float = 1.0) -> np.ndarray:
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, t, dtype = _pair(self, target)
    z = np.abs(x - t)
    loss = z if beta == 0 else np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)
    return _reduce(loss, reduction, dtype)


@define("smooth_l1_loss_backward", "smooth_l1_loss_backward.grad_input", ("grad_input",),
        dtypes=REAL, kernel_name="smooth_l1_backward_cpu_out",
        dtype_args=(0, 1, 2), castable_out=True)
def smooth_l1_loss_backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                            reduction: int, beta: float) -> np.ndarray:
    x, t, g, np_dtype = _triple(grad_output, self, target)
    norm = c_cast((1.0 / x.size if x.size else np.nan) if reduction == 1 else 1.0, np_dtype)
    norm, b = norm.astype(x.dtype), c_cast(beta, np_dtype).astype(x.dtype)
    d = x - t
    if beta < 0:  # ATen falls back to l1_loss_backward: sign(x - t) * grad * norm
        grad = np.sign(d) * g * norm
    else:
        inner = nn._divide_like_c(norm * d * g, b) if b != 0 else norm * d * g
        grad = np.where(d <= -b, -norm * g, np.where(d >= b, norm * g, inner))
    with np.errstate(all="ignore"):
        return grad.astype(np_dtype)


@define("huber_loss", "huber_loss.out",
        dtypes=FLOATING, kernel_name="huber_cpu",
        dtype_args=(0, 1), castable_out=True, result_like=0)
def huber_loss(self: torch.Tensor, target: torch.Tensor, reduction: int = 1,
               delta: float = 1.0) -> np.ndarray:
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, t, dtype = _pair(self, target)
    z = np.abs(x - t)
    return _reduce(np.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction, dtype)


@define("huber_loss_backward", "huber_loss_backward.out", ("grad_input",),
        dtypes=FLOATING, kernel_name="huber_backward_cpu_out",
        dtype_args=(0, 1, 2), castable_out=True, result_like=1, same_dtype=(1, 2, 0))
def huber_loss_backward(grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
                        reduction: int, delta: float) -> np.ndarray:
    # ATen's scalar loop (huber_backward_cpu_kernel), which every input shorter than two
    # vectors takes: x = input - target, norm_val and each product on scalar_t (a half type
    # rounds after each operation), the comparisons and the last product with delta in double:
    #   x <= -delta: -norm_val * grad * delta;  x >= delta: norm_val * grad * delta;
    #   else norm_val * x * grad.
    # So -1.8e308 * 0.5 (mean of 2) * 2.0 is -1.8e308 (not -inf), -inf * 3.7e-239 is -inf (not
    # NaN: delta is not rounded to the dtype), and a negative delta takes the first branch.
    x, t, dtype = _pair(self, target)
    g = opmath(to_numpy(grad_output))
    f64 = np.dtype(np.float64)

    def step(a: np.ndarray) -> np.ndarray:
        return a.astype(dtype).astype(x.dtype)

    norm = c_cast((1.0 / x.size if x.size else np.nan) if reduction == 1 else 1.0, dtype)
    norm = norm.astype(x.dtype)
    with np.errstate(all="ignore"):
        d = step(x - t)
        dd = d.astype(f64)
        below = step(-norm * g).astype(f64) * delta
        above = step(norm * g).astype(f64) * delta
        inner = step(step(norm * d) * g).astype(f64)
        grad = np.where(dd <= -delta, below, np.where(dd >= delta, above, inner))
        if x.dtype != dtype:  # double to c10::Half/BFloat16 goes through float
            grad = grad.astype(np.float32)
        return grad.astype(dtype)


_BCE_EPSILON = 1e-12


def _bce_check(x: np.ndarray) -> None:
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")


@define("binary_cross_entropy", "binary_cross_entropy.out",
        dtypes=FLOATING, kernel_name="binary_cross_entropy",
        dtype_args=(0, 1))
def binary_cross_entropy(self: torch.Tensor, target: torch.Tensor,
                         weight: torch.Tensor | None = None, reduction: int = 1) -> np.ndarray:
    if self.dtype != target.dtype:  # TensorIterator with all-same-dtype
        raise RuntimeError(
            f"Found dtype {scalar_type_name(target.dtype)} but expected "
            f"{scalar_type_name(self.dtype)}"
        )
    x, t, dtype = _pair(self, target)
    _bce_check(x)
    log_x = np.maximum(np.log(x), -100.0)
    log_1mx = np.maximum(np.log1p(-x), -100.0)
    loss = (t - 1.0) * log_1mx - t * log_x
    if weight is not None:
        loss = loss * opmath(to_numpy(weight))
    return _reduce(loss, reduction, dtype)


@define("binary_cross_entropy_backward", "binary_cross_entropy_backward.grad_input",
        ("grad_input",),
        dtypes=FLOATING, kernel_name="binary_cross_entropy_backward",
        dtype_args=(0, 1, 2), castable_out=True)
def binary_cross_entropy_backward(grad_output: torch.Tensor, self: torch.Tensor,
                                  target: torch.Tensor, weight: torch.Tensor | None = None,
                                  reduction: int = 1) -> np.ndarray:
    # one TensorIterator over grad_input, grad_output, self, target: shapes, then one dtype
    check_same_shape_or_broadcast(grad_output, self, target)
    for operand in (self, target):
        if operand.dtype != grad_output.dtype:
            raise RuntimeError(f"Found dtype {scalar_type_name(operand.dtype)} but expected "
                               f"{scalar_type_name(grad_output.dtype)}")
    x, t, dtype = _pair(self, target)
    g = opmath(to_numpy(grad_output))
    grad = g * (x - t) / np.maximum((1.0 - x) * x, _BCE_EPSILON)
    if weight is not None:
        grad = grad * opmath(to_numpy(weight))
    return _norm(grad, reduction, x.size).astype(dtype, copy=False)
