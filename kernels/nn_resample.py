"""Resampling overloads of ``mlu``: nearest/bilinear upsampling and reflection/replication padding.

All of them are *separable linear maps* along each spatial axis: each axis gets a short list of
"taps" (source index and weight per output position) built from ATen's own index/weight rules;
the forward gathers tap by tap, the backward scatter-adds (``np.add.at``). Unlike a product with
an interpolation matrix, this keeps an ``inf``/``nan`` inside the outputs that really read it. Index rules follow
ATen's CPU kernels: ``nearest_idx`` (float32 ``floor(dst * scale)``), ``area_pixel_compute_scale``
/ ``area_pixel_compute_source_index`` for bilinear, reflect without repeating the edge.

Known difference: for uint8 images CPU's bilinear kernel interpolates in fixed point; ours
interpolates in float32 and rounds to nearest, so about 1 pixel value in 10 differs by 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from kernels._define import define
from kernels._semantics import COMPLEX, FLOATING, REAL, opmath, scalar_type_name
from kernels._tensor import NP_DTYPE, to_numpy
from kernels.nn import Tap, gather_taps, scatter_taps

__all__: list[str] = []


def _gather(x: np.ndarray, per_axis: Sequence[Sequence[Tap]]) -> np.ndarray:
    """Apply one tap list per trailing axis (see :func:`kernels.nn.gather_taps`)."""
    nd = len(per_axis)
    for i, taps in enumerate(per_axis):
        x = gather_taps(x, x.ndim - nd + i, taps)
    return np.ascontiguousarray(x)


def _scatter(g: np.ndarray, per_axis: Sequence[Sequence[Tap]], sizes: Sequence[int]
             ) -> np.ndarray:
    """Adjoint of :func:`_gather` (scatter-add back to inputs of ``sizes``)."""
    nd = len(per_axis)
    for i, (taps, size) in enumerate(zip(per_axis, sizes, strict=True)):
        g = scatter_taps(g, g.ndim - nd + i, size, taps)
    return np.ascontiguousarray(g)


# --------------------------------------------------------------------------------------------
# upsampling


def _scale_value(scale: float | None, in_size: int, out_size: int, dtype: type) -> np.floating:
    if scale is not None and scale > 0:
        return dtype(1.0 / scale)
    return dtype(in_size) / dtype(out_size)


def _nearest_index(in_size: int, out_size: int, scale: float | None) -> np.ndarray:
    o = np.arange(out_size)
    if out_size == in_size:
        return o
    if out_size == 2 * in_size:
        return o >> 1
    s = _scale_value(scale, in_size, out_size, np.float32)
    src = np.floor(o.astype(np.float32) * s).astype(np.int64)
    return np.minimum(src, in_size - 1)


def _linear_taps(in_size: int, out_size: int, align_corners: bool, scale: float | None,
                 dtype: np.dtype) -> list[Tap]:
    """ATen's two-tap linear interpolation along one axis (``lambda0 * x[i0] + lambda1 *
    x[i0 + offset]``, offset 0 at the last input)."""
    ftype = np.float64 if dtype == np.float64 else np.float32
    if align_corners:
        s = ftype(in_size - 1) / ftype(out_size - 1) if out_size > 1 else ftype(0)
        src = s * np.arange(out_size, dtype=ftype)
    else:
        s = _scale_value(scale, in_size, out_size, ftype)
        src = np.maximum(s * (np.arange(out_size, dtype=ftype) + ftype(0.5)) - ftype(0.5), 0)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = np.clip(src - i0, 0, 1).astype(ftype)
    return [(i0, 1 - lam1, None), (i1, lam1, None)]


def _check_4d(x: np.ndarray, name: str, output_size: Sequence[int] | None = None) -> None:
    if output_size is not None and len(output_size) != 2:
        raise RuntimeError(
            f"It is expected output_size equals to 2, but got size {len(output_size)}"
        )
    if x.ndim != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {x.ndim}")
    if output_size is not None:
        _check_positive(output_size, x.shape)


def _check_positive(output_size: Sequence[int], input_size: Sequence[int]) -> None:
    """ATen's upsample_2d_common_check: every spatial size, in and out, above zero."""
    (oh, ow), (ih, iw) = output_size, input_size[2:]
    if not (ih > 0 and iw > 0 and oh > 0 and ow > 0):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"(H: {ih}, W: {iw}) output (H: {oh}, W: {ow})")


@define("upsample_nearest2d", "upsample_nearest2d.out",
        dtypes=FLOATING | {torch.uint8}, kernel_name="upsample_nearest2d_channels_last")
def upsample_nearest2d(self: torch.Tensor, output_size: list[int], scales_h: float | None = None,
                       scales_w: float | None = None) -> np.ndarray:
    x = to_numpy(self)
    _check_4d(x, "upsample_nearest2d", output_size)
    hi = _nearest_index(x.shape[2], output_size[0], scales_h)
    wi = _nearest_index(x.shape[3], output_size[1], scales_w)
    return np.ascontiguousarray(x[:, :, hi][:, :, :, wi])


