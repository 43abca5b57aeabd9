"""Neural-network overloads of ``mlu``: the dispatcher-facing side of :mod:`kernels.nn`.

Each op is defined once, as an *impl* that takes the overload's arguments (tensors still as
tensors) and returns NumPy arrays; :func:`define` registers it under its functional overload name
(results wrapped as new mlu tensors) and, where torch has one, its ``out=`` overload (results
written into the given tensors with CPU's dtype check and resize, the tensors returned).

Which overloads: those the dispatcher asks a PrivateUse1 backend for when a CNN and a transformer
encoder train (found by running them on ``mlu`` and reading the "Could not run 'aten::...'"
errors). Convolution goes through ``convolution_overrideable`` /
``convolution_backward_overrideable``: ``aten::_convolution`` picks that route for any backend
that is not CPU/CUDA/MPS/XPU, which is the documented entry point for out-of-tree devices.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, cast

import numpy as np
import torch
from torch._prims_common import get_computation_dtype

from kernels import _device, nn
from kernels._define import (
    arr,
    check_same_shape_or_broadcast,
    define,
)
from kernels._semantics import (
    COMPLEX,
    FLOATING,
    REAL,
    check_dtype,
    checked_scalar,
    opmath,
    scalar_type_name,
    write_inplace,
)
from kernels._tensor import NP_DTYPE, np_dtype, to_numpy
from kernels.registry import register

# --------------------------------------------------------------------------------------------
# convolution


@define("convolution_overrideable", "convolution_overrideable.out",
        dtypes=REAL, kernel_name="slow_conv2d_cpu", autogen_out=True)
def convolution(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                stride: list[int], padding: list[int], dilation: list[int], transposed: bool,
                output_padding: list[int], groups: int) -> np.ndarray:
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype):
        raise RuntimeError(
            f"Input type ({input.dtype}) and weight type ({weight.dtype}) should be the same"
            if input.dtype != weight.dtype
            else f"Input type ({input.dtype}) and bias type ({cast(torch.Tensor, bias).dtype}) "
            "should be the same"
        )
    x, w, b = to_numpy(input), to_numpy(weight), arr(bias)
    if transposed:
        _check_transpose_shape(list(input.shape[2:]), list(weight.shape[2:]), stride, padding,
                               output_padding, dilation)
        check_dtype("slow_conv_transpose2d_out_cpu", input.dtype, allowed=FLOATING | {torch.int64})
        return nn.conv_transpose_forward(x, w, b, stride, padding, output_padding, dilation, groups)
    return nn.conv_forward(x, w, b, stride, padding, dilation, groups)


def _check_transpose_shape(size: list[int], kernel: list[int], stride: list[int],
                           padding: list[int], output_padding: list[int], dilation: list[int]
                           ) -> None:
    """ATen's slow_conv_transpose{2,3}d shape checks (CPU's and CUDA's kernels alike): output
    padding below stride or dilation, then a positive output size. A 1-d transposed convolution
    runs as a 2-d one of height 1, so its messages name a height and a width."""
    nd = len(size)
    if nd not in (1, 2, 3) or not (len(kernel) == len(stride) == len(padding) == nd
                                   == len(output_padding) == len(dilation)):
        return  # other ranks and argument lengths: the generic convolution checks refuse them
    if nd == 1:
        size, kernel, stride, padding, output_padding, dilation = (
            [1, *size], [1, *kernel], [1, *stride], [0, *padding], [0, *output_padding],
            [1, *dilation])
    names = ("depth", "height", "width")[3 - len(size):]
    if not all(op < st or op < dl for op, st, dl in zip(output_padding, stride, dilation,
                                                        strict=True)):
        got = " ".join(f"{arg}_{n}: {v}" for arg, values in (
            ("output_padding", output_padding), ("stride", stride), ("dilation", dilation))
            for n, v in zip(names, values, strict=True))
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                           f"but got {got}")
    out = [(s - 1) * st - 2 * p + (dl * (k - 1) + 1) + op for s, k, st, p, op, dl in zip(
        size, kernel, stride, padding, output_padding, dilation, strict=True)]
    if min(out) < 1:
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, size))}). Calculated output "
            f"size per channel: ({' x '.join(map(str, out))}). Output size is too small")


@define("convolution_backward_overrideable", "convolution_backward_overrideable.out",
        ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="slow_conv2d_backward_cpu", autogen_out=True)
def convolution_backward(grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor,
                         stride: list[int], padding: list[int], dilation: list[int],
                         transposed: bool, output_padding: list[int], groups: int,
                         output_mask: list[bool]) -> tuple[Any, Any, Any]:
    go, x, w = to_numpy(grad_output), to_numpy(input), to_numpy(weight)
    if transposed:
        return nn.conv_transpose_backward(go, x, w, stride, padding, output_padding, dilation,
                                          groups, output_mask)
    return nn.conv_backward(go, x, w, stride, padding, dilation, groups, output_mask)


# --------------------------------------------------------------------------------------------
# normalization and pooling: most are a function of kernels.nn as it is (table below)


@define("_native_batch_norm_legit.no_stats", "_native_batch_norm_legit.no_stats_out",
        dtypes=FLOATING, kernel_name="batch_norm", arrays=True,
        outs_unchecked=lambda input, weight, bias, training, *rest: _bn_eval_of_nothing(
            input, weight, bias, None, None, training),
        out_first=lambda input, weight, bias, training, *rest: _bn_out_sizes(input, training))
def native_batch_norm_legit_no_stats(input: np.ndarray, weight: np.ndarray | None,
                                     bias: np.ndarray | None, training: bool, momentum: float,
                                     eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return nn.batch_norm(input, weight, bias, None, None, training, momentum, eps)


@define("_native_batch_norm_legit_no_training", "_native_batch_norm_legit_no_training.out",
        dtypes=FLOATING, kernel_name="batch_norm", autogen_out=True, arrays=True)
def native_batch_norm_legit_no_training(input: np.ndarray, weight: np.ndarray | None,
                                        bias: np.ndarray | None, running_mean: np.ndarray,
                                        running_var: np.ndarray, momentum: float, eps: float
                                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return nn.batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)


@define("_batch_norm_no_update", dtypes=FLOATING, kernel_name="batch_norm", arrays=True)
def batch_norm_no_update(input: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None,
                         running_mean: np.ndarray | None, running_var: np.ndarray | None,
                         momentum: float, eps: float
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """ATen's CompositeExplicitAutograd kernel calls batch_norm_cpu itself (eval mode), so
    every other backend needs its own; the fourth result is an empty uint8 reserve."""
    out, mean, invstd = nn.batch_norm(input, weight, bias, running_mean, running_var, False,
                                      momentum, eps)
    return out, mean, invstd, np.empty(0, np.uint8)


@define("native_layer_norm_backward", "native_layer_norm_backward.out",
        dtypes=FLOATING, kernel_name="LayerNormBackwardKernelImpl", autogen_out=True,
        # no rows or no normalized elements: CPU returns before its dtype dispatch
        empty_any_dtype=lambda grad_out, input, *rest: input.numel() == 0, dtype_args=(1,))
def native_layer_norm_backward(grad_out: torch.Tensor, input: torch.Tensor,
                               normalized_shape: list[int], mean: torch.Tensor,
                               rstd: torch.Tensor, weight: torch.Tensor | None,
                               bias: torch.Tensor | None, output_mask: list[bool]
                               ) -> tuple[Any, Any, Any]:
    return nn.layer_norm_backward(to_numpy(grad_out), to_numpy(input), normalized_shape,
                                  to_numpy(mean), to_numpy(rstd), arr(weight), arr(bias),
                                  output_mask)


@define("native_group_norm", "native_group_norm.out",
        dtypes=FLOATING, kernel_name="GroupNormKernelImpl", autogen_out=True)
def native_group_norm(input: torch.Tensor, weight: torch.Tensor | None,
                      bias: torch.Tensor | None, N: int, C: int, HxW: int, group: int,
                      eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(input.shape)}"
            )
    if C % group:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={group}"
        )
    if input.numel() != N * C * HxW:  # GroupNormKernelImpl's first check
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    return nn.group_norm(to_numpy(input), arr(weight), arr(bias), N, C, HxW, group, eps)


def _adaptive_backward_dims(grad_output: torch.Tensor, self: torch.Tensor, nd: int) -> None:
    """ATen's checks of adaptive_avg_pool{2,3}d_backward, in its order."""
    if grad_output.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"adaptive_avg_pool{nd}d_backward(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
            f"{list(grad_output.shape)}"
        )
    for i in range(1, grad_output.dim()):
        if grad_output.shape[i] == 0:
            raise RuntimeError(
                f"adaptive_avg_pool{nd}d_backward(): Expected grad_output to have non-zero size "
                f"for non-batch dimensions, but grad_output has sizes {list(grad_output.shape)} "
                f"with dimension {i} being empty")
    if nd == 2:  # the 2-d template's checkDim / checkScalarType
        where = "adaptive_avg_pool2d_backward_out_cpu_template"
        if grad_output.dim() != self.dim():
            raise RuntimeError(f"{where}: Expected dimensions {self.dim()} for `grad_output` but "
                               f"got dimensions {grad_output.dim()}")
        if grad_output.dtype != self.dtype:
            raise RuntimeError(f"{where}: Expected dtype {str(self.dtype).removeprefix('torch.')}"
                               f" for `grad_output` but got dtype "
                               f"{str(grad_output.dtype).removeprefix('torch.')}")


