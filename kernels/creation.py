"""Allocation, copies between devices and dtypes, fills, and random/creation kernels."""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import numpy as np
import torch

from kernels import _device
from kernels._semantics import (
    BOOL,
    COMPLEX,
    FLOATING,
    LOW_PRECISION,
    check_dtype,
    checked_scalar,
    cpp_type_name,
    infer_size,
    quiet,
    resize_out,
    scalar_type_name,
)
from kernels._tensor import (
    DEVICE,
    NP_DTYPE,
    empty,
    from_numpy,
    np_dtype,
    restride,
    scalar_value,
    to_numpy,
)
from kernels.registry import register, register_rows, register_unsupported

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
    if memory_format is None and list(self.shape) == [int(s) for s in size]:
        return self  # as on CPU: same sizes keep the strides (a strided view stays one)
    return restride(self, size, memory_format_strides(list(size), memory_format), None)


def _copy_into(dst: torch.Tensor, src: Any) -> None:
    d = to_numpy(dst)
    s = to_numpy(src) if isinstance(src, torch.Tensor) else np.asarray(src)
    if d.dtype.kind == "b" and s.dtype.kind == "c":
        s = s != 0  # complex -> bool: true when either part is non-zero, as CPU (no warning)
    elif d.dtype.kind != "c" and s.dtype.kind == "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)
        s = s.real
    try:
        np.copyto(d, s, casting="unsafe")
    except ValueError:
        shape = infer_size(tuple(dst.shape), tuple(src.shape))  # raises torch's own message
        if list(shape) != list(dst.shape):  # src broadcasts, but to more than dst holds
            raise RuntimeError(f"output with shape {list(dst.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}") from None
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
    """Strides of a copy of ``self`` in ``memory_format`` as ATen's ``_to_copy`` picks them."""
    if memory_format in (None, torch.preserve_format):
        if self.is_contiguous():
            return list(self.stride())  # dense: kept as is (size-0/1 dims' strides included)
        from torch._prims_common import (
            is_non_overlapping_and_dense_or_false,
            suggest_memory_format,
        )

        if is_non_overlapping_and_dense_or_false(self):
            return list(self.stride())
        return memory_format_strides(list(self.shape), suggest_memory_format(self))
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
    # CPU's fill_ reads the value in self's dtype (checked_scalar), except that a one-element
    # float16/bfloat16 tensor is filled through a double (ATen's scalar_fill fast path).
    low_single = self.numel() == 1 and self.dtype in LOW_PRECISION
    value = checked_scalar(value, torch.float64 if low_single else self.dtype)
    dst = to_numpy(self)
    with quiet():
        dst[...] = np.asarray(value).astype(dst.dtype)
    return self


@register("fill_.Tensor")
def fill_tensor(self: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    if value.dim() != 0:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value.dim()} dimensions."
        )
    if value.device != self.device:  # ATen fills with value.item(): a Scalar
        return fill_scalar(self, scalar_value(value))
    with quiet():  # on the same device ATen copies (copy_): a cast, a complex value's real part
        _copy_into(self, to_numpy(value))
    return self


@register("zero_")
def zero_(self: torch.Tensor) -> torch.Tensor:
    to_numpy(self)[...] = 0
    return self


# --------------------------------------------------------------------------------------------
# Ranges and eye (the factory functions zeros/ones/full/empty_like... are ATen composites over
# empty + fill_)
# --------------------------------------------------------------------------------------------