def _check_sizes(output_size: Sequence[int], input_size: Sequence[int]) -> None:
    if len(output_size) != 2:
        raise RuntimeError(
            f"It is expected output_size equals to 2, but got size {len(output_size)}"
        )
    if len(input_size) != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {len(input_size)}")


def _check_backward(grad_output: torch.Tensor, output_size: Sequence[int],
                    input_size: Sequence[int]) -> None:
    """ATen's upsample_*2d_backward meta: upsample_2d_common_check, then grad_output's rank and
    its shape against the forward's output, before out= and the dtype dispatch."""
    _check_sizes(output_size, input_size)
    _check_positive(output_size, input_size)
    oh, ow = output_size
    if grad_output.dim() != 4:
        raise RuntimeError(f"Expected grad_output to be a tensor of dimension 4 but got: "
                           f"dimension {grad_output.dim()}")
    full = (input_size[0], input_size[1], oh, ow)
    for i, (want, got) in enumerate(zip(full, grad_output.shape, strict=True)):
        if want != got:
            raise RuntimeError(f"Expected grad_output to have the same shape as output; "
                               f"output.size({i}) = {want} but got grad_output.size({i}) = {got}")


@define("upsample_nearest2d_backward", "upsample_nearest2d_backward.grad_input",
        ("grad_input",), dtypes=FLOATING)
def upsample_nearest2d_backward(grad_output: torch.Tensor, output_size: list[int],
                                input_size: list[int], scales_h: float | None = None,
                                scales_w: float | None = None) -> np.ndarray:
    _check_backward(grad_output, output_size, input_size)
    g = to_numpy(grad_output)
    gf = opmath(g)
    taps = [[(_nearest_index(input_size[2], output_size[0], scales_h), None, None)],
            [(_nearest_index(input_size[3], output_size[1], scales_w), None, None)]]
    return _scatter(gf, taps, input_size[2:]).astype(g.dtype, copy=False)


@define("upsample_bilinear2d", "upsample_bilinear2d.out",
        dtypes=FLOATING | {torch.uint8}, kernel_name="upsample_bilinear2d_channels_last")
def upsample_bilinear2d(self: torch.Tensor, output_size: list[int], align_corners: bool,
                        scales_h: float | None = None, scales_w: float | None = None
                        ) -> np.ndarray:
    x = to_numpy(self)
    _check_4d(x, "upsample_bilinear2d", output_size)
    xf = x.astype(np.float32) if x.dtype == np.uint8 else opmath(x)
    y = _gather(xf, [_linear_taps(x.shape[2], output_size[0], align_corners, scales_h, xf.dtype),
                     _linear_taps(x.shape[3], output_size[1], align_corners, scales_w, xf.dtype)])
    if x.dtype == np.uint8:  # CPU's uint8 kernel rounds to nearest and saturates
        y = np.clip(np.rint(y), 0, 255)
    return y.astype(x.dtype, copy=False)


@define("upsample_bilinear2d_backward", "upsample_bilinear2d_backward.grad_input",
        ("grad_input",), dtypes=FLOATING)
def upsample_bilinear2d_backward(grad_output: torch.Tensor, output_size: list[int],
                                 input_size: list[int], align_corners: bool,
                                 scales_h: float | None = None, scales_w: float | None = None
                                 ) -> np.ndarray:
    _check_backward(grad_output, output_size, input_size)
    g = to_numpy(grad_output)
    gf = opmath(g)
    taps = [_linear_taps(input_size[2], output_size[0], align_corners, scales_h, gf.dtype),
            _linear_taps(input_size[3], output_size[1], align_corners, scales_w, gf.dtype)]
    return _scatter(gf, taps, input_size[2:]).astype(g.dtype, copy=False)


# --------------------------------------------------------------------------------------------
# reflection / replication padding, 1d to 3d


def _pad_index(size: int, before: int, after: int, mode: str) -> np.ndarray:
    if mode == "reflect" and (before >= size or after >= size):
        raise RuntimeError(
            f"Argument #4: Padding size should be less than the corresponding input dimension, "
            f"but got: padding ({before}, {after}) at dimension of size {size}"
        )
    i = np.arange(-before, size + after)
    if mode == "reflect":
        i = np.abs(i)
        i = np.where(i >= size, 2 * (size - 1) - i, i)
        return i
    return np.clip(i, 0, size - 1)


def _pad_indices(shape: Sequence[int], padding: Sequence[int], mode: str) -> list[np.ndarray]:
    """Per spatial axis (first to last) the source index of every output position."""
    nd = len(padding) // 2
    out = []
    for k in range(nd):  # padding pairs run from the last axis backwards
        axis_size = shape[len(shape) - 1 - k]
        out.append(_pad_index(axis_size, padding[2 * k], padding[2 * k + 1], mode))
    return out[::-1]


