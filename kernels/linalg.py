"""Matrix products: mm, bmm, addmm, baddbmm, addbmm, dot, vdot, mv, addmv (+ out=/in-place).

``matmul``, ``linear``, ``outer``, ``einsum``... are CompositeImplicitAutograd in ATen and reach
these kernels. float16/bfloat16 multiply in float32 (as CPU's GEMM accumulates) and round once.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch

from kernels._semantics import (
    BOOL,
    check_dtype,
    check_out_exact,
    cpp_type_name,
    emit,
    opmath,
    quiet,
    scalar_type_name,
    write_out,
)
from kernels._tensor import NP_DTYPE, from_numpy, np_dtype, to_numpy
from kernels.elementwise import check_same_device
from kernels.reductions import wrap_dim
from kernels.registry import register, register_rows


def _operand(t: torch.Tensor) -> np.ndarray:
    return opmath(to_numpy(t))


def _check_dtypes(op: str, a: torch.Tensor, b: torch.Tensor,
                  out: torch.Tensor | None = None) -> None:
    """ATen's order: shapes and dtypes (meta), then out's dtype, then the kernel's dtype support."""
    if a.dtype != b.dtype and op != "bmm":
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {cpp_type_name(a.dtype)} != "
            f"{cpp_type_name(b.dtype)}"
        )
    if out is not None:
        check_out_exact(out, a.dtype)
    if a.numel() and b.numel():
        check_dtype(op, a.dtype, refused=BOOL)
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"expected scalar type {scalar_type_name(a.dtype)} but found "
            f"{scalar_type_name(b.dtype)}"
        )


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # C-order operands, as CPU copies a non-BLAS-able (gapped) operand before its GEMM: NumPy's
    # own loop for strided operands propagates inf/NaN of complex products differently
    with quiet():
        return np.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))


def _mm_value(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor | None = None
              ) -> np.ndarray:
    check_same_device("mm", (self, mat2), ("self", "mat2"))
    if self.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self.shape[1] != mat2.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} and "
            f"{mat2.shape[0]}x{mat2.shape[1]})"
        )
    _check_dtypes("addmm_impl_mlu_", self, mat2, out)
    return _matmul(_operand(self), _operand(mat2))


def _mm(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor | None = None
        ) -> torch.Tensor:
    return emit(_mm_value(self, mat2, out), self.dtype, out, exact=True)


def _bmm_value(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor | None = None
               ) -> np.ndarray:
    _bmm_shapes(self, mat2)
    _check_dtypes("bmm", self, mat2, out)
    return _matmul(_operand(self), _operand(mat2))


def _bmm_shapes(self: torch.Tensor, mat2: torch.Tensor) -> None:
    check_same_device("bmm", (self, mat2), ("self", "mat2"))
    if self.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, _, k = self.shape
    if mat2.shape[0] != b or mat2.shape[1] != k:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {k}] but got: "
            f"[{mat2.shape[0]}, {mat2.shape[1]}]."
        )


def _bmm(self: torch.Tensor, mat2: torch.Tensor, out: torch.Tensor | None = None
         ) -> torch.Tensor:
    _bmm_shapes(self, mat2)
    (b, m, k), n = self.shape, mat2.shape[2]
    if self.dtype != mat2.dtype and (b * m * n == 0 or k == 0):
        # CPU's bmm meta gives the result batch2's dtype, and its kernel returns an empty result
        # or zeros (no contraction) before it reads either operand: no dtype check
        return emit(np.zeros((b, m, n), np_dtype(mat2.dtype)), mat2.dtype, out, exact=True)
    return emit(_bmm_value(self, mat2, out), self.dtype, out, exact=True)


def _axpby(self: torch.Tensor, prod: np.ndarray, beta: Any, alpha: Any) -> np.ndarray:
    """beta * self + alpha * prod, with self ignored when beta == 0 (NaNs included), as ATen."""
    shape = prod.shape
    s = np.broadcast_shapes(tuple(self.shape), shape) if self.dim() else shape
    if s != shape:
        raise RuntimeError(
            f"The expanded size of the tensor ({shape[-1]}) must match the existing size "
            f"({self.shape[-1]}) at non-singleton dimension {len(shape) - 1}.  Target sizes: "
            f"{list(shape)}.  Tensor sizes: {list(self.shape)}"
        )
    with quiet():
        r = prod if alpha == 1 else prod * np.asarray(alpha).astype(prod.dtype)
        if np.asarray(beta).astype(prod.dtype) == 0:  # read in the compute type: 1e-308 is 0
            return np.array(r, copy=True) if r is prod else r
        c = _operand(self)
        return r + (c if beta == 1 else c * np.asarray(beta).astype(prod.dtype))


