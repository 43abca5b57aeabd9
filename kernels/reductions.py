"""Reductions: sum, mean, prod, amax/amin, max/min, argmax/argmin, var/std, norms, any/all,
cumulative ops, logsumexp.

Accumulation dtypes follow ATen: integral and bool inputs sum/prod into int64, float16/bfloat16
accumulate in float32; ``dtype=`` casts the input first. NaN propagates through max/min/amax/amin
(and argmax/argmin point at the first NaN), as on CPU.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Any, overload

import numpy as np
import torch

from kernels._semantics import (
    BOOL,
    COMPLEX,
    FLOATING,
    LOW_PRECISION,
    check_dtype,
    check_out_exact,
    check_result_fits,
    checked_scalar,
    cpp_type_name,
    emit,
    held_exact,
    opmath,
    quiet,
    scalar_type_name,
    write_out,
)
from kernels._tensor import NP_DTYPE, from_numpy, to_numpy
from kernels.elementwise import log_add_exp_complex
from kernels.registry import register, register_rows

_EINSUM_MAX = 4096


def wrap_dim(dim: int, ndim: int, wrap_scalar: bool = True) -> int:
    """ATen's maybe_wrap_dim, with its error messages (``wrap_scalar=False``: a 0-dim tensor
    has no dimension to name)."""
    if ndim == 0 and not wrap_scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


def reduce_axes(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """Dims to reduce as NumPy axes (``None``: all). ``[]``/``None`` mean all dims, as in ATen."""
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = [dim]
    if len(dim) == 0:
        return None
    axes = [wrap_dim(int(d), ndim) for d in dim]
    seen = set()
    for a in axes:
        if a in seen:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        seen.add(a)
    if ndim == 0:
        return None
    return tuple(axes)


def _keep(value: Any, x: np.ndarray, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
    """Put reduced dims back as size 1 when ``keepdim``."""
    if not keepdim or x.ndim == 0:
        return value
    shape = list(x.shape)
    for a in range(x.ndim) if axes is None else axes:
        shape[a] = 1
    return np.reshape(value, shape)


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype in LOW_PRECISION:
        return torch.float32
    return dtype


def _input(self: torch.Tensor, dtype: torch.dtype | None) -> tuple[np.ndarray, torch.dtype]:
    x = to_numpy(self)
    if dtype is not None and dtype != self.dtype:
        x = x.astype(NP_DTYPE[dtype])
        return x, dtype
    return x, self.dtype


def _emit(value: Any, dtype: torch.dtype, out: torch.Tensor | None = None,
          exact: bool | None = None) -> torch.Tensor:
    if out is not None:
        # no cast rule (a reduction's meta takes its dtype from out=), but the exact one where
        # the overload's CPU kernel has it (``None``: structured, not TensorIterator: norms...)
        return write_out(out, np.asarray(value).astype(NP_DTYPE[dtype]), dtype, check=False,
                         exact=held_exact(out) if exact is None else exact)
    return from_numpy(value, dtype)


def _check_dtype_arg(out: torch.Tensor | None, dtype: torch.dtype | None) -> None:
    """``dtype=`` given with ``out=``: out must have it (ATen's reduction out rule)."""
    if out is not None and dtype is not None:
        check_out_exact(out, dtype)


# --------------------------------------------------------------------------------------------
# sum / nansum / mean / prod
# --------------------------------------------------------------------------------------------


def _sum_dtype(self: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        return dtype
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        return torch.int64
    return self.dtype


def _sum(self: torch.Tensor, dim: Any = None, keepdim: bool = False,
         dtype: torch.dtype | None = None, out: torch.Tensor | None = None, nan: bool = False
         ) -> torch.Tensor:
    _check_dtype_arg(out, dtype)
    result = _sum_dtype(self, dtype) if out is None or dtype is not None else out.dtype
    if nan and self.dtype.is_complex:
        raise RuntimeError("nansum does not support complex inputs")
    x, _ = _input(self, result)
    if nan and self.dtype.is_floating_point:
        # NaN is zero before any cast to dtype= (a NaN summed as bool is False), and for
        # float16/bfloat16 too (NumPy's nansum replaces NaN only in its own float kinds)
        raw = to_numpy(self)
        with quiet():
            x = np.where(np.isnan(raw), np.zeros((), raw.dtype), raw).astype(x.dtype)
        nan = False
    axes = reduce_axes(dim, x.ndim)
    acc = NP_DTYPE[_acc_dtype(result)]
    if nan and x.dtype.kind in "fV":  # np.nansum skips ml_dtypes' bfloat16 (not np.inexact)
        x, nan = np.where(np.isnan(x), np.zeros((), x.dtype), x), False
    with quiet():
        if (not nan and acc == x.dtype and acc.kind in "fc" and axes == (x.ndim - 1,)
                and x.flags.c_contiguous and x.shape[-1] <= _EINSUM_MAX):
            # Rows of a C-contiguous array: einsum's unrolled loop is ~3x faster than
            # np.sum's pairwise one; rows this short keep its rounding error well within
            # float tolerances (np.sum's pairwise summation is kept for longer rows).
            v = np.einsum("...i->...", x)
        else:
            v = (np.nansum if nan else np.sum)(x, axis=axes, dtype=None if acc == x.dtype
                                               else acc)
    return _emit(_keep(v, x, axes, keepdim), result, out)












def _mean(self: torch.Tensor, dim: Any = None, keepdim: bool = False,
          dtype: torch.dtype | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    _check_dtype_arg(out, dtype)
    checked = dtype if dtype is not None else self.dtype
    if not (checked.is_floating_point or checked.is_complex):
        raise RuntimeError(
            "mean(): could not infer output dtype. "
            + ("Optional dtype" if dtype is not None else "Input dtype")
            + " must be either a floating point or complex dtype. Got: "
            + scalar_type_name(checked)
        )
    if out is not None and dtype is None and not (out.dtype.is_floating_point
                                                  or out.dtype.is_complex):
        # CPU's mean.out is sum_out(out, self, dtype=out.dtype).div_(n): any floating or
        # complex out (a complex input summed into a real one loses its imaginary part); the
        # true division refuses the others
        raise RuntimeError("result type Float can't be cast to the desired output type "
                           f"{scalar_type_name(out.dtype)}")
    result = dtype if dtype is not None else (out.dtype if out is not None else self.dtype)
    x, _ = _input(self, result)
    axes = reduce_axes(dim, x.ndim)
    with quiet():
        v = np.mean(x, axis=axes, dtype=NP_DTYPE[_acc_dtype(result)])
    return _emit(_keep(v, x, axes, keepdim), result, out)








def _prod(self: torch.Tensor, dim: Any = None, keepdim: bool = False,
          dtype: torch.dtype | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    _check_dtype_arg(out, dtype)
    result = _sum_dtype(self, dtype) if out is None or dtype is not None else out.dtype
    x, _ = _input(self, result)
    axes = reduce_axes(dim, x.ndim)
    with quiet():
        if result in LOW_PRECISION:
            v = _prod_rounding_each_step(x, axes)
        else:
            v = np.prod(x, axis=axes, dtype=NP_DTYPE[_acc_dtype(result)])
    return _emit(_keep(v, x, axes, keepdim), result, out)


def _prod_rounding_each_step(x: np.ndarray, axes: tuple[int, ...] | None) -> np.ndarray:
    """ATen's prod_kernel_impl reduces float16/bfloat16 in scalar_t itself: each product is
    rounded to the half type, in order over the reduced elements (row-major), so a partial
    product underflows to 0 or overflows to inf where a float32 accumulator would not (then
    0 * inf is NaN). NumPy's float16 multiply.reduce accumulates in float32, hence the loop.
    (CPU's vectorized loop takes lanes of 4 x Vectorized::size() elements when 64 or more
    contiguous elements are reduced into one; that machine-dependent order is not copied.)"""
    reduced = tuple(range(x.ndim)) if axes is None else tuple(sorted(axes))
    kept = [a for a in range(x.ndim) if a not in reduced]
    n = math.prod(x.shape[a] for a in reduced)
    rows = np.transpose(x, kept + list(reduced)).reshape([x.shape[a] for a in kept] + [n])
    acc = np.ones(rows.shape[:-1], x.dtype)
    for k in range(rows.shape[-1]):
        acc = (acc.astype(np.float32) * rows[..., k].astype(np.float32)).astype(x.dtype)
    return acc








# --------------------------------------------------------------------------------------------
# amax / amin / max / min / argmax / argmin / aminmax
# --------------------------------------------------------------------------------------------



def _check_nonempty(x: np.ndarray, axes: tuple[int, ...] | None, op: str) -> None:
    if x.size != 0:
        return
    if axes is None:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {a} to have non-zero size.")


def _amax(self: torch.Tensor, dim: Any, keepdim: bool, out: torch.Tensor | None = None, *,
          fn: Any, op: str) -> torch.Tensor:
    x = to_numpy(self)
    axes = reduce_axes(dim, x.ndim)
    if out is not None and out.dtype != self.dtype:
        raise RuntimeError(
            f"Expected the dtype for input and out to match, but got "
            f"{scalar_type_name(self.dtype)} for input's dtype and "
            f"{scalar_type_name(out.dtype)} for out's dtype."
        )
    _check_nonempty(x, axes, op)
    check_dtype(op, self.dtype, refused=COMPLEX)
    with quiet():
        v = fn(x, axis=axes)
    return _emit(_keep(v, x, axes, keepdim), self.dtype, out)










def _full_minmax(self: torch.Tensor, out: torch.Tensor | None = None, *, fn: Any, op: str
                 ) -> torch.Tensor:
    if out is not None and self.dtype != out.dtype:  # max_unary_out's first check on CPU
        try:
            check_result_fits(self.dtype, out.dtype)
        except RuntimeError:
            raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                               "typeMetaToScalarType(out.dtype())) to be true, but got false."
                               ) from None
    x = to_numpy(self)
    if x.size == 0 and out is None:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' parameter."
        )
    check_dtype(op, self.dtype, refused=COMPLEX)
    if x.size == 0:  # the out= overload reduces nothing: CPU's min_all/max_all identity
        low = op == "max"
        if self.dtype == torch.bool:
            value: Any = not low
        elif self.dtype.is_floating_point:
            value = -np.inf if low else np.inf
        else:
            info = np.iinfo(x.dtype)
            value = info.min if low else info.max
        return _emit(np.asarray(value, x.dtype), self.dtype, out)
    return _emit(fn(x), self.dtype, out)










@overload
def _arg_best(x: np.ndarray, axis: int, largest: bool) -> np.ndarray: ...


@overload
def _arg_best(x: np.ndarray, axis: None, largest: bool) -> np.intp: ...


def _arg_best(x: np.ndarray, axis: int | None, largest: bool) -> np.ndarray | np.intp:
    """argmax/argmin with NaN counted as the extreme (first NaN wins), as ATen does.

    A NumPy integer scalar, not an array, when ``axis`` is None.
    """
    if x.dtype.kind in "fV" or x.dtype == NP_DTYPE[torch.bfloat16]:
        nan = np.isnan(x)
        if nan.any():
            best = np.argmax(nan, axis=axis)
            plain = (np.argmax if largest else np.argmin)(np.where(nan, 0, x), axis=axis)
            return np.where(np.any(nan, axis=axis), best, plain)
    return (np.argmax if largest else np.argmin)(x, axis=axis)


def _minmax_dim(self: torch.Tensor, dim: int, keepdim: bool,
                out: tuple[torch.Tensor, torch.Tensor] | None = None, *, largest: bool, op: str
                ) -> tuple[torch.Tensor, torch.Tensor]:
    x = to_numpy(self)
    d = wrap_dim(dim, x.ndim)
    check_dtype(op, self.dtype, refused=COMPLEX)
    if x.ndim == 0:
        values, idx = x.copy(), np.zeros((), np.int64)
    else:
        _check_nonempty(x, (d,), op)
        idx = _arg_best(x, d, largest)
        values = np.take_along_axis(x, np.expand_dims(idx, d), d).squeeze(d)
        if keepdim:
            idx = np.expand_dims(idx, d)
            values = np.expand_dims(values, d)
    if out is not None:
        write_out(out[0], values, self.dtype, exact=True)
        write_out(out[1], idx.astype(np.int64), torch.int64, exact=True)
        return out
    return from_numpy(values, self.dtype), from_numpy(idx, torch.int64)










def _argbest(self: torch.Tensor, dim: int | None, keepdim: bool,
             out: torch.Tensor | None = None, *, largest: bool, op: str) -> torch.Tensor:
    x = to_numpy(self)
    if self.dtype.is_complex:
        raise RuntimeError(f"{op}(): does not support complex input")
    if self.dtype == torch.bool:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if x.size == 0:
            raise IndexError(
                f"{op}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        idx = np.asarray(_arg_best(x.reshape(-1), None, largest))
        if keepdim:
            idx = idx.reshape([1] * x.ndim)
    else:
        d = wrap_dim(dim, x.ndim)
        if x.ndim == 0:
            idx = np.zeros((), np.int64)
        else:
            _check_nonempty(x, (d,), op)
            idx = _arg_best(x, d, largest)
            if keepdim:
                idx = np.expand_dims(idx, d)
    return _emit(idx.astype(np.int64), torch.int64, out, exact=True)










def _aminmax_pair(self: torch.Tensor, dim: int | None, keepdim: bool,
                 outs: tuple[torch.Tensor, torch.Tensor] | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """aminmax and _aminmax in CPU's order: the empty-input check (no dim: RuntimeError; an
    empty reduced dim: IndexError), out='s dtype, then the complex refusal (the dispatch macro's
    NotImplementedError; a 0-dim input reduced over a dim: aminmax's own RuntimeError)."""
    x = to_numpy(self)
    if dim is None:
        if x.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
    else:
        d = wrap_dim(dim, self.dim())
        if self.dim() and x.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    for o in outs or ():
        check_out_exact(o, self.dtype)
    if self.dtype.is_complex:
        if dim is not None and self.dim() == 0:
            raise RuntimeError(f"aminmax not implemented for {scalar_type_name(self.dtype)}")
        check_dtype("aminmax_cpu", self.dtype, refused=COMPLEX)
    d_list = None if dim is None else [dim]
    lo, hi = outs if outs is not None else (None, None)
    return (_amax(self, d_list, keepdim, lo, fn=np.min, op="aminmax"),
            _amax(self, d_list, keepdim, hi, fn=np.max, op="aminmax"))


@register("aminmax")
def aminmax(self: torch.Tensor, *, dim: int | None = None, keepdim: bool = False
            ) -> tuple[torch.Tensor, torch.Tensor]:
    return _aminmax_pair(self, dim, keepdim)


@register("aminmax.out")
def aminmax_out(self: torch.Tensor, *, dim: int | None = None, keepdim: bool = False,
                min: torch.Tensor, max: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return _aminmax_pair(self, dim, keepdim, (min, max))


# --------------------------------------------------------------------------------------------
# var / std (+ _mean)
# --------------------------------------------------------------------------------------------


def _real_dtype(dtype: torch.dtype) -> torch.dtype:
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


def _var_std(self: torch.Tensor, dim: Any = None, *, correction: Any = None,
             keepdim: bool = False, out: torch.Tensor | None = None, op: str) -> torch.Tensor:
    # ATen's std_var_out builds its reduction in the out's (real) dtype: the input is cast to it
    # first (float64 -1.8e308 into a float32 out is -inf, and std of [-inf, -inf] is NaN) and the
    # result is not rounded to the input's dtype on the way. One output element with a
    # float/double out goes to std_var_all_cpu instead, which reads the uncast input.
    # std_var_all_cpu rounds its double result to the input's dtype and fill_s the out with it,
    # which refuses a finite value the out cannot hold (complex: each part's variance).
    into = out.dtype if out is not None and out.dtype.is_floating_point else None
    cast, all_cpu = None, False
    if into is not None and into != _real_dtype(self.dtype) and (
            self.dtype.is_floating_point or self.dtype.is_complex):
        reduced = reduce_axes(dim, self.dim())
        one = reduced is None or all(i in reduced or s == 1 for i, s in enumerate(self.shape))
        all_cpu = one and into not in (torch.float16, torch.bfloat16)
        cast = None if all_cpu else into
    v, _, dt = _var(self, dim, correction, keepdim, op, cast=cast)
    if all_cpu and into is not None:
        filled = v if self.dtype.is_complex or op == "var" else np.sqrt(v)
        with quiet():
            filled = np.asarray(filled).astype(NP_DTYPE[_real_dtype(self.dtype)])
        for value in filled.reshape(-1).tolist():
            checked_scalar(value, into)
        into = None
    half = (torch.float16, torch.bfloat16)
    if (out is not None and self.dtype in half and out.dtype not in half
            and out.dtype in FLOATING | COMPLEX and self.numel() and v.size <= 1):
        # ATen's std_var_out: a wider out makes the common dtype float, which sends a one-element
        # result to std_var_all_cpu, and that kernel dispatches on the input's dtype (float/double)
        raise RuntimeError(f"std_var_all: Unsupported dtype {scalar_type_name(self.dtype)}")
    return emit(np.sqrt(v) if op == "std" else v, into or _real_dtype(dt), out)


def _var(self: torch.Tensor, dim: Any, correction: Any, keepdim: bool, op: str,
         cast: torch.dtype | None = None) -> tuple[np.ndarray, np.ndarray, torch.dtype]:
    """``cast``: the real dtype the parts are converted to before reducing (an out's)."""
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    x = to_numpy(self)
    re_im = (x.real, x.imag) if x.dtype.kind == "c" else None
    if cast is not None:
        with quiet():
            if re_im is not None:
                re_im = (x.real.astype(NP_DTYPE[cast]), x.imag.astype(NP_DTYPE[cast]))
            else:
                x = x.astype(NP_DTYPE[cast])
    axes = reduce_axes(dim, x.ndim)
    ddof = 1 if correction is None else correction
    n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
    # ATen's std_var_all_cpu: all of a float32/float64 input reduced (dims of size 1 aside)
    kept = 1 if axes is None else int(np.prod([s for i, s in enumerate(x.shape) if i not in axes]))
    real = x.real.dtype if re_im is None else re_im[0].dtype
    two_pass = op in ("var", "std") and kept == 1 and real in (np.float32, np.float64)
    with quiet():
        if re_im is not None:  # ATen: var(real) + var(imag) in the real dtype, mean of each
            vr, mr = _var_moments(np.ascontiguousarray(re_im[0]), axes, ddof, n, two_pass)
            vi, mi = _var_moments(np.ascontiguousarray(re_im[1]), axes, ddof, n, two_pass)
            v, mean_v = vr.astype(real) + vi.astype(real), _pair_parts(mr, mi)
        else:
            v, mean_v = _var_moments(x, axes, ddof, n, two_pass)
        if x.size == 0 and op in ("var", "std"):  # ATen fills an empty input's result with NaN
            v = np.full(np.shape(v), np.nan, np.asarray(v).dtype)
    return _keep(v, x, axes, keepdim), _keep(mean_v, x, axes, keepdim), self.dtype


def _pair_parts(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    z = np.empty(re.shape, np.result_type(re, np.complex64))
    z.real, z.imag = re, im
    return z


#: reductions longer than this use the two-pass formula instead of the element-by-element loop
_WELFORD_MAX = 4096


def _var_moments(x: np.ndarray, axes: tuple[int, ...] | None, ddof: Any, n: int,
                 two_pass: bool) -> tuple[np.ndarray, np.ndarray]:
    """(variance, mean) of a real array, reduced over ``axes``, as CPU computes them: in double
    (float16/bfloat16/float32 too), a full var/std of float32/float64 in two passes around
    ``self.mean()``, everything else by ATen's Welford recurrence (so [inf, 1] has mean NaN, as
    ``delta = 1 - inf`` makes it, where the two-pass mean is inf). Results in double: the
    caller takes std's square root before rounding to the result dtype, as CPU does."""
    out_shape = tuple(s for i, s in enumerate(x.shape) if axes is not None and i not in axes)
    divisor = np.float64(n - ddof if n > ddof else 0)  # ATen's ``nf > correction ? ...``: NaN
    #                                                   correction divides by 0
    if two_pass:
        mean = np.float64(np.mean(x, dtype=x.dtype)) if x.size else np.float64(np.nan)
        dx = x.astype(np.float64) - mean
        var = np.sum(dx * dx) / divisor
        return np.asarray(var).reshape(out_shape), np.asarray(mean).reshape(out_shape)
    rest = [i for i in range(x.ndim) if axes is not None and i not in axes]
    red = list(range(x.ndim)) if axes is None else list(axes)
    flat = np.transpose(x, rest + red).reshape(int(np.prod(out_shape)), n).astype(np.float64)
    if n > _WELFORD_MAX:
        mean = flat.mean(axis=1)
        dx = flat - mean[:, None]
        m2 = np.sum(dx * dx, axis=1)
    else:
        mean = np.zeros(flat.shape[0])
        m2 = np.zeros(flat.shape[0])
        for k in range(n):
            delta = flat[:, k] - mean
            mean = mean + delta / np.float64(k + 1)
            m2 = m2 + delta * (flat[:, k] - mean)
        if n == 0:
            mean = np.full(flat.shape[0], np.nan)
    var = m2 / divisor if n else np.full(flat.shape[0], np.nan)
    return var.reshape(out_shape), mean.reshape(out_shape)










@register("var_mean.correction")
def var_mean_correction(self: torch.Tensor, dim: Any = None, *, correction: Any = None,
                        keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    v, m, dt = _var(self, dim, correction, keepdim, "var_mean")
    return from_numpy(v, _real_dtype(dt)), from_numpy(m, dt)


@register("std_mean.correction")
def std_mean_correction(self: torch.Tensor, dim: Any = None, *, correction: Any = None,
                        keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    v, m, dt = _var(self, dim, correction, keepdim, "std_mean")
    return from_numpy(np.sqrt(v), _real_dtype(dt)), from_numpy(m, dt)


# --------------------------------------------------------------------------------------------
# norms
# --------------------------------------------------------------------------------------------


def vector_norm(x: np.ndarray, ord: float, axes: tuple[int, ...] | None, *,
                single_is_abs: bool = True) -> np.ndarray:
    a = np.abs(x)
    count = a.size if axes is None else int(np.prod([a.shape[i] for i in axes]))
    if count == 1 and ord != 0 and single_is_abs:
        # CPU's norm of one element is its absolute value (no |x|**p that would overflow),
        # except for a 0-dim input reduced over an explicit dim 0 (the caller says so)
        return a.reshape(()) if axes is None else np.squeeze(a, axis=axes)
    if ord == float("inf"):  # empty: 0, where an order that is finite as a double (the
        # caller's empty-input check) overflows to inf in the accumulation type (1e300 in float32)
        return np.max(a, axis=axes, initial=0)
    if ord == float("-inf"):
        return np.min(a, axis=axes)
    if ord == 0:
        return np.sum(a != 0, axis=axes).astype(a.dtype)
    if ord == 1:
        return np.sum(a, axis=axes)
    if ord == 2:
        return np.sqrt(np.sum(a * a, axis=axes))
    return np.power(np.sum(np.power(a, ord), axis=axes), 1.0 / ord)


def _vector_norm(self: torch.Tensor, ord: Any, dim: Any, keepdim: bool,
                 dtype: torch.dtype | None = None, out: torch.Tensor | None = None
                 ) -> torch.Tensor:
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. "
            f"Got {scalar_type_name(self.dtype)}"
        )
    if isinstance(ord, complex):  # ATen's meta, before the dtype, dims and out= checks
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of "
                           "norm.")
    x, in_dtype = _input(self, dtype)
    result = _real_dtype(in_dtype)
    axes = reduce_axes(dim, x.ndim)
    if x.size == 0 and (ord < 0 or ord == float("inf")):  # no identity to reduce nothing to
        if axes is None or len(axes) == 0:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because "
                "the operation does not have an identity"
            )
        empty = next((d for d in sorted(axes) if x.shape[d] == 0), None)
        if empty is not None:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {ord} norm on the dimension {empty}"
                "because this dimension is empty and the operation does not have an identity"
            )
    with quiet():
        xa = x.astype(NP_DTYPE[_acc_dtype(in_dtype)], copy=False)
        # the order is a Scalar ATen holds in the accumulation type
        p = float(np.asarray(ord).astype(xa.real.dtype))
        explicit = dim is not None and (isinstance(dim, int) or len(dim) > 0)
        v = vector_norm(xa, p, axes, single_is_abs=not (x.ndim == 0 and explicit))
    return _emit(_keep(v, x, axes, keepdim), result, out)


def powsum(self: torch.Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
           dtype: torch.dtype | None = None) -> torch.Tensor:
    """CPU's ``powsum_cpu`` (``linalg__powsum``; ``_foreach_powsum`` calls it per tensor):
    sum(|x| ** ord) over ``dim`` in ``dtype``'s real type (default: the input's real dtype, int64
    for an integral one, which the kernel refuses unless the input is empty). A complex input
    is converted to the complex counterpart of that type part by part (a part beyond float16 is
    inf) before |x|, except where nothing is reduced (as many results as elements: one element,
    size-1 dims): there CPU's reduction only casts to ``dtype``, so a real one gives
    |real part| ** ord (and an integral one is refused as for a real input). ATen's
    CompositeExplicitAutograd fallback (what a backend without this kernel gets) converts a
    complex input to the real dtype first: it loses the imaginary part everywhere."""
    if isinstance(ord, complex):  # powsum_cpu reads ord.toDouble() before anything else
        raise RuntimeError("value cannot be converted to type double without overflow")
    x = to_numpy(self)
    axes = reduce_axes(dim, x.ndim)
    shape = np.sum(np.zeros(x.shape, np.int8), axis=axes).shape
    # nothing reduced: CPU casts to `dtype` as given (a real one drops the imaginary part)
    cast_only = math.prod(shape) == x.size
    if dtype is not None:
        res = dtype.to_real() if dtype.is_complex else dtype
        if self.is_complex() and not (dtype.is_complex or dtype.is_floating_point or cast_only):
            raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(dtype)}")
    elif self.is_complex():
        res = self.dtype.to_real()
    else:
        res = self.dtype if self.is_floating_point() else torch.int64
    npd = NP_DTYPE[res]
    if x.size == 0:
        return from_numpy(_keep(np.zeros(shape, npd), x, axes, keepdim), res)
    if not res.is_floating_point:
        raise NotImplementedError(f'"powsum_cpu" not implemented for \'{scalar_type_name(res)}\'')
    with quiet():
        if self.is_complex() and not (cast_only and dtype is not None and not dtype.is_complex):
            a = np.hypot(opmath(x.real.astype(npd)), opmath(x.imag.astype(npd))).astype(npd)
        else:
            a = np.abs(opmath((x.real if self.is_complex() else x).astype(npd))).astype(npd)
        total = np.sum(np.power(opmath(a), opmath(np.asarray(ord, npd))), axis=axes)
    return from_numpy(_keep(np.asarray(total).astype(npd), x, axes, keepdim), res)










# --------------------------------------------------------------------------------------------
# any / all
# --------------------------------------------------------------------------------------------


def _anyall(self: torch.Tensor, dim: Any = None, keepdim: bool = False,
            out: torch.Tensor | None = None, *, fn: Any, no_dims_is_identity: bool = False
            ) -> torch.Tensor:
    if out is not None and out.dtype not in (torch.bool, torch.uint8):
        name = "all" if fn is np.all else "any"
        raise RuntimeError(
            f"{name} only supports bool tensor for result, got: {scalar_type_name(out.dtype)}"
        )
    x = to_numpy(self)
    if no_dims_is_identity and dim is not None and len(dim) == 0:
        # any.dims/all.dims with dim=[] reduce nothing (unlike sum's "all dims")
        dtype = torch.uint8 if self.dtype == torch.uint8 else torch.bool
        return _emit(x != 0, dtype, out, exact=False)
    axes = reduce_axes(dim, x.ndim)
    v = _keep(fn(x != 0 if x.dtype.kind != "b" else x, axis=axes), x, axes, keepdim)
    dtype = torch.uint8 if self.dtype == torch.uint8 else torch.bool
    return _emit(v, dtype, out, exact=False)  # the meta takes a bool or uint8 out (checked above)


# --------------------------------------------------------------------------------------------
# cumulative, logsumexp, count_nonzero
# --------------------------------------------------------------------------------------------


def _cum_acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """cpu_cum_base_kernel's running value: at::acc_type<scalar_t, false>, double for float
    and complex<double> for complex<float> (float for the half types), so a cumprod that
    overflows float32 on the way and comes back into range stays finite."""
    return {torch.float32: torch.float64, torch.complex64: torch.complex128}.get(
        dtype, _acc_dtype(dtype))


def _cum(self: torch.Tensor, dim: int, dtype: torch.dtype | None = None,
         out: torch.Tensor | None = None, *, fn: Any, inplace: bool = False) -> torch.Tensor:
    if inplace:
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {cpp_type_name(self.dtype)} and output "
                f"tensor dtype {cpp_type_name(dtype)} should match"
            )
        result = self.dtype
    elif out is not None and dtype is None:
        result = out.dtype
    else:
        _check_dtype_arg(out, dtype)
        result = _sum_dtype(self, dtype)
    if self.dim() > 0 and self.numel() > 0:
        check_dtype(f"{fn.__name__}_out_cpu", result, refused=BOOL)
    x, _ = _input(self, result)
    d = wrap_dim(dim, x.ndim)
    with quiet():
        v = x.copy() if x.ndim == 0 else fn(x, axis=d, dtype=NP_DTYPE[_cum_acc_dtype(result)])
    if inplace:
        np.copyto(to_numpy(self), np.asarray(v).astype(NP_DTYPE[result]), casting="unsafe")
        return self
    return _emit(v, result, out)


def _logsumexp(self: torch.Tensor, dim: Any, keepdim: bool, out: torch.Tensor | None = None
               ) -> torch.Tensor:
    """ATen's logsumexp: log(sum(exp(x - m))) + m, m the real parts' max. logsumexp.out
    refuses a non-floating out= first; a complex input summed into a real out= (sum_out) keeps
    only the real parts of exp(x - m), and the real log of that sum follows."""
    if out is not None and not (out.dtype.is_floating_point or out.dtype.is_complex):
        raise RuntimeError("logsumexp(): Expected floating point type for result tensor, but "
                           f"got: {scalar_type_name(out.dtype)}")
    in_dtype = self.dtype if (self.dtype.is_floating_point or self.dtype.is_complex) else (
        torch.get_default_dtype())
    result = out.dtype if out is not None else in_dtype
    npd, npr = NP_DTYPE[in_dtype], NP_DTYPE[result]
    x = to_numpy(self).astype(npd, copy=False)
    axes = reduce_axes(dim, x.ndim)
    with quiet():  # each step rounds to its tensor's dtype as ATen's do
        if x.size == 0:
            e, m = np.exp(opmath(x)).astype(npd), None
        else:
            r = x.real if x.dtype.kind == "c" else x  # complex: shift by the real parts' max
            m = np.max(r, axis=axes, keepdims=True) if x.ndim else r
            m = np.where(np.isinf(m), 0, m)
            e = np.exp(opmath((opmath(x) - opmath(m)).astype(npd))).astype(npd)
        if e.dtype.kind == "c" and not result.is_complex:
            e = e.real  # sum_out into a real out=
        # sum_out converts to out='s dtype, then accumulates in its opmath type (CPU does so
        # where the reduced dims coalesce; over non-adjacent dims it sums first)
        v = np.sum(e.astype(npr).astype(NP_DTYPE[_acc_dtype(result)]), axis=axes).astype(npr)
        v = np.log(opmath(v)).astype(npr)
        if m is not None:
            m = np.squeeze(m, axis=axes) if axes is not None else np.reshape(m, ())
            v = (opmath(v) + opmath(m)).astype(npr)
    return _emit(_keep(v, x, axes, keepdim), result, out)






@register("count_nonzero.dim_IntList")
def count_nonzero(self: torch.Tensor, dim: Sequence[int]) -> torch.Tensor:
    x = to_numpy(self)
    axes = reduce_axes(list(dim), x.ndim)
    return from_numpy(np.count_nonzero(x, axis=axes), torch.int64)


# --------------------------------------------------------------------------------------------
# order statistics, cumulative max/min, logcumsumexp, histograms, trace, renorm, equal
# --------------------------------------------------------------------------------------------


def _sortable(x: np.ndarray) -> np.ndarray:
    """Sort keys: bfloat16 compared as float32 (exact) so NaN sorts last as in ATen."""
    return x.astype(np.float32) if x.dtype == NP_DTYPE[torch.bfloat16] else x


def _median_all(self: torch.Tensor, *, ignore_nan: bool) -> torch.Tensor:
    x = to_numpy(self).reshape(-1)
    if x.size == 0:  # ATen returns NaN converted to the dtype before its dtype dispatch
        with quiet():
            return from_numpy(np.asarray(np.nan).astype(x.dtype), self.dtype)
    check_dtype("median", self.dtype, refused=COMPLEX)
    check_dtype("median_cpu", self.dtype, refused=BOOL)
    order = np.argsort(_sortable(x), kind="stable")  # NaN sorts last
    if ignore_nan and x.dtype.kind in "fV":
        n = int((~np.isnan(x)).sum())
        if n == 0:
            return from_numpy(x[order[0]], self.dtype)
    else:
        nan = np.isnan(x) if x.dtype.kind in "fV" else None
        if nan is not None and nan.any():
            return from_numpy(x[np.argmax(nan)], self.dtype)
        n = x.size
    return from_numpy(x[order[(n - 1) // 2]], self.dtype)






def _median_dim(self: torch.Tensor, dim: int, keepdim: bool, *,
                out: tuple[torch.Tensor, torch.Tensor], ignore_nan: bool, op: str
                ) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = out
    x = to_numpy(self)
    d = wrap_dim(dim, x.ndim)
    if x.ndim:
        _check_nonempty(x, (d,), "median")
    check_dtype(op, self.dtype, refused=COMPLEX)
    check_dtype("median_out", self.dtype, refused=BOOL)
    if x.ndim == 0:
        write_out(values, x.copy(), self.dtype, exact=True)
        write_out(indices, np.zeros((), np.int64), torch.int64, exact=True)
        return values, indices
    _check_nonempty(x, (d,), op)
    order = np.argsort(_sortable(x), axis=d, kind="stable")  # NaN last
    if x.dtype.kind in "fV":
        nan = np.isnan(x)
        count = (~nan).sum(axis=d, keepdims=True)
        any_nan = nan.any(axis=d, keepdims=True)
    else:
        count = np.full([1 if i == d else s for i, s in enumerate(x.shape)], x.shape[d])
        any_nan = np.zeros(count.shape, bool)
    if ignore_nan:
        k = np.where(count == 0, 0, (count - 1) // 2)
    else:
        # a NaN in the slice is the median (the first NaN in sort order)
        k = np.where(any_nan, count, (x.shape[d] - 1) // 2)
    idx = np.take_along_axis(order, k.astype(np.intp), d)
    vals = np.take_along_axis(x, idx, d)
    if not keepdim:
        idx, vals = idx.squeeze(d), vals.squeeze(d)
    write_out(values, vals, self.dtype, exact=True)
    write_out(indices, idx.astype(np.int64), torch.int64, exact=True)
    return values, indices






@register("mode")
def mode(self: torch.Tensor, dim: int = -1, keepdim: bool = False
         ) -> tuple[torch.Tensor, torch.Tensor]:
    x = to_numpy(self)
    d = wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return from_numpy(x.copy(), self.dtype), from_numpy(np.zeros((), np.int64), torch.int64)
    _check_nonempty(x, (d,), "mode")
    xm = np.moveaxis(x, d, -1)
    order = np.argsort(_sortable(xm), axis=-1, kind="stable")
    s = np.take_along_axis(xm, order, -1)
    n = s.shape[-1]
    new_run = np.ones(s.shape, bool)
    new_run[..., 1:] = s[..., 1:] != s[..., :-1]
    # length of the run each position belongs to
    starts = np.where(new_run, np.arange(n), 0)
    start_of = np.maximum.accumulate(starts, axis=-1)
    ends = np.where(np.concatenate([new_run[..., 1:], np.ones(s.shape[:-1] + (1,), bool)],
                                   -1), np.arange(n), n)
    end_of = np.flip(np.minimum.accumulate(np.flip(ends, -1), axis=-1), -1)
    length = end_of - start_of + 1
    best = np.argmax(length, axis=-1)[..., None]  # first (smallest value) longest run
    last = np.take_along_axis(end_of, best, -1)  # ATen reports the run's last index
    vals = np.take_along_axis(s, last, -1)[..., 0]
    idx = np.take_along_axis(order, last, -1)[..., 0]
    if keepdim:
        vals, idx = np.expand_dims(vals, d), np.expand_dims(idx, d)
    return from_numpy(vals, self.dtype), from_numpy(idx, torch.int64)


@register("mode.values")
def mode_values(self: torch.Tensor, dim: int = -1, keepdim: bool = False, *,
                values: torch.Tensor, indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ATen's mode_out (which accepts only CPU, CUDA and XPU tensors): out dtypes, then mode."""
    for out, want, what in ((values, self.dtype, "values"), (indices, torch.int64, "indices")):
        if out.dtype != want:
            raise RuntimeError(f"expected scalar type '{scalar_type_name(want)}' but got "
                               f"'{scalar_type_name(out.dtype)}' for {what} output")
    vals, idx = mode(self, dim, keepdim)
    # a 0-dim self: ATen's trivial path resize_s both outs to 0-dim (no resize_output warning)
    silent = self.dim() == 0
    write_out(values, to_numpy(vals), self.dtype, exact=True, silent_resize=silent)
    write_out(indices, to_numpy(idx), torch.int64, exact=True, silent_resize=silent)
    return values, indices


def _cum_extreme(self: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, dim: int, *,
                 largest: bool) -> None:
    # ATen's helper: the dtype dispatch on self, then values and indices read as self's type
    # and int64 (data_ptr<T>), even when empty
    check_dtype("cummax_cpu" if largest else "cummin_cpu", self.dtype, refused=COMPLEX)
    for t, want in ((values, self.dtype), (indices, torch.int64)):
        if t.dtype != want:
            raise RuntimeError(f"expected scalar type {scalar_type_name(want)} but found "
                               f"{scalar_type_name(t.dtype)}")
    x = to_numpy(self)
    # then tensor_dim_apply3 reads self.stride(dim): a 0-dim self has no dim to name (cummax
    # itself copies a 0-dim self without calling the helper)
    d = wrap_dim(dim, x.ndim, wrap_scalar=False)
    if x.size == 0:
        np.copyto(to_numpy(values), x)
        to_numpy(indices)[...] = 0
        return
    xm = np.moveaxis(x, d, -1)
    n = xm.shape[-1]
    pos = np.broadcast_to(np.arange(n), xm.shape)
    if xm.dtype.kind in "fV":
        nan = np.isnan(xm)
    else:
        nan = np.zeros(xm.shape, bool)
    src = np.where(nan, -np.inf if largest else np.inf, xm).astype(xm.dtype) if nan.any() else xm
    acc = (np.maximum if largest else np.minimum).accumulate(src, axis=-1)
    # ATen: ties move the index forward (>=), a NaN sticks from its position on
    hit = (xm >= acc) if largest else (xm <= acc)
    idx = np.maximum.accumulate(np.where(hit | nan, pos, 0), axis=-1)
    # ATen: ``isnan(x) || x <= acc`` moves the index, so past a NaN it is the latest NaN's
    last_nan = np.maximum.accumulate(np.where(nan, pos, -1), axis=-1)
    seen_nan = last_nan >= 0
    idx = np.where(seen_nan, last_nan, idx)
    vals = np.where(seen_nan, np.asarray(np.nan, xm.dtype) if xm.dtype.kind in "fV" else acc,
                    np.take_along_axis(xm, idx, -1))
    np.copyto(to_numpy(values), np.moveaxis(vals, -1, d), casting="unsafe")
    np.copyto(to_numpy(indices), np.moveaxis(idx, -1, d), casting="unsafe")






def _logcumsumexp(self: torch.Tensor, dim: int) -> np.ndarray:
    check_dtype("logcumsumexp_out_cpu", self.dtype, allowed=FLOATING | COMPLEX)
    x = to_numpy(self)
    d = wrap_dim(dim, x.ndim)
    acc = NP_DTYPE[_cum_acc_dtype(self.dtype)] if self.dtype.is_floating_point or \
        self.dtype.is_complex else np.dtype(np.float32)
    xa = x.astype(acc, copy=False)
    if x.ndim == 0:
        return xa.copy()
    with quiet():
        if xa.dtype.kind != "c":
            return np.logaddexp.accumulate(xa, axis=d)
        # cpu_cum_base_kernel: running = _log_add_exp_helper(x[i], running) from -inf, in
        # that argument order (a tie of real parts takes x[i] as the max)
        steps = np.moveaxis(xa, d, 0)
        out = np.empty_like(steps)
        running = np.full(steps.shape[1:], complex(-np.inf, 0.0), xa.dtype)
        for i in range(steps.shape[0]):
            running = out[i] = log_add_exp_complex(steps[i], running)
        return np.moveaxis(out, 0, d)




def _histc(self: torch.Tensor, bins: int = 100, min: Any = 0, max: Any = 0,
           out: torch.Tensor | None = None) -> torch.Tensor:
    if out is not None and out.dtype != self.dtype:
        raise RuntimeError(
            "torch.histogram: input tensor and hist tensor should have the same dtype, but got "
            f"input {cpp_type_name(self.dtype)} and hist {cpp_type_name(out.dtype)}"
        )
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    # ATen's order: the range as doubles (checked); min == max: the data's extrema (aminmax),
    # else widened by 1; finite and ordered; then linspace(lo, hi) in the input's dtype (its
    # dtype gate, then the doubles converted, checked), then the histogram kernel's gate
    lo, hi = (float(checked_scalar(v, torch.float64)) for v in (min, max))
    # float32/float64 (CPU's own histc kernel) read the final range in the dtype before checking
    # it, and allow an empty one
    native = self.dtype in (torch.float32, torch.float64)
    if lo == hi and self.numel():
        check_dtype("aminmax_cpu", self.dtype, refused=COMPLEX)
        data = to_numpy(self)
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if native:
        for v in (lo, hi):
            checked_scalar(v, self.dtype)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi or (lo == hi and not native):
        raise RuntimeError("torch.histc: max must be larger than min")
    check_dtype("linspace_cpu", self.dtype, refused=BOOL)
    for v in (lo, hi):
        checked_scalar(v, self.dtype)
    check_dtype("histogram_cpu", self.dtype, allowed=FLOATING)
    # the kernel's bin edges are linspace(lo, hi) in the input's dtype: a range end the dtype
    # cannot hold is rounded first (float32 min=3.6e-121 is 0.0, so -0.0 is inside)
    distinct = lo != hi
    lo, hi = (torch.tensor(v, dtype=self.dtype).item() for v in (lo, hi))
    x = to_numpy(self).reshape(-1).astype(np.float64)
    inside = (x >= lo) & (x <= hi)
    if hi == lo:
        # a range too narrow for +-1 to widen (float32/float64): CPU's kernel puts its values
        # in the middle bin; two doubles that meet only in the dtype give a 0/0 bin index,
        # which CPU's kernel turns into INT64_MIN, an offset that wraps to bin 0 (measured
        # for the four floating dtypes and 1-7 bins; issue 26, float16 min=-1.7e-93, max=0)
        pos = np.full(int(inside.sum()), 0 if distinct else bins // 2, np.int64)
    else:
        pos = np.floor((x[inside] - lo) * bins / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return emit(np.bincount(pos, minlength=bins)[:bins], self.dtype, out)






@register("bincount")
def bincount(self: torch.Tensor, weights: torch.Tensor | None = None, minlength: int = 0
             ) -> torch.Tensor:
    check_dtype("bincount_cpu", self.dtype, refused=BOOL | FLOATING | COMPLEX)
    if self.dim() != 1 or self.dtype.is_floating_point or self.dtype.is_complex:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    x = to_numpy(self).astype(np.int64)
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.size == 0:
        return from_numpy(np.zeros(minlength, np.int64), torch.int64)
    if weights is None:
        return from_numpy(np.bincount(x, minlength=minlength), torch.int64)
    if weights.dim() != 1 or weights.shape[0] != x.size:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = to_numpy(weights)
    dt = torch.float64 if weights.dtype != torch.float32 else torch.float32
    return from_numpy(np.bincount(x, w.astype(np.float64), minlength=minlength), dt)


@register("trace")
def trace(self: torch.Tensor) -> torch.Tensor:
    check_dtype("trace", self.dtype, refused=BOOL)
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    x = to_numpy(self)
    result = _sum_dtype(self, None)
    return from_numpy(np.trace(x, dtype=NP_DTYPE[_acc_dtype(result)]), result)


@register("renorm.out")
def renorm_out(self: torch.Tensor, p: Any, dim: int, maxnorm: Any, *, out: torch.Tensor
               ) -> torch.Tensor:
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} "
                           "dimensions")
    if not (self.dtype.is_floating_point or self.dtype.is_complex):  # its linalg.vector_norm
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(self.dtype)}")
    x = to_numpy(self)
    d = wrap_dim(dim, x.ndim)
    axes = tuple(a for a in range(x.ndim) if a != d)
    xa = x.astype(NP_DTYPE[_acc_dtype(self.dtype)], copy=False)
    with quiet():
        norms = vector_norm(xa, float(p), axes)
        norms = np.expand_dims(norms, axes)
        factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).astype(xa.dtype)
    return write_out(out, xa * factor, self.dtype, exact=True)


@register("equal")
def equal(self: torch.Tensor, other: torch.Tensor) -> bool:
    if self.device.type != other.device.type:
        raise RuntimeError(
            "Expected all tensors to be on the same device, but found at least two devices, "
            f"{self.device} and {other.device}!"
        )
    if tuple(self.shape) != tuple(other.shape):
        return False
    a, b = to_numpy(self), to_numpy(other)
    if self.dtype != other.dtype:
        common = NP_DTYPE[torch.promote_types(self.dtype, other.dtype)]
        a, b = a.astype(common), b.astype(common)
    return bool(np.array_equal(a, b))


@register("_aminmax")
def _aminmax(self: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return _aminmax_pair(self, None, False)


@register("_aminmax.dim")
def _aminmax_dim(self: torch.Tensor, dim: int, keepdim: bool = False
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    return _aminmax_pair(self, dim, keepdim)


def _norm(self: torch.Tensor, p: Any, dim: Sequence[int], keepdim: bool = False, *,
          dtype: torch.dtype | None = None, out: torch.Tensor) -> torch.Tensor:
    """``norm.out``/``norm.dtype_out``: ``linalg_vector_norm`` with ``p`` (``None``: 2)."""
    return _vector_norm(self, 2 if p is None else p, dim, keepdim, dtype, out)


def _logcumsumexp_kernel(self: torch.Tensor, dim: int, out: torch.Tensor | None = None
                         ) -> torch.Tensor:
    return emit(_logcumsumexp(self, dim), self.dtype, out)


register_rows({
    ("sum", "sum.dim_IntList", "sum.IntList_out"): _sum,
    ("nansum", "nansum.out"): partial(_sum, nan=True),
    ("mean", "mean.dim", "mean.out"): _mean,
    ("prod", "prod.dim_int", "prod.int_out"): _prod,
    ("amax", "amax.out"): partial(_amax, fn=np.max, op="amax"),
    ("amin", "amin.out"): partial(_amax, fn=np.min, op="amin"),
    ("max", "max.unary_out"): partial(_full_minmax, fn=np.max, op="max"),
    ("min", "min.unary_out"): partial(_full_minmax, fn=np.min, op="min"),
    ("max.dim", "max.dim_max"): partial(_minmax_dim, largest=True, op="max"),
    ("min.dim", "min.dim_min"): partial(_minmax_dim, largest=False, op="min"),
    ("argmax", "argmax.out"): partial(_argbest, largest=True, op="argmax"),
    ("argmin", "argmin.out"): partial(_argbest, largest=False, op="argmin"),
    ("var.correction", "var.correction_out"): partial(_var_std, op="var"),
    ("std.correction", "std.correction_out"): partial(_var_std, op="std"),
    ("linalg_vector_norm", "linalg_vector_norm.out"): _vector_norm,
    "linalg__powsum": powsum,
    ("norm.out", "norm.dtype_out"): _norm,
    ("any", "any.all_out", "any.dim", "any.out"): partial(_anyall, fn=np.any),
    ("any.dims", "any.dims_out"): partial(_anyall, fn=np.any, no_dims_is_identity=True),
    ("all", "all.all_out", "all.dim", "all.out"): partial(_anyall, fn=np.all),
    ("all.dims", "all.dims_out"): partial(_anyall, fn=np.all, no_dims_is_identity=True),
    ("cumsum", "cumsum.out"): partial(_cum, fn=np.cumsum),
    "cumsum_": partial(_cum, fn=np.cumsum, inplace=True),
    ("cumprod", "cumprod.out"): partial(_cum, fn=np.cumprod),
    "cumprod_": partial(_cum, fn=np.cumprod, inplace=True),
    ("logsumexp", "logsumexp.out"): _logsumexp,
    "median": partial(_median_all, ignore_nan=False),
    "nanmedian": partial(_median_all, ignore_nan=True),
    "median.dim_values": partial(_median_dim, ignore_nan=False, op="median"),
    "nanmedian.dim_values": partial(_median_dim, ignore_nan=True, op="nanmedian"),
    "_cummax_helper": partial(_cum_extreme, largest=True),
    "_cummin_helper": partial(_cum_extreme, largest=False),
    ("logcumsumexp", "_logcumsumexp", "_logcumsumexp.out"): _logcumsumexp_kernel,
    ("histc", "histc.out"): _histc,
})