def _store(out: torch.Tensor, value: np.ndarray) -> torch.Tensor:
    """Resize ``out`` to ``value``'s shape (silently, as these factories do) and fill it."""
    if tuple(out.shape) != value.shape:
        restride(out, value.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.copyto(to_numpy(out), value, casting="unsafe")
    return out


@register("arange.start_out")
def arange_start_out(start: Any, end: Any, step: Any = 1, *, out: torch.Tensor) -> torch.Tensor:
    integral = not (out.dtype.is_floating_point or out.dtype.is_complex)
    if integral:
        # ATen's accumulate type for integral outputs is int64: start/step are truncated; the
        # size is computed from the truncated bounds for int64, from the doubles otherwise.
        if step == 0:
            raise RuntimeError("step must be nonzero")
        xstart, xend, xstep = int(start), int(end), int(step)
        lo: float
        hi: float
        if out.dtype == torch.int64:
            if xstep == 0:
                raise ValueError("step must be nonzero")
            sgn = (xstep > 0) - (xstep < 0)
            num = xend - xstart + xstep - sgn
            n = abs(num) // abs(xstep) * (1 if (num >= 0) == (xstep > 0) else -1)  # C division
            lo, hi = xstart, xend
        else:
            n = int(np.ceil((float(end) - float(start)) / float(step)))
            lo, hi = float(start), float(end)
        if (xstep > 0 and hi < lo) or (xstep < 0 and hi > lo):
            raise RuntimeError("upper bound and larger bound inconsistent with step sign")
        value: np.ndarray = xstart + xstep * np.arange(max(n, 0), dtype=np.int64)
        return _store(out, value)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (np.isfinite(float(start)) and np.isfinite(float(end))):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(np.ceil((float(end) - float(start)) / float(step)))
    value = float(start) + float(step) * np.arange(max(n, 0), dtype=np.float64)
    return _store(out, value)




def _eye(n: int, m: int | None = None, *, out: torch.Tensor) -> torch.Tensor:
    m = n if m is None else m
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return _store(out, np.eye(n, m, dtype=NP_DTYPE[out.dtype]))


def _linspace(start: Any, end: Any, steps: int, dtype: torch.dtype) -> np.ndarray:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    npd = np.complex128 if (dtype.is_complex or isinstance(start, complex)
                            or isinstance(end, complex)) else np.float64
    if steps == 0:  # CPU reads neither bound (a NaN or inf one converts to no integer)
        return np.empty(0, npd)
    if not (dtype.is_floating_point or dtype.is_complex):
        # integral outputs: ATen converts the bounds to the output type first (-1 wraps to 255
        # in uint8)
        start, end = int(_bound(start, NP_DTYPE[dtype])), int(_bound(end, NP_DTYPE[dtype]))
    if steps == 1:  # ATen fills start (an int64 start exactly, not through a double)
        return np.asarray([start], npd if dtype.is_floating_point or dtype.is_complex
                          else np.int64)
    # ATen: the first half counts up from start, the second half down from end.
    idx = np.arange(steps)
    half = steps // 2

    def part(lo: Any, hi: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            step = (np.float64(hi) - np.float64(lo)) / (steps - 1)
            return np.where(idx < half, lo + step * idx, hi - step * (steps - 1 - idx))

    if npd == np.complex128:  # a complex step is divided and scaled by the real counts part
        value = np.empty(steps, np.complex128)
        value.real, value.imag = part(np.real(start), np.real(end)), part(np.imag(start),
                                                                           np.imag(end))
    else:  # by part, as ATen does (inf * 0 stays in its own part)
        value = part(start, end)
    if not (dtype.is_floating_point or dtype.is_complex):
        value = np.trunc(value.real) if not dtype.is_complex else value
    return value


@register("linspace.out")
def linspace_out(start: Any, end: Any, steps: int, *, out: torch.Tensor) -> torch.Tensor:
    # c10's checked Scalar conversion to the output type, of the bounds CPU's kernel reads
    # (none for 0 steps, start alone for 1); torch.full raises "value cannot be converted ..."
    for bound in (start, end)[:min(steps, 2)]:
        torch.full((), bound, dtype=out.dtype)
    return _store(out, _linspace(start, end, steps, out.dtype))


def _bound(value: Any, npd: np.dtype) -> Any:
    """A Scalar bound as ATen's ``Scalar.to<scalar_t>()`` reads it: rounded to a floating dtype,
    truncated to an integral one (a negative int wraps into an unsigned one: -1 is 255); a
    complex one into bool is true where either part is nonzero (-2.5j is true)."""
    if npd.kind == "b":
        value = value != 0
    elif npd.kind != "c":
        value = np.real(value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(value).astype(npd)[()]


@register("logspace.out")
def logspace_out(start: Any, end: Any, steps: int, base: float = 10.0, *, out: torch.Tensor
                 ) -> torch.Tensor:
    """ATen's logspace_out: one step reads start as a double (complex double); otherwise the
    bounds are read in the output dtype and ``base ** exponent`` is taken per element, the first
    half counting up from start, the second down from end: in float32 (base, step, exponent) for
    integral outputs, as std::pow(complex, complex) = exp(y * log(base)) for complex ones (so
    0 ** 0 is NaN+NaNj), in double for floating ones."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = out.dtype
    npd = NP_DTYPE[dtype]
    # c10's checked Scalar conversions of the bounds CPU's kernel reads: one step reads start
    # as a double (complex double), more read both bounds in the output dtype
    if steps == 1:
        checked_scalar(start, torch.complex128 if dtype.is_complex else torch.float64)
    if steps > 1:  # inside its dtype dispatch (bool is none of complex, integral, floating)
        check_dtype("logspace_cpu", dtype, refused=BOOL)
    for bound in (start, end)[:2 * (steps > 1)]:
        checked_scalar(bound, dtype)
    idx = np.arange(steps)
    with np.errstate(all="ignore"):
        if steps <= 1:
            first = np.asarray([start][:steps])
            if dtype.is_complex:
                return _store(out, np.exp(first.astype(np.complex128) * np.log(complex(base))))
            value = np.power(float(base), np.real(first).astype(np.float64))
            for v in value.tolist():  # fill_ reads the power as a Scalar of out's dtype
                checked_scalar(v, dtype)
            return _store(out, value)
        lo, hi = _bound(start, npd), _bound(end, npd)
        half = steps // 2
        if dtype.is_complex:
            step = (hi - lo) / npd.type(steps - 1)
            y = np.where(idx < half, lo + step * idx.astype(npd),
                         hi - step * (steps - 1 - idx).astype(npd))
            return _store(out, np.exp(y * np.log(npd.type(base))))
        if dtype.is_floating_point:
            wide, step = np.float64, np.float64(hi - lo) / (steps - 1)  # hi - lo in the dtype
        else:  # C++ promotes narrow integers to int before subtracting; int32/int64 wrap
            diff = np.asarray(hi).astype(np.int64) - np.asarray(lo).astype(np.int64)
            if npd.itemsize >= 4 and npd.kind in "iu":
                diff = np.asarray(diff).astype(npd)
            wide = np.float32
            step = np.float32(diff) / np.float32(steps - 1)
        y = np.where(idx < half, wide(lo) + step * idx.astype(wide),
                     wide(hi) - step * (steps - 1 - idx).astype(wide))
        return _store(out, np.power(wide(base), y.astype(wide)))


# --------------------------------------------------------------------------------------------
# Random kernels: NumPy's PCG64 behind torch.mlu.manual_seed. Streams differ from CPU's
# mt19937 (as CUDA's do); distributions and reproducibility are what tests check.
# --------------------------------------------------------------------------------------------


def _rng(generator: Any) -> np.random.Generator:
    if generator is not None:
        raise RuntimeError("mlu: explicit torch.Generator objects are not supported; "
                           "seed with torch.mlu.manual_seed / torch.manual_seed")
    return _device.generator()


def _fill_random(self: torch.Tensor, value: np.ndarray) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.copyto(to_numpy(self), value, casting="unsafe")
    return self



def _sample_dtype(self: torch.Tensor) -> np.dtype[Any]:
    return np.dtype(np.float64 if self.dtype in (torch.float64, torch.complex128)
                    else np.float32)


def _sample_shape(self: torch.Tensor) -> tuple[int, ...]:
    """Samples a real distribution fills ``self`` with: a complex tensor takes one per part
    (ATen samples ``view_as_real(self)``)."""
    return (*self.shape, 2) if self.is_complex() else tuple(self.shape)


def _as_self(self: torch.Tensor, value: np.ndarray) -> np.ndarray:
    """Samples of :func:`_sample_shape` as ``self``'s values (pairs made complex)."""
    return value[..., 0] + 1j * value[..., 1] if self.is_complex() else value


@register("uniform_")
def uniform_(self: torch.Tensor, from_: float = 0.0, to: float = 1.0, *,
             generator: Any = None, **kw: Any) -> torch.Tensor:
    lo = kw.pop("from", from_)
    check_dtype("check_uniform_bounds", self.dtype, refused=BOOL)
    if self.numel() == 0:
        return self
    check_dtype("check_uniform_bounds", self.dtype, allowed=FLOATING | COMPLEX)
    if lo > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={lo} > to={to}"
        )
    rng = _rng(generator)
    u = rng.random(_sample_shape(self), dtype=_sample_dtype(self))
    return _fill_random(self, _as_self(self, lo + u * (to - lo)))


@register("normal_")
def normal_(self: torch.Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Any = None) -> torch.Tensor:
    if self.numel() == 0:
        return self
    check_dtype("normal_kernel_cpu", self.dtype, allowed=FLOATING | COMPLEX)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    rng = _rng(generator)
    z = rng.standard_normal(_sample_shape(self), dtype=_sample_dtype(self))
    if self.is_complex():  # ATen: normal_ of view_as_real(self) with std / sqrt(2)
        std = std / math.sqrt(2)
    return _fill_random(self, _as_self(self, mean + std * z))


def _normal(mean: Any, std: Any = 1.0, *, generator: Any = None,
            out: torch.Tensor | None = None) -> torch.Tensor:
    """ATen's ``normal_impl``/``normal_out_impl``, step by step: std's checks; the output
    (``out``, or a new tensor of mean's dtype, std's for a float mean) resized to
    ``infer_size(mean, std)``, where a float std stands as a tensor shaped like the output
    itself (so ``out=`` keeps its shape against a 0-dim mean); ``normal_`` on it (its dtype is
    what the kernel dispatches on; an empty output returns before); then
    ``output.mul_(std).add_(mean)``, with their casting rules."""
    if isinstance(std, torch.Tensor):
        if std.is_complex():
            raise RuntimeError("normal expects standard deviation to be non-complex")
        if std.numel() and not bool((to_numpy(std) >= 0).all()):  # NaN fails, as min().ge(0)
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if out is not None and out.device.type != DEVICE:  # reached through an mlu mean/std
        raise RuntimeError(f"Expected out tensor to have device {DEVICE}:0, but got "
                           f"{out.device} instead")
    mean_shape = tuple(mean.shape) if isinstance(mean, torch.Tensor) else ()
    own = mean_shape if out is None else tuple(out.shape)
    shape = infer_size(mean_shape, tuple(std.shape) if isinstance(std, torch.Tensor) else own)
    if out is None:
        out = empty(shape, (mean if isinstance(mean, torch.Tensor) else std).dtype)
    else:
        resize_out(out, shape)  # normal_out_impl: resize_output, warning and all
    normal_(out, 0.0, 1.0 if isinstance(std, torch.Tensor) else std, generator=generator)
    if isinstance(std, torch.Tensor):
        out.mul_(std)
    if not isinstance(mean, torch.Tensor):
        mean = torch.full((), mean, dtype=out.dtype, device=out.device)
    return out.add_(mean)


@register("bernoulli_.float")
def bernoulli_float(self: torch.Tensor, p: float = 0.5, *, generator: Any = None
                    ) -> torch.Tensor:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    u = _rng(generator).random(self.shape)
    return _fill_random(self, u < p)


@register("bernoulli_.Tensor")
def bernoulli_tensor(self: torch.Tensor, p: torch.Tensor, *, generator: Any = None
                     ) -> torch.Tensor:
    if self.numel() == 0:
        return self
    check_dtype("bernoulli_tensor_cpu_p_", p.dtype, allowed=FLOATING)
    pa = to_numpy(p)
    if ((pa < 0) | (pa > 1)).any():
        raise RuntimeError("bernoulli_ expects p to be in [0, 1]")
    u = _rng(generator).random(self.shape)
    return _fill_random(self, u < np.broadcast_to(pa, self.shape))


@register("bernoulli.out")
def bernoulli_out(self: torch.Tensor, *, generator: Any = None, out: torch.Tensor
                  ) -> torch.Tensor:
    if self.numel() == 0:
        restride(out, self.shape)
        return out
    check_dtype("bernoulli_tensor_cpu_p_", self.dtype, allowed=FLOATING | COMPLEX)
    pa = to_numpy(self)
    if tuple(out.shape) != pa.shape:
        restride(out, pa.shape)
    u = _rng(generator).random(pa.shape)
    return _fill_random(out, u < pa)


#: c10's TypeMeta names of the unsigned types that ``cpp_type_name`` does not spell
_UNSIGNED_CPP_NAMES = {torch.uint16: "short unsigned int", torch.uint32: "unsigned int",
                       torch.uint64: "long unsigned int"}


def _check_from_to_in_range(dtype: torch.dtype, lo: int, to_inc: int) -> None:
    """ATen's check_from_to_in_range: both ends representable in ``dtype`` (uint64: int64's
    non-negative range), checked before ``random_`` returns for an empty tensor."""
    if dtype.is_floating_point:
        fi = torch.finfo(dtype)
        bounds: tuple[float, float] = (fi.min, fi.max)
    elif dtype == torch.bool:
        bounds = (0, 1)
    elif dtype == torch.uint64:
        bounds = (0, 2 ** 63 - 1)
    else:
        ii = torch.iinfo(dtype)
        bounds = (ii.min, ii.max)
    name = _UNSIGNED_CPP_NAMES.get(dtype) or cpp_type_name(dtype)
    for value, what in ((lo, "from"), (to_inc, "to - 1")):
        if not bounds[0] <= value <= bounds[1]:
            raise RuntimeError(f"{what} is out of bounds for {name}")


def _random_range(self: torch.Tensor, from_: int = 0, to: int | None = None, *,
                  generator: Any = None) -> torch.Tensor:
    """``random_`` (``[0, 2**mantissa]`` or the dtype's range), ``random_.to``, ``random_.from``."""
    lo, hi = from_, to
    if self.dtype.is_complex:
        raise RuntimeError(
            "random_from_to_impl handles only integral, floating-point and boolean types"
        )
    npd = NP_DTYPE[self.dtype]
    if hi is None:
        if self.dtype.is_floating_point:
            mant = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 24}.get(self.dtype, 53)
            hi = 2 ** mant + 1
        elif self.dtype == torch.bool:
            hi = 2
        else:
            hi = int(np.iinfo(npd).max) + 1
    if to is None and lo != -(2 ** 63):  # ATen's full 64-bit range is not checked
        _check_from_to_in_range(self.dtype, lo, hi - 1)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                           f">= to={hi}")
    if to is not None:  # [from, to): checked after from < to, before ATen's empty return
        _check_from_to_in_range(self.dtype, lo, hi - 1)
    v = _rng(generator).integers(lo, hi, size=self.shape, dtype=np.int64, endpoint=False) if (
        hi <= 2 ** 63) else _rng(generator).integers(lo, hi, size=self.shape, dtype=np.uint64)
    return _fill_random(self, v)


