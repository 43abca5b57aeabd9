"""The mlu tensor: a storage-less PrivateUse1 ``torch.Tensor`` whose bytes live in a NumPy buffer.

Design (read this before writing a kernel):

* Memory belongs to the **storage**, not to the tensor object. Every mlu ``TensorImpl`` is made by
  ``torch._C._acc.create_empty_tensor`` (no real allocation), and its ``UntypedStorage`` Python
  object carries a flat ``uint8`` NumPy buffer in the attribute ``_opconform_buf``. Torch preserves
  that Python object for as long as the C++ storage lives, so every tensor sharing the storage —
  views made by our kernels, ``detach``/``alias``/``view(dtype)`` made inside ATen's composite
  kernels, ``t.data`` swaps — finds the same bytes.
* A tensor's NumPy view is rebuilt on demand from torch's own metadata (sizes, strides, storage
  offset, dtype): :func:`to_numpy`. Views alias memory exactly as on CPU, and torch-level strides
  and ``is_contiguous()`` are whatever torch computed.
* Sizes/strides/offset of an mlu tensor are set through the **Meta** kernel of
  ``aten::set_.source_Storage_storage_offset`` (``redispatch`` with the Meta key): it only edits the
  ``TensorImpl`` and grows the storage's ``nbytes``, which keeps ATen's own bounds checks (e.g.
  ``as_strided_`` called by ``unsqueeze_``) honest.
* The tensor class is plain ``torch.Tensor`` — no subclass — so ``nn.Parameter``, ``type(t) is
  torch.Tensor`` and printing behave as for CUDA.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch

from kernels import _device

__all__ = [
    "BUF_ATTR",
    "NP_DTYPE",
    "TORCH_DTYPE",
    "alias",
    "contiguous_strides",
    "empty",
    "from_numpy",
    "is_mlu",
    "np_dtype",
    "restride",
    "set_geometry",
    "scalar_value",
    "to_numpy",
    "wrap",
]

DEVICE = _device.DEVICE_NAME
BUF_ATTR = "_opconform_buf"
_BUF = BUF_ATTR

class _DtypeTable(dict):  # type: ignore[type-arg]
    """A dtype table whose bfloat16 row is added on first use: NumPy has no bfloat16, and
    ``ml_dtypes``, which has, takes 0.7-1 s to import (``conformance coverage --backend mlu``
    registers the kernels and calls none). Lookups (``[]``, ``in``, ``get``) of a key the table
    lacks add the row first, and so does going through the table (``keys``, ``items``...)."""

    def __missing__(self, key: Any) -> Any:
        if _add_bfloat16():
            return self[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (_add_bfloat16() and dict.__contains__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def __iter__(self) -> Any:
        _add_bfloat16()
        return dict.__iter__(self)

    def __len__(self) -> int:
        _add_bfloat16()
        return dict.__len__(self)

    def keys(self) -> Any:
        _add_bfloat16()
        return dict.keys(self)

    def values(self) -> Any:
        _add_bfloat16()
        return dict.values(self)

    def items(self) -> Any:
        _add_bfloat16()
        return dict.items(self)


#: torch dtype -> NumPy dtype, the one table of dtype correspondences (bfloat16: ml_dtypes',
#: added on first use).
NP_DTYPE: dict[torch.dtype, np.dtype[Any]] = _DtypeTable({
    torch.bool: np.dtype(np.bool_),
    torch.uint8: np.dtype(np.uint8),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.complex64: np.dtype(np.complex64),
    torch.complex128: np.dtype(np.complex128),
    torch.uint16: np.dtype(np.uint16),
    torch.uint32: np.dtype(np.uint32),
    torch.uint64: np.dtype(np.uint64),
})
#: NumPy dtype -> torch dtype.
TORCH_DTYPE: dict[np.dtype[Any], torch.dtype] = _DtypeTable(
    {v: k for k, v in dict.items(NP_DTYPE)}
)


def _add_bfloat16() -> bool:
    """Add the bfloat16 rows to both tables (importing ``ml_dtypes``); False if they were
    there already (the key looked up is then missing for good)."""
    if dict.__contains__(NP_DTYPE, torch.bfloat16):
        return False
    import ml_dtypes

    bf16 = np.dtype(ml_dtypes.bfloat16)
    dict.__setitem__(TORCH_DTYPE, bf16, torch.bfloat16)
    dict.__setitem__(NP_DTYPE, torch.bfloat16, bf16)
    return True


_create = torch._C._acc.create_empty_tensor
_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_set_meta = torch.ops.aten.set_.source_Storage_storage_offset.redispatch


def np_dtype(dtype: torch.dtype) -> np.dtype[Any]:
    """The NumPy dtype that holds ``dtype`` (raises ``TypeError`` for one the backend lacks)."""
    try:
        return NP_DTYPE[dtype]
    except KeyError:
        name = torch.empty(0, dtype=dtype, device="meta").type().split(".")[-1]
        raise NotImplementedError(
            f"the mlu reference backend does not support dtype {dtype} "
            f"('{name.removesuffix('Tensor')}')"
        ) from None


def is_mlu(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == DEVICE


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(int(shape[i]), 1)
    return strides


# ---------------------------------------------------------------------------------------------
# torch -> NumPy
# ---------------------------------------------------------------------------------------------
def _cpu_numpy(t: torch.Tensor) -> np.ndarray:
    if t.requires_grad:
        t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(NP_DTYPE[torch.bfloat16])
    return t.numpy()


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy array that **aliases** ``t``'s memory (mlu or CPU), with ``t``'s shape and strides.

    Writing into it writes into the tensor (that is how ``out=``/in-place kernels store results).
    Conjugate/negative bits (lazy ``conj()`` views) are resolved into a copy.
    """
    if t.is_cpu:
        return _cpu_numpy(t)
    # an mlu storage carries its buffer; any other device's has none (``t.device`` is built
    # only then: it costs a sixth of this function, which runs for every operand)
    buf = getattr(t.untyped_storage(), _BUF, None)
    if buf is None:
        raise RuntimeError(f"mlu kernel got a tensor on {t.device}; expected mlu or cpu")
    dt = NP_DTYPE[t.dtype]
    isz = dt.itemsize
    try:
        arr = np.ndarray(t.shape, dt, buf, t.storage_offset() * isz, [s * isz for s in t.stride()])
    except (ValueError, TypeError):
        if t.numel() != 0:
            raise
        # An empty view may sit at an offset past its storage's end: nothing to alias.
        return np.empty(t.shape, dt)
    if t.is_conj():
        arr = np.conj(arr)
    if t.is_neg() and arr.dtype.kind != "b":
        arr = np.negative(arr)
    return arr