def _unread_if_alpha_zero(prod: np.ndarray, alpha: Any) -> np.ndarray:
    """The product as BLAS leaves it when alpha is 0: never read, so zeros (no inf/NaN)."""
    with quiet():
        if np.asarray(alpha).astype(prod.dtype) == 0:
            return np.zeros_like(prod)
    return prod


def _check_self_dtype(self: torch.Tensor, other: torch.Tensor) -> None:
    if self.dtype != other.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {scalar_type_name(self.dtype)} and "
            f"{scalar_type_name(other.dtype)}"
        )


def _addmm(self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor, beta: Any = 1,
           alpha: Any = 1, out: torch.Tensor | None = None, inplace: bool = False
           ) -> torch.Tensor:
    check_same_device("addmm", (self, mat1, mat2), ("self", "mat1", "mat2"))
    if mat1.dim() != 2:
        raise RuntimeError("mat1 must be a matrix, got " + f"{mat1.dim()}-D tensor")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix, got " + f"{mat2.dim()}-D tensor")
    _check_self_dtype(self, mat1)
    prod = _mm_value(mat1, mat2, out)
    if mat1.dtype not in (torch.float16, torch.bfloat16) and prod.dtype.kind in "fc":
        # CPU's float/double/complex GEMM does not read mat1 @ mat2 when alpha is 0 (BLAS), so
        # their inf/NaN do not reach the result; its Half/BFloat16 one does
        prod = _unread_if_alpha_zero(prod, alpha)
    value = _axpby(self, prod, beta, alpha)
    return emit(value, mat1.dtype, out, into=self if inplace else None, exact=True)


def _baddbmm(self: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, beta: Any = 1,
             alpha: Any = 1, out: torch.Tensor | None = None, inplace: bool = False
             ) -> torch.Tensor:
    check_same_device("baddbmm", (self, batch1, batch2), ("self", "batch1", "batch2"))
    _check_self_dtype(self, batch1)
    value = _axpby(self, _bmm_value(batch1, batch2, out), beta, alpha)
    return emit(value, batch1.dtype, out, into=self if inplace else None, exact=True)


def _addbmm(self: torch.Tensor, batch1: torch.Tensor, batch2: torch.Tensor, beta: Any = 1,
            alpha: Any = 1, out: torch.Tensor | None = None, inplace: bool = False
            ) -> torch.Tensor:
    check_same_device("addbmm", (self, batch1, batch2), ("self", "batch1", "batch2"))
    _check_self_dtype(self, batch1)
    prod = _bmm_value(batch1, batch2)
    value = _axpby(self, prod.sum(axis=0) if prod.shape[0] else np.zeros(prod.shape[1:],
                                                                        prod.dtype), beta, alpha)
    # addbmm_out_cpu resizes out with resize_as_(self): no resize_output warning
    return emit(value, batch1.dtype, out, into=self if inplace else None, exact=True,
                silent_resize=True)


def _dot_checks(self: torch.Tensor, other: torch.Tensor, op: str) -> None:
    check_same_device(op, (self, other), ("self", "tensor"))
    if self.dim() != 1 or other.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {self.dim()}D and {other.dim()}D tensors"
        )
    if self.dtype != other.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found "
            f"{scalar_type_name(self.dtype)} and {scalar_type_name(other.dtype)}"
        )
    check_dtype(op, self.dtype, refused=BOOL)
    if self.numel() != other.numel():
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.numel()}] and src "
            f"[{other.numel()}] to have the same number of elements, but got {self.numel()} "
            f"and {other.numel()} elements respectively"
        )


@register("dot")
def dot(self: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor:
    _dot_checks(self, tensor, "dot")
    with quiet():
        return from_numpy(np.dot(_operand(self), _operand(tensor)), self.dtype)


@register("vdot")
def vdot(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    _dot_checks(self, other, "vdot")
    with quiet():
        return from_numpy(np.vdot(_operand(self), _operand(other)), self.dtype)


def _mv_value(self: torch.Tensor, vec: torch.Tensor) -> np.ndarray:
    check_same_device("mv", (self, vec), ("self", "vec"))
    if self.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {self.dim()}, {vec.dim()}"
        )
    if self.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({self.shape[0]}), mat ({self.shape[0]}x{self.shape[1]}), "
            f"vec ({vec.shape[0]})"
        )
    _check_dtypes("addmv_impl_mlu", self, vec)
    return _matmul(_operand(self), _operand(vec))


