"""Allocation, copies between devices and dtypes, fills, and random/creation kernels."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from kernels import _device
from kernels._semantics import infer_size
from kernels._tensor import (
    NP_DTYPE,
    empty,
    from_numpy,
    np_dtype,
    restride,
    scalar_value,
    to_numpy,
)
from kernels.registry import register

_strides_cache: dict[tuple[tuple[int, ...], torch.memory_format], tuple[int, ...]] = {}


def memory_format_strides(size: list[int], memory_format: torch.memory_format | None
                          ) -> list[int] | None:
    """Strides torch gives a new tensor of ``size`` in ``memory_format`` (None: contiguous)."""
    if memory_format in (None, torch.contiguous_format, torch.preserve_format):
        return None
    key = (tuple(size), memory_format)
    hit = _strides_cache.get(key)
    if hit is None:
        hit = torch.empty(size, device="meta", memory_format=memory_format).stride()
        _strides_cache[key] = hit
    return list(hit)


def _dtype(dtype: torch.dtype | None) -> torch.dtype:
    return torch.get_default_dtype() if dtype is None else dtype


@register("empty.memory_format")
def empty_memory_format(size: list[int], *, dtype: torch.dtype | None = None, layout: Any = None,
                        device: Any = None, pin_memory: bool | None = None,
                        memory_format: torch.memory_format | None = None) -> torch.Tensor:
    return empty(size, _dtype(dtype), memory_format_strides(size, memory_format))


@register("empty_strided")
def empty_strided(size: list[int], stride: list[int], *, dtype: torch.dtype | None = None,
                  layout: Any = None, device: Any = None, pin_memory: bool | None = None
                  ) -> torch.Tensor:
    return empty(size, _dtype(dtype), stride)


@register("resize_")
def resize_(self: torch.Tensor, size: list[int], *,
            memory_format: torch.memory_format | None = None) -> torch.Tensor:
    if any(int(s) < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    return restride(self, size, memory_format_strides(list(size), memory_format), None)


def _copy_into(dst: torch.Tensor, src: torch.Tensor) -> None:
    d = to_numpy(dst)
    s = to_numpy(src)
    if d.dtype.kind != "c" and s.dtype.kind == "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)
        s = s.real
    try:
        np.copyto(d, s, casting="unsafe")
    except ValueError:
        infer_size(tuple(dst.shape), tuple(src.shape))  # raises torch's own message
        raise


@register("copy_")
def copy_(self: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    _copy_into(self, src)
    return self


@register("_copy_from")
def _copy_from(self: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    _copy_into(dst, self)
    return dst


@register("_copy_from_and_resize")
def _copy_from_and_resize(self: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    if tuple(dst.shape) != tuple(self.shape):
        if dst.device.type == "cpu":
            dst.resize_(self.shape)
        else:
            restride(dst, self.shape)
    _copy_into(dst, self)
    return dst


def _preserved_strides(self: torch.Tensor, memory_format: torch.memory_format | None
                       ) -> list[int] | None:
    if memory_format in (None, torch.preserve_format):
        if self.is_contiguous():
            return None
        from torch._prims_common import is_non_overlapping_and_dense

        if is_non_overlapping_and_dense(self):
            return list(self.stride())
        return memory_format_strides(list(self.shape), self.suggest_memory_format()) if (
            self.dim() == 4) else None
    return memory_format_strides(list(self.shape), memory_format)


@register("_to_copy")
def _to_copy(self: torch.Tensor, *, dtype: torch.dtype | None = None, layout: Any = None,
             device: Any = None, pin_memory: bool | None = None, non_blocking: bool = False,
             memory_format: torch.memory_format | None = None) -> torch.Tensor:
    dtype = self.dtype if dtype is None else dtype
    target = self.device if device is None else torch.device(device)
    strides = _preserved_strides(self, memory_format)
    if target.type == "cpu":
        out = (torch.empty(self.shape, dtype=dtype) if strides is None
               else torch.empty_strided(self.shape, strides, dtype=dtype))
    elif target.type == _device.DEVICE_NAME:
        out = empty(self.shape, dtype, strides)
    else:
        raise RuntimeError(f"mlu: cannot copy a tensor to device {target}")
    _copy_into(out, self)
    return out


@register("_local_scalar_dense")
def _local_scalar_dense(self: torch.Tensor) -> Any:
    return scalar_value(to_numpy(self).reshape(-1)[0])


@register("fill_.Scalar")
def fill_scalar(self: torch.Tensor, value: Any) -> torch.Tensor:
    dst = to_numpy(self)
    if dst.dtype.kind != "c" and isinstance(value, complex):
        raise RuntimeError(f"value cannot be converted to type {self.dtype} without overflow")
    dst[...] = np.asarray(value).astype(dst.dtype)
    return self


@register("fill_.Tensor")
def fill_tensor(self: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    if value.dim() != 0:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value.dim()} dimensions."
        )
    return fill_scalar(self, scalar_value(value))


@register("zero_")
def zero_(self: torch.Tensor) -> torch.Tensor:
    to_numpy(self)[...] = 0
    return self


__all__ = ["memory_format_strides", "NP_DTYPE", "from_numpy", "np_dtype"]