def scalar_value(x: Any) -> Any:
    """A Python number from a number, a NumPy scalar or a one-element tensor (any device)."""
    if isinstance(x, torch.Tensor):
        x = to_numpy(x).reshape(-1)[0]
    if isinstance(x, np.generic):  # before the Python types: np.float64 subclasses float
        if isinstance(x, np.bool_):
            return bool(x)
        if isinstance(x, np.integer):
            return int(x)
        if isinstance(x, np.complexfloating):
            return complex(x)
        return float(x)
    return x


# ---------------------------------------------------------------------------------------------
# NumPy -> torch
# ---------------------------------------------------------------------------------------------
def _attach(shape: Sequence[int], dtype: torch.dtype, buf: np.ndarray,
            strides: Sequence[int] | None, offset: int = 0) -> torch.Tensor:
    t = _create(tuple(shape), dtype)
    st = t.untyped_storage()
    setattr(st, _BUF, buf)
    _set_meta(_META, t, st, offset, list(shape),
              contiguous_strides(shape) if strides is None else list(strides))
    return t


def _storage_nbytes(shape: Sequence[int], strides: Sequence[int], itemsize: int,
                    offset: int = 0) -> int:
    if any(int(s) == 0 for s in shape):
        return 0
    last = offset + sum((int(n) - 1) * int(s) for n, s in zip(shape, strides, strict=False))
    return (last + 1) * itemsize


def empty(shape: Sequence[int], dtype: torch.dtype,
          strides: Sequence[int] | None = None) -> torch.Tensor:
    """A new uninitialised mlu tensor (contiguous unless ``strides`` is given)."""
    shape = [int(s) for s in shape]
    if shape and min(shape) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {shape}")
    dt = np_dtype(dtype)
    if strides is None:  # contiguous: its bytes are its elements' (most tensors made here)
        st = contiguous_strides(shape)
        nbytes = math.prod(shape) * dt.itemsize
    else:
        st = [int(s) for s in strides]
        nbytes = _storage_nbytes(shape, st, dt.itemsize)
    root = np.empty(nbytes, np.uint8)
    _device.track(root)
    return _attach(shape, dtype, root, st)