def _mv(self: torch.Tensor, vec: torch.Tensor) -> torch.Tensor:
    return from_numpy(_mv_value(self, vec), self.dtype)


def _addmv(self: torch.Tensor, mat: torch.Tensor, vec: torch.Tensor, beta: Any = 1,
           alpha: Any = 1, out: torch.Tensor | None = None, inplace: bool = False
           ) -> torch.Tensor:
    check_same_device("addmv", (self, mat, vec), ("self", "mat", "vec"))
    if not (self.dtype == mat.dtype == vec.dtype):
        raise RuntimeError(
            "addmv input tensors must have the same dtype, but got "
            f"{scalar_type_name(self.dtype)}, {scalar_type_name(mat.dtype)}, and "
            f"{scalar_type_name(vec.dtype)}"
        )
    prod = _mv_value(mat, vec)
    if mat.dtype in (torch.float16, torch.bfloat16):
        # CPU's addmv reads beta and alpha as scalar_t before its gemv (addmm reads them in
        # opmath float): alpha = 4.3e-13 is 0 in float16, so a row holding inf gives 0 * inf = NaN
        beta, alpha = (b if isinstance(b, complex) else float(np.asarray(b).astype(np_dtype(
            mat.dtype))) for b in (beta, alpha))
    if mat.dtype in (torch.float32, torch.float64):
        # CPU's float/double addmv is BLAS gemv, which returns beta * self without reading mat
        # or vec when alpha is 0; its Half/BFloat16/complex addmv (not BLAS) gives NaN for them
        prod = _unread_if_alpha_zero(prod, alpha)
    value = _axpby(self, prod, beta, alpha)
    return emit(value, mat.dtype, out, into=self if inplace else None, exact=True)


register_rows({
    ("mm", "mm.out"): _mm,
    ("bmm", "bmm.out"): _bmm,
    "mv": _mv,
    ("addmm", "addmm.out"): _addmm,
    "addmm_": partial(_addmm, inplace=True),
    ("baddbmm", "baddbmm.out"): _baddbmm,
    "baddbmm_": partial(_baddbmm, inplace=True),
    ("addbmm", "addbmm.out"): _addbmm,
    "addbmm_": partial(_addbmm, inplace=True),
    ("addmv", "addmv.out"): _addmv,
    "addmv_": partial(_addmv, inplace=True),
})

__all__ = ["NP_DTYPE"]


def _pairwise_p(diff: np.ndarray, p: float) -> np.ndarray:
    a = np.abs(diff)
    if p == 0:  # ATen's zdist: min(ceil(|d|), 1) per element, so a NaN stays NaN
        return np.minimum(np.ceil(a), 1).sum(-1).astype(a.dtype)
    if p == float("inf"):
        return a.max(-1) if a.shape[-1] else np.zeros(a.shape[:-1], a.dtype)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return np.sqrt((a * a).sum(-1))
    # each pow in double, rounded to the dtype (float32's powf is off by several ulps where
    # CPU's is within one; the rounding keeps CPU's overflow of |d|**p), summed in the dtype
    wide = np.float64 if a.dtype.itemsize < 8 else a.dtype
    terms = np.power(a.astype(wide), p).astype(a.dtype)
    return np.power(terms.sum(-1).astype(wide), 1.0 / p).astype(a.dtype)


