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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from kernels import _device, nn
from kernels._semantics import infer_size, scalar_type_name, write_inplace, write_out
from kernels._tensor import NP_DTYPE, TORCH_DTYPE, from_numpy, to_numpy
from kernels.registry import register

__all__ = [
    "COMPLEX",
    "FLOATING",
    "INTEGRAL",
    "REAL",
    "check_dtype",
    "check_same_shape_or_broadcast",
    "define",
    "real_scalars",
]

Impl = Callable[..., Any]


def _arr(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else to_numpy(t)


def _wrap(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if value is None:
        return None
    value = np.asarray(value)
    return from_numpy(value, TORCH_DTYPE[value.dtype])


def _store(outs: Sequence[torch.Tensor], values: Any) -> Any:
    single = not isinstance(values, tuple)
    vals = (values,) if single else values
    for out, v in zip(outs, vals, strict=True):
        if v is not None:
            v = np.asarray(v)
            write_out(out, v, TORCH_DTYPE[v.dtype])
    return outs[0] if single else tuple(outs)


# dtype sets of CPU's kernels (what ATen's AT_DISPATCH_* macros accept), named once
FLOATING = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
COMPLEX = frozenset({torch.complex64, torch.complex128})
INTEGRAL = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})
REAL = INTEGRAL | FLOATING


def check_dtype(t: Any, allowed: frozenset[torch.dtype], kernel: str) -> None:
    """CPU's refusal of a dtype its kernel is not compiled for (``NotImplementedError``)."""
    if isinstance(t, torch.Tensor) and t.dtype not in allowed:
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{scalar_type_name(t.dtype)}\''
        )


def _gate(args: Sequence[Any], positions: Sequence[int], allowed: frozenset[torch.dtype],
          kernel: str) -> None:
    """Refuse as CPU does when the (promoted) dtype of the tensors at ``positions`` is not one
    its kernel is compiled for. Empty inputs pass: ATen's kernels return before dispatching on
    the dtype when there is nothing to compute."""
    tensors = [args[i] for i in positions if i < len(args) and isinstance(args[i], torch.Tensor)]
    if not tensors or tensors[0].numel() == 0:
        return
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    if dtype not in allowed:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(dtype)}\'')


def real_scalars(scalars: tuple[Any, ...], dtype: torch.dtype) -> tuple[Any, ...]:
    """Scalars as a real kernel sees them: a complex one with an imaginary part is refused with
    CPU's message, one without becomes its real part."""
    out = []
    for v in scalars:
        if isinstance(v, complex):
            if v.imag != 0:
                target = "double" if not dtype.is_floating_point else "float"
                raise RuntimeError(f"value cannot be converted to type {target} without overflow")
            v = v.real
        out.append(v)
    return tuple(out)


def check_same_shape_or_broadcast(*tensors: torch.Tensor) -> None:
    """CPU's TensorIterator message for operands that do not broadcast."""
    shape: list[int] = []
    for t in tensors:
        shape = list(infer_size(shape, list(t.shape)))


