"""Neural-network kernels of the reference backend, in plain NumPy.

Each function here takes and returns ``numpy.ndarray`` objects and knows nothing about torch; the
registrations that bind them to ATen overloads for the ``mlu`` device live in
:mod:`kernels.nn_ops`. Keeping the maths torch-free lets the tests compare each function with
torch's CPU kernel directly, and lets a backend team read the algorithms without the plumbing.

Everything is vectorized. The only Python loops run over a kernel window (col2im, pooling), which
is what NumPy leaves us: convolution is im2col (a strided view, :func:`as_strided`) followed by one
batched GEMM over the groups (``np.matmul``), so the heavy lifting is float32 BLAS.

Half-precision inputs (float16, bfloat16) are computed in float32 and rounded once at the end, as
torch's CPU kernels do with their "opmath" type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import product
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from kernels._semantics import opmath

__all__ = [
    "adaptive_avg_pool",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool_backward",
    "adaptive_avg_pool2d_backward",
    "avg_pool",
    "avg_pool2d",
    "avg_pool_backward",
    "avg_pool2d_backward",
    "batch_norm",
    "batch_norm_backward",
    "conv_backward",
    "conv_forward",
    "conv_transpose_backward",
    "conv_transpose_forward",
    "embedding_dense_backward",
    "gelu",
    "group_norm",
    "group_norm_backward",
    "gelu_backward",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "max_pool_with_indices",
    "max_pool_with_indices_backward",
    "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward",
    "native_dropout",
    "native_dropout_backward",
    "nll_loss_backward",
    "nll_loss_forward",
    "pooling_output_size",
    "softmax",
    "softmax_backward",
    "threshold_backward",
    "zero_where",
]

Ints = Sequence[int]


# --------------------------------------------------------------------------------------------
# helpers


def _expand(v: Ints | int, n: int, name: str) -> tuple[int, ...]:
    if isinstance(v, int):
        return (v,) * n
    t = tuple(int(i) for i in v)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values")
    return t


def _pad_spatial(
    x: np.ndarray, before: Ints, after: Ints | None = None, value: float = 0
) -> np.ndarray:
    """Pad the trailing ``len(before)`` axes of ``x``; no copy when nothing is padded."""
    after = before if after is None else after
    nd = len(before)
    if not any(before) and not any(after):
        return x
    width = [(0, 0)] * (x.ndim - nd) + list(zip(before, after, strict=True))
    return np.pad(x, width, constant_values=value)


def _window_slice(start: int, step: int, count: int) -> slice:
    """``count`` positions ``start, start + step, ...``."""
    return slice(start, start + step * (count - 1) + 1, step)


# --------------------------------------------------------------------------------------------
# convolution (any number of spatial dims): channels-last im2col + one batched GEMM
#
# The input is copied once into a zero-padded channels-last buffer (N, *S, C). A window view of it
# (as_strided) then has the channels innermost, so the im2col copy moves contiguous runs of C
# floats instead of gathering single elements -- 3-10x faster than im2col on NCHW. Columns are
# ordered (*k, Cg); weights are reordered to match once per call (they are small).


def _channels_last_padded(x: np.ndarray, padding: Ints, extra: Ints | None = None) -> np.ndarray:
    """``x (N, C, *S)`` -> zero-padded ``(N, *(S + 2p [+ extra]), C)``."""
    nd = x.ndim - 2
    extra = extra or (0,) * nd
    shape = (x.shape[0], *(x.shape[2 + i] + 2 * padding[i] + extra[i] for i in range(nd)), x.shape[1])
    if not any(padding) and not any(extra):
        return np.ascontiguousarray(np.moveaxis(x, 1, -1))
    xp = np.zeros(shape, dtype=x.dtype)
    inner = tuple(slice(p, p + s) for p, s in zip(padding, x.shape[2:], strict=True))
    idx: tuple[slice, ...] = (slice(None), *inner)
    xp[idx] = np.moveaxis(x, 1, -1)
    return xp


def _im2col(
    xp: np.ndarray, k: Ints, stride: Ints, dilation: Ints, groups: int
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Columns of a padded channels-last input: ``(G, N*prod(out), prod(k)*C/G)``."""
    nd = len(k)
    n, c = xp.shape[0], xp.shape[-1]
    cg = c // groups
    spatial = xp.shape[1:-1]
    out = tuple((spatial[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd))
    if min(out, default=1) <= 0:
        raise RuntimeError("convolution: kernel size can't be greater than the padded input size")
    st = xp.strides
    view = as_strided(
        xp,
        (n, *out, *k, groups, cg),
        (
            st[0],
            *(st[1 + i] * stride[i] for i in range(nd)),
            *(st[1 + i] * dilation[i] for i in range(nd)),
            st[-1] * cg,
            st[-1],
        ),
        writeable=False,
    )
    m, kk = n * math.prod(out), math.prod(k) * cg
    if groups == 1:
        return view.reshape(1, m, kk), out
    g_axis = 1 + 2 * nd
    return np.moveaxis(view, g_axis, 0).reshape(groups, m, kk), out


def _col2im(
    dcols: np.ndarray,
    n: int,
    padded: Ints,
    k: Ints,
    stride: Ints,
    dilation: Ints,
    groups: int,
    out: Ints,
) -> np.ndarray:
    """Adjoint of :func:`_im2col`: scatter-add ``(G, M, prod(k)*Cg)`` columns into a padded
    channels-last ``(N, *padded, G*Cg)`` buffer (one strided add per kernel offset)."""
    nd = len(k)
    cg = dcols.shape[2] // math.prod(k)
    d = dcols.reshape(groups, n, *out, *k, cg)
    # kernel offsets first, groups next to their channels: every add below reads contiguously
    d = np.ascontiguousarray(
        d.transpose(*range(2 + nd, 2 + 2 * nd), 1, *range(2, 2 + nd), 0, 2 + 2 * nd)
    )
    gx = np.zeros((n, *padded, groups, cg), dtype=dcols.dtype)
    for kidx in product(*(range(s) for s in k)):
        sl = tuple(_window_slice(kidx[i] * dilation[i], stride[i], out[i]) for i in range(nd))
        idx: tuple[slice, ...] = (slice(None), *sl)
        gx[idx] += d[kidx]
    return gx.reshape(n, *padded, groups * cg)


def _weight_cols(weight: np.ndarray, groups: int) -> np.ndarray:
    """Conv weight ``(O, Cg, *k)`` -> ``(G, prod(k)*Cg, O/G)`` in the column order of im2col."""
    o, cg = weight.shape[:2]
    w = np.moveaxis(weight.reshape(groups, o // groups, cg, -1), 2, 3)  # (G, Og, prod k, Cg)
    return w.reshape(groups, o // groups, -1).transpose(0, 2, 1)


def _weight_from_cols(wcols: np.ndarray, shape: Ints) -> np.ndarray:
    """Inverse of :func:`_weight_cols` for a gradient ``(G, Og, prod(k)*Cg)``."""
    g, og, _ = wcols.shape
    cg = shape[1]
    w = wcols.reshape(g, og, -1, cg)
    return np.ascontiguousarray(np.moveaxis(w, 3, 2)).reshape(shape)


def _to_cols(y: np.ndarray, groups: int) -> np.ndarray:
    """``(N, C, *S)`` -> ``(G, N*prod(S), C/G)``."""
    n, c = y.shape[:2]
    s = math.prod(y.shape[2:])
    return y.reshape(n, groups, c // groups, s).transpose(1, 0, 3, 2).reshape(groups, n * s, -1)


def _from_cols(y: np.ndarray, n: int, spatial: Ints) -> np.ndarray:
    """``(G, N*prod(S), Cg)`` -> contiguous ``(N, G*Cg, *S)``."""
    g, _, cg = y.shape
    y = y.reshape(g, n, math.prod(spatial), cg).transpose(1, 0, 3, 2)
    return np.ascontiguousarray(y).reshape(n, g * cg, *spatial)


def _from_channels_last(y: np.ndarray, crop: Ints, size: Ints) -> np.ndarray:
    """Padded ``(N, *Sp, C)`` -> the ``size`` window at ``crop``, as contiguous ``(N, C, *S)``."""
    sl = tuple(slice(p, p + s) for p, s in zip(crop, size, strict=True))
    idx: tuple[slice, ...] = (slice(None), *sl)
    return np.ascontiguousarray(np.moveaxis(y[idx], -1, 1))


def _add_bias(y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    if bias is not None:
        y += bias.astype(y.dtype, copy=False).reshape((1, -1) + (1,) * (y.ndim - 2))
    return y


def _conv_args(
    nd: int, stride: Ints, padding: Ints, dilation: Ints
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return (
        _expand(stride, nd, "stride"),
        _expand(padding, nd, "padding"),
        _expand(dilation, nd, "dilation"),
    )


def conv_forward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
) -> np.ndarray:
    """Convolution (cross-correlation) of ``x (N, C, *S)`` with ``weight (O, C/G, *k)``."""
    nd = x.ndim - 2
    dtype = np.result_type(x, weight)
    x, weight = opmath(x), opmath(weight)
    stride, padding, dilation = _conv_args(nd, stride, padding, dilation)
    cols, out = _im2col(
        _channels_last_padded(x, padding), weight.shape[2:], stride, dilation, groups
    )
    y = _from_cols(np.matmul(cols, _weight_cols(weight, groups)), x.shape[0], out)
    return _add_bias(y, bias).astype(dtype, copy=False)


def conv_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    weight: np.ndarray,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Gradients of :func:`conv_forward` w.r.t. input, weight and bias (``None`` when masked)."""
    nd = x.ndim - 2
    dtype = np.result_type(grad_out, x, weight)
    grad_out, x, weight = opmath(grad_out), opmath(x), opmath(weight)
    stride, padding, dilation = _conv_args(nd, stride, padding, dilation)
    k = weight.shape[2:]
    out = grad_out.shape[2:]
    go_cols = _to_cols(grad_out, groups)  # (G, N*out, Og)
    gi = gw = gb = None
    if output_mask[1]:
        cols, _ = _im2col(_channels_last_padded(x, padding), k, stride, dilation, groups)
        gw = _weight_from_cols(np.matmul(go_cols.transpose(0, 2, 1), cols), weight.shape)
        gw = gw.astype(dtype, copy=False)
    if output_mask[0]:
        dcols = np.matmul(go_cols, _weight_cols(weight, groups).transpose(0, 2, 1))
        padded = tuple(x.shape[2 + i] + 2 * padding[i] for i in range(nd))
        gxp = _col2im(dcols, x.shape[0], padded, k, stride, dilation, groups, out)
        gi = _from_channels_last(gxp, padding, x.shape[2:]).astype(dtype, copy=False)
    if output_mask[2]:
        gb = grad_out.sum(axis=(0, *range(2, grad_out.ndim))).astype(dtype)
    return gi, gw, gb


def _transpose_weight_cols(weight: np.ndarray, groups: int) -> np.ndarray:
    """Transposed-conv weight ``(Cin, Cout/G, *k)`` -> ``(G, Cin/G, prod(k)*Cout/G)``."""
    cin, coutg = weight.shape[:2]
    w = np.moveaxis(weight.reshape(groups, cin // groups, coutg, -1), 2, 3)
    return w.reshape(groups, cin // groups, -1)


def conv_transpose_forward(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    output_padding: Ints,
    dilation: Ints,
    groups: int,
) -> np.ndarray:
    """Transposed convolution of ``x (N, Cin, *S)`` with ``weight (Cin, Cout/G, *k)``."""
    nd = x.ndim - 2
    dtype = np.result_type(x, weight)
    x, weight = opmath(x), opmath(weight)
    stride, padding, dilation = _conv_args(nd, stride, padding, dilation)
    output_padding = _expand(output_padding, nd, "output_padding")
    k = weight.shape[2:]
    s_in = x.shape[2:]
    out = tuple(
        (s_in[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + output_padding[i] + 1
        for i in range(nd)
    )
    dcols = np.matmul(_to_cols(x, groups), _transpose_weight_cols(weight, groups))
    full = tuple(o + 2 * p for o, p in zip(out, padding, strict=True))
    y = _col2im(dcols, x.shape[0], full, k, stride, dilation, groups, s_in)
    y = _from_channels_last(y, padding, out)
    return _add_bias(y, bias).astype(dtype, copy=False)


def conv_transpose_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    weight: np.ndarray,
    stride: Ints,
    padding: Ints,
    output_padding: Ints,
    dilation: Ints,
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Gradients of :func:`conv_transpose_forward`."""
    nd = x.ndim - 2
    dtype = np.result_type(grad_out, x, weight)
    grad_out, x, weight = opmath(grad_out), opmath(x), opmath(weight)
    stride, padding, dilation = _conv_args(nd, stride, padding, dilation)
    k = weight.shape[2:]
    gi = gw = gb = None
    if output_mask[0]:
        # the input gradient of a transposed convolution is the plain convolution, less the
        # windows that start in the output_padding rows (with a stride of 1, output_padding
        # below the dilation adds whole windows past the last input position)
        gi = conv_forward(grad_out, weight, None, stride, padding, dilation, groups)
        crop: tuple[slice, ...] = (slice(None), slice(None),
                                   *(slice(0, s) for s in x.shape[2:]))
        gi = np.ascontiguousarray(gi[crop]).astype(dtype)
    if output_mask[1]:
        gop = _channels_last_padded(grad_out, padding)
        go_cols, out = _im2col(gop, k, stride, dilation, groups)
        s_in = x.shape[2:]
        if tuple(out) != tuple(s_in):  # output_padding rows beyond the last window
            n = x.shape[0]
            go_cols = go_cols.reshape(groups, n, *out, -1)
            keep: tuple[slice, ...] = (slice(None), slice(None), *(slice(0, s) for s in s_in))
            go_cols = go_cols[keep]
            go_cols = go_cols.reshape(groups, n * math.prod(s_in), -1)
        x_cols = _to_cols(x, groups)  # (G, N*S, Cin_g)
        gwc = np.matmul(x_cols.transpose(0, 2, 1), go_cols)  # (G, Cin_g, prod(k)*Cout_g)
        cin, coutg = weight.shape[:2]
        gwc = gwc.reshape(groups, cin // groups, -1, coutg)
        gw = np.ascontiguousarray(np.moveaxis(gwc, 3, 2)).reshape(weight.shape).astype(dtype)
    if output_mask[2]:
        gb = grad_out.sum(axis=(0, *range(2, grad_out.ndim))).astype(dtype)
    return gi, gw, gb


# --------------------------------------------------------------------------------------------
# normalization


_BN_STATS = "running_mean and running_var must either both be None or neither be None"


def _bn_parameter_dtypes(x: np.ndarray, *params: np.ndarray | None) -> np.dtype:
    """CPU's batch norm reads its parameters (weight, bias, running stats) in the input's type
    unless the first one given has another dtype (is_mixed_type: a float16/bfloat16 input with
    float32 parameters, whose other refusals CPU words as its own, "mixed dtype (CPU)"; the
    saved statistics then have the parameters' dtype). Returns the saved statistics' dtype."""
    given = [p for p in params if p is not None]
    if given and given[0].dtype != x.dtype:
        return given[0].dtype
    if not given:
        return x.dtype
    for p in given:
        if p.dtype != x.dtype:
            from kernels._semantics import scalar_type_name
            from kernels._tensor import TORCH_DTYPE

            raise RuntimeError(f"expected scalar type {scalar_type_name(TORCH_DTYPE[x.dtype])} "
                               f"but found {scalar_type_name(TORCH_DTYPE[p.dtype])}")
    return x.dtype


def batch_norm(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``native_batch_norm``: returns ``(out, save_mean, save_invstd)``.

    In training the batch statistics normalize ``x`` and the running statistics (if given) are
    updated in place with the unbiased variance; in evaluation the running statistics are used
    and the saved statistics are empty, as on CPU.
    """
    dtype = x.dtype
    one_stat = (running_mean is None) != (running_var is None)
    if one_stat and not training:  # ATen's first check in eval mode (training: after dim 1)
        raise ValueError(_BN_STATS)
    if x.ndim == 0:
        raise RuntimeError("batch_norm: expected an input with at least one dimension")
    if x.ndim == 1:  # ATen: channels are dim 1
        if not training and x.size == 0:
            return x.copy(), x.copy(), x.copy()
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if one_stat:
        raise ValueError(_BN_STATS)
    if not training and x.size == 0:  # ATen returns before looking at the statistics
        empty = np.empty((0,), dtype=dtype)
        return x.copy(), empty, empty.copy()
    if training and x.size == 0:
        raise RuntimeError(
            f"input tensor must have at least one element, but got input_sizes = {list(x.shape)}"
        )
    stat = _bn_parameter_dtypes(x, weight, bias, running_mean, running_var)
    xf = opmath(x)
    c = x.shape[1]
    axes = (0, *range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    if training:
        count = x.size // c if c else 0
        mean = xf.mean(axis=axes)
        centered = xf - mean.reshape(bshape)
        flat = centered.reshape(x.shape[0], c, -1)
        var = np.einsum("ncs,ncs->c", flat, flat) / max(count, 1)
        invstd = 1.0 / np.sqrt(var + eps)
        if running_mean is not None:
            running_mean *= 1 - momentum
            running_mean += (momentum * mean).astype(running_mean.dtype)
        if running_var is not None:
            unbiased = var * (count / (count - 1)) if count > 1 else var * np.inf
            running_var *= 1 - momentum
            running_var += (momentum * unbiased).astype(running_var.dtype)
        save_mean, save_invstd = mean.astype(stat), invstd.astype(stat)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean = opmath(running_mean)
        invstd = 1.0 / np.sqrt(opmath(running_var) + eps)
        centered = xf - mean.reshape(bshape)
        save_mean = save_invstd = np.empty((0,), dtype=stat)
    scale = invstd if weight is None else invstd * opmath(weight)
    out = centered
    out *= scale.astype(out.dtype, copy=False).reshape(bshape)
    if bias is not None:
        out += opmath(bias).reshape(bshape)
    return out.astype(dtype, copy=False), save_mean, save_invstd


def batch_norm_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    weight: np.ndarray | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    save_mean: np.ndarray | None,
    save_invstd: np.ndarray | None,
    training: bool,
    eps: float,
    output_mask: Sequence[bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``native_batch_norm_backward``: gradients w.r.t. input, weight, bias."""
    from kernels._semantics import FLOATING, scalar_type_name
    from kernels._tensor import TORCH_DTYPE

    dtype = x.dtype
    if TORCH_DTYPE[dtype] not in FLOATING:  # its dtype dispatch on input comes first: NumPy's
        raise TypeError(f"no batch norm of {dtype}")  # TypeError is the wrapper's refusal
    if x.ndim < 2:
        # ATen sizes grad_weight/grad_bias by input.size(1), then its kernel reads input.size(0)
        # and input.size(1), before it reads grad_out as input's type: torch's IndexError
        dim = 0 if x.ndim == 0 and not (output_mask[1] or output_mask[2]) else 1
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions"
                         if x.ndim == 0 else
                         "Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if grad_out.dtype != dtype:  # then its dtype check (data_ptr of grad_out as input's type)
        raise RuntimeError(f"expected scalar type {scalar_type_name(TORCH_DTYPE[dtype])} but "
                           f"found {scalar_type_name(TORCH_DTYPE[grad_out.dtype])}")
    go, xf = opmath(grad_out), opmath(x)
    c = x.shape[1]
    axes = (0, *range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    # ATen reads the statistics without checking them (CPU dies of a null read there): a
    # refusal, of RuntimeError as every argument check's
    if training:
        if save_mean is None or save_invstd is None:
            raise RuntimeError("native_batch_norm_backward: save_mean and save_invstd must be "
                               "defined in training mode")
        mean, invstd = opmath(save_mean), opmath(save_invstd)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("native_batch_norm_backward: running_mean and running_var must "
                               "be defined in evaluation mode")
        mean = opmath(running_mean)
        invstd = (1.0 / np.sqrt(opmath(running_var) + eps)).astype(mean.dtype)
    w = np.ones(c, dtype=go.dtype) if weight is None else opmath(weight)
    centered = xf - mean.reshape(bshape)
    sum_go = go.sum(axis=axes)
    dot = np.einsum(
        "ncs,ncs->c", centered.reshape(x.shape[0], c, -1), go.reshape(x.shape[0], c, -1)
    )
    gi = gw = gb = None
    if output_mask[0]:
        if training:
            count = x.size // c
            proj = (dot * invstd * invstd / count).reshape(bshape)
            gi = go - centered * proj
            gi -= (sum_go / count).reshape(bshape)
            gi *= (invstd * w).reshape(bshape)
        else:
            gi = go * (invstd * w).reshape(bshape)
        gi = gi.astype(dtype, copy=False)
    if output_mask[1]:
        gw = (dot * invstd).astype(dtype if weight is None else weight.dtype)
    if output_mask[2]:
        gb = sum_go.astype(dtype if weight is None else weight.dtype)
    return gi, gw, gb


def _check_layer_norm_inputs(shape: Sequence[int], normalized_shape: Ints,
                             weight: np.ndarray | None, bias: np.ndarray | None) -> None:
    """ATen's ``_check_layer_norm_inputs`` (forward and backward), in its order."""
    if len(normalized_shape) == 0:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != tuple(normalized_shape):
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(p.shape)} and normalized_shape = {list(normalized_shape)}")
    axis = len(shape) - len(normalized_shape)
    if axis < 0 or tuple(shape[axis:]) != tuple(normalized_shape):
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(shape)}"
        )


def layer_norm(
    x: np.ndarray,
    normalized_shape: Ints,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``native_layer_norm``: returns ``(out, mean, rstd)``; statistics keep the reduced axes."""
    dtype = x.dtype
    _check_layer_norm_inputs(x.shape, normalized_shape, weight, bias)
    axis = x.ndim - len(normalized_shape)
    lead = x.shape[:axis]
    m = math.prod(normalized_shape)
    if x.size == 0:
        stats = np.empty((*lead,) + (1,) * len(normalized_shape), dtype=dtype)
        return x.copy(), stats, stats.copy()
    xf = opmath(x).reshape(-1, m)
    # row sums through einsum's SIMD loop (a BLAS gemv would wake BLAS threads for little work),
    # in a wider type and rounded once: a row of one value then has that value as its mean
    # and 0 variance, as CPU's Welford moments give (a running float32 sum of a stride-0,
    # expanded row rounds; with a small eps the deviations were blown up to O(1))
    wide = np.float64 if xf.dtype == np.float32 else np.longdouble
    mean = (np.einsum("ij->i", xf, dtype=wide) / max(m, 1)).astype(xf.dtype)[:, None]
    out = np.subtract(xf, mean)
    var = np.einsum("ij,ij->i", out, out)[:, None] / max(m, 1)
    rstd = 1.0 / np.sqrt(var + eps)
    out *= rstd
    if weight is not None:
        out *= opmath(weight).reshape(1, m)
    if bias is not None:
        out += opmath(bias).reshape(1, m)
    stat_shape = (*lead,) + (1,) * len(normalized_shape)
    return (
        out.reshape(x.shape).astype(dtype, copy=False),
        mean.reshape(stat_shape).astype(dtype),
        rstd.reshape(stat_shape).astype(dtype),
    )


def layer_norm_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    normalized_shape: Ints,
    mean: np.ndarray,
    rstd: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    output_mask: Sequence[bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``native_layer_norm_backward``. With no rows or no normalized elements CPU computes
    nothing: the gradients of weight and bias are zeros (of no rows) or empty."""
    dtype = x.dtype
    _check_layer_norm_inputs(x.shape, normalized_shape, weight, bias)
    m = math.prod(normalized_shape)
    if x.size == 0:
        return (np.empty(x.shape, dtype) if output_mask[0] else None,
                np.zeros_like(weight) if output_mask[1] and weight is not None else None,
                np.zeros_like(bias) if output_mask[2] and bias is not None else None)
    go = opmath(grad_out).reshape(-1, m)
    xf = opmath(x).reshape(-1, m)
    rows = x.size // max(m, 1)  # CPU reads the first M = rows values of mean and rstd
    mu = opmath(mean).reshape(-1)[:rows].reshape(-1, 1)
    rs = opmath(rstd).reshape(-1)[:rows].reshape(-1, 1)
    xhat = (xf - mu) * rs
    gi = gw = gb = None
    if output_mask[0]:
        g = go if weight is None else go * opmath(weight).reshape(1, m)
        a = g.mean(axis=1, keepdims=True)
        b = np.einsum("ij,ij->i", g, xhat)[:, None] / max(m, 1)
        gi = ((g - a - xhat * b) * rs).reshape(x.shape).astype(dtype, copy=False)
    if output_mask[1] and weight is not None:
        gw = np.einsum("ij,ij->j", go, xhat).reshape(weight.shape).astype(weight.dtype)
    if output_mask[2] and bias is not None:
        gb = go.sum(axis=0).reshape(bias.shape).astype(bias.dtype)
    return gi, gw, gb


def group_norm(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    n: int,
    c: int,
    hw: int,
    groups: int,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``native_group_norm``: ``(out, mean (N, G), rstd (N, G))``."""
    if groups <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {groups}")
    dtype = x.dtype
    xg = opmath(x).reshape(n, groups, (c // groups) * hw if x.size == 0 else -1)
    d = max(xg.shape[2], 1)
    mean = np.einsum("ngd->ng", xg) / d
    out = xg - mean[..., None]
    var = np.einsum("ngd,ngd->ng", out, out) / d
    rstd = 1.0 / np.sqrt(var + eps)
    if xg.shape[2] == 0:  # no elements in a group: CPU's mean is 0 and its rstd NaN (0 / 0)
        rstd = np.full(mean.shape, np.nan, mean.dtype)
    out *= rstd[..., None]
    out = out.reshape(n, c, hw)
    if weight is not None:
        out *= opmath(weight).reshape(1, c, 1)
    if bias is not None:
        out += opmath(bias).reshape(1, c, 1)
    return out.reshape(x.shape).astype(dtype, copy=False), mean.astype(dtype), rstd.astype(dtype)


def group_norm_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    mean: np.ndarray,
    rstd: np.ndarray,
    weight: np.ndarray | None,
    n: int,
    c: int,
    hw: int,
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``native_group_norm_backward``."""
    if grad_out.dtype != x.dtype:  # ATen's first check, before any shape or dtype dispatch
        raise RuntimeError("Expected scalar types of X and dY are same.")
    dtype = x.dtype
    if x.size == 0:
        zeros = np.zeros(c, dtype=dtype)
        return (
            x.copy() if output_mask[0] else None,
            zeros.copy() if output_mask[1] and weight is not None else None,
            zeros if output_mask[2] else None,
        )
    go = opmath(grad_out).reshape(n, c, hw)
    mu, rs = opmath(mean).reshape(n, groups, 1), opmath(rstd).reshape(n, groups, 1)
    xhat = ((opmath(x).reshape(n, groups, -1) - mu) * rs).reshape(n, c, hw)
    gi = gw = gb = None
    if output_mask[0]:
        g = go if weight is None else go * opmath(weight).reshape(1, c, 1)
        gg, xg = g.reshape(n, groups, -1), xhat.reshape(n, groups, -1)
        d = max(gg.shape[2], 1)
        a = np.einsum("ngd->ng", gg)[..., None] / d
        b = np.einsum("ngd,ngd->ng", gg, xg)[..., None] / d
        gi = ((gg - a - xg * b) * rs).reshape(x.shape).astype(dtype, copy=False)
    if output_mask[1] and weight is not None:
        gw = np.einsum("nch,nch->c", go, xhat).astype(weight.dtype)
    if output_mask[2]:
        gb = np.einsum("nch->c", go).astype(dtype if weight is None else weight.dtype)
    return gi, gw, gb


# --------------------------------------------------------------------------------------------
# pooling


def pooling_output_size(size: int, k: int, pad: int, stride: int, dilation: int, ceil: bool) -> int:
    """ATen's ``pooling_output_shape`` (the last window must start inside input or left pad)."""
    num = size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil else 0)
    out = num // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


Tup = tuple[int, ...]


def _pool_params(
    x: np.ndarray,
    nd: int,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil: bool,
) -> tuple[Tup, Tup, Tup, Tup, Tup]:
    k = _expand(kernel_size, nd, "kernel_size")
    s = _expand(stride, nd, "stride") if len(stride) else k
    p = _expand(padding, nd, "padding")
    d = _expand(dilation, nd, "dilation")
    if 0 in s:
        raise RuntimeError("stride should not be zero")
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got {list(k)}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(d)}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input, but got "
            f"input of size {list(x.shape)}"
        )
    if any(pi > ki // 2 for pi, ki in zip(p, k, strict=True)):
        raise RuntimeError("pad should be at most half of effective kernel size")
    spatial = x.shape[-nd:]
    out = tuple(pooling_output_size(spatial[i], k[i], p[i], s[i], d[i], ceil) for i in range(nd))
    if min(out) <= 0:
        raise RuntimeError(f"Output size is too small: {out}")
    return k, s, p, d, out


def _first_valid(out: int, stride: int, pad: int, dilation: int) -> np.ndarray:
    start = np.arange(out) * stride - pad
    neg = start < 0
    start[neg] += dilation * ((-start[neg] + dilation - 1) // dilation)
    return start


def _axis_slice(x: np.ndarray, axis: int, sl: slice) -> np.ndarray:
    return x[(Ellipsis, sl) + (slice(None),) * (x.ndim - 1 - axis)]


def _spatial_grid(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Sum of per-axis index vectors broadcast over the spatial grid (``a[:, None] + b``...)."""
    nd = len(parts)
    total = np.zeros((1,) * nd, dtype=np.int64)
    for i, v in enumerate(parts):
        total = total + v.reshape((1,) * i + (-1,) + (1,) * (nd - 1 - i))
    return total


def max_pool_with_indices(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    *,
    nd: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``max_pool{2,3}d_with_indices``: values and flat indices into each input plane/volume.

    Values first (the window maximum is separable: one axis after the other), then the index of
    the first element equal to it. ATen's CPU scan (``val > max || isnan(val)``) gives NaN the win
    and a later NaN over an earlier one, and leaves a window whose values are all the dtype's
    lowest at its first valid position; both are reproduced.
    """
    k, s, p, d, out = _pool_params(x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    spatial = x.shape[-nd:]
    axis_stride = [math.prod(spatial[i + 1 :]) for i in range(nd)]
    extra = [
        max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (spatial[i] + 2 * p[i]))
        for i in range(nd)
    ]
    floating = x.dtype.kind in "fc" or x.dtype.name == "bfloat16"
    low = -np.inf if floating else (False if x.dtype == np.bool_ else np.iinfo(x.dtype).min)
    xp = _pad_spatial(x, p, [p[i] + extra[i] for i in range(nd)], value=low)
    first_axis = x.ndim - nd
    best = xp
    for i in range(nd):
        axis = first_axis + i
        reduced = _axis_slice(best, axis, _window_slice(0, s[i], out[i]))
        for j in range(1, k[i]):
            reduced = np.maximum(reduced, _axis_slice(best, axis, _window_slice(j * d[i], s[i], out[i])))
        best = reduced
    if best.base is not None:  # a view of the input (1x1 windows): results never alias
        best = best.copy()

    def window(kidx: Sequence[int]) -> np.ndarray:
        sl = tuple(_window_slice(kidx[i] * d[i], s[i], out[i]) for i in range(nd))
        idx: tuple[Any, ...] = (Ellipsis, *sl)
        return xp[idx]

    # kernel position of the first maximum: scan the window backwards, the last hit wins
    positions = list(product(*(range(ki) for ki in k)))
    kpos = np.zeros(best.shape, dtype=np.int32 if len(positions) > 32767 else np.int16)
    hit = np.empty(best.shape, dtype=bool)
    for n, kidx in reversed(list(enumerate(positions))):
        np.equal(window(kidx), best, out=hit)
        np.copyto(kpos, n, where=hit)
    if floating and np.isnan(best).any():  # the last NaN of the window, scanning forwards
        for n, kidx in enumerate(positions):
            np.copyto(kpos, n, where=np.isnan(window(kidx)))
    offsets = np.array(
        [sum(kidx[i] * d[i] * axis_stride[i] for i in range(nd)) for kidx in positions],
        dtype=np.int64,
    )
    index = offsets[kpos]
    index += _spatial_grid(
        [(np.arange(out[i]) * s[i] - p[i]) * axis_stride[i] for i in range(nd)]
    )
    lowest = best == low
    if lowest.any():  # nothing beat the initial value: ATen keeps the first valid position
        first = _spatial_grid(
            [_first_valid(out[i], s[i], p[i], d[i]) * axis_stride[i] for i in range(nd)]
        )
        np.copyto(index, np.broadcast_to(first, index.shape), where=lowest)
    return best, index


def max_pool_with_indices_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    indices: np.ndarray,
    *,
    nd: int,
) -> np.ndarray:
    """Scatter-add ``grad_out`` into the input positions named by ``indices``.

    A window lying entirely in the padding (value -inf) gets, as from ATen's CPU forward, an
    index past its plane when the input is shorter than the padding; ATen's backward adds at
    plane start + index, so that gradient lands in the next plane, and past the end of the
    buffer for the last plane (an out-of-bounds write). The same flat addressing here, with
    the writes past the buffer dropped.
    """
    k, s, _, d, _ = _pool_params(x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    volume = math.prod(x.shape[-nd:])
    planes = math.prod(x.shape[:-nd])
    go = opmath(grad_out).reshape(planes, -1)
    idx = indices.reshape(planes, -1)
    in_planes = bool(((idx >= 0) & (idx < volume)).all())
    flat = (idx + (np.arange(planes) * volume)[:, None]).ravel()
    gx = np.zeros(planes * volume, dtype=go.dtype)
    if not in_planes:
        inside = (flat >= 0) & (flat < planes * volume)
        flat, go = flat[inside], go.ravel()[inside]
    if in_planes and all(s[i] >= d[i] * (k[i] - 1) + 1 for i in range(nd)):
        gx[flat] = go.ravel()  # windows do not overlap: indices are unique
    else:
        np.add.at(gx, flat, go.ravel())
    return gx.reshape(x.shape).astype(x.dtype, copy=False)


def max_pool2d_with_indices(
    x: np.ndarray, kernel_size: Ints, stride: Ints, padding: Ints, dilation: Ints, ceil_mode: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``max_pool2d_with_indices``: values and flat ``h * W + w`` indices (see
    :func:`max_pool_with_indices`)."""
    return max_pool_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode, nd=2)


def max_pool2d_with_indices_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    indices: np.ndarray,
) -> np.ndarray:
    return max_pool_with_indices_backward(
        grad_out, x, kernel_size, stride, padding, dilation, ceil_mode, indices, nd=2
    )


def _avg_divisor(
    size: int, out: int, k: int, s: int, p: int, count_include_pad: bool
) -> np.ndarray:
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    pool = end - start
    if count_include_pad:
        return pool
    return np.minimum(end, size) - np.maximum(start, 0)


def _avg_divisors(
    x: np.ndarray, nd: int, k: Tup, s: Tup, p: Tup, out: Tup, include_pad: bool,
    divisor_override: int | None, dtype: np.dtype,
) -> np.ndarray | int:
    if divisor_override:
        return divisor_override
    spatial = x.shape[-nd:]
    div = np.ones((1,) * nd, dtype=np.int64)
    for i in range(nd):
        v = _avg_divisor(spatial[i], out[i], k[i], s[i], p[i], include_pad)
        div = div * v.reshape((1,) * i + (-1,) + (1,) * (nd - 1 - i))
    return div.astype(dtype)


def _divide_like_c(a: np.ndarray, div: np.ndarray | int) -> np.ndarray:
    """``a / div``; for integers C's division, truncating toward zero (ATen's int64 pooling)."""
    if a.dtype.kind in "iu":  # floor quotient, one up where it was rounded down past zero;
        # no abs(): abs(INT64_MIN) wraps to itself and flipped the quotient's sign
        with np.errstate(all="ignore"):
            q = a // div
            inexact = (a - q * div) != 0
        return np.where(inexact & ((a < 0) != (np.asarray(div) < 0)), q + 1, q)
    return a / (a.dtype.type(div) if isinstance(div, int) else div)


def avg_pool(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    *,
    nd: int,
) -> np.ndarray:
    """``avg_pool{2,3}d`` with ATen's divisor rules (padding and ceil-mode windows); the window
    sum is separable, one axis after the other."""
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _avg_pool_dims(x, nd)
    k, s, p, _, out = _pool_params(x, nd, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    dtype = x.dtype
    xf = opmath(x)
    return _avg_pool_sum(xf, x, nd, k, s, p, out, count_include_pad, divisor_override, dtype)


def _avg_pool_dims(x: np.ndarray, nd: int) -> None:
    if nd == 2 and x.ndim < nd + 1:  # ATen's avg_pool2d indexes dim -3 first
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
            f"{max(x.ndim, 1) - 1}], but got {-(nd + 1)})"
            if x.ndim
            else f"Dimension specified as {-(nd + 1)} but tensor has no dimensions"
        )


def _avg_pool_sum(
    xf: np.ndarray, x: np.ndarray, nd: int, k: Tup, s: Tup, p: Tup, out: Tup,
    count_include_pad: bool, divisor_override: int | None, dtype: np.dtype,
) -> np.ndarray:
    spatial = x.shape[-nd:]
    extra = [max(0, (out[i] - 1) * s[i] + k[i] - (spatial[i] + 2 * p[i])) for i in range(nd)]
    acc = _pad_spatial(xf, p, [p[i] + extra[i] for i in range(nd)])
    first_axis = x.ndim - nd
    for i in range(nd):
        axis = first_axis + i
        summed = _axis_slice(acc, axis, _window_slice(0, s[i], out[i])).copy()
        for j in range(1, k[i]):
            summed += _axis_slice(acc, axis, _window_slice(j, s[i], out[i]))
        acc = summed
    div = _avg_divisors(x, nd, k, s, p, out, count_include_pad, divisor_override, acc.dtype)
    return _divide_like_c(acc, div).astype(dtype, copy=False)


def avg_pool_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    *,
    nd: int,
) -> np.ndarray:
    """Gradient of :func:`avg_pool`: each output spreads ``grad / divisor`` over its window
    (separably, the last axis first)."""
    _avg_pool_dims(x, nd)
    k, s, p, _, out = _pool_params(x, nd, kernel_size, stride, padding, (1,) * nd, ceil_mode)
    go = opmath(grad_out)
    g = _divide_like_c(
        go, _avg_divisors(x, nd, k, s, p, out, count_include_pad, divisor_override, go.dtype)
    )
    spatial = x.shape[-nd:]
    full = [max((out[i] - 1) * s[i] + k[i], spatial[i] + 2 * p[i]) for i in range(nd)]
    first_axis = x.ndim - nd
    for i in reversed(range(nd)):
        axis = first_axis + i
        shape = list(g.shape)
        shape[axis] = full[i]
        spread = np.zeros(shape, dtype=g.dtype)
        for j in range(k[i]):
            _axis_slice(spread, axis, _window_slice(j, s[i], out[i]))[...] += g
        g = spread
    crop = tuple(slice(p[i], p[i] + spatial[i]) for i in range(nd))
    idx: tuple[Any, ...] = (Ellipsis, *crop)
    return np.ascontiguousarray(g[idx]).astype(x.dtype, copy=False)


def avg_pool2d(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> np.ndarray:
    return avg_pool(
        x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd=2
    )


def avg_pool2d_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> np.ndarray:
    return avg_pool_backward(
        grad_out, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
        divisor_override, nd=2,
    )


# Per-axis linear maps given as "taps": output position o reads input ``index[o]`` times
# ``weight[o]`` (``None``: 1), only where ``valid[o]`` (``None``: everywhere). Gathering and
# scattering tap by tap keeps a non-finite input inside its own windows -- a matrix product
# would spread ``inf * 0 = nan`` over every output of the row.
Tap = tuple[np.ndarray, "np.ndarray | None", "np.ndarray | None"]


def _axis_shape(v: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    return v.reshape((-1,) + (1,) * (ndim - 1 - axis))


def gather_taps(x: np.ndarray, axis: int, taps: Sequence[Tap]) -> np.ndarray:
    """``sum_j weight_j * x[..., index_j, ...]`` along ``axis`` (invalid taps contribute 0)."""
    acc: np.ndarray | None = None
    for index, weight, valid in taps:
        term = np.take(x, index, axis=axis)
        if weight is not None:
            term = term * _axis_shape(weight.astype(x.dtype, copy=False), x.ndim, axis)
        if valid is not None:
            term = np.where(_axis_shape(valid, x.ndim, axis), term, np.zeros((), x.dtype))
        acc = term if acc is None else acc + term
    assert acc is not None
    return acc


def scatter_taps(g: np.ndarray, axis: int, size: int, taps: Sequence[Tap]) -> np.ndarray:
    """Adjoint of :func:`gather_taps`: scatter-add ``weight_j * g`` to ``index_j``."""
    gm = np.moveaxis(g, axis, -1)
    out = np.zeros((*gm.shape[:-1], size), dtype=g.dtype)
    lead = (slice(None),) * (gm.ndim - 1)
    for index, weight, valid in taps:
        term = gm if weight is None else gm * weight.astype(g.dtype, copy=False)
        idx = index
        if valid is not None:
            term, idx = term[..., valid], index[valid]
        at_idx: tuple[Any, ...] = (*lead, idx)
        np.add.at(out, at_idx, term)
    return np.moveaxis(out, -1, axis)


def _adaptive_taps(size: int, out: int) -> tuple[list[Tap], np.ndarray]:
    """ATen's adaptive windows ``[floor(o*S/O), ceil((o+1)*S/O))`` as taps, and their lengths."""
    o = np.arange(out)
    start = (o * size) // out
    end = -((-(o + 1) * size) // out)  # ceil
    taps: list[Tap] = []
    for j in range(int((end - start).max())):
        pos = start + j
        valid = pos < end
        taps.append((np.minimum(pos, size - 1), None, None if valid.all() else valid))
    return taps, end - start


def adaptive_avg_pool(x: np.ndarray, output_size: Ints) -> np.ndarray:
    """``_adaptive_avg_pool{2,3}d``: window sums one axis after the other (a loop over the
    window length), then the mean."""
    nd = len(output_size)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"adaptive_avg_pool{nd}d(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
            f"{list(x.shape)}"
        )
    # the 2-d kernel checks the spatial dims only (channels may be empty), the 3-d one all
    checked = range(x.ndim - nd, x.ndim) if nd == 2 else range(1, x.ndim)
    empty = next((i for i in checked if x.shape[i] == 0), None)
    if empty is not None:
        raise RuntimeError(
            f"adaptive_avg_pool{nd}d(): Expected input to have non-zero size for non-batch "
            f"dimensions, but input has sizes {list(x.shape)} with dimension {empty} being empty"
        )
    shape = [*x.shape[:-nd], *(int(o) for o in output_size)]
    if min(shape) < 0:  # CPU's output.resize_ refuses it before the dtype dispatch
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{shape}")
    dtype = x.dtype
    if 0 in (*x.shape[:-nd], *output_size):  # an empty result: CPU computes nothing
        return np.empty((*x.shape[:-nd], *(int(o) for o in output_size)), dtype)
    y = opmath(x)
    div = np.ones((1,) * nd, dtype=y.dtype)
    for i, o in enumerate(output_size):
        axis = x.ndim - nd + i
        taps, count = _adaptive_taps(x.shape[axis], int(o))
        y = gather_taps(y, axis, taps)
        div = div * count.reshape((1,) * i + (-1,) + (1,) * (nd - 1 - i)).astype(y.dtype)
    y = np.ascontiguousarray(y)
    y /= div
    return y.astype(dtype, copy=False)


def adaptive_avg_pool_backward(grad_out: np.ndarray, x: np.ndarray, *, nd: int) -> np.ndarray:
    g = opmath(grad_out)
    all_taps = []
    div = np.ones((1,) * nd, dtype=g.dtype)
    for i in range(nd):
        axis = x.ndim - nd + i
        taps, count = _adaptive_taps(x.shape[axis], g.shape[axis])
        all_taps.append(taps)
        div = div * count.reshape((1,) * i + (-1,) + (1,) * (nd - 1 - i)).astype(g.dtype)
    g = g / div
    for i, taps in enumerate(all_taps):
        axis = x.ndim - nd + i
        g = scatter_taps(g, axis, x.shape[axis], taps)
    return np.ascontiguousarray(g).astype(x.dtype, copy=False)


def adaptive_avg_pool2d(x: np.ndarray, output_size: Ints) -> np.ndarray:
    """``_adaptive_avg_pool2d``."""
    if len(output_size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    return adaptive_avg_pool(x, output_size)


def adaptive_avg_pool2d_backward(grad_out: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``_adaptive_avg_pool2d_backward``."""
    return adaptive_avg_pool_backward(grad_out, x, nd=2)


# --------------------------------------------------------------------------------------------
# softmax family and losses


def _sum_keep(a: np.ndarray, dim: int) -> np.ndarray:
    """``a.sum(dim, keepdims=True)``; a contiguous last axis goes through ``einsum``'s SIMD loop."""
    if dim in (-1, a.ndim - 1) and a.flags.c_contiguous:
        return np.einsum("...i->...", a)[..., None]
    return a.sum(axis=dim, keepdims=True)


#: a slice whose sum of ``exp(x - global max)`` is at least this loses nothing to underflow:
#: its own max is then within ~27 of the global one, so any element that underflows is below
#: e^-60 of the slice's total -- invisible in float32
_SAFE_SUM = math.exp(-20.0)


def _shift(xf: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x - c, c)`` with ``c`` the global max when safe for every slice along ``dim``, else the
    per-slice max (ATen's choice). A global max is one fast reduction instead of a strided one;
    the two shifts give the same softmax up to rounding."""
    if xf.size:
        c = xf.max()
        if np.isfinite(c):
            shifted = np.subtract(xf, c)
            if bool((_sum_keep(np.exp(shifted), dim) >= _SAFE_SUM).all()):
                return shifted, np.asarray(c)
    c = xf.max(axis=dim, keepdims=True) if xf.size else np.zeros((), xf.dtype)
    return np.subtract(xf, c), c


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """``exp(x - max) * (1 / sum)``, the order of ATen's vectorized CPU softmax."""
    dtype = x.dtype
    xf = opmath(x)
    if xf.ndim == 0:  # one element: the same formula (NaN for +-inf and NaN, as CPU)
        return softmax(x.reshape(1), 0).reshape(())
    if xf.size:
        c = xf.max()
        if np.isfinite(c):  # global shift (see _shift), exp computed once
            e = np.subtract(xf, c)
            np.exp(e, out=e)
            total = _sum_keep(e, dim)
            if bool((total >= _SAFE_SUM).all()):
                np.multiply(e, np.reciprocal(total), out=e)
                return e.astype(dtype, copy=False)
    e = np.subtract(xf, xf.max(axis=dim, keepdims=True)) if xf.size else xf.copy()
    np.exp(e, out=e)
    np.multiply(e, np.reciprocal(_sum_keep(e, dim)), out=e)
    return e.astype(dtype, copy=False)


def log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    dtype = x.dtype
    xf = opmath(x)
    if xf.ndim == 0:
        return log_softmax(x.reshape(1), 0).reshape(())
    shifted, _ = _shift(xf, dim)
    shifted -= np.log(_sum_keep(np.exp(shifted), dim))
    return shifted.astype(dtype, copy=False)


def softmax_backward(grad_out: np.ndarray, out: np.ndarray, dim: int) -> np.ndarray:
    """``_softmax_backward_data``: ``y * (g - sum(g * y))``."""
    dtype = out.dtype
    g, y = opmath(grad_out), opmath(out)
    if y.ndim == 0:  # one element: the same formula
        return softmax_backward(grad_out.reshape(1), out.reshape(1), 0).reshape(())
    with np.errstate(all="ignore"):  # CPU's order: y * (g - dot), not g*y - y*dot (inf - inf)
        return (y * (g - _sum_keep(g * y, dim))).astype(dtype, copy=False)


def log_softmax_backward(grad_out: np.ndarray, out: np.ndarray, dim: int) -> np.ndarray:
    """``_log_softmax_backward_data``: ``g - exp(y) * sum(g)``."""
    dtype = out.dtype
    g, y = opmath(grad_out), opmath(out)
    if y.ndim == 0:  # one element: the same formula
        return log_softmax_backward(grad_out.reshape(1), out.reshape(1), 0).reshape(())
    e = np.exp(y)
    e *= _sum_keep(np.ascontiguousarray(g), dim)
    return np.subtract(g, e, out=e).astype(dtype, copy=False)


_REDUCTION_NONE, _REDUCTION_MEAN, _REDUCTION_SUM = 0, 1, 2


def _nll_rows(x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Flatten ``(N, C, *d)`` / ``(C,)`` scores to ``(M, C)`` rows and the target to ``(M,)``."""
    if x.ndim == 1:  # CPU reads the first target (the backward takes a 1-D target of size C)
        return x[None, :], target.reshape(-1)[:1], ()
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    return rows, target.reshape(-1), tuple(target.shape)


def _nll_picked(
    target: np.ndarray, c: int, weight: np.ndarray | None, ignore_index: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's class (0 where ignored), its weight (0 where ignored) and whether it counts:
    ATen skips an ignored row outright (its loss and gradient are 0 even where the score is
    inf or NaN, where multiplying by a 0 weight would give NaN)."""
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= c))
    if bad.any():
        raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")
    t = np.where(valid, target, 0)
    w = np.ones(t.shape, dtype=dtype) if weight is None else opmath(weight)[t].astype(dtype)
    w[~valid] = 0
    return t, w, valid


def nll_loss_forward(
    x: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    reduction: int,
    ignore_index: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``nll_loss_forward`` / ``nll_loss2d_forward``: ``(output, total_weight)``."""
    dtype = x.dtype
    rows, tgt, tshape = _nll_rows(opmath(x), target)
    t, w, valid = _nll_picked(tgt, rows.shape[1], weight, ignore_index, rows.dtype)
    losses = np.where(valid, -np.take_along_axis(rows, t[:, None], axis=1)[:, 0] * w, 0)
    if reduction == _REDUCTION_NONE:
        return losses.reshape(tshape).astype(dtype), np.zeros((), dtype=dtype)
    total_weight = w.sum(dtype=rows.dtype)
    total = losses.sum(dtype=rows.dtype)
    if reduction == _REDUCTION_MEAN:
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total / total_weight
    return np.asarray(total, dtype=dtype), np.asarray(total_weight, dtype=dtype)


def nll_loss_backward(
    grad_out: np.ndarray,
    x: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    reduction: int,
    ignore_index: int,
    total_weight: np.ndarray,
) -> np.ndarray:
    """``nll_loss_backward`` / ``nll_loss2d_backward``."""
    dtype = x.dtype
    rows, tgt, _ = _nll_rows(opmath(x), target)
    t, w, valid = _nll_picked(tgt, rows.shape[1], weight, ignore_index, rows.dtype)
    g = opmath(grad_out)
    if reduction == _REDUCTION_NONE:
        scale = -w * g.reshape(-1)
    elif reduction == _REDUCTION_MEAN:
        scale = -w * (g.reshape(()) / opmath(total_weight).reshape(()))
    else:
        scale = -w * g.reshape(())
    scale = np.where(valid, scale, 0)
    gr = np.zeros_like(rows)
    gr[np.arange(rows.shape[0]), t] = scale
    if x.ndim == 1:
        return gr[0].astype(dtype, copy=False)
    moved = gr.reshape(x.shape[0], *x.shape[2:], x.shape[1])
    return np.ascontiguousarray(np.moveaxis(moved, -1, 1)).astype(dtype, copy=False)


# --------------------------------------------------------------------------------------------
# embedding, activations, dropout


def embedding_dense_backward(
    grad_out: np.ndarray,
    indices: np.ndarray,
    num_weights: int,
    padding_idx: int,
    scale_grad_by_freq: bool,
) -> np.ndarray:
    """Sum the output gradient rows into the embedding rows they were read from."""
    if num_weights < 0:  # CPU's at::zeros({num_weights, ...}) before anything is counted
        raise RuntimeError("zeros: Dimension size must be non-negative.")
    dtype = grad_out.dtype
    idx = indices.reshape(-1).astype(np.intp, copy=False)
    width = grad_out.shape[-1] if grad_out.ndim else 1
    g = opmath(grad_out).reshape(idx.size, width)
    # CPU does not check the index range; out-of-range rows contribute nothing here
    keep = (idx >= 0) & (idx < num_weights)
    if not keep.all():
        idx, g = idx[keep], g[keep]
    if scale_grad_by_freq:
        counts = np.bincount(idx, minlength=num_weights)
        if g.dtype.kind == "b":  # CPU scales by bool(1 / count): true, a no-op
            pass
        elif g.dtype.kind in "iu":  # CPU scales by 1 / count in the integral dtype: 0 past 1
            g = g * (1 // counts[idx][:, None]).astype(g.dtype)
        else:
            g = g / counts[idx][:, None].astype(g.dtype)
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx, g = idx[keep], g[keep]
    gw = np.zeros((num_weights, g.shape[1]), dtype=g.dtype)
    np.add.at(gw, idx, g)
    return gw.astype(dtype, copy=False)


def zero_where(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``where(mask, 0, values)`` for floats, exactly (NaN/inf kept where not masked).

    ``np.where`` on an unpredictable mask is ~20x slower than a branch-free bitwise AND of the
    values' bits with an all-ones/all-zeros word per element, which is what this does.
    """
    if values.dtype.kind != "f" and values.dtype.name != "bfloat16":
        return np.where(mask, np.zeros((), values.dtype), values)
    shape = np.broadcast_shapes(values.shape, mask.shape)
    size = values.dtype.itemsize
    word = np.dtype(f"u{size}")
    keep = np.negative(np.logical_not(np.broadcast_to(mask, shape)).astype(f"i{size}")).view(word)
    out = np.bitwise_and(np.broadcast_to(values, shape).view(word), keep)
    return out.view(values.dtype)


def threshold_backward(grad_out: np.ndarray, x: np.ndarray, threshold: float | np.ndarray
                       ) -> np.ndarray:
    """``threshold_backward``: pass the gradient where ``x > threshold`` (relu's backward)."""
    return zero_where(grad_out, x <= threshold)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_C = 0.044715


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # well-kept, vectorized, float32-preserving

    return erf(x)


def _tanh(x: np.ndarray) -> np.ndarray:
    """tanh correctly rounded in x's dtype (through float64): NumPy's float32 tanh is an ulp off
    near -1 (-0.99999994 for tanh(-9.12), where CPU's is -1.0), and gelu's 1 + tanh(x)
    magnifies that ulp into a value where CPU's is 0."""
    x = np.asarray(x)
    return np.tanh(x.astype(np.float64)).astype(x.dtype) if x.dtype == np.float32 else np.tanh(x)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    dtype = x.dtype
    xf = opmath(x)
    if approximate == "tanh":
        inner = _tanh(_SQRT_2_OVER_PI * (xf + _GELU_C * xf * xf * xf))
        y = 0.5 * xf * (1.0 + inner)
    elif approximate == "none":
        y = 0.5 * xf * (1.0 + _erf(xf * _INV_SQRT_2))
    else:
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return y.astype(dtype, copy=False)


def gelu_backward(
    grad_out: np.ndarray, x: np.ndarray, approximate: str = "none", dtype: np.dtype | None = None
) -> np.ndarray:
    dtype = np.result_type(grad_out, x) if dtype is None else dtype
    g, xf = opmath(grad_out), opmath(x)
    if approximate == "tanh":
        x2 = xf * xf
        t = _tanh(_SQRT_2_OVER_PI * (xf + _GELU_C * x2 * xf))
        dinner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * x2)
        d = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * dinner
    elif approximate == "none":
        cdf = 0.5 * (1.0 + _erf(xf * _INV_SQRT_2))
        pdf = np.exp(-0.5 * xf * xf) * _INV_SQRT_2PI
        d = cdf + xf * pdf
    else:
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return (g * d).astype(dtype, copy=False)


def native_dropout(
    x: np.ndarray, p: float, train: bool | None, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``native_dropout``: zero each element with probability ``p``, scale the rest by ``1/(1-p)``.

    ``train=None`` means training, as in ATen; an empty input gives an empty mask of its dtype.
    """
    if x.size == 0:
        return x.copy(), np.empty(x.shape, dtype=x.dtype)
    if train is not None and not train:
        return x.copy(), np.ones(x.shape, dtype=bool)
    keep = 1.0 - p
    mask = rng.random(x.shape, dtype=np.float32) < keep if keep < 1 else np.ones(x.shape, bool)
    scale = 0.0 if keep == 0 else 1.0 / keep
    xf = opmath(x)
    out = xf * mask
    out *= np.asarray(scale, dtype=out.dtype)
    return out.astype(x.dtype, copy=False), mask


def native_dropout_backward(grad_out: np.ndarray, mask: np.ndarray, scale: float) -> np.ndarray:
    g = opmath(grad_out)
    out = g * mask
    out *= np.asarray(scale, dtype=out.dtype)
    return out.astype(grad_out.dtype, copy=False)