@register("_cdist_forward")
def _cdist_forward(x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None
                   ) -> torch.Tensor:
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError("cdist only supports at least 2D tensors, X1 got: "
                           f"{x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
            f"{x2.shape[-1]}"
        )
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {name} got: "
                f"{scalar_type_name(t.dtype)}"
            )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode is not None and not 0 <= compute_mode <= 2:
        raise RuntimeError(f"possible modes: 0, 1, 2, but was: {compute_mode}")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    mm = p == 2 and (compute_mode == 1 or (compute_mode in (None, 0) and (r1 > 25 or r2 > 25)))
    if r1 and r2 and x1.shape[-1] and not mm:  # the direct kernel's dtype dispatch, on x1
        check_dtype("cdist", x1.dtype, allowed=frozenset({torch.float32, torch.float64}))
    if x1.dtype != x2.dtype and r1 and r2 and x1.shape[-1]:
        # CPU's kernel reads x2 as x1's scalar type (when there is something to compute)
        raise RuntimeError(f"expected scalar type {scalar_type_name(x1.dtype)} but found "
                           f"{scalar_type_name(x2.dtype)}")
    a, b = _operand(x1), _operand(x2)
    with quiet():
        if p == 2 and compute_mode in (None, 0, 1) and (compute_mode == 1 or (
                compute_mode in (None, 0) and (a.shape[-2] > 25 or b.shape[-2] > 25))):
            # ATen's matrix-multiplication path: sqrt(|a|^2 - 2ab + |b|^2), clamped at 0
            aa = (a * a).sum(-1)[..., :, None]
            bb = (b * b).sum(-1)[..., None, :]
            d = np.sqrt(np.maximum(aa - 2 * np.matmul(a, np.swapaxes(b, -1, -2)) + bb, 0))
        else:
            d = _pairwise_p(a[..., :, None, :] - b[..., None, :, :], p)
    return from_numpy(d, x1.dtype)


@register("_pdist_forward")
def _pdist_forward(self: torch.Tensor, p: float = 2.0) -> torch.Tensor:
    # ATen's _pdist_forward (the 2-D and p >= 0 checks are torch.pdist's, above it): fewer
    # than two rows give an empty result, no columns zeros, before the dtype dispatch; the
    # kernel walks the pairs of size(1)-element rows of the flat data (every row of a 3-D
    # input, not only size(0) of them) and stops after n * (n - 1) / 2 results
    n = self.size(0)  # torch's IndexError for a 0-dim self, as on CPU
    if n <= 1:
        return from_numpy(np.empty(0, NP_DTYPE[self.dtype]), self.dtype)
    m = self.size(1)  # and for a 1-dim one
    if m == 0:
        return from_numpy(np.zeros(n * (n - 1) // 2, NP_DTYPE[self.dtype]), self.dtype)
    check_dtype("pdist", self.dtype, allowed=frozenset({torch.float32, torch.float64}))
    x = _operand(self).reshape(-1, m)
    i, j = (k[:n * (n - 1) // 2] for k in np.triu_indices(x.shape[0], 1))
    with quiet():
        return from_numpy(_pairwise_p(x[i] - x[j], p), self.dtype)


@register("linalg_cross.out")
def linalg_cross_out(self: torch.Tensor, other: torch.Tensor, *, dim: int = -1,
                     out: torch.Tensor) -> torch.Tensor:
    if self.dim() != other.dim():
        raise RuntimeError(
            "linalg.cross: inputs must have the same number of dimensions."
        )
    # ATen's meta reads input.size(dim): a dim out of range is its IndexError, before the length
    d = wrap_dim(dim, self.dim())
    if self.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{self.shape[d]} and {other.shape[d]}"
        )
    # ATen's meta gives the result self's dtype (out= must have it), its kernel dispatches on
    # self's dtype, then reads other as that dtype: no promotion
    check_out_exact(out, self.dtype)
    check_dtype("cross", self.dtype, refused=BOOL)
    if self.dtype != other.dtype:
        raise RuntimeError(
            f"expected scalar type {scalar_type_name(self.dtype)} but found "
            f"{scalar_type_name(other.dtype)}"
        )
    with quiet():
        return write_out(out, _cross(to_numpy(self), to_numpy(other), d), self.dtype,
                         exact=True)


#: The dtype in which CPU's cross kernel forms its first product exactly: the compiler fuses
#: ``x * y - z * w`` into fma(x, y, -(z * w)) for float and double (bitwise equal on 5000 random
#: triples; an exact product keeps a finite x * y - inf from becoming inf - inf = NaN). Half
#: types round each product (c10's operators), as NumPy does.
_FUSED_WIDE = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble}


def _cross(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    wide = _FUSED_WIDE.get(a.dtype)
    if wide is None:
        return np.cross(a, b, axis=axis)
    x, y = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)

    def fused(i: int, j: int, k: int, m: int) -> np.ndarray:
        return (x[..., i].astype(wide) * y[..., j] - (x[..., k] * y[..., m])).astype(a.dtype)

    parts = (fused(1, 2, 2, 1), fused(2, 0, 0, 2), fused(0, 1, 1, 0))
    return np.moveaxis(np.stack(parts, axis=-1), -1, axis)
