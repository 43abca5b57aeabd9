"""Pointwise activations of ``mlu`` and their ``*_backward`` overloads: one table, one factory.

Each row names an activation, its forward formula and its backward formula (as ATen's CPU kernel
writes them, same comparisons at the boundaries), the scalar arguments both take, and whether an
in-place overload exists. The factory registers ``name``, ``name.out``, ``name_`` and
``name_backward`` / ``name_backward.grad_input`` from that row. float16/bfloat16 compute in float32.
relu/threshold/gelu live in :mod:`kernels.nn_ops` (they have their own overload shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from kernels._define import (
    ScalarConversionError,
    check_same_shape_or_broadcast,
    define,
    plain,
    real_scalars,
)
from kernels._semantics import (
    COMPLEX,
    FLOATING,
    REAL,
    check_dtype,
    check_result_fits,
    checked_scalar,
    opmath,
    scalar_type_name,
    write_inplace,
)
from kernels._tensor import NP_DTYPE, np_dtype, to_numpy
from kernels.reductions import wrap_dim
from kernels.registry import register, resolve_overload

__all__ = ["ACTIVATIONS", "Activation"]

Arr = np.ndarray


def _sigmoid(x: Arr) -> Arr:
    return 1.0 / (1.0 + np.exp(-x))


# --------------------------------------------------------------------------------------------
# formulas: forward(x, *scalars) and backward(grad, x, *scalars)


def _elu(x: Arr, alpha: Any, scale: Any, input_scale: Any) -> Arr:
    # a zero (either sign) takes CPU's positive branch, x * scale: with alpha * scale infinite
    # the other would be 0 * inf = NaN where CPU answers 0
    return np.where(x < 0, np.expm1(x * input_scale) * (alpha * scale), x * scale)


def _elu_bwd(g: Arr, y_or_x: Arr, alpha: Any, scale: Any, input_scale: Any,
             is_result: bool) -> Arr:
    neg = alpha * scale
    if is_result:
        inner = g * input_scale * (y_or_x + neg)
    else:
        inner = g * input_scale * neg * np.exp(y_or_x * input_scale)
    return np.where(y_or_x <= 0, inner, g * scale)


def _hardtanh_scalars(self: torch.Tensor, lo: Any, hi: Any) -> tuple[Any, Any]:
    """ATen's hardtanh_out: integral bounds go through int64 (``toLong``, checked; uint8 refuses
    negative ones), floating bounds through double; then clamp reads them in the dtype."""
    if self.dtype == torch.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        lo, hi = (int(checked_scalar(v, torch.int64)) for v in (lo, hi))
        if self.dtype == torch.uint8 and (lo < 0 or hi < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    else:
        lo, hi = (checked_scalar(v, torch.float64) for v in (lo, hi))
    return checked_scalar(lo, self.dtype), checked_scalar(hi, self.dtype)


def _hardtanh(x: Arr, lo: Any, hi: Any) -> Arr:
    return np.minimum(np.maximum(x, np.asarray(lo, x.dtype)), np.asarray(hi, x.dtype))


def _hardtanh_bwd(g: Arr, x: Arr, lo: Any, hi: Any) -> Arr:
    return np.where((x <= lo) | (x >= hi), np.zeros((), g.dtype), g)


def _leaky_relu(x: Arr, slope: Any) -> Arr:
    return np.where(x > 0, x, x * slope)


def _leaky_relu_bwd(g: Arr, x: Arr, slope: Any, self_is_result: bool) -> Arr:
    if self_is_result and not slope >= 0:  # ATen: TORCH_CHECK(slope >= 0): NaN refused too
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is "
            "not supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
            "backward calculation with negative slope"
        )
    return np.where(x > 0, g, g * slope)


def _silu(x: Arr) -> Arr:
    return x / (1.0 + np.exp(-x))


def _silu_bwd(g: Arr, x: Arr) -> Arr:
    s = _sigmoid(x)
    return g * s * (1.0 + x * (1.0 - s))


def _softplus(x: Arr, beta: Any, threshold: Any) -> Arr:
    xb = x * beta
    return np.where(xb > threshold, x, np.log1p(np.exp(xb)) / beta)


def _softplus_bwd(g: Arr, x: Arr, beta: Any, threshold: Any) -> Arr:
    xb = x * beta
    z = np.exp(xb)
    return np.where(xb > threshold, g, g * z / (z + 1.0))


def _hardsigmoid(x: Arr) -> Arr:
    return np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _hardsigmoid_bwd(g: Arr, x: Arr) -> Arr:
    return np.where((x > -3.0) & (x < 3.0), g / 6.0, np.zeros((), g.dtype))


def _hardswish(x: Arr) -> Arr:
    return x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0


def _hardswish_bwd(g: Arr, x: Arr) -> Arr:
    return np.where(x <= -3.0, np.zeros((), g.dtype),
                    np.where(x < 3.0, g * (x / 3.0 + 0.5), g))


def _mish(x: Arr) -> Arr:
    return x * np.tanh(np.log1p(np.exp(x)))


def _mish_bwd(g: Arr, x: Arr) -> Arr:
    # tanh(softplus(x)) and x * sigmoid(x) * sech^2 cancel near x = -1.2 (0.237 - 0.262 at
    # x = -1.31): evaluated in float32 their rounding is ten times the result's ulp, so a
    # float32 result is computed in double and rounded once
    wide = np.result_type(g, x)
    if wide == np.float32:
        g, x = g.astype(np.float64), x.astype(np.float64)
    t = np.tanh(np.log1p(np.exp(x)))
    return (g * (t + x * _sigmoid(x) * (1.0 - t * t))).astype(wide, copy=False)


@dataclass(frozen=True)
class Activation:
    name: str
    forward: Callable[..., Arr]
    backward: Callable[..., Arr] | None
    inplace: bool = True
    #: backward overload and its out= name (None: ``name_backward`` + ``.grad_input``)
    backward_names: tuple[str, str] | None = None
    #: the backward's extra (non-scalar) schema arguments after the scalars, e.g. ``is_result``
    backward_flags: int = 0
    #: dtypes CPU's kernels accept
    dtypes: frozenset[torch.dtype] = FLOATING
    #: how the kernel reads its Scalar arguments (``scalars(self, *values)``, raising CPU's
    #: refusals); None: in the opmath type of the dtype (``real_scalars``)
    scalars: Callable[..., tuple[Any, ...]] | None = None
    #: the backward's result is allocated like ``self`` (``mish_backward``): the promoted type
    #: must cast to ``self``'s dtype, which the result keeps
    backward_like_self: bool = False


ACTIVATIONS = (
    Activation("elu", _elu, None),  # elu_backward has its own argument order, below
    # bool and uint8 reach _hardtanh_check, which refuses them with CPU's own messages
    Activation("hardtanh", _hardtanh, _hardtanh_bwd, dtypes=REAL | {torch.bool},
               scalars=_hardtanh_scalars),
    Activation("leaky_relu", _leaky_relu, _leaky_relu_bwd, backward_flags=1),
    Activation("silu", _silu, _silu_bwd, dtypes=FLOATING | COMPLEX),
    Activation("softplus", _softplus, _softplus_bwd, inplace=False),
    Activation("hardsigmoid", _hardsigmoid, _hardsigmoid_bwd),
    Activation("hardswish", _hardswish, _hardswish_bwd,
               backward_names=("hardswish_backward", "hardswish_backward.out")),
    Activation("mish", _mish, _mish_bwd, backward_names=("mish_backward", None),  # type: ignore[arg-type]
               backward_like_self=True),
)


def _defaults(name: str) -> tuple[Any, ...]:
    """Default values of the scalar arguments after ``self`` (the dispatcher omits trailing ones
    the caller left at their defaults)."""
    return tuple(a.default_value for a in resolve_overload(name)._schema.arguments[1:]
                 if not a.kwarg_only)


def _make(act: Activation) -> None:
    defaults = _defaults(act.name)

    def forward_arrays(self: torch.Tensor, *scalars: Any) -> Arr:
        if act.name == "hardtanh":  # CPU's hardtanh is clamp: dtype checks before anything
            check_dtype(act.name, self.dtype, allowed=act.dtypes)
        scalars = scalars + defaults[len(scalars):]
        scalars = act.scalars(self, *scalars) if act.scalars is not None else \
            real_scalars(scalars, self.dtype)
        x = to_numpy(self)
        return act.forward(opmath(x), *scalars).astype(x.dtype, copy=False)

    forward_arrays.__name__ = act.name
    define(act.name, f"{act.name}.out", dtypes=act.dtypes)(forward_arrays)
    if act.inplace:
        def inplace(self: torch.Tensor, *scalars: Any) -> torch.Tensor:
            check_dtype(act.name, self.dtype, allowed=act.dtypes)
            with np.errstate(all="ignore"):
                try:
                    value = forward_arrays(self, *scalars)
                except ScalarConversionError as exc:
                    raise plain(exc) from None
                return write_inplace(self, value)

        inplace.__name__ = inplace.__qualname__ = act.name + "_"
        register(act.name + "_")(inplace)
    if act.backward is None:
        return
    bwd_fn = act.backward

    def backward_arrays(grad_output: torch.Tensor, self: torch.Tensor, *rest: Any) -> Arr:
        check_same_shape_or_broadcast(grad_output, self)
        g, x = to_numpy(grad_output), to_numpy(self)
        promoted = torch.result_type(grad_output, self)
        dtype = np_dtype(promoted)
        if act.backward_like_self:
            check_result_fits(promoted, self.dtype)
            dtype = NP_DTYPE[self.dtype]
        rest = real_scalars(rest, promoted)
        # TensorIterator casts both to the common dtype first (an int8 self of a bfloat16 grad
        # is read as bfloat16): a Python-number scalar then meets floats, never int8
        common = np_dtype(promoted)
        return bwd_fn(opmath(g.astype(common, copy=False)), opmath(x.astype(common, copy=False)),
                      *rest).astype(dtype, copy=False)

    backward_arrays.__name__ = act.name + "_backward"
    names = act.backward_names or (f"{act.name}_backward", f"{act.name}_backward.grad_input")
    out_arg = "out" if names[1] and names[1].endswith(".out") else "grad_input"
    define(names[0], names[1], (out_arg,), dtypes=act.dtypes & (FLOATING | COMPLEX),
           dtype_args=(0, 1), castable_out=out_arg == "grad_input")(backward_arrays)


for _act in ACTIVATIONS:
    _make(_act)


@define("elu_backward", "elu_backward.grad_input", ("grad_input",), dtypes=FLOATING,
        dtype_args=(0, 5), castable_out=True)
def elu_backward(grad_output: torch.Tensor, alpha: Any, scale: Any, input_scale: Any,
                 is_result: bool, self_or_result: torch.Tensor) -> Arr:
    if is_result and float(alpha.real if isinstance(alpha, complex) else alpha) < 0:
        raise RuntimeError(  # ATen's elu_backward meta, its first check
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead.")
    check_same_shape_or_broadcast(grad_output, self_or_result)
    g, x = to_numpy(grad_output), to_numpy(self_or_result)
    promoted = torch.result_type(grad_output, self_or_result)
    dtype = np_dtype(promoted)
    alpha, scale, input_scale = real_scalars((alpha, scale, input_scale), promoted)
    return _elu_bwd(opmath(g), opmath(x), alpha, scale, input_scale, is_result).astype(dtype)


@define("sigmoid_backward", "sigmoid_backward.grad_input", ("grad_input",),
        dtypes=FLOATING | COMPLEX, kernel_name="sigmoid_backward_cpu", dtype_args=(0, 1),
        castable_out=True)
def sigmoid_backward(grad_output: torch.Tensor, output: torch.Tensor) -> Arr:
    check_same_shape_or_broadcast(grad_output, output)
    g, y = to_numpy(grad_output), to_numpy(output)
    dtype = np_dtype(torch.result_type(grad_output, output))
    gf, yf = opmath(g), opmath(y)
    if dtype == np.float16:  # CPU's Half kernel rounds each operation to half
        one_minus = (1.0 - yf).astype(dtype).astype(np.float32)
        return ((gf * one_minus).astype(dtype).astype(np.float32) * yf).astype(dtype)
    if gf.dtype.kind != "c" and yf.dtype.kind != "c":  # CPU's order: (g * (1 - y)) * y
        return (gf * (1.0 - yf) * yf).astype(dtype, copy=False)
    return (gf * np.conj((1.0 - yf) * yf)).astype(dtype, copy=False)


def _one_minus_square(y: Arr) -> Arr:
    """``1 - y * y`` rounded once, as CPU's fused multiply-add computes it: near |y| = 1 the
    difference cancels, and rounding ``y * y`` first loses its low bits (a float32 ``1 - y * y``
    at y = 0.98833 is off by 1.3e-6 relative; CPU's is correctly rounded)."""
    if y.dtype == np.float32:  # y * y is exact in float64, and so is 1 - y * y for |y| >= 0.5
        return (1.0 - np.square(y.astype(np.float64))).astype(np.float32)
    if y.dtype != np.float64:
        return 1.0 - y * y
    # Dekker's product: p + e == y * y exactly (Veltkamp's split, finite below 2**996); for
    # |y| in [0.5, 2] 1 - p is exact, so one rounding remains
    p = y * y
    split = y * 134217729.0  # 2**27 + 1
    hi = split - (split - y)
    lo = y - hi
    e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    fused = (1.0 - p) - e
    return np.where(np.isfinite(fused), fused, 1.0 - p)


@define("tanh_backward", "tanh_backward.grad_input", ("grad_input",),
        dtypes=FLOATING | COMPLEX, kernel_name="tanh_backward_cpu", dtype_args=(0, 1),
        castable_out=True)
def tanh_backward(grad_output: torch.Tensor, output: torch.Tensor) -> Arr:
    check_same_shape_or_broadcast(grad_output, output)
    g, y = to_numpy(grad_output), to_numpy(output)
    dtype = np_dtype(torch.result_type(grad_output, output))
    gf, yf = opmath(g), opmath(y)
    if yf.dtype.kind == "c":
        return (gf * np.conj(1.0 - yf * yf)).astype(dtype, copy=False)
    with np.errstate(all="ignore"):
        return (gf * _one_minus_square(yf)).astype(dtype, copy=False)


@define("log_sigmoid_forward", "log_sigmoid_forward.output", ("output", "buffer"),
        dtypes=FLOATING, silent_resize=True)  # log_sigmoid_forward_out_cpu: resize_as_
def log_sigmoid_forward(self: torch.Tensor) -> tuple[Arr, Arr]:
    x = to_numpy(self)
    xf = opmath(x)
    z = np.exp(-np.abs(xf))
    out = np.minimum(xf, 0.0) - np.log1p(z)
    return out.astype(x.dtype, copy=False), z.astype(x.dtype, copy=False)


@define("log_sigmoid_backward", "log_sigmoid_backward.grad_input", ("grad_input",),
        dtypes=FLOATING)
def log_sigmoid_backward(grad_output: torch.Tensor, self: torch.Tensor, buffer: torch.Tensor
                         ) -> Arr:
    _same_dtype(grad_output, self, buffer)
    g, x, z = (opmath(to_numpy(t)) for t in (grad_output, self, buffer))
    neg = x < 0
    res = g * (np.where(neg, 1.0, 0.0) - np.where(neg, 1.0, -1.0) * (z / (1.0 + z)))
    return res.astype(to_numpy(self).dtype, copy=False)


def _glu_halves(x: Arr, dim: int) -> tuple[Arr, Arr]:
    if x.ndim == 0:
        raise RuntimeError("glu does not support 0-dimensional tensors")
    # ATen's glu meta and glu_backward_cpu_out wrap dim (IndexError) before the halving check
    dim = wrap_dim(dim, x.ndim)
    if x.shape[dim] % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim} is size {x.shape[dim]}"
        )
    a, b = np.split(x, 2, axis=dim)
    return a, b