def define(functional: str, out: str | None = None, out_names: Sequence[str] = ("out",), *,
           dtypes: frozenset[torch.dtype] | None = None, kernel_name: str | None = None,
           dtype_args: Sequence[int] = (0,)) -> Callable[[Impl], Impl]:
    """Register ``impl`` as ``functional`` and (if given) as the ``out=`` overload ``out``.

    ``dtypes``: the dtypes CPU's kernel accepts, for the promoted dtype of the tensor arguments at
    ``dtype_args``; others are refused as CPU refuses them (``NotImplementedError``;
    ``kernel_name`` is the name CPU's message shows). As on CPU, argument checks come first: the
    impl validates, and the dtype is refused only if it did not (or if NumPy itself choked on the
    dtype, a ``TypeError``).
    """
    gate_name = kernel_name or functional.split(".")[0]

    def run(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with np.errstate(all="ignore"):
            try:
                result = impl_ref[0](*args, **kwargs)
            except TypeError:
                if dtypes is not None:
                    _gate(args, dtype_args, dtypes, gate_name)
                raise
        if dtypes is not None:
            _gate(args, dtype_args, dtypes, gate_name)
        return result

    impl_ref: list[Impl] = []

    def deco(impl: Impl) -> Impl:
        impl_ref.append(impl)

        def kernel(*args: Any, **kwargs: Any) -> Any:
            return _wrap(run(args, kwargs))

        kernel.__name__ = kernel.__qualname__ = impl.__name__
        register(functional)(kernel)
        if out is not None:

            def out_kernel(*args: Any, **kwargs: Any) -> Any:
                outs = [kwargs.pop(n) for n in out_names]
                return _store(outs, run(args, kwargs))

            out_kernel.__name__ = out_kernel.__qualname__ = impl.__name__ + "_out"
            register(out)(out_kernel)
        return impl

    return deco


# --------------------------------------------------------------------------------------------
# convolution


@define("convolution_overrideable", "convolution_overrideable.out",
        dtypes=REAL, kernel_name="slow_conv2d_cpu")
def convolution(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                stride: list[int], padding: list[int], dilation: list[int], transposed: bool,
                output_padding: list[int], groups: int) -> np.ndarray:
    x, w, b = to_numpy(input), to_numpy(weight), _arr(bias)
    if transposed:
        check_dtype(input, FLOATING | {torch.int64}, "slow_conv_transpose2d_out_cpu")
        return nn.conv_transpose_forward(x, w, b, stride, padding, output_padding, dilation, groups)
    return nn.conv_forward(x, w, b, stride, padding, dilation, groups)


@define("convolution_backward_overrideable", "convolution_backward_overrideable.out",
        ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="slow_conv2d_backward_cpu")
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
# normalization


def _bn(input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
        running_mean: torch.Tensor | None, running_var: torch.Tensor | None, training: bool,
        momentum: float, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # running statistics are updated in place through the aliasing NumPy views
    return nn.batch_norm(to_numpy(input), _arr(weight), _arr(bias), _arr(running_mean),
                         _arr(running_var), training, momentum, eps)


@define("native_batch_norm", "native_batch_norm.out", ("out", "save_mean", "save_invstd"),
        dtypes=FLOATING, kernel_name="batch_norm")
def native_batch_norm(input: torch.Tensor, weight: torch.Tensor | None,
                      bias: torch.Tensor | None, running_mean: torch.Tensor | None,
                      running_var: torch.Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _bn(input, weight, bias, running_mean, running_var, training, momentum, eps)


@define("_native_batch_norm_legit", "_native_batch_norm_legit.out",
        ("out", "save_mean", "save_invstd"),
        dtypes=FLOATING, kernel_name="batch_norm")
def native_batch_norm_legit(input: torch.Tensor, weight: torch.Tensor | None,
                            bias: torch.Tensor | None, running_mean: torch.Tensor,
                            running_var: torch.Tensor, training: bool, momentum: float,
                            eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _bn(input, weight, bias, running_mean, running_var, training, momentum, eps)


@define("_native_batch_norm_legit.no_stats", "_native_batch_norm_legit.no_stats_out",
        ("out", "save_mean", "save_invstd"),
        dtypes=FLOATING, kernel_name="batch_norm")
def native_batch_norm_legit_no_stats(input: torch.Tensor, weight: torch.Tensor | None,
                                     bias: torch.Tensor | None, training: bool, momentum: float,
                                     eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _bn(input, weight, bias, None, None, training, momentum, eps)


@define("_native_batch_norm_legit_no_training", "_native_batch_norm_legit_no_training.out",
        ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="batch_norm")
def native_batch_norm_legit_no_training(input: torch.Tensor, weight: torch.Tensor | None,
                                        bias: torch.Tensor | None, running_mean: torch.Tensor,
                                        running_var: torch.Tensor, momentum: float, eps: float
                                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _bn(input, weight, bias, running_mean, running_var, False, momentum, eps)


@define("native_batch_norm_backward", "native_batch_norm_backward.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="batch_norm_backward_cpu")
def native_batch_norm_backward(grad_out: torch.Tensor, input: torch.Tensor,
                               weight: torch.Tensor | None, running_mean: torch.Tensor | None,
                               running_var: torch.Tensor | None, save_mean: torch.Tensor | None,
                               save_invstd: torch.Tensor | None, train: bool, eps: float,
                               output_mask: list[bool]) -> tuple[Any, Any, Any]:
    return nn.batch_norm_backward(to_numpy(grad_out), to_numpy(input), _arr(weight),
                                  _arr(running_mean), _arr(running_var), _arr(save_mean),
                                  _arr(save_invstd), train, eps, output_mask)


@define("native_layer_norm", "native_layer_norm.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="LayerNormKernelImpl")
def native_layer_norm(input: torch.Tensor, normalized_shape: list[int],
                      weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return nn.layer_norm(to_numpy(input), normalized_shape, _arr(weight), _arr(bias), eps)


@define("native_layer_norm_backward", "native_layer_norm_backward.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="LayerNormBackwardKernelImpl")
def native_layer_norm_backward(grad_out: torch.Tensor, input: torch.Tensor,
                               normalized_shape: list[int], mean: torch.Tensor,
                               rstd: torch.Tensor, weight: torch.Tensor | None,
                               bias: torch.Tensor | None, output_mask: list[bool]
                               ) -> tuple[Any, Any, Any]:
    return nn.layer_norm_backward(to_numpy(grad_out), to_numpy(input), normalized_shape,
                                  to_numpy(mean), to_numpy(rstd), _arr(weight), _arr(bias),
                                  output_mask)


@define("native_group_norm", "native_group_norm.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="GroupNormKernelImpl")
def native_group_norm(input: torch.Tensor, weight: torch.Tensor | None,
                      bias: torch.Tensor | None, N: int, C: int, HxW: int, group: int,
                      eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if C % group:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={group}"
        )
    return nn.group_norm(to_numpy(input), _arr(weight), _arr(bias), N, C, HxW, group, eps)


@define("native_group_norm_backward", "native_group_norm_backward.out", ("out0", "out1", "out2"),
        dtypes=FLOATING, kernel_name="GroupNormBackwardKernelImpl")
def native_group_norm_backward(grad_out: torch.Tensor, input: torch.Tensor, mean: torch.Tensor,
                               rstd: torch.Tensor, weight: torch.Tensor | None, N: int, C: int,
                               HxW: int, group: int, output_mask: list[bool]
                               ) -> tuple[Any, Any, Any]:
    return nn.group_norm_backward(to_numpy(grad_out), to_numpy(input), to_numpy(mean),
                                  to_numpy(rstd), _arr(weight), N, C, HxW, group, output_mask)


# --------------------------------------------------------------------------------------------
# pooling


@define("max_pool2d_with_indices", "max_pool2d_with_indices.out", ("out", "indices"),
        dtypes=REAL, kernel_name="max_pool2d")
def max_pool2d_with_indices(self: torch.Tensor, kernel_size: list[int], stride: list[int] = (),
                            padding: list[int] = (0,), dilation: list[int] = (1,),
                            ceil_mode: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return nn.max_pool2d_with_indices(to_numpy(self), kernel_size, stride, padding, dilation,
                                      ceil_mode)


@define("max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward.grad_input",
        ("grad_input",),
        dtypes=FLOATING, kernel_name="max_pool2d_backward")
def max_pool2d_with_indices_backward(grad_output: torch.Tensor, self: torch.Tensor,
                                     kernel_size: list[int], stride: list[int],
                                     padding: list[int], dilation: list[int], ceil_mode: bool,
                                     indices: torch.Tensor) -> np.ndarray:
    return nn.max_pool2d_with_indices_backward(to_numpy(grad_output), to_numpy(self), kernel_size,
                                               stride, padding, dilation, ceil_mode,
                                               to_numpy(indices))


@define("avg_pool2d", "avg_pool2d.out",
        dtypes=FLOATING | {torch.int64})
def avg_pool2d(self: torch.Tensor, kernel_size: list[int], stride: list[int] = (),
               padding: list[int] = (0,), ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> np.ndarray:
    return nn.avg_pool2d(to_numpy(self), kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override)


@define("avg_pool2d_backward", "avg_pool2d_backward.grad_input", ("grad_input",),
        dtypes=FLOATING | {torch.int64})
def avg_pool2d_backward(grad_output: torch.Tensor, self: torch.Tensor, kernel_size: list[int],
                        stride: list[int], padding: list[int], ceil_mode: bool,
                        count_include_pad: bool, divisor_override: int | None) -> np.ndarray:
    return nn.avg_pool2d_backward(to_numpy(grad_output), to_numpy(self), kernel_size, stride,
                                  padding, ceil_mode, count_include_pad, divisor_override)


@define("_adaptive_avg_pool2d", "_adaptive_avg_pool2d.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool2d")
def adaptive_avg_pool2d(self: torch.Tensor, output_size: list[int]) -> np.ndarray:
    return nn.adaptive_avg_pool2d(to_numpy(self), output_size)


@define("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool2d_backward_cpu")
def adaptive_avg_pool2d_backward(grad_output: torch.Tensor, self: torch.Tensor) -> np.ndarray:
    return nn.adaptive_avg_pool2d_backward(to_numpy(grad_output), to_numpy(self))


@define("max_pool3d_with_indices", "max_pool3d_with_indices.out", ("out", "indices"),
        dtypes=REAL, kernel_name="max_pool3d")
def max_pool3d_with_indices(self: torch.Tensor, kernel_size: list[int], stride: list[int] = (),
                            padding: list[int] = (0,), dilation: list[int] = (1,),
                            ceil_mode: bool = False) -> tuple[np.ndarray, np.ndarray]:
    return nn.max_pool_with_indices(to_numpy(self), 3, kernel_size, stride, padding, dilation,
                                    ceil_mode)


@define("max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward.grad_input",
        ("grad_input",),
        dtypes=FLOATING, kernel_name="max_pool3d_backward")
def max_pool3d_with_indices_backward(grad_output: torch.Tensor, self: torch.Tensor,
                                     kernel_size: list[int], stride: list[int],
                                     padding: list[int], dilation: list[int], ceil_mode: bool,
                                     indices: torch.Tensor) -> np.ndarray:
    return nn.max_pool_with_indices_backward(to_numpy(grad_output), to_numpy(self), 3,
                                             kernel_size, stride, padding, dilation, ceil_mode,
                                             to_numpy(indices))


@define("avg_pool3d", "avg_pool3d.out",
        dtypes=frozenset({torch.float32, torch.float64, torch.int64}),
        kernel_name="avg_pool3d_out_frame")
def avg_pool3d(self: torch.Tensor, kernel_size: list[int], stride: list[int] = (),
               padding: list[int] = (0,), ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> np.ndarray:
    return nn.avg_pool(to_numpy(self), 3, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)


@define("avg_pool3d_backward", "avg_pool3d_backward.grad_input", ("grad_input",),
        dtypes=frozenset({torch.float32, torch.float64, torch.int64}),
        kernel_name="avg_pool3d_out_frame")
def avg_pool3d_backward(grad_output: torch.Tensor, self: torch.Tensor, kernel_size: list[int],
                        stride: list[int], padding: list[int], ceil_mode: bool,
                        count_include_pad: bool, divisor_override: int | None) -> np.ndarray:
    return nn.avg_pool_backward(to_numpy(grad_output), to_numpy(self), 3, kernel_size, stride,
                                padding, ceil_mode, count_include_pad, divisor_override)


@define("_adaptive_avg_pool3d", "_adaptive_avg_pool3d.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool3d_cpu")
def adaptive_avg_pool3d(self: torch.Tensor, output_size: list[int]) -> np.ndarray:
    return nn.adaptive_avg_pool(to_numpy(self), output_size)


@define("_adaptive_avg_pool3d_backward", "_adaptive_avg_pool3d_backward.out",
        dtypes=FLOATING, kernel_name="adaptive_avg_pool3d_backward_cpu")
def adaptive_avg_pool3d_backward(grad_output: torch.Tensor, self: torch.Tensor) -> np.ndarray:
    return nn.adaptive_avg_pool_backward(to_numpy(grad_output), to_numpy(self), 3)


# --------------------------------------------------------------------------------------------
# softmax family


def _softmax_result(x: np.ndarray, half_to_float: bool) -> np.ndarray:
    if half_to_float:
        if x.dtype not in (NP_DTYPE[torch.float16], NP_DTYPE[torch.bfloat16]):
            raise RuntimeError("conversion is supported for Half type only")
        return x.astype(np.float32)
    return x


def _dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n if ndim else 0


@define("_softmax", "_softmax.out",
        dtypes=FLOATING, kernel_name="softmax_kernel_impl")
def softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> np.ndarray:
    x = to_numpy(self)
    return _softmax_result(nn.softmax(x, _dim(dim, x.ndim)), half_to_float)


@define("_log_softmax", "_log_softmax.out",
        dtypes=FLOATING, kernel_name="log_softmax_kernel_impl")
def log_softmax(self: torch.Tensor, dim: int, half_to_float: bool) -> np.ndarray:
    x = to_numpy(self)
    return _softmax_result(nn.log_softmax(x, _dim(dim, x.ndim)), half_to_float)


@define("_softmax_backward_data", "_softmax_backward_data.out", ("grad_input",),
        dtypes=FLOATING, kernel_name="softmax_backward_kernel_impl")
def softmax_backward_data(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                          input_dtype: torch.dtype) -> np.ndarray:
    y = to_numpy(output)
    g = nn.softmax_backward(to_numpy(grad_output), y, _dim(dim, y.ndim))
    return g.astype(NP_DTYPE[input_dtype], copy=False)


@define("_log_softmax_backward_data", "_log_softmax_backward_data.out",
        dtypes=FLOATING, kernel_name="log_softmax_backward_kernel_impl")
def log_softmax_backward_data(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                              input_dtype: torch.dtype) -> np.ndarray:
    y = to_numpy(output)
    g = nn.log_softmax_backward(to_numpy(grad_output), y, _dim(dim, y.ndim))
    return g.astype(NP_DTYPE[input_dtype], copy=False)


# --------------------------------------------------------------------------------------------
# activations


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return np.maximum(x, np.zeros((), x.dtype))


@define("relu", "relu.out")
def relu(self: torch.Tensor) -> np.ndarray:
    return _relu(to_numpy(self))


@register("relu_")
def relu_(self: torch.Tensor) -> torch.Tensor:
    return write_inplace(self, _relu(to_numpy(self)))


def _threshold(x: np.ndarray, threshold: Any, value: Any) -> np.ndarray:
    return np.where(x <= threshold, np.asarray(value).astype(x.dtype), x)


@define("threshold", "threshold.out",
        dtypes=REAL, kernel_name="threshold_cpu")
def threshold(self: torch.Tensor, threshold: Any, value: Any) -> np.ndarray:
    return _threshold(to_numpy(self), *real_scalars((threshold, value), self.dtype))


@register("threshold_")
def threshold_(self: torch.Tensor, threshold: Any, value: Any) -> torch.Tensor:
    check_dtype(self, REAL, "threshold_cpu")
    threshold, value = real_scalars((threshold, value), self.dtype)
    return write_inplace(self, _threshold(to_numpy(self), threshold, value))


@define("threshold_backward", "threshold_backward.grad_input", ("grad_input",),
        dtypes=REAL, kernel_name="threshold_cpu", dtype_args=(0, 1))
def threshold_backward(grad_output: torch.Tensor, self: torch.Tensor, threshold: Any
                       ) -> np.ndarray:
    check_same_shape_or_broadcast(grad_output, self)
    return nn.threshold_backward(to_numpy(grad_output), to_numpy(self), threshold)


@define("gelu", "gelu.out",
        dtypes=FLOATING, kernel_name="GeluKernelImpl")
def gelu(self: torch.Tensor, *, approximate: str = "none") -> np.ndarray:
    return nn.gelu(to_numpy(self), approximate)


@register("gelu_")
def gelu_(self: torch.Tensor, *, approximate: str = "none") -> torch.Tensor:
    check_dtype(self, FLOATING, "GeluKernelImpl")
    with np.errstate(all="ignore"):
        return write_inplace(self, nn.gelu(to_numpy(self), approximate))


@define("gelu_backward", "gelu_backward.grad_input", ("grad_input",),
        dtypes=FLOATING, kernel_name="GeluBackwardKernelImpl", dtype_args=(0, 1))
def gelu_backward(grad_output: torch.Tensor, self: torch.Tensor, *, approximate: str = "none"
                  ) -> np.ndarray:
    check_same_shape_or_broadcast(grad_output, self)
    return nn.gelu_backward(to_numpy(grad_output), to_numpy(self), approximate)


# --------------------------------------------------------------------------------------------
# dropout and embedding


@define("native_dropout", "native_dropout.out", ("out0", "out1"))
def native_dropout(input: torch.Tensor, p: float, train: bool | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    if input.numel() and (train is None or train) and input.dtype not in FLOATING | COMPLEX:
        # CPU multiplies by a float scale in place: its "can't be cast" refusal
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type "
            f"{scalar_type_name(input.dtype)}"
        )
    return nn.native_dropout(to_numpy(input), p, train, _device.generator())


@define("native_dropout_backward", "native_dropout_backward.out")
def native_dropout_backward(grad_output: torch.Tensor, mask: torch.Tensor, scale: float
                            ) -> np.ndarray:
    g = to_numpy(grad_output)
    if grad_output.dtype not in FLOATING | COMPLEX:  # grad * mask * scale: a float scale wins
        g = g.astype(NP_DTYPE[torch.get_default_dtype()])
    return nn.native_dropout_backward(g, to_numpy(mask), scale)


@define("embedding_dense_backward", "embedding_dense_backward.out")
def embedding_dense_backward(grad_output: torch.Tensor, indices: torch.Tensor, num_weights: int,
                             padding_idx: int, scale_grad_by_freq: bool) -> np.ndarray:
    if indices.dtype not in (torch.int64, torch.int32):
        raise RuntimeError(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {indices.dtype} instead (while checking arguments for "
            "embedding_backward)"
        )
    return nn.embedding_dense_backward(to_numpy(grad_output), to_numpy(indices), num_weights,
                                       padding_idx, scale_grad_by_freq)