@define("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool2d_backward_cpu", autogen_out=True)
def adaptive_avg_pool2d_backward(grad_output: torch.Tensor, self: torch.Tensor) -> np.ndarray:
    _adaptive_backward_dims(grad_output, self, 2)
    return nn.adaptive_avg_pool2d_backward(to_numpy(grad_output), to_numpy(self))


@define("_adaptive_avg_pool3d", "_adaptive_avg_pool3d.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool3d_cpu", autogen_out=True)
def adaptive_avg_pool3d(self: torch.Tensor, output_size: list[int]) -> np.ndarray:
    if len(output_size) != 3:
        raise RuntimeError("adaptive_avg_pool3d: output_size must be 3")
    return nn.adaptive_avg_pool(to_numpy(self), output_size)


@define("_adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool3d_backward_cpu", autogen_out=True)
def adaptive_avg_pool3d_backward(grad_output: torch.Tensor, self: torch.Tensor) -> np.ndarray:
    _adaptive_backward_dims(grad_output, self, 3)
    return nn.adaptive_avg_pool_backward(to_numpy(grad_output), to_numpy(self), nd=3)


_AVG_POOL3D = frozenset({torch.float32, torch.float64, torch.int64})


def _bn_eval_of_nothing(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                        training: bool, *rest: Any) -> bool:
    """batch_norm_cpu_out in eval mode on an empty input: it resizes its outs and returns
    before any kernel reads them, so their dtypes are never checked."""
    return not training and input.numel() == 0