@define("glu", "glu.out", dtypes=FLOATING, kernel_name="glu_cpu", castable_out=True)
def glu(self: torch.Tensor, dim: int = -1) -> Arr:
    x = to_numpy(self)
    a, b = _glu_halves(opmath(x), dim)
    return (a * _sigmoid(b)).astype(x.dtype, copy=False)


@define("glu_backward", "glu_backward.grad_input", ("grad_input",), dtypes=FLOATING,
        silent_resize=True)  # glu_backward_cpu_out: grad_input.resize_as_(input)
def glu_backward(grad_output: torch.Tensor, self: torch.Tensor, dim: int) -> Arr:
    x = to_numpy(self)
    g = opmath(to_numpy(grad_output))
    a, b = _glu_halves(opmath(x), dim)
    if grad_output.dtype != self.dtype:  # TensorIterator over the halves and grad_output
        raise RuntimeError(f"Found dtype {scalar_type_name(grad_output.dtype)} but expected "
                           f"{scalar_type_name(self.dtype)}")
    s = _sigmoid(b)
    ga = g * s
    gb = g * a * s * (1.0 - s)
    return np.concatenate([ga, gb], axis=wrap_dim(dim, x.ndim)).astype(x.dtype, copy=False)


def _same_dtype(expected: torch.Tensor, *others: torch.Tensor) -> None:
    for t in others:
        if t.dtype != expected.dtype:
            raise RuntimeError(
                f"Found dtype {scalar_type_name(t.dtype)} but expected "
                f"{scalar_type_name(expected.dtype)}"
            )


@define("_prelu_kernel", dtypes=FLOATING, kernel_name="prelu_cpu")
def prelu_kernel(self: torch.Tensor, weight: torch.Tensor) -> Arr:
    _same_dtype(self, weight)
    x, w = to_numpy(self), to_numpy(weight)
    xf = opmath(x)
    return np.where(xf > 0, xf, opmath(w) * xf).astype(np.result_type(x, w), copy=False)


@define("_prelu_kernel_backward", dtypes=FLOATING, kernel_name="prelu_backward_cpu")
def prelu_kernel_backward(grad_output: torch.Tensor, self: torch.Tensor, weight: torch.Tensor
                          ) -> tuple[Arr, Arr]:
    _same_dtype(grad_output, self, weight)
    g, x, w = (opmath(to_numpy(t)) for t in (grad_output, self, weight))
    dtype = np.result_type(to_numpy(self), to_numpy(weight))
    pos = x > 0
    gi = np.where(pos, g, w * g)
    gw = np.where(pos, np.zeros((), g.dtype), x * g)
    shape = np.broadcast_shapes(x.shape, w.shape)
    return (np.broadcast_to(gi, shape).astype(dtype), np.broadcast_to(gw, shape).astype(dtype))