def _pad_forward(self: torch.Tensor, padding: list[int], mode: str) -> np.ndarray:
    x = to_numpy(self)
    idx = _pad_indices(x.shape, padding, mode)
    nd = len(idx)
    grid = np.ix_(*idx)
    lead = (slice(None),) * (x.ndim - nd)
    full: tuple[Any, ...] = (*lead, *grid)
    return np.ascontiguousarray(x[full])


def _pad_backward(grad_output: torch.Tensor, self: torch.Tensor, padding: list[int], mode: str
                  ) -> np.ndarray:
    g, x = to_numpy(grad_output), to_numpy(self)
    gf = opmath(g)
    idx = _pad_indices(x.shape, padding, mode)
    spatial = x.shape[x.ndim - len(idx):]
    return _scatter(gf, [[(i, None, None)] for i in idx], spatial).astype(g.dtype, copy=False)


def _make_pad(mode: str, torch_name: str, dims: int) -> None:
    name = f"{torch_name}{dims}d"

    def forward(self: torch.Tensor, padding: list[int]) -> np.ndarray:
        # ATen's check_valid_input: only a batch dim (present in the dims + 2 form) may be 0
        batched = self.dim() == dims + 2
        if self.dim() not in (dims + 1, dims + 2) or 0 in self.shape[int(batched):]:
            raise RuntimeError(
                f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch "
                f"size and other non-zero dimensions for input, but got: {list(self.shape)}"
            )
        return _pad_forward(self, padding, mode)

    def backward(grad_output: torch.Tensor, self: torch.Tensor, padding: list[int]
                 ) -> np.ndarray:
        """ATen's order: ranks, grad_output's padded sizes (width first); an empty
        grad_output returns zeros like ``self`` before the dtype dispatch (on ``self``'s
        dtype, which the result has), which reads grad_output as that type."""
        if mode == "reflect" and dims == 3 and self.dim() <= 3:  # its meta's first check
            raise RuntimeError("Expected input.dim() > 3 to be true, but got false.  (Could this "
                               "error message be improved?  If so, please report an enhancement "
                               "request to PyTorch.)")
        if self.dim() not in (dims + 1, dims + 2):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(self.dim(), 1)}, "
                f"{max(self.dim(), 1) - 1}], but got {self.dim() - dims - 1})"
            )
        if mode == "reflect":  # the padding against self's sizes comes first
            _pad_indices(tuple(self.shape), padding, mode)
        who = "grad_output" if mode == "reflect" and dims == 1 else "gradOutput"
        for k, what in enumerate(("width", "height", "depth")[:dims]):
            axis = self.dim() - 1 - k
            expected = self.shape[axis] + padding[2 * k] + padding[2 * k + 1]
            got = grad_output.shape[axis] if axis < grad_output.dim() else 1
            if got != expected:
                raise RuntimeError(f"{who} {what} unexpected. Expected: {expected}, Got: {got}")
        if grad_output.numel() == 0:
            return np.zeros(tuple(self.shape), NP_DTYPE[self.dtype])
        if grad_output.dtype != self.dtype and self.dtype in FLOATING | COMPLEX:
            raise RuntimeError(f"expected scalar type {scalar_type_name(grad_output.dtype)} but "
                               f"found {scalar_type_name(self.dtype)}")
        return _pad_backward(grad_output, self, padding, mode)

    forward.__name__ = name
    backward.__name__ = name + "_backward"
    define(name, f"{name}.out", dtypes=REAL | COMPLEX,
           silent_resize=f"{name}.out" in _PLAIN_RESIZE)(forward)
    define(f"{name}_backward", f"{name}_backward.grad_input", ("grad_input",),
           dtypes=FLOATING | COMPLEX, dtype_args=(1,),
           empty_any_dtype=lambda grad_output, *rest: grad_output.numel() == 0,
           # replication_pad2d_backward's out= is only resized (ATen's others are structured)
           castable_out=mode == "edge" and dims == 2,
           silent_resize=f"{name}_backward.grad_input" in _PLAIN_RESIZE)(backward)


#: The padding out= overloads whose CPU kernel is not structured and sizes its out= with a
#: plain resize_/resize_as_: a non-empty out of the wrong size is resized without
#: resize_output's deprecation warning (the structured ones give it).
_PLAIN_RESIZE = frozenset({"reflection_pad2d.out", "reflection_pad2d_backward.grad_input",
                           "replication_pad2d_backward.grad_input",
                           "replication_pad3d_backward.grad_input"})


for _dims in (1, 2, 3):
    _make_pad("reflect", "reflection_pad", _dims)
    _make_pad("edge", "replication_pad", _dims)