def _bn_saves_in_eval(input: torch.Tensor, weight: Any, bias: Any, running_mean: Any,
                      running_var: Any, training: bool, *rest: Any) -> tuple[int, ...]:
    """batch_norm_cpu_out resizes and writes save_mean/save_invstd only in training: in eval
    mode they stay as given (a non-empty one keeps its size and contents)."""
    return () if training else (1, 2)


def _bn_out_sizes(input: torch.Tensor, training: bool) -> None:
    """batch_norm_cpu_out sizes its outs from ``input.size(1)`` (training) or ``input.size(0)``
    before any argument check: a 0-dim input is torch's IndexError there."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {int(bool(training))} but tensor has no "
                         f"dimensions")


def _bn_out_first(input: torch.Tensor, weight: Any, bias: Any, running_mean: Any,
                  running_var: Any, training: bool, *rest: Any) -> None:
    """batch_norm_cpu_out: the running statistics given together (in training too, where the
    functional first reads the channel dimension), then its outs' sizes."""
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be "
                         "None")
    _bn_out_sizes(input, training)


#: (functional, out=) overloads -> (define's options, function of kernels.nn taking the schema's
#: arguments in order, tensors as arrays)
NN_ROWS: dict[tuple[str, str], tuple[dict[str, Any], Callable[..., Any]]] = {
    ("native_batch_norm", "native_batch_norm.out"):
        (dict(dtypes=FLOATING, kernel_name="batch_norm", outs_unchecked=_bn_eval_of_nothing,
              out_first=_bn_out_first, outs_untouched=_bn_saves_in_eval), nn.batch_norm),
    ("_native_batch_norm_legit", "_native_batch_norm_legit.out"):
        (dict(dtypes=FLOATING, kernel_name="batch_norm", outs_unchecked=_bn_eval_of_nothing,
              out_first=_bn_out_first, outs_untouched=_bn_saves_in_eval), nn.batch_norm),
    ("native_batch_norm_backward", "native_batch_norm_backward.out"):
        (dict(dtypes=FLOATING, kernel_name="batch_norm_backward_cpu", autogen_out=True,
              dtype_args=(1,)),  # CPU dispatches on input's dtype
         nn.batch_norm_backward),
    ("native_layer_norm", "native_layer_norm.out"):
        (dict(dtypes=FLOATING, kernel_name="LayerNormKernelImpl", autogen_out=True),
         nn.layer_norm),
    ("native_group_norm_backward", "native_group_norm_backward.out"):
        (dict(dtypes=FLOATING, kernel_name="GroupNormBackwardKernelImpl", autogen_out=True),
         nn.group_norm_backward),
    ("max_pool2d_with_indices", "max_pool2d_with_indices.out"):
        (dict(dtypes=REAL, kernel_name="max_pool2d"), nn.max_pool2d_with_indices),
    ("max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward.grad_input"):
        (dict(dtypes=FLOATING, kernel_name="max_pool2d_backward"),
         nn.max_pool2d_with_indices_backward),
    ("avg_pool2d", "avg_pool2d.out"): (dict(dtypes=FLOATING | {torch.int64}), nn.avg_pool2d),
    ("avg_pool2d_backward", "avg_pool2d_backward.grad_input"):
        (dict(dtypes=FLOATING | {torch.int64}), nn.avg_pool2d_backward),
    ("_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out"):
        (dict(dtypes=FLOATING, kernel_name="adaptive_avg_pool2d", autogen_out=True,
              # CPU returns an empty result before its dtype dispatch
              empty_any_dtype=lambda x, output_size: 0 in (*x.shape[:-2], *output_size)),
         nn.adaptive_avg_pool2d),
    # not structured on CPU: its out= kernels resize with a plain resize_ (no warning)
    ("max_pool3d_with_indices", "max_pool3d_with_indices.out"):
        (dict(dtypes=REAL, kernel_name="max_pool3d", silent_resize=True),
         partial(nn.max_pool_with_indices, nd=3)),
    ("max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward.grad_input"):
        (dict(dtypes=FLOATING, kernel_name="max_pool3d_backward", silent_resize=True),
         partial(nn.max_pool_with_indices_backward, nd=3)),
    ("avg_pool3d", "avg_pool3d.out"):
        (dict(dtypes=_AVG_POOL3D, kernel_name="avg_pool3d_out_frame"),
         partial(nn.avg_pool, nd=3)),
    ("avg_pool3d_backward", "avg_pool3d_backward.grad_input"):
        (dict(dtypes=_AVG_POOL3D, kernel_name="avg_pool3d_out_frame"),
         partial(nn.avg_pool_backward, nd=3)),
}