def _random(self: torch.Tensor, *, generator: Any = None) -> torch.Tensor:
    """Plain ``random_``: ATen's random_kernel dispatches on the dtype only for a non-empty
    tensor (an empty complex one is returned as is), where ``random_.from``/``.to`` check
    their bounds (and the dtype) first."""
    if self.numel() == 0:
        return self
    check_dtype("random_kernel_cpu", self.dtype, refused=COMPLEX)
    return _random_range(self, generator=generator)


@register("exponential_")
def exponential_(self: torch.Tensor, lambd: float = 1.0, *, generator: Any = None
                 ) -> torch.Tensor:
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    if self.numel() == 0:
        return self
    if not self.dtype.is_floating_point:  # ATen's exponential_kernel, after the empty return
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{scalar_type_name(self.dtype)}")
    return _fill_random(self, _rng(generator).exponential(1.0 / lambd, self.shape))


@register("geometric_")
def geometric_(self: torch.Tensor, p: float, *, generator: Any = None) -> torch.Tensor:
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.numel() == 0:  # ATen dispatches on the dtype only for a non-empty tensor
        return self
    check_dtype("geometric_cpu", self.dtype, refused=BOOL)
    # a float sample, as ATen's ceil(log(u) / log1p(-p)): cast to the tensor's integer dtype
    # an out-of-range one becomes INT_MIN (x86's conversion), not the int64 sample wrapped
    return _fill_random(self, _rng(generator).geometric(p, self.shape).astype(np.float64))


