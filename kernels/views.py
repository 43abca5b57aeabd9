"""View kernels: results share the base's storage (writes through a view reach the base).

Only the view overloads that have no composite kernel in ATen are implemented here (``view``,
``as_strided``, ``_reshape_alias``, ``view_as_real``, ``view_as_complex``, ``unfold``); the others
(``transpose``, ``permute``, ``select``, ``slice``, ``expand``, ``squeeze``, ``unsqueeze``,
``diagonal``, ``split``, ``unbind``, ``t``, ``detach``, ``alias``, ``view.dtype``...) are
CompositeExplicitAutograd in ATen and reach us through ``as_strided``, so their sizes, strides and
storage offsets are torch's own. Geometry of ``view``/``unfold`` is computed by the same op on a
``meta`` tensor of identical geometry, so strides and error messages are CPU's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import torch

from kernels._tensor import BUF_ATTR, alias, contiguous_strides, empty, set_geometry
from kernels.registry import register


def _meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")


def _from_meta(base: torch.Tensor, m: torch.Tensor, dtype: torch.dtype | None = None
               ) -> torch.Tensor:
    # storage offsets of mlu and meta tensors are plain ints (never SymInt)
    off = cast(int, base.storage_offset() + m.storage_offset())
    return alias(base, m.shape, m.stride(), off, dtype)


def check_in_bounds(t: torch.Tensor, size: list[int], stride: list[int], offset: int) -> None:
    """CPU's ``setStorage`` bounds check for ``as_strided``-style views of ``t``'s storage."""
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: {stride}"
        )
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n == 0 for n in size):
        return
    itemsize = t.element_size()
    need = (offset + sum((n - 1) * s for n, s in zip(size, stride, strict=False)) + 1) * itemsize
    have = getattr(t.untyped_storage(), BUF_ATTR).nbytes
    if need > have:
        raise RuntimeError(
            f"setStorage: sizes {size}, strides {stride}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {need} are out of bounds for storage of "
            f"size {have}"
        )


@register("view")
def view(self: torch.Tensor, size: list[int]) -> torch.Tensor:
    size = [int(s) for s in size]
    if all(s >= 0 for s in size) and self.is_contiguous():  # -2 in [-2, 0]: meta's refusal
        numel = 1
        for s in size:
            numel *= s
        if numel == self.numel():
            return alias(self, size, contiguous_strides(size))
    return _from_meta(self, _meta(self).view(size))


register("_reshape_alias")(alias)  # (self, size, stride): alias's own first arguments


@register("as_strided")
def as_strided(self: torch.Tensor, size: list[int], stride: list[int],
               storage_offset: int | None = None) -> torch.Tensor:
    size = [int(s) for s in size]
    stride = [int(s) for s in stride]
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(stride)} strides vs {len(size)} sizes"
        )
    off = cast(int, self.storage_offset()) if storage_offset is None else int(storage_offset)
    check_in_bounds(self, size, stride, off)
    return alias(self, size, stride, off)


@register("view_as_real")
def view_as_real(self: torch.Tensor) -> torch.Tensor:
    if self.is_conj():  # CPU's check: the bytes are not the conjugated values
        raise RuntimeError(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
            "conjugate tensor so you can view it as real, use self.resolve_conj(); however, be "
            "warned that the resulting tensor will NOT alias the original."
        )
    m = torch.view_as_real(_meta(self))
    off = cast(int, self.storage_offset() * 2 + m.storage_offset())
    return alias(self, m.shape, m.stride(), off, m.dtype)


@register("view_as_complex")
def view_as_complex(self: torch.Tensor) -> torch.Tensor:
    m = torch.view_as_complex(_meta(self))
    off = cast(int, self.storage_offset() // 2 + m.storage_offset())
    return alias(self, m.shape, m.stride(), off, m.dtype)


@register("unfold")
def unfold(self: torch.Tensor, dimension: int, size: int, step: int) -> torch.Tensor:
    return _from_meta(self, _meta(self).unfold(dimension, size, step))


# --------------------------------------------------------------------------------------------
# set_: point a tensor at (part of) a storage
# --------------------------------------------------------------------------------------------


def _set_storage(self: torch.Tensor, storage: Any, offset: int, size: list[int],
                 stride: list[int] | None) -> torch.Tensor:
    if not hasattr(storage, BUF_ATTR):
        storage = getattr(storage, "_untyped_storage", storage)  # a TypedStorage
    if not hasattr(storage, BUF_ATTR):
        raise RuntimeError("set_: the source storage is not an mlu storage")
    if offset >= 0 and list(self.shape) == size and (stride is None or list(self.stride()) == stride):
        # ATen's checkSetStorage: an unchanged geometry is not resized (the storage does not
        # grow), so it must fit the new storage as it is
        _check_in_bounds_for_storage(size, stride, offset, self.element_size(), storage.nbytes())
        # resize_impl_cpu_ returns early for unchanged sizes and no stride: self keeps its
        # strides (checked above as contiguous; a strided self can then span past the storage,
        # which CPU leaves unreadable and mlu's buffer grows to hold)
        stride = list(self.stride()) if stride is None else stride
    return set_geometry(self, storage, offset, size, stride)


def _check_in_bounds_for_storage(size: list[int], stride: list[int] | None, offset: int,
                                 itemsize: int, nbytes: int) -> None:
    """ATen's checkInBoundsForStorage: the bytes ``size``/``stride`` (contiguous when None) at
    ``offset`` elements need, against the storage's ``nbytes``; a geometry of no bytes fits."""
    if 0 in size:
        return
    if stride is None:
        span = math.prod(size)
    else:
        span = 1 + sum((n - 1) * st for n, st in zip(size, stride, strict=True))
    if itemsize * (span + offset) > nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride or [])}, storage offset "
            f"{offset}, and itemsize {itemsize} requiring a storage size of "
            f"{itemsize * (span + offset)} are out of bounds for storage of size {nbytes}"
        )


@register("set_.source_Storage_storage_offset")
def set_storage_offset(self: torch.Tensor, source: Any, storage_offset: int,
                       size: list[int], stride: Sequence[int] = ()) -> torch.Tensor:
    return _set_storage(self, source, int(storage_offset), list(size),
                        list(stride) if len(stride) else None)


@register("set_.source_Storage")
def set_storage(self: torch.Tensor, source: Any) -> torch.Tensor:
    n = source.nbytes() // self.element_size()
    return _set_storage(self, source, 0, [n], None)


@register("set_.source_Tensor")
def set_tensor(self: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"Could not set tensor of type {source.dtype} to a tensor of type "
            f"{self.dtype}".replace("torch.", "")
        )
    return _set_storage(self, source.untyped_storage(), cast(int, source.storage_offset()),
                        list(source.shape), list(source.stride()))


@register("set_")
def set_empty(self: torch.Tensor) -> torch.Tensor:
    fresh = empty([0], self.dtype)
    return _set_storage(self, fresh.untyped_storage(), 0, [0], None)


@register("is_set_to")
def is_set_to(self: torch.Tensor, tensor: torch.Tensor) -> bool:
    return (self.untyped_storage()._cdata == tensor.untyped_storage()._cdata
            and self.storage_offset() == tensor.storage_offset()
            and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()))