for (_functional, _out), (_options, _impl) in NN_ROWS.items():
    define(_functional, _out, arrays=True, **_options)(_impl)


# --------------------------------------------------------------------------------------------
# softmax family


def _refuse_half_to_float(half_to_float: bool) -> None:
    if half_to_float:  # CUDA's fused conversion; CPU refuses it, so does this backend
        raise RuntimeError("softmax with half to float conversion is not supported on CPU")


def _backward_dtype(grad_output: torch.Tensor, output: torch.Tensor, input_dtype: torch.dtype
                    ) -> torch.dtype:
    """(log_)softmax backward: the gradient's dtype; CPU wants ``output`` of that dtype and
    refuses float grads for a half input (ATen's half_to_float backward is for Half alone: a
    BFloat16 ``input_dtype`` is ignored), except for empty ones: their result is Half."""
    half_to_float = grad_output.dtype == torch.float32 and input_dtype == torch.float16
    if grad_output.numel() == 0:
        return torch.float16 if half_to_float else grad_output.dtype
    if output.dtype != grad_output.dtype and grad_output.dtype in FLOATING:
        raise RuntimeError(
            f"expected scalar type {scalar_type_name(grad_output.dtype)} but found "
            f"{scalar_type_name(output.dtype)}"
        )
    if half_to_float:
        raise RuntimeError(f"expected scalar type Float but found {scalar_type_name(input_dtype)}")
    return grad_output.dtype


def _dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n if ndim else 0


@define("_softmax", "_softmax.out",
        dtypes=FLOATING, kernel_name="softmax_kernel_impl", empty_any_dtype=True)
def softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> np.ndarray:
    _refuse_half_to_float(half_to_float)
    x = to_numpy(self)
    return nn.softmax(x, _dim(dim, x.ndim))


