"""FFT primitives (``_fft_r2c``, ``_fft_c2r``, ``_fft_c2c`` and their ``.out``): every
``torch.fft.*`` function is an ATen composite over these three. NumPy's pocketfft computes the
unnormalized transform; ATen's ``normalization`` (0 none, 1 by 1/sqrt(n), 2 by 1/n) is applied
after, over the product of the transformed sizes. The ``.out`` overloads compute the result and
then ``out.copy_(result)`` it, as ATen's do: ``out`` may have any dtype."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from kernels._semantics import scalar_type_name, write_out
from kernels._tensor import from_numpy, to_numpy
from kernels.registry import register

_COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128,
            torch.complex64: torch.complex64, torch.complex128: torch.complex128}
_REAL = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def _check(self: torch.Tensor, op: str, complex_input: bool) -> None:
    ok = _REAL if complex_input else (torch.float32, torch.float64)
    if self.dtype not in ok:
        raise RuntimeError(f"{op}: unsupported dtype {scalar_type_name(self.dtype)}")


def _check_dims(self: torch.Tensor, dim: Sequence[int], op: str) -> None:
    """What CPU's (MKL/pocketfft) plan refuses, all ``RuntimeError``: no dim for the real
    transforms (they read the last one), and any transform of a 0-dim or empty tensor."""
    if not dim and op != "_fft_c2c":
        raise RuntimeError("ArrayRef: attempted to access back() of empty list")
    if dim and (self.dim() == 0 or self.numel() == 0):
        raise RuntimeError(f"{op}: cannot plan a transform over dims {list(dim)} of a tensor of "
                           f"sizes {list(self.shape)}")


def _scale(value: np.ndarray, sizes: Sequence[int], normalization: int) -> np.ndarray:
    """The transform scaled by a real factor, each part on its own as pocketfft's ``fct``
    does (NumPy's complex / real is a complex division: a NaN imaginary part would spread
    into the real one)."""
    n = int(np.prod(sizes)) if len(sizes) else 1
    if normalization == 0:
        return value
    d = np.sqrt(n) if normalization == 1 else n
    if not np.iscomplexobj(value):
        return value / d
    out = np.empty_like(value)
    out.real, out.imag = value.real / d, value.imag / d
    return out


def _axes(self: torch.Tensor, dim: Sequence[int]) -> list[int]:
    """The transformed axes. CPU's primitives take dims its callers have wrapped and index
    the sizes with them unchecked: one past the rank is an internal assert (RuntimeError) or
    an out-of-bounds read, so a dim out of range is refused here, as a RuntimeError."""
    n = max(self.dim(), 1)
    bad = [d for d in dim if not -n <= d < n]
    if bad:
        raise RuntimeError(f"FFT dims {bad} out of range for a tensor of rank {self.dim()}")
    return [d % n for d in dim]


def _r2c(self: torch.Tensor, dim: Sequence[int], normalization: int, onesided: bool
         ) -> tuple[np.ndarray, torch.dtype]:
    _check_dims(self, dim, "_fft_r2c")
    _check(self, "_fft_r2c", False)
    x = to_numpy(self)
    axes = _axes(self, dim)
    v = np.fft.rfftn(x, axes=axes) if onesided else np.fft.fftn(x, axes=axes)
    return _scale(v, [x.shape[a] for a in axes], normalization), _COMPLEX[self.dtype]


def _c2r(self: torch.Tensor, dim: Sequence[int], normalization: int, last_dim_size: int
         ) -> tuple[np.ndarray, torch.dtype]:
    _check_dims(self, dim, "_fft_c2r")
    _check(self, "_fft_c2r", True)
    x = to_numpy(self)
    axes = _axes(self, dim)
    # CPU's result allocation refuses a negative size, its plan's assert a size of 0; both
    # RuntimeError (NumPy's refusal is a ValueError)
    if last_dim_size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {last_dim_size}")
    if last_dim_size == 0:
        raise RuntimeError("_fft_c2r: cannot plan a transform to 0 points")
    s = [x.shape[a] for a in axes[:-1]] + [int(last_dim_size)]
    v = np.fft.irfftn(x, s=s, axes=axes, norm="forward")  # unnormalized inverse
    return _scale(v, s, normalization), _REAL[self.dtype]


def _c2c(self: torch.Tensor, dim: Sequence[int], normalization: int, forward: bool
         ) -> tuple[np.ndarray, torch.dtype]:
    _check_dims(self, dim, "_fft_c2c")
    _check(self, "_fft_c2c", True)
    x = to_numpy(self)
    axes = _axes(self, dim)
    v = np.fft.fftn(x, axes=axes) if forward else np.fft.ifftn(x, axes=axes, norm="forward")
    return _scale(v, [x.shape[a] for a in axes], normalization), self.dtype


@register("_fft_r2c")
def _fft_r2c(self: torch.Tensor, dim: Sequence[int], normalization: int, onesided: bool
             ) -> torch.Tensor:
    v, dt = _r2c(self, dim, normalization, onesided)
    return from_numpy(v, dt)


@register("_fft_r2c.out")
def _fft_r2c_out(self: torch.Tensor, dim: Sequence[int], normalization: int, onesided: bool, *,
                 out: torch.Tensor) -> torch.Tensor:
    v, dt = _r2c(self, dim, normalization, onesided)
    return write_out(out, v, dt, check=False)


@register("_fft_c2r")
def _fft_c2r(self: torch.Tensor, dim: Sequence[int], normalization: int, last_dim_size: int
             ) -> torch.Tensor:
    v, dt = _c2r(self, dim, normalization, last_dim_size)
    return from_numpy(v, dt)


@register("_fft_c2r.out")
def _fft_c2r_out(self: torch.Tensor, dim: Sequence[int], normalization: int,
                 last_dim_size: int, *, out: torch.Tensor) -> torch.Tensor:
    v, dt = _c2r(self, dim, normalization, last_dim_size)
    return write_out(out, v, dt, check=False)


@register("_fft_c2c")
def _fft_c2c(self: torch.Tensor, dim: Sequence[int], normalization: int, forward: bool
             ) -> torch.Tensor:
    v, dt = _c2c(self, dim, normalization, forward)
    return from_numpy(v, dt)


@register("_fft_c2c.out")
def _fft_c2c_out(self: torch.Tensor, dim: Sequence[int], normalization: int, forward: bool, *,
                 out: torch.Tensor) -> torch.Tensor:
    v, dt = _c2c(self, dim, normalization, forward)
    return write_out(out, v, dt, check=False)