def _root(arr: np.ndarray) -> np.ndarray | None:
    """The ndarray that owns ``arr``'s memory, or None when the memory is not NumPy's."""
    root = arr
    while root.base is not None:
        if not isinstance(root.base, np.ndarray):
            return None
        root = root.base
    return root


def from_numpy(arr: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A new mlu tensor holding ``arr`` (cast to ``dtype`` when given).

    A freshly computed array is adopted without a copy (its layout — C order or a dense
    permutation such as NumPy's ``order='K'`` results — becomes the tensor's strides); an array
    that aliases existing device or CPU memory is copied, so a result never aliases an input by
    accident. Use :func:`alias` to make a real view.
    """
    arr = np.asarray(arr)
    if dtype is None:
        try:
            dtype = TORCH_DTYPE[arr.dtype]
        except KeyError:
            raise TypeError(f"mlu: no torch dtype for NumPy dtype {arr.dtype}") from None
    else:
        npd = np_dtype(dtype)
        if arr.dtype != npd:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arr = arr.astype(npd)
    root = _root(arr)
    if root is None or root.nbytes != arr.nbytes or _device.is_device_buffer(root):
        arr = arr.copy(order="K")
        root = arr
    shape = arr.shape
    if arr.flags.c_contiguous:
        strides = None
        flat = arr.reshape(-1)
    else:
        nd = arr.ndim
        perm = sorted(range(nd), key=lambda i: -arr.strides[i])
        tp = arr.transpose(perm)
        if not tp.flags.c_contiguous or min(arr.strides) < 0:
            arr = np.ascontiguousarray(arr)
            root = arr
            tp = arr
            strides = None
        else:
            isz = arr.dtype.itemsize
            strides = [s // isz for s in arr.strides]
        flat = tp.reshape(-1)
    _device.track(root)
    return _attach(shape, dtype, flat.view(np.uint8), strides)


wrap = from_numpy


def alias(base: torch.Tensor, size: Sequence[int], stride: Sequence[int],
          storage_offset: int | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A new mlu tensor that views ``base``'s storage with the given geometry (a real view).

    Like ATen's views (made with ``base``'s key set), it keeps ``base``'s lazy conjugate and
    negative bits: a transpose of a ``conj()`` view is still a conjugate view (``mH``)."""
    v = _create((0,), base.dtype if dtype is None else dtype)
    off = base.storage_offset() if storage_offset is None else int(storage_offset)
    _set_meta(_META, v, base.untyped_storage(), off, [int(s) for s in size],
              [int(s) for s in stride])
    if base.is_conj() and v.is_complex():
        torch._C._set_conj(v, True)
    if base.is_neg():
        torch._C._set_neg(v, True)
    return v


def _fit(t: torch.Tensor, storage: Any, off: int, size: list[int], st: list[int]) -> torch.Tensor:
    """Give ``t`` this geometry on ``storage``, first growing the storage's buffer if the
    geometry needs more bytes. Like CPU's storage realloc, the same storage gets the bigger
    buffer, so every view of it sees the new bytes."""
    old = getattr(storage, _BUF)
    need = _storage_nbytes(size, st, t.element_size(), off)
    if need > old.nbytes:
        root = np.zeros(need, np.uint8)
        root[: old.nbytes] = old
        _device.track(root)
        setattr(storage, _BUF, root)
    _set_meta(_META, t, storage, off, size, st)
    return t


def set_geometry(t: torch.Tensor, storage: Any, storage_offset: int, size: Sequence[int],
                 stride: Sequence[int] | None = None) -> torch.Tensor:
    """Point ``t`` at ``storage`` (an mlu ``UntypedStorage``) with the given geometry, growing
    the storage's buffer when the geometry needs more bytes (as CPU's ``set_`` does)."""
    size = [int(s) for s in size]
    st = contiguous_strides(size) if stride is None else [int(s) for s in stride]
    off = int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    return _fit(t, storage, off, size, st)


def restride(t: torch.Tensor, size: Sequence[int], stride: Sequence[int] | None = None,
             storage_offset: int | None = None) -> torch.Tensor:
    """Change ``t``'s own geometry in place (what ``resize_``/``as_strided_`` do).

    Grows the storage (copying the old bytes into a new, larger buffer) when the new geometry
    does not fit.
    """
    size = [int(s) for s in size]
    st = contiguous_strides(size) if stride is None else [int(s) for s in stride]
    off = cast(int, t.storage_offset()) if storage_offset is None else int(storage_offset)
    return _fit(t, t.untyped_storage(), off, size, st)