@define("_log_softmax", "_log_softmax.out",
        dtypes=FLOATING, kernel_name="log_softmax_kernel_impl", empty_any_dtype=True)
def log_softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> np.ndarray:
    _refuse_half_to_float(half_to_float)
    x = to_numpy(self)
    return nn.log_softmax(x, _dim(dim, x.ndim))


@define("_softmax_backward_data", "_softmax_backward_data.out", ("grad_input",),
        dtypes=FLOATING, kernel_name="softmax_backward_kernel_impl", empty_any_dtype=True)
def softmax_backward_data(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                          input_dtype: torch.dtype) -> np.ndarray:
    y = to_numpy(output)
    dtype = _backward_dtype(grad_output, output, input_dtype)
    g = nn.softmax_backward(to_numpy(grad_output), y, _dim(dim, y.ndim))
    return g.astype(NP_DTYPE[dtype], copy=False)


@define("_log_softmax_backward_data", "_log_softmax_backward_data.out",
        dtypes=FLOATING, kernel_name="log_softmax_backward_kernel_impl", empty_any_dtype=True)
def log_softmax_backward_data(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                              input_dtype: torch.dtype) -> np.ndarray:
    y = to_numpy(output)
    dtype = _backward_dtype(grad_output, output, input_dtype)
    g = nn.log_softmax_backward(to_numpy(grad_output), y, _dim(dim, y.ndim))
    return g.astype(NP_DTYPE[dtype], copy=False)


# --------------------------------------------------------------------------------------------
# activations


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return np.maximum(x, np.zeros((), x.dtype))


define("relu", "relu.out", arrays=True)(_relu)


@register("relu_")
def relu_(self: torch.Tensor) -> torch.Tensor:
    return write_inplace(self, _relu(to_numpy(self)))