@register("cauchy_")
def cauchy_(self: torch.Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Any = None) -> torch.Tensor:
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    if self.numel() == 0:
        return self
    check_dtype("cauchy_cpu", self.dtype, allowed=FLOATING | COMPLEX)
    return _fill_random(self, median + sigma * _rng(generator).standard_cauchy(self.shape))


@register("log_normal_")
def log_normal_(self: torch.Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Any = None) -> torch.Tensor:
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    if self.numel() == 0:
        return self
    check_dtype("log_normal_cpu", self.dtype, allowed=FLOATING | COMPLEX)
    return _fill_random(self, _rng(generator).lognormal(mean, std, self.shape))


@register("randperm.generator_out")
def randperm_out(n: int, *, generator: Any = None, out: torch.Tensor) -> torch.Tensor:
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    return _store(out, _rng(generator).permutation(n))


@register("multinomial")
def multinomial(self: torch.Tensor, num_samples: int, replacement: bool = False, *,
                generator: Any = None, out_dtype: torch.dtype = torch.int64) -> torch.Tensor:
    # ATen's order: rank, dtype, out='s dtype, the number of samples, then (for a non-empty
    # result) values
    if self.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self.dtype.is_floating_point:
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{scalar_type_name(self.dtype)}"
        )
    if out_dtype != torch.int64:
        raise RuntimeError(
            f"multinomial expects Long tensor out, got: {scalar_type_name(out_dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > self.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    p = to_numpy(self).astype(np.float64)
    rows = p.reshape(p.shape[0] if p.ndim == 2 else 1, p.shape[-1])
    if rows.shape[0] == 0:
        return from_numpy(np.empty((0, num_samples), np.int64), torch.int64)
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    sums = rows.sum(-1, keepdims=True)
    if (sums == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    rows = rows / sums
    if replacement:
        cdf = np.cumsum(rows, -1)
        u = rng.random((rows.shape[0], num_samples))
        res = (u[:, :, None] >= cdf[:, None, :]).sum(-1)
        res = np.minimum(res, rows.shape[-1] - 1)
    else:
        # Gumbel-top-k: sampling without replacement in one vectorized step.
        g = -np.log(-np.log(rng.random(rows.shape)))
        keys = np.where(rows > 0, np.log(rows) + g, -np.inf)
        res = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    return from_numpy(res.reshape(p.shape[:-1] + (num_samples,)), torch.int64)


__all__ = ["memory_format_strides", "NP_DTYPE", "from_numpy", "np_dtype"]


@register("range.out", "range.out_")
def range_out(start: Any, end: Any, step: Any = 1, *, out: torch.Tensor) -> torch.Tensor:
    """``range.out`` and ``range.out_`` (no step: 1). ATen's CompositeExplicitAutograd
    ``range.out_`` (range_out_no_step) calls CPU's range_out directly, which writes through
    ``data_ptr`` (skipped for meta only): on mlu it fails, 'data is not allocated yet'."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(np.floor((float(end) - float(start)) / float(step))) + 1
    return _store(out, float(start) + float(step) * np.arange(max(n, 0), dtype=np.float64))


def _tri_indices(row: int, col: int, offset: int = 0, *, dtype: torch.dtype | None = None,
                 layout: Any = None, device: Any = None, pin_memory: bool | None = None,
                 lower: bool) -> torch.Tensor:
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else
                           f"col must be non-negative, got{col}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return from_numpy(np.stack([r, c]).astype(np.int64), dtype or torch.int64)






@register("multinomial.out")
def multinomial_out(self: torch.Tensor, num_samples: int, replacement: bool = False, *,
                    generator: Any = None, out: torch.Tensor) -> torch.Tensor:
    if out.device != self.device:  # ATen's multinomial_out checks it first
        raise RuntimeError("multinomial arguments must have the same device")
    return _store(out, to_numpy(multinomial(self, num_samples, replacement,
                                            generator=generator, out_dtype=out.dtype)))


@register("_lazy_clone")
def _lazy_clone(self: torch.Tensor) -> torch.Tensor:
    """ATen's copy-on-write clone shares a data pointer we do not have: clone eagerly."""
    return from_numpy(np.array(to_numpy(self), copy=True), self.dtype)


def _kaiser(window_length: int, periodic: bool = True, beta: float = 12.0, *,
            dtype: torch.dtype | None = None, layout: Any = None, device: Any = None,
            pin_memory: bool | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """Every ``kaiser_window`` overload: a new tensor of ``dtype``, or ``out``."""
    if out is None:
        out = empty([0], _dtype(dtype))
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got "
                           f"window_length={window_length}")
    if not (out.dtype.is_floating_point or out.dtype.is_complex):  # window_function_checks,
        # before the resize (it lets complex dtypes through)
        raise RuntimeError(f"kaiser_window expects floating point dtypes, got: {out.dtype}")
    resize_out(out, [window_length])  # CPU's kaiser_window_out: resize_output, warning and all
    if window_length <= 1:
        return _store(out, np.ones(window_length, np.float64))
    # a longer window starts from arange, which CPU has no complex kernel for
    check_dtype("arange_cpu", out.dtype, refused=COMPLEX)
    n = window_length + 1 if periodic else window_length
    w = np.kaiser(n, beta)
    return _store(out, w[:-1] if periodic else w)


register_rows({
    ("eye.out", "eye.m_out"): _eye,
    ("normal.Tensor_float", "normal.Tensor_float_out", "normal.float_Tensor",
     "normal.float_Tensor_out", "normal.Tensor_Tensor", "normal.Tensor_Tensor_out"): _normal,
    "random_": _random,
    ("random_.to", "random_.from"): _random_range,
    "tril_indices": partial(_tri_indices, lower=True),
    "triu_indices": partial(_tri_indices, lower=False),
    ("kaiser_window", "kaiser_window.periodic", "kaiser_window.beta", "kaiser_window.out",
     "kaiser_window.periodic_out", "kaiser_window.beta_out"): _kaiser,
})

#: Constructors whose result is a sparse tensor. They are composites in ATen that would wrap mlu
#: components in a sparse tensor the backend cannot hold (it fails on first use); refused instead,
#: as a backend without sparse kernels refuses them (COO and ``to_sparse*`` already are).
SPARSE_CONSTRUCTORS = (
    "sparse_csr_tensor.crow_col_value", "sparse_csr_tensor.crow_col_value_size",
    "sparse_csc_tensor.ccol_row_value", "sparse_csc_tensor.ccol_row_value_size",
    "sparse_bsr_tensor.crow_col_value", "sparse_bsr_tensor.crow_col_value_size",
    "sparse_bsc_tensor.ccol_row_value", "sparse_bsc_tensor.ccol_row_value_size",
    "_sparse_csr_tensor_unsafe", "_sparse_csc_tensor_unsafe", "_sparse_bsr_tensor_unsafe",
    "_sparse_bsc_tensor_unsafe", "_sparse_compressed_tensor_unsafe",
)
register_unsupported(SPARSE_CONSTRUCTORS, "the mlu reference backend has no sparse layouts")