def _c_cast(value: Any, dtype: np.dtype) -> np.ndarray:
    """A Scalar as ATen's ``to<scalar_t>()`` makes it: truncation toward zero, wraparound."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)


def _threshold(x: np.ndarray, threshold: Any, value: Any) -> np.ndarray:
    return np.where(x <= _c_cast(threshold, x.dtype), _c_cast(value, x.dtype), x)


def _threshold_scalar(threshold: Any, dtype: torch.dtype) -> Any:
    """ATen reads ``threshold`` in the opmath type (float32 for float16/bfloat16)."""
    return checked_scalar(threshold, get_computation_dtype(dtype), deferred=True)


@define("threshold", "threshold.out",
        dtypes=REAL, kernel_name="threshold_cpu", castable_out=True)
def threshold(self: torch.Tensor, threshold: Any, value: Any) -> np.ndarray:
    return _threshold(to_numpy(self), _threshold_scalar(threshold, self.dtype),
                      checked_scalar(value, self.dtype, deferred=True))


@register("threshold_")
def threshold_(self: torch.Tensor, threshold: Any, value: Any) -> torch.Tensor:
    check_dtype("threshold_cpu", self.dtype, allowed=REAL)
    threshold = checked_scalar(threshold, get_computation_dtype(self.dtype))
    value = checked_scalar(value, self.dtype)
    return write_inplace(self, _threshold(to_numpy(self), threshold, value))


@define("threshold_backward", "threshold_backward.grad_input", ("grad_input",),
        dtypes=REAL, kernel_name="threshold_cpu", dtype_args=(0, 1), castable_out=True)
def threshold_backward(grad_output: torch.Tensor, self: torch.Tensor, threshold: Any
                       ) -> np.ndarray:
    check_same_shape_or_broadcast(grad_output, self)
    dtype = torch.result_type(grad_output, self)
    threshold = _threshold_scalar(threshold, dtype)
    x = to_numpy(self).astype(NP_DTYPE[dtype], copy=False)
    return nn.threshold_backward(to_numpy(grad_output).astype(NP_DTYPE[dtype], copy=False), x,
                                 _c_cast(threshold, x.dtype))


define("gelu", "gelu.out", dtypes=FLOATING, kernel_name="GeluKernelImpl", arrays=True)(nn.gelu)


@register("gelu_")
def gelu_(self: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    check_dtype("GeluKernelImpl", self.dtype, allowed=FLOATING)
    with np.errstate(all="ignore"):
        return write_inplace(self, nn.gelu(to_numpy(self), approximate))


@define("gelu_backward", "gelu_backward.grad_input", ("grad_input",),
        dtypes=FLOATING, kernel_name="GeluBackwardKernelImpl", dtype_args=(0, 1), castable_out=True)
def gelu_backward(grad_output: torch.Tensor, self: torch.Tensor, *, approximate: str = "none"
                  ) -> np.ndarray:
    check_same_shape_or_broadcast(grad_output, self)
    dtype = np_dtype(torch.result_type(grad_output, self))
    return nn.gelu_backward(to_numpy(grad_output), to_numpy(self), approximate, dtype)


# --------------------------------------------------------------------------------------------
# dropout and embedding


@define("native_dropout", "native_dropout.out", ("out0", "out1"), autogen_out=True)
def native_dropout(input: torch.Tensor, p: float, train: bool | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    if input.numel() and (train is None or train) and not 0 <= 1 - p <= 1:
        # CPU draws its mask with bernoulli_(1 - p) before scaling: bernoulli_'s range check first
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p:g}")
    if input.numel() and (train is None or train) and input.dtype not in FLOATING | COMPLEX:
        # CPU multiplies by a float scale in place: its "can't be cast" refusal
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type "
            f"{scalar_type_name(input.dtype)}"
        )
    return nn.native_dropout(to_numpy(input), p, train, _device.generator())


@define("native_dropout_backward", "native_dropout_backward.out", autogen_out=True)
def native_dropout_backward(grad_output: torch.Tensor, mask: torch.Tensor, scale: float
                            ) -> np.ndarray:
    check_same_shape_or_broadcast(grad_output, mask)
    dtype = torch.result_type(grad_output, mask)  # grad * mask * scale: a float scale wins
    if dtype not in FLOATING | COMPLEX:
        dtype = torch.get_default_dtype()
    g = to_numpy(grad_output).astype(NP_DTYPE[dtype], copy=False)
    return nn.native_dropout_backward(g, to_numpy(mask), scale)


@define("embedding_dense_backward", "embedding_dense_backward.out", autogen_out=True)
def embedding_dense_backward(grad_output: torch.Tensor, indices: torch.Tensor, num_weights: int,
                             padding_idx: int, scale_grad_by_freq: bool) -> np.ndarray:
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {indices.dtype} instead (while checking arguments for "
            "embedding_backward)"
        )
    if grad_output.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    rows, width = indices.numel(), grad_output.shape[-1]
    if rows * width != grad_output.numel():
        raise RuntimeError(
            f"shape '[{rows}, {width}]' is invalid for input of size {grad_output.numel()}"
        )
    return nn.embedding_dense_backward(to_numpy(grad_output), to_numpy(indices), num_weights,
                                       padding_idx, scale_grad_by_freq)


@register("embedding_renorm_")
def embedding_renorm_(self: torch.Tensor, indices: torch.Tensor, max_norm: float,
                      norm_type: float) -> torch.Tensor:
    """Rescale, in place, each referenced row whose ``norm_type``-norm exceeds ``max_norm`` to
    ``max_norm / (norm + 1e-7)`` of itself (``F.embedding(max_norm=...)``)."""
    # ATen's embedding_renorm_cpu_ dispatches on the *indices'* type; self's dtype is refused
    # only by row.norm(), on the first (smallest) referenced row: never for no indices
    if self.dim() != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {self.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "embedding_renorm_)")
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {indices.dtype} instead (while checking arguments for "
            "embedding_renorm_)"
        )
    rows = np.unique(to_numpy(indices).reshape(-1))
    for k, r in enumerate(rows):
        if not -self.shape[0] <= r < self.shape[0]:
            raise IndexError(f"select(): index {int(r)} out of range for tensor of size "
                             f"{list(self.shape)} at dimension 0")
        if k == 0 and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                               f"Got {scalar_type_name(self.dtype)} instead.")
    rows = np.unique(rows % max(self.shape[0], 1))
    w = to_numpy(self)
    if rows.size:
        picked = opmath(w[rows])
        if norm_type == np.inf:
            norms = np.abs(picked).max(axis=1)
        else:
            norms = (np.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
        big = norms > max_norm
        if big.any():
            scale = max_norm / (norms[big] + 1e-7)
            w[rows[big]] = (picked[big] * scale[:, None].astype(picked.dtype)).astype(w.dtype)
    return self
