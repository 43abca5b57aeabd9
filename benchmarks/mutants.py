"""Injected bugs for ``bench_mutants.py``: realistic wrong kernels, one overload each.

Each :class:`Mutant` replaces one kernel of the reference backend ``mlu`` through
``kernels.install(overrides={overload: buggy})``. A buggy kernel is built from the reference kernel
(``make(ref)``), usually by computing on CPU with torch and changing one thing the way a vendor's
kernel gets it wrong (a saturating add, a truncating conversion, a C ``fmod`` for ``remainder``).
Every mutant carries a *witness*: CPU arguments on which it provably disagrees with CPU (checked by
the smoke test), so no mutant is an equivalent mutant that nothing could catch.

``needs`` names the check that is there to catch the mutant where it is not the forward check
(autograd, out, inplace, noncontiguous: all default checks since issue 27); a mutant counts as
missed unless some check of the run catches it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

DEV = "mlu"

Kernel = Callable[..., Any]


@dataclass(frozen=True)
class Mutant:
    """One injected bug: which kernel, how it is wrong, and an input that shows it."""

    name: str
    cls: str  # edge, exactness, rounding, relations, masking, promotion, broadcast, variants,
    #           autograd, dtypes, layout
    overload: str
    bug: str
    make: Callable[[Kernel], Kernel]  # reference kernel -> buggy kernel
    witness: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]  # CPU args where it is wrong
    needs: str | None = None  # the check there to catch it, where not the forward check

    def kernel(self) -> Kernel:
        from kernels.registry import kernel

        return self.make(kernel(self.overload))


# ----------------------------------------------------------------------------- helpers


def host(x: Any) -> Any:
    """Device tensors in ``x`` copied to CPU (CPU tensors, e.g. wrapped scalars, kept)."""
    return tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) and t.device.type == DEV
                    else t, x)


def dev(x: Any) -> Any:
    return tree_map(lambda t: t.to(DEV) if isinstance(t, torch.Tensor) else t, x)


def on_cpu(fn: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """A buggy kernel written as a CPU computation ``fn(*args, **kwargs)`` (args on CPU)."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            return dev(fn(*host(args), **host(kwargs)))

        return buggy

    return make


def post(fix: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """The reference kernel, then ``fix(result_on_cpu, *args_on_cpu, **kwargs)`` applied to its
    result (keeps the reference kernel's own behaviour, known failures included)."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            out = ref(*args, **kwargs)
            return dev(fix(host(out), *host(args), **host(kwargs)))

        return buggy

    return make


def into(target: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Write ``value`` (CPU) into the device tensor ``target`` (out= / in-place), resizing."""
    if tuple(target.shape) != tuple(value.shape):
        target.resize_(value.shape)
    target.copy_(value.to(target.dtype))
    return target


def t(values: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


@dataclass(frozen=True)
class Laid:
    """A witness argument built on the side's device by ``build(device)``."""

    build: Callable[[str], Any]

    def __call__(self, device: str) -> Any:
        return self.build(device)


def w(*args: Any, **kwargs: Any) -> Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]:
    """A witness: arguments (built lazily, CPU tensors) on which the mutant is wrong."""
    return lambda: (args, kwargs)


def _saturate(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return x.to(dtype)
    info = torch.iinfo(dtype)
    return x.clamp(info.min, info.max).to(dtype)


def _wide(x: Any) -> Any:
    """Integer tensors widened to int64 (to compute without wrap-around)."""
    if isinstance(x, torch.Tensor) and not (x.is_floating_point() or x.is_complex()
                                            or x.dtype == torch.bool):
        return x.to(torch.int64)
    return x


def _trunc_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32/float64 -> narrower float, rounding toward zero (dropping mantissa bits)."""
    if dtype == torch.bfloat16 and x.dtype == torch.float32:
        bits = x.view(torch.int32) & ~0xFFFF
        return bits.view(torch.float32).to(torch.bfloat16)
    if dtype == torch.float32 and x.dtype == torch.float64:
        y = x.to(torch.float32)
        too_far = y.double().abs() > x.abs()  # rounded away from zero: step one ulp back
        return torch.where(too_far & torch.isfinite(y),
                           torch.nextafter(y, torch.zeros_like(y)), y)
    return x.to(dtype)


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


# ----------------------------------------------------------------------------- the suite

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I8, U8, I32, I64 = torch.int8, torch.uint8, torch.int32, torch.int64
NAN, INF = math.nan, math.inf


def _int_add_saturating(self: torch.Tensor, other: torch.Tensor, *, alpha: Any = 1) -> Any:
    out = torch.add(self, other, alpha=alpha)
    if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
        return out
    return _saturate(torch.add(_wide(self), _wide(other), alpha=alpha), out.dtype)


def _int_sub_saturating(self: torch.Tensor, other: torch.Tensor, *, alpha: Any = 1) -> Any:
    out = torch.sub(self, other, alpha=alpha)
    if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
        return out
    return _saturate(torch.sub(_wide(self), _wide(other), alpha=alpha), out.dtype)


def _neg_saturating(self: torch.Tensor) -> torch.Tensor:
    out = torch.neg(self)
    if out.is_floating_point() or out.is_complex():
        return out
    return _saturate(-_wide(self), out.dtype)


def _amax_nan_ignoring(self: torch.Tensor, dim: Any = (), keepdim: bool = False) -> Any:
    out = torch.amax(self, dim, keepdim)
    if not self.is_floating_point():
        return out
    filled = torch.where(torch.isnan(self), torch.full_like(self, -INF), self)
    return torch.amax(filled, dim, keepdim)


def _clamp_nan_to_min(self: torch.Tensor, min: Any = None, max: Any = None) -> Any:
    out = torch.clamp(self, min, max)
    if min is None or not out.is_floating_point():
        return out
    return torch.where(torch.isnan(self), torch.full_like(out, float(min)), out)


def _abs_keeps_neg_zero(self: torch.Tensor) -> torch.Tensor:
    if self.is_complex():
        return torch.abs(self)
    return torch.where(self < 0, -self, self)


def _exp_saturating(self: torch.Tensor) -> torch.Tensor:
    out = torch.exp(self)
    if not out.is_floating_point():
        return out
    big = torch.finfo(out.dtype).max
    return torch.where(torch.isposinf(out) & ~torch.isposinf(self), torch.full_like(out, big),
                       out)


def _log1p_domain(self: torch.Tensor) -> torch.Tensor:
    out = torch.log1p(self)
    if not out.is_floating_point():
        return out
    return torch.where(self <= -1, torch.full_like(out, NAN), out)


def _softplus_no_threshold(self: torch.Tensor, beta: Any = 1, threshold: Any = 20) -> Any:
    return (torch.log1p(torch.exp(self * beta)) / beta).to(self.dtype)


def _sqrt_clamped(self: torch.Tensor) -> torch.Tensor:
    if self.is_complex():
        return torch.sqrt(self)
    return torch.sqrt(self.clamp(min=0) if self.is_floating_point() else self.clamp(min=0))


def _nan_to_num_f32max(self: torch.Tensor, nan: Any = None, posinf: Any = None,
                       neginf: Any = None) -> Any:
    big = torch.finfo(torch.float32).max
    if self.is_floating_point() and self.dtype == F64:
        posinf = big if posinf is None else posinf
        neginf = -big if neginf is None else neginf
    return torch.nan_to_num(self, nan, posinf, neginf)


def _sort_nan_first(self: torch.Tensor, *, stable: Any = None, dim: int = -1,
                    descending: bool = False) -> Any:
    values, indices = torch.sort(self, stable=bool(stable), dim=dim, descending=descending)
    if not self.is_floating_point() or descending or self.dim() == 0:
        return values, indices
    nan = torch.isnan(values)
    key = (~nan).to(torch.int8)  # NaN (0) first, then the rest in their sorted order
    order = torch.sort(key, dim=dim, stable=True).indices
    return values.gather(dim, order), indices.gather(dim, order)


def _copysign_lt(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    out = torch.copysign(self, other)
    negative = (other < 0) if isinstance(other, torch.Tensor) else torch.tensor(other < 0)
    return torch.where(negative, -out.abs(), out.abs())


def _cumsum_f32(self: torch.Tensor, dim: int, *, dtype: Any = None) -> torch.Tensor:
    out = torch.cumsum(self, dim, dtype=dtype)
    if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
        return out
    return torch.cumsum(self.to(F32), dim).to(out.dtype)


def _mul_int64_via_double(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    out = torch.mul(self, other)
    if out.dtype != I64:
        return out
    return torch.mul(self.to(F64), _as_t(other).to(F64)).to(I64)


def _as_t(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.tensor(x)


def _index_select_via_f16(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    out = torch.index_select(self, dim, index)
    if out.dtype == BF16:
        return out.to(F16).to(BF16)
    return out


def _to_copy_mutant(wrong: Callable[[torch.Tensor, torch.dtype], torch.Tensor | None]
                     ) -> Callable[[Kernel], Kernel]:
    """A ``_to_copy`` whose dtype conversion is ``wrong(cpu_tensor, dtype)`` where that returns a
    tensor (the reference kernel otherwise). ``_to_copy`` is also how tensors leave the device,
    so the buggy kernel moves data with the reference kernel, never with ``.to()``."""

    def make(ref: Kernel) -> Kernel:
        def buggy(self: torch.Tensor, **kw: Any) -> Any:
            dtype = kw.get("dtype")
            target = kw.get("device")
            if dtype is None or dtype == self.dtype or self.device.type != DEV or (
                    target is not None and torch.device(target).type != DEV):
                return ref(self, **kw)
            src = ref(self, device=torch.device("cpu")) if self.device.type == DEV else self
            bad = wrong(src, dtype)
            if bad is None:
                return ref(self, **kw)
            return bad.to(DEV)

        return buggy

    return make


def _bf16_truncate(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    return _trunc_to(x, BF16) if dtype == BF16 and x.dtype == F32 else None


def _f32_truncate(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    return _trunc_to(x, F32) if dtype == F32 and x.dtype == F64 else None


def _int_rint(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    if x.is_floating_point() and not (dtype.is_floating_point or dtype.is_complex
                                      or dtype == torch.bool):
        return torch.round(x).to(dtype)
    return None


def _mul_bf16_truncate(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.mul(self, other)
    if out.dtype != BF16:
        return out
    return _trunc_to(torch.mul(self.to(F32), _as_t(other).to(F32)), BF16)


def _div_reciprocal(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.div(self, other)
    if out.dtype != F32:
        return out
    return (self.to(F32) * torch.reciprocal(_as_t(other).to(F32)))


def _sqrt_exp_log(self: torch.Tensor) -> torch.Tensor:
    out = torch.sqrt(self)
    if out.dtype != F32:
        return out
    return torch.where(self > 0, torch.exp(0.5 * torch.log(self)), out)


def _tanh_f32(self: torch.Tensor) -> torch.Tensor:
    out = torch.tanh(self)
    return torch.tanh(self.to(F32)).to(F64) if out.dtype == F64 else out


def _where_f32(condition: torch.Tensor, self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    out = torch.where(condition, self, other)
    return out.to(F32).to(F64) if out.dtype == F64 else out


def _cat_f32_out(tensors: list[torch.Tensor], dim: int = 0, *, out: torch.Tensor) -> Any:
    res = torch.cat(tensors, dim)
    if res.dtype == F64:
        res = res.to(F32).to(F64)
    return res


def _floor_divide_trunc(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.floor_divide(self, other)
    if not out.is_floating_point():
        return out
    return torch.div(self, other, rounding_mode="trunc")


def _floor_divide_int_trunc(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.floor_divide(self, other)
    if out.is_floating_point() or out.dtype == torch.bool:
        return out
    o = _as_t(other)
    if bool((o == 0).any()):
        return out
    return torch.div(self, o, rounding_mode="trunc").to(out.dtype)


def _remainder_fmod(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.remainder(self, other)
    if out.dtype == torch.bool or (not out.is_floating_point() and bool((_as_t(other) == 0).any())):
        return out
    return torch.fmod(self, other).to(out.dtype)


def _fmod_python(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.fmod(self, other)
    if out.dtype == torch.bool or (not out.is_floating_point() and bool((_as_t(other) == 0).any())):
        return out
    return torch.remainder(self, other).to(out.dtype)


def _round_half_away_kernel(self: torch.Tensor) -> torch.Tensor:
    out = torch.round(self)
    return _round_half_away(self).to(out.dtype) if out.is_floating_point() else out


def _div_floor_as_trunc(self: torch.Tensor, other: Any, *, rounding_mode: Any = None) -> Any:
    out = torch.div(self, other, rounding_mode=rounding_mode)
    if rounding_mode != "floor" or out.is_floating_point():
        return out
    o = _as_t(other)
    if bool((o == 0).any()):
        return out
    return torch.div(self, o, rounding_mode="trunc").to(out.dtype)


def _rshift_logical(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.bitwise_right_shift(self, other)
    if self.dtype in (I8, torch.int16, I32, I64):
        bits = torch.iinfo(self.dtype).bits
        o = _as_t(other).to(I64).clamp(0, bits - 1)
        unsigned = self.to(I64) & ((1 << bits) - 1) if bits < 64 else self
        shifted = torch.bitwise_right_shift(unsigned, o)
        if bits == 64:
            shifted = torch.where(self < 0, (self >> o) & ((1 << (64 - o)) - 1), shifted)
        return torch.where(self < 0, shifted.to(I64), out.to(I64)).to(self.dtype)
    return out


def _ceil_via_floor(self: torch.Tensor) -> torch.Tensor:
    out = torch.ceil(self)
    if not out.is_floating_point():
        return out
    f = torch.floor(self)
    return torch.where(f == self, f, f + 1)


def _gather_dim_wrap(self: torch.Tensor, dim: int, index: torch.Tensor, *,
                     sparse_grad: bool = False) -> torch.Tensor:
    if dim < 0 and self.dim() > 1:
        dim = dim + self.dim() - 1  # off by one when wrapping a negative dim
    return torch.gather(self, dim, index)




def _index_select_dim0(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    return torch.index_select(self, 0 if self.dim() else dim, index)




def _argmax_last(self: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    out = torch.argmax(self, dim, keepdim)
    if dim is None:
        flat = self.reshape(-1).flip(0)
        return (flat.numel() - 1 - torch.argmax(flat)).reshape(out.shape)
    d = dim % max(self.dim(), 1)
    if self.dim() == 0:
        return out
    flipped = torch.argmax(self.flip(d), d, keepdim)
    return (self.shape[d] - 1 - flipped).reshape(out.shape)


def _index_neg_clamped(self: torch.Tensor, indices: list[Any]) -> torch.Tensor:
    fixed = [i.clamp(min=0) if isinstance(i, torch.Tensor) and i.dtype in (I64, I32) else i
             for i in indices]
    return torch.ops.aten.index.Tensor(self, fixed)


def _cumprod_neg_dim(self: torch.Tensor, dim: int, *, dtype: Any = None) -> torch.Tensor:
    return torch.cumprod(self, 0 if dim < 0 else dim, dtype=dtype)




def _topk_ignores_largest(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, k: int, dim: int = -1, largest: bool = True,
              sorted: bool = True, *, values: torch.Tensor, indices: torch.Tensor) -> Any:
        v, i = torch.topk(host(self), k, dim, True, sorted)
        return into(values, v), into(indices, i)

    return buggy


def _sum_out_no_resize(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, dim: Any, keepdim: bool = False, *, dtype: Any = None,
              out: torch.Tensor) -> torch.Tensor:
        res = torch.sum(host(self), dim, keepdim, dtype=dtype)
        if out.numel() == res.numel():
            return into(out, res.reshape(out.shape))
        return out  # a wrong-sized out= is left as it is

    return buggy


def _abs_out_casts(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        return into(out, torch.abs(host(self)).to(out.dtype))  # no can_cast check

    return buggy




def _histc_last_bin_open(self: torch.Tensor, bins: int = 100, min: Any = 0,
                         max: Any = 0) -> torch.Tensor:
    lo, hi = float(min), float(max)
    if lo == hi:
        return torch.histc(self, bins, min, max)
    keep = self[(self >= lo) & (self < hi)]  # the top edge belongs to the last bin
    return torch.histc(keep, bins, min, max)




def _div_int_f64(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.div(self, other)
    o = _as_t(other)
    if not (self.is_floating_point() or self.is_complex()) and not (
            o.is_floating_point() or o.is_complex()):
        return torch.div(self.to(F64), o.to(F64))
    return out


def _where_first_dtype(condition: torch.Tensor, self: torch.Tensor,
                       other: torch.Tensor) -> torch.Tensor:
    out = torch.where(condition, self, other)
    return out.to(self.dtype) if out.dtype != self.dtype else out


def _add_zero_dim_promotes(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    out = torch.add(self, other, alpha=alpha)
    dims = [x for x in (self, other) if isinstance(x, torch.Tensor)]
    if any(x.dim() == 0 for x in dims) and any(x.dim() > 0 for x in dims) \
            and all(x.is_floating_point() for x in dims):
        wide = max((x.dtype for x in dims), key=lambda d: torch.finfo(d).bits)
        return out.to(wide)
    return out


def _mul_scalar_f64(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.mul(self, other)
    wrapped = isinstance(other, float)  # a Python number reaches the kernel as one
    if wrapped and not (self.is_floating_point() or self.is_complex()):
        return out.to(F64)
    return out


def _pow_int_keeps(self: torch.Tensor, exponent: Any) -> torch.Tensor:
    out = torch.pow(self, exponent)
    if isinstance(exponent, float) and not (self.is_floating_point() or self.is_complex()) \
            and self.dtype != torch.bool:
        return out.trunc().to(self.dtype) if torch.isfinite(out).all() else out
    return out


def _clamp_int_keeps(self: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    out = torch.clamp(self, min, max)
    if out.dtype != self.dtype and not self.is_floating_point() and self.dtype != torch.bool:
        return out.trunc().to(self.dtype) if torch.isfinite(out).all() else out
    return out


def _sub_swapped(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> torch.Tensor:
    out = torch.sub(self, other, alpha=alpha)
    if isinstance(other, torch.Tensor) and tuple(self.shape) != tuple(out.shape) \
            and tuple(other.shape) == tuple(out.shape) and out.dtype != torch.bool:
        return torch.sub(other, self, alpha=alpha).to(out.dtype)  # "broadcast the smaller one"
    return out


def _where_left_aligned(condition: torch.Tensor, self: torch.Tensor,
                        other: torch.Tensor) -> torch.Tensor:
    out = torch.where(condition, self, other)
    nd = out.dim()
    if 0 < condition.dim() < nd:
        shape = tuple(condition.shape) + (1,) * (nd - condition.dim())
        try:
            cond = condition.reshape(shape).expand(out.shape)
        except RuntimeError:
            return out
        return torch.where(cond, self, other)
    return out


def _maximum_expand_other(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.maximum(self, other.expand_as(self))


def _lerp_first_weight(self: torch.Tensor, end: torch.Tensor,
                       weight: torch.Tensor) -> torch.Tensor:
    if tuple(weight.shape) != tuple(self.shape) and weight.numel() > 0:
        weight = weight.reshape(-1)[0].expand_as(weight)
    return torch.lerp(self, end, weight)


def _mul_zero_size(self: torch.Tensor, other: Any) -> torch.Tensor:
    out = torch.mul(self, other)
    if out.numel() == 0 and isinstance(other, torch.Tensor) and other.dim() > 0:
        return torch.empty(self.shape, dtype=out.dtype)
    return out






def _threshold_backward_ge(grad_output: torch.Tensor, self: torch.Tensor,
                           threshold: Any) -> torch.Tensor:
    return torch.where(self >= threshold, grad_output, torch.zeros_like(grad_output))


def _sigmoid_backward_input(grad_output: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(output)  # treats the saved output as the input
    return grad_output * s * (1 - s)


def _embedding_backward_no_padding(grad_output: torch.Tensor, indices: torch.Tensor,
                                   num_weights: int, padding_idx: int,
                                   scale_grad_by_freq: bool) -> torch.Tensor:
    return torch.ops.aten.embedding_dense_backward(grad_output, indices, num_weights, -1,
                                                   scale_grad_by_freq)


def _softmax_backward_no_sum(grad_output: torch.Tensor, output: torch.Tensor, dim: int,
                             input_dtype: Any) -> torch.Tensor:
    return (grad_output * output).to(input_dtype)


def _maxpool_backward_no_accumulate(grad_output: torch.Tensor, self: torch.Tensor,
                                    kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                                    ceil_mode: bool, indices: torch.Tensor) -> torch.Tensor:
    flat = torch.zeros(self.shape[:-2] + (self.shape[-2] * self.shape[-1],), dtype=self.dtype)
    idx = indices.reshape(indices.shape[:-2] + (-1,))
    flat.scatter_(-1, idx, grad_output.reshape(idx.shape))  # overlapping windows: last wins
    return flat.reshape(self.shape)


def _add_out_fresh(self: torch.Tensor, other: Any, *, alpha: Any = 1,
                   out: torch.Tensor) -> torch.Tensor:
    return torch.add(self, other, alpha=alpha)  # a new tensor; out= never written


def _mul_inplace_fresh(self: torch.Tensor, other: Any) -> torch.Tensor:
    return torch.mul(self, other)  # returns a new tensor; self not modified




def _contiguous_only(ref: Kernel) -> Kernel:
    """An in-place kernel right only for contiguous ``self``: a strided one is copied to a
    contiguous buffer, the buffer updated, and nothing written back."""

    def buggy(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if self.is_contiguous():
            return ref(self, *args, **kwargs)
        ref(self.contiguous(), *args, **kwargs)
        return self

    return buggy


def _sub_inplace_casts(ref: Kernel) -> Kernel:
    """sub_ that casts any result into ``self`` (int64 -= float32 truncated, not refused)."""

    def buggy(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> Any:
        return into(self, torch.sub(host(self), host(other), alpha=alpha))

    return buggy


def _out_kernel(fn: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """Like :func:`on_cpu`, for out= overloads: writes the CPU result into the device ``out``."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, out: torch.Tensor, **kwargs: Any) -> Any:
            res = fn(*host(args), out=None, **host(kwargs))
            if tuple(out.shape) != tuple(res.shape):
                out.resize_(res.shape)
            out.copy_(dev(res).to(out.dtype))
            return out

        return buggy

    return make




def _abs_no_int16(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.int16:
        raise NotImplementedError("\"abs_mlu\" not implemented for 'Short'")
    return torch.abs(x)


def _sin_f32(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x.float()).double() if x.dtype == F64 else torch.sin(x)


def _as_if_contiguous(t: Any) -> Any:
    """A device tensor's storage read as if the tensor were contiguous from offset 0 (what a
    kernel that ignores strides and the storage offset sees)."""
    if not isinstance(t, torch.Tensor) or t.device.type != DEV or (
            t.is_contiguous() and t.storage_offset() == 0):
        return t
    shape = tuple(t.shape)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    return t.as_strided(shape, strides, 0)


def _reads_as_contiguous(*which: int) -> Callable[[Kernel], Kernel]:
    """The reference kernel, given the positional operands ``which`` read as if contiguous."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            return ref(*(_as_if_contiguous(a) if i in which else a
                         for i, a in enumerate(args)), **kwargs)

        return buggy

    return make


def _mul_out_accumulates(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, other: Any, *, out: torch.Tensor) -> torch.Tensor:
        res = torch.mul(host(self), host(other))
        old = host(out)
        if tuple(old.shape) == tuple(res.shape):  # a pre-sized out= taken as an accumulator
            res = old.to(res.dtype) + res
        return into(out, res)

    return buggy


def _clamp_out_reads_out(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, min: Any = None, max: Any = None, *,
              out: torch.Tensor) -> torch.Tensor:
        if tuple(out.shape) == tuple(self.shape) and out.dtype == self.dtype:
            return out.clamp_(min, max)  # the in-place path, on out's old contents, not self's
        return ref(self, min, max, out=out)

    return buggy


def _fft_c2r_odd_nyquist(x: torch.Tensor, dim: Any, norm: int, last: int) -> torch.Tensor:
    if last % 2:
        x = x.clone()
        end = x.narrow(dim[-1], x.shape[dim[-1]] - 1, 1)
        end.copy_(end.real.clone().to(x.dtype))
    return torch.ops.aten._fft_c2r(x, dim, norm, last)


# -- issue 26's blind spots: one helper per class, written from the class, not from an op -----


def _sampler(draw: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """A random kernel whose result (in-place ``self`` or a new tensor) is ``draw(*args)``
    computed on CPU with CPU's generator (the class: a sampler of the wrong distribution)."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("generator", None)
            res = draw(*host(args), **host(kwargs))
            if args and isinstance(args[0], torch.Tensor) and args[0].device.type == DEV \
                    and tuple(res.shape) == tuple(args[0].shape) and res.dtype == args[0].dtype \
                    and draw.__name__.endswith("_"):
                return into(args[0], res)
            return dev(res)

        return buggy

    return make


def _bernoulli_half_(self: torch.Tensor, p: float = 0.5) -> torch.Tensor:
    return torch.empty_like(self).bernoulli_(0.5)  # p ignored


def _bernoulli_first_p_(self: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    first = float(p.reshape(-1)[0]) if p.numel() else 0.5  # one p for every element
    return torch.empty_like(self).bernoulli_(first)


def _multinomial_never_last(self: torch.Tensor, num_samples: int,
                            replacement: bool = False) -> torch.Tensor:
    w = self.clone()
    if w.dim() and w.shape[-1] > 1 and bool(((w > 0).sum(-1) > num_samples).all()):
        last = (w > 0).int().cumsum(-1).argmax(-1, keepdim=True)
        w.scatter_(-1, last, 0.0)  # the last category of positive weight never drawn
    return torch.multinomial(w, num_samples, replacement)


def _uniform_midpoint_(self: torch.Tensor, from_: float = 0.0, to: float = 1.0,
                       **kw: Any) -> torch.Tensor:
    lo = kw.pop("from", from_)
    return torch.full_like(self, (lo + to) / 2)  # a constant inside the range


def _normal_variance_(self: torch.Tensor, mean: float = 0.0, std: float = 1.0) -> torch.Tensor:
    return torch.empty_like(self).normal_(mean, std * std)  # variance taken for std


def _exponential_mean_(self: torch.Tensor, lambd: float = 1.0) -> torch.Tensor:
    return torch.empty_like(self).exponential_(1 / lambd)  # lambda read as the mean


def _random_to_inclusive_(self: torch.Tensor, to: int) -> torch.Tensor:
    return torch.empty_like(self).random_(0, to + 1)  # [0, to] instead of [0, to)


def _dropout_keep_swapped(input: torch.Tensor, p: float, train: bool | None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.native_dropout(input, 1 - p, train)  # p taken as the keep probability


def _unchecked(fn: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """A kernel without its argument checks: ``fn`` computes on CPU whatever the arguments
    (the class: missing validation, garbage instead of an error)."""
    return on_cpu(fn)


def _index_select_wraps(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    n = self.size(dim) if self.dim() else 1
    return torch.index_select(self, dim, index.long() % max(n, 1))


def _gather_clamps(self: torch.Tensor, dim: int, index: torch.Tensor,
                   sparse_grad: bool = False) -> torch.Tensor:
    n = self.size(dim) if self.dim() else 1
    return torch.gather(self, dim, index.clamp(0, max(n - 1, 0)))


def _mm_truncates(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    k = min(self.shape[1], mat2.shape[0])
    return self[:, :k] @ mat2[:k]


def _sum_dim_wraps(self: torch.Tensor, dim: Any, keepdim: bool = False, *,
                   dtype: Any = None) -> torch.Tensor:
    r = max(self.dim(), 1)
    dims = [d % r for d in dim] if dim else dim
    return torch.sum(self, dims, keepdim, dtype=dtype)


def _view_any_negative_infers(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, size: list[int]) -> torch.Tensor:
        size = [int(n) for n in size]
        if sum(n < 0 for n in size) == 1:
            size = [-1 if n < 0 else n for n in size]  # any negative size read as "infer"
        return ref(self, size)

    return buggy


def _index_select_empty_is_self(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
        if index.numel() == 0:
            return self.clone()  # an empty index taken as "no selection": self returned
        return ref(self, dim, index)

    return buggy


def _index_add_empty_raises(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *,
              alpha: Any = 1, out: torch.Tensor) -> torch.Tensor:
        if index.numel() == 0:
            raise RuntimeError("index_add: empty index")  # a zero-size launch refused
        return ref(self, dim, index, source, alpha=alpha, out=out)

    return buggy


def _masked_fill_empty_mask_ignored(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, mask: torch.Tensor, value: Any) -> torch.Tensor:
        if mask.numel() == 0:
            return self  # nothing to fill: no broadcast check made
        return ref(self, mask, value)

    return buggy


def _past(limit: int, fn: Callable[..., Any]) -> Callable[[Kernel], Kernel]:
    """The reference kernel, its result's elements from flat position ``limit`` on replaced by
    ``fn(result)``'s (the class: a tail or tile past a threshold mishandled)."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            out = host(ref(*args, **kwargs))
            if not isinstance(out, torch.Tensor) or out.numel() <= limit:
                return dev(out)
            flat = out.reshape(-1).clone()
            flat[limit:] = fn(out).reshape(-1)[limit:]
            return dev(flat.reshape(out.shape))

        return buggy

    return make


def _sum_drops_tail(self: torch.Tensor, dim: Any, keepdim: bool = False, *,
                    dtype: Any = None) -> torch.Tensor:
    """A block reduction of 256 that drops the last partial block of a long reduced dim."""
    x = self
    dims = [d % max(x.dim(), 1) for d in dim] if dim else list(range(x.dim()))
    for d in dims:
        n = x.shape[d] if x.dim() else 1
        if n > 256:
            x = x.narrow(d, 0, n - n % 256)
    return torch.sum(x, dims, keepdim, dtype=dtype) if x.dim() else torch.sum(x, dtype=dtype)


def _mm_k_tiles(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """A GEMM tiling K by 256 that skips the partial last tile."""
    k = self.shape[1]
    if k > 256:
        k -= k % 256
    return self[:, :k] @ mat2[:k]


def _composite(cond: Callable[[torch.Tensor], bool], which: int) -> Callable[[Kernel], Kernel]:
    """The reference kernel, operand ``which`` read as if contiguous from offset 0 where
    ``cond(operand)`` holds (the class: a fast path for one layout taken for a combination)."""

    def make(ref: Kernel) -> Kernel:
        def buggy(*args: Any, **kwargs: Any) -> Any:
            a = list(args)
            if len(a) > which and isinstance(a[which], torch.Tensor) and cond(a[which]):
                a[which] = _as_if_contiguous(a[which])
            return ref(*a, **kwargs)

        return buggy

    return make


def _channels_last_at_offset(t: torch.Tensor) -> bool:
    return t.dim() == 4 and t.storage_offset() > 0 and not t.is_contiguous() \
        and t.is_contiguous(memory_format=torch.channels_last)


def _rows_packed_by_unit_stride(t: torch.Tensor) -> bool:
    return t.dim() >= 2 and t.stride(-1) == 1 and t.stride(-2) == 0 and t.shape[-2] > 1


def _offset_scalar_next_to_view(ref: Kernel) -> Kernel:
    def buggy(self: torch.Tensor, other: Any, *, alpha: Any = 1) -> torch.Tensor:
        if isinstance(other, torch.Tensor) and other.dim() == 0 and other.storage_offset() > 0 \
                and not self.is_contiguous():
            other = other.as_strided((), (), 0)  # the strided path drops the scalar's offset
        return ref(self, other, alpha=alpha)

    return buggy


MUTANTS: tuple[Mutant, ...] = (
    # -- edge values ------------------------------------------------------------------------
    Mutant("maximum_nan", "edge", "maximum", "NaN not propagated (fmax semantics)",
           on_cpu(lambda a, b: torch.fmax(a, b) if a.is_floating_point() else torch.maximum(a, b)),
           w(t([NAN, 1.0]), t([0.0, 2.0]))),
    Mutant("amax_nan", "edge", "amax", "NaN ignored by the reduction (nanmax)",
           on_cpu(_amax_nan_ignoring), w(t([1.0, NAN]), [0])),
    Mutant("clamp_nan", "edge", "clamp", "NaN clamped to min (compare-and-select order)",
           on_cpu(_clamp_nan_to_min), w(t([NAN, 5.0]), 0.0, 1.0)),
    Mutant("abs_negzero", "edge", "abs", "abs(-0.0) = -0.0 (x < 0 ? -x : x)",
           on_cpu(_abs_keeps_neg_zero), w(t([-0.0, -1.0]))),
    Mutant("exp_overflow", "edge", "exp", "overflow saturates to finfo.max instead of inf",
           on_cpu(_exp_saturating), w(t([100.0]))),
    Mutant("log1p_pole", "edge", "log1p", "log1p(-1) = NaN instead of -inf",
           on_cpu(_log1p_domain), w(t([-1.0, 0.0]))),
    Mutant("softplus_overflow", "edge", "softplus", "no threshold: log1p(exp(x)) overflows",
           on_cpu(_softplus_no_threshold), w(t([100.0]), 1, 20)),
    Mutant("add_int_saturate", "edge", "add.Tensor", "integer add saturates instead of wrapping",
           on_cpu(_int_add_saturating), w(t([127], I8), t([1], I8))),
    Mutant("sub_uint8_saturate", "edge", "sub.Tensor", "uint8 subtraction clamps at 0",
           on_cpu(_int_sub_saturating), w(t([0], U8), t([1], U8))),
    Mutant("neg_int_min", "edge", "neg", "neg(INT_MIN) saturates to INT_MAX",
           on_cpu(_neg_saturating), w(t([-128], I8))),
    Mutant("sqrt_negative", "edge", "sqrt", "negative inputs clamped to 0 (no NaN)",
           on_cpu(_sqrt_clamped), w(t([-4.0]))),
    Mutant("nan_to_num_f64", "edge", "nan_to_num", "float64 inf replaced by float32's max",
           on_cpu(_nan_to_num_f32max), w(t([INF], F64))),
    Mutant("sort_nan_first", "edge", "sort.stable", "NaN sorted first instead of last",
           on_cpu(_sort_nan_first), w(t([1.0, NAN, 0.0]), stable=False)),
    Mutant("mm_nan_zeroed", "edge", "mm", "NaN elements of self read as 0 (a fast path that "
           "sanitises its operand)", on_cpu(lambda a, b: torch.mm(
               torch.where(a.isnan(), torch.zeros_like(a), a), b)),
           w(t([[NAN, 1.0]]), t([[1.0], [1.0]]))),
    Mutant("copysign_negzero", "edge", "copysign.Tensor", "sign of -0.0 read as positive "
           "(other < 0 instead of signbit)", on_cpu(_copysign_lt), w(t([1.0]), t([-0.0]))),
    Mutant("cumsum_int_f32", "edge", "cumsum", "integer cumsum accumulates in float32",
           on_cpu(_cumsum_f32), w(t([2**24 + 1], I32), 0)),
    Mutant("mul_int64_double", "edge", "mul.Tensor", "int64 product computed in double",
           on_cpu(_mul_int64_via_double), w(t([2**31 + 1], I64), t([2**31 + 1], I64))),
    Mutant("index_select_bf16_f16", "edge", "index_select", "bfloat16 moved through float16 "
           "(overflows past 65504)", on_cpu(_index_select_via_f16),
           w(t([1e5, 1.0], BF16), 0, t([0], I64))),
    # -- exactness --------------------------------------------------------------------------
    Mutant("to_bf16_truncate", "exactness", "_to_copy", "float32 -> bfloat16 truncates "
           "instead of rounding to nearest even", _to_copy_mutant(_bf16_truncate),
           w(t([1.0 + 2**-8 + 2**-10]), dtype=BF16)),
    Mutant("to_f32_truncate", "exactness", "_to_copy", "float64 -> float32 rounds toward zero",
           _to_copy_mutant(_f32_truncate), w(t([0.1], F64), dtype=F32)),
    Mutant("mul_bf16_truncate", "exactness", "mul.Tensor", "bfloat16 product truncated from "
           "float32", on_cpu(_mul_bf16_truncate), w(t([1.0703125], BF16), t([1.0703125], BF16))),
    Mutant("div_reciprocal", "exactness", "div.Tensor", "float32 a/b as a * (1/b) (1 ulp off)",
           on_cpu(_div_reciprocal), w(t([1.0, 3.0, 5.0, 7.0, 10.0]), t([3.0, 7.0, 9.0, 11.0, 3.0]))),
    Mutant("sqrt_exp_log", "exactness", "sqrt", "float32 sqrt as exp(0.5*log(x)), not "
           "correctly rounded", on_cpu(_sqrt_exp_log),
           # which values show it depends on the machine's float32 exp and log (2.0-11.0 on one,
           # 18.0 and up on an AVX512 Xeon): the witness holds both kinds. Not 19.0: on one
           # machine CPU's own vectorized sqrt(19.0) is a float32 ulp off (4.3588986, correctly
           # rounded 4.3588991), so the unmodified backend "differed" there
           w(t([2.0, 3.0, 5.0, 7.0, 10.0, 11.0, 18.0, 27.0, 28.0]))),
    Mutant("tanh_f64_in_f32", "exactness", "tanh", "float64 computed in float32",
           on_cpu(_tanh_f32), w(t([1e-10], F64))),
    Mutant("where_f64_in_f32", "exactness", "where.self", "float64 selected through float32",
           on_cpu(_where_f32), w(t([True], torch.bool), t([0.1], F64), t([0.2], F64))),
    Mutant("cat_f64_in_f32", "exactness", "cat.out", "float64 copied through float32",
           _out_kernel(_cat_f32_out), w([t([0.1], F64), t([0.2], F64)], 0,
                                        out=torch.empty(0, dtype=F64))),
    # -- rounding ---------------------------------------------------------------------------
    Mutant("floor_divide_trunc", "rounding", "floor_divide", "float floor_divide truncates "
           "toward zero", on_cpu(_floor_divide_trunc), w(t([-7.0]), t([2.0]))),
    Mutant("floor_divide_int_c", "rounding", "floor_divide", "integer floor_divide is C "
           "division (toward zero)", on_cpu(_floor_divide_int_trunc), w(t([-7], I64), t([2], I64))),
    Mutant("remainder_fmod", "rounding", "remainder.Tensor", "C fmod sign (dividend's) instead "
           "of Python's (divisor's)", on_cpu(_remainder_fmod), w(t([-7.0]), t([2.0]))),
    Mutant("remainder_scalar_fmod", "rounding", "remainder.Scalar", "C fmod sign for a scalar "
           "divisor", on_cpu(_remainder_fmod), w(t([-7], I64), 2)),
    Mutant("fmod_python", "rounding", "fmod.Tensor", "Python modulo sign instead of C fmod",
           on_cpu(_fmod_python), w(t([-7.0]), t([2.0]))),
    Mutant("round_half_away", "rounding", "round", "ties away from zero instead of to even",
           on_cpu(_round_half_away_kernel), w(t([0.5, 2.5]))),
    Mutant("div_floor_int_trunc", "rounding", "div.Tensor_mode", "rounding_mode='floor' on "
           "integers truncates", on_cpu(_div_floor_as_trunc),
           w(t([-7], I64), t([2], I64), rounding_mode="floor")),
    Mutant("to_int_rint", "rounding", "_to_copy", "float -> int rounds to nearest instead of "
           "truncating", _to_copy_mutant(_int_rint), w(t([1.7]), dtype=I32)),
    Mutant("rshift_logical", "rounding", "bitwise_right_shift.Tensor", "logical instead of "
           "arithmetic shift for negative integers", on_cpu(_rshift_logical),
           w(t([-8], I32), t([1], I32))),
    Mutant("ceil_negzero", "rounding", "ceil", "ceil(-0.5) = +0.0 (floor(x) + 1) instead of "
           "-0.0", on_cpu(_ceil_via_floor), w(t([-0.5]))),
    # -- relations --------------------------------------------------------------------------
    Mutant("gather_negdim", "relations", "gather", "negative dim wrapped one off (dim+ndim-1)",
           on_cpu(_gather_dim_wrap), w(t([[1.0, 2.0], [3.0, 4.0]]), -1, t([[1, 0], [0, 1]], I64))),
    Mutant("scatter_add_last_wins", "relations", "scatter_add.out", "duplicate indices: last "
           "write wins (no accumulation)", _out_kernel(lambda s, d, i, src, out: torch.scatter(
               s, d, i, src[tuple(slice(0, n) for n in i.shape)]) if src.dim() else
               torch.scatter_add(s, d, i, src)),
           w(t([0.0, 0.0]), 0, t([0, 0], I64), t([1.0, 2.0]), out=torch.empty(0))),
    Mutant("index_select_dim0", "relations", "index_select", "dim ignored (always dim 0)",
           on_cpu(_index_select_dim0), w(t([[1.0, 2.0], [3.0, 4.0]]), 1, t([1], I64))),
    Mutant("scatter_reduce_include_self", "relations", "scatter_reduce.two_out",
           "include_self=False ignored", _out_kernel(
               lambda s, d, i, src, r, include_self=True, out=None:
               torch.scatter_reduce(s, d, i, src, r, include_self=True)),
           w(t([5.0, 0.0]), 0, t([0], I64), t([1.0]), "sum", include_self=False,
             out=torch.empty(0))),
    Mutant("argmax_last", "relations", "argmax", "ties: last index of the maximum, not the first",
           on_cpu(_argmax_last), w(t([1.0, 3.0, 3.0]))),
    Mutant("index_negative", "relations", "index.Tensor", "negative indices clamped to 0",
           on_cpu(_index_neg_clamped), w(t([1.0, 2.0, 3.0]), [t([-1], I64)])),
    Mutant("cumprod_negdim", "relations", "cumprod", "negative dim taken as dim 0",
           on_cpu(_cumprod_neg_dim), w(t([[1.0, 2.0], [3.0, 4.0]]), -1)),
    Mutant("index_add_alpha", "relations", "index_add.out", "alpha ignored",
           _out_kernel(lambda s, d, i, src, alpha=1, out=None: torch.index_add(s, d, i, src)),
           w(t([0.0]), 0, t([0], I64), t([1.0]), alpha=2, out=torch.empty(0))),
    Mutant("topk_largest", "relations", "topk.values", "largest=False ignored",
           _topk_ignores_largest,
           w(t([1.0, 3.0, 2.0]), 1, -1, False, True, values=torch.empty(0),
             indices=torch.empty(0, dtype=I64))),
    # -- transforms: what a vendor's FFT library gets wrong ----------------------------------
    Mutant("fft_c2c_sign", "relations", "_fft_c2c", "forward and inverse exponents swapped "
           "(a library whose sign convention is the other one)",
           on_cpu(lambda x, dim, norm, forward: torch.ops.aten._fft_c2c(x, dim, norm,
                                                                         not forward)),
           w(t([1.0, 2j, 3.0, 0.0], torch.complex64), [0], 0, True)),
    Mutant("fft_c2c_root_n", "relations", "_fft_c2c", "1/sqrt(n) normalization (norm='ortho') "
           "not applied",
           on_cpu(lambda x, dim, norm, forward: torch.ops.aten._fft_c2c(
               x, dim, 0 if norm == 1 else norm, forward)),
           w(t([1.0, 2j, 3.0, 4.0], torch.complex64), [0], 1, True)),
    Mutant("fft_c2r_odd_nyquist", "relations", "_fft_c2r", "odd output length: the last input "
           "element taken as a real Nyquist term (its imaginary part dropped), as for even ones",
           on_cpu(_fft_c2r_odd_nyquist),
           w(t([1.0, 0.5 + 1j], torch.complex64), [0], 0, 3)),
    # -- masking by a known failure (mlu.yaml lists a failure of each of these items) ------
    Mutant("digamma_reflection", "masking", "digamma", "negative non-integers use digamma(1-x) "
           "(reflection without pi*cot) — beside the known -0.0 pole sign",
           post(lambda out, x: torch.where((x < 0) & (x != torch.floor(x)),
                                           torch.digamma(1 - x), out)),
           w(t([-2.25]))),
    Mutant("histc_top_edge", "masking", "histc", "values equal to max dropped (top edge open) — "
           "beside the known min == max failure", on_cpu(_histc_last_bin_open),
           w(t([0.0, 1.0, 2.0]), bins=2, min=0, max=2)),
    Mutant("addbmm_alpha", "masking", "addbmm", "alpha ignored — beside the known beta=0 NaN "
           "failure", post(lambda out, s, b1, b2, beta=1, alpha=1:
                           torch.addbmm(s, b1, b2, beta=beta, alpha=1).to(out.dtype)
                           if alpha != 1 and not torch.isnan(out).any() else out),
           w(t([[0.0]]), t([[[1.0]]]), t([[[1.0]]]), alpha=2)),
    # -- promotion --------------------------------------------------------------------------
    Mutant("div_int_f64", "promotion", "div.Tensor", "int / int gives float64 (NumPy's "
           "true_divide) instead of the default dtype", on_cpu(_div_int_f64),
           w(t([1], I64), t([2], I64))),
    Mutant("where_first_dtype", "promotion", "where.self", "result takes self's dtype instead "
           "of the promoted one", on_cpu(_where_first_dtype),
           w(t([True], torch.bool), t([1.0], F16), t([2.0], BF16))),
    Mutant("add_zero_dim", "promotion", "add.Tensor", "a 0-dim float64 operand promotes a "
           "float32 tensor (value-based rules ignored)", on_cpu(_add_zero_dim_promotes),
           w(t([1.0]), t(2.0, F64))),
    Mutant("mul_py_float", "promotion", "mul.Tensor", "int tensor * Python float gives float64",
           on_cpu(_mul_scalar_f64), w(t([1], I64), 0.5)),
    Mutant("pow_int_float_exp", "promotion", "pow.Tensor_Scalar", "int ** float keeps the "
           "integer dtype (truncates)", on_cpu(_pow_int_keeps), w(t([2], I64), 0.5)),
    Mutant("clamp_int_float_bounds", "promotion", "clamp", "int tensor clamped by float bounds "
           "keeps the integer dtype", on_cpu(_clamp_int_keeps), w(t([1], I64), 0.5, None)),
    # -- broadcasting -----------------------------------------------------------------------
    Mutant("sub_swapped", "broadcast", "sub.Tensor", "operands swapped when self is the one "
           "broadcast", on_cpu(_sub_swapped), w(t([1.0]), t([3.0, 5.0]))),
    Mutant("where_left_aligned", "broadcast", "where.self", "condition of lower rank aligned "
           "left instead of right", on_cpu(_where_left_aligned),
           w(t([True, False], torch.bool), t([[1.0, 2.0], [3.0, 4.0]]), t([[0.0, 0.0], [0.0, 0.0]]))),
    Mutant("maximum_expand_other", "broadcast", "maximum", "only other is broadcast (to self's "
           "shape)", on_cpu(_maximum_expand_other), w(t([1.0]), t([0.0, 2.0]))),
    Mutant("lerp_weight_scalar", "broadcast", "lerp.Tensor", "a broadcast weight is read as "
           "its first element", on_cpu(_lerp_first_weight),
           w(t([[0.0, 0.0]]), t([[1.0, 1.0]]), t([0.25, 0.75]))),
    Mutant("mul_zero_size", "broadcast", "mul.Tensor", "size-0 broadcast returns self's shape",
           on_cpu(_mul_zero_size), w(t([1.0]), torch.empty(0))),
    # -- out= / in-place variants -----------------------------------------------------------
    Mutant("sum_out_no_resize", "variants", "sum.IntList_out", "a wrong-sized out= is not "
           "resized", _sum_out_no_resize,
           w(t([[1.0, 2.0]]), [1], out=torch.empty(0))),
    Mutant("abs_out_casts", "variants", "abs.out", "out= of a lower dtype is cast into "
           "instead of refused", _abs_out_casts,
           w(t([1.5]), out=torch.empty(0, dtype=I64))),
    Mutant("add_out_fresh", "variants", "add.out", "returns a new tensor; out= is never written",
           on_cpu(_add_out_fresh), w(t([1.0]), t([2.0]), out=torch.zeros(1)),
           needs="the out check"),
    Mutant("mul_inplace_fresh", "variants", "mul_.Tensor", "returns a new tensor; self is not "
           "modified", on_cpu(_mul_inplace_fresh), w(t([1.0]), t([2.0]))),
    # -- autograd: backward kernels (the autograd check) ------------------------------------
    Mutant("threshold_backward_ge", "autograd", "threshold_backward", "gradient passes at "
           "x == threshold (>= instead of >)", on_cpu(_threshold_backward_ge),
           w(t([1.0]), t([0.0]), 0.0), needs="the autograd check"),
    Mutant("sigmoid_backward_input", "autograd", "sigmoid_backward", "the saved output is "
           "treated as the input", on_cpu(_sigmoid_backward_input), w(t([1.0]), t([0.5])),
           needs="the autograd check"),
    Mutant("embedding_backward_padding", "autograd", "embedding_dense_backward",
           "padding_idx ignored: its row gets gradient", on_cpu(_embedding_backward_no_padding),
           w(t([[1.0], [2.0]]), t([0, 1], I64), 2, 0, False), needs="the autograd check"),
    Mutant("softmax_backward_no_sum", "autograd", "_softmax_backward_data", "the sum term "
           "(- y * sum(g * y)) is missing", on_cpu(_softmax_backward_no_sum),
           w(t([[1.0, 0.0]]), t([[0.5, 0.5]]), 1, F32), needs="the autograd check"),
    Mutant("maxpool_backward_overlap", "autograd", "max_pool2d_with_indices_backward",
           "overlapping windows: the gradient of a shared maximum is not accumulated",
           on_cpu(_maxpool_backward_no_accumulate),
           w(t([[[[1.0, 1.0]]]]), t([[[[0.0, 5.0, 0.0]]]]), [1, 2], [1, 1], [0, 0], [1, 1],
             False, t([[[[1, 1]]]], I64)), needs="the autograd check"),
    # -- dtypes: a dtype CPU supports refused, a wide dtype computed narrow ------------------
    Mutant("abs_no_int16", "dtypes", "abs", "int16 refused (kernel not compiled for Short) "
           "although CPU computes it", on_cpu(_abs_no_int16), w(t([-3], torch.int16))),
    Mutant("sin_f64_in_f32", "dtypes", "sin", "float64 computed in float32 (within float64's "
           "default tolerance, rtol 1e-7, for most inputs)", on_cpu(_sin_f32),
           w(t([0.3], F64))),
    # -- inplace: what an in-place overload does to its arguments ---------------------------
    Mutant("mul_inplace_strided_copy", "inplace", "mul_.Tensor", "a non-contiguous self (a "
           "transposed view) is updated in a contiguous copy: self and its base keep their "
           "values", _contiguous_only, w(t([[1.0, 2.0], [3.0, 4.0]]).t(), t([2.0])),
           needs="the inplace check"),
    Mutant("sub_inplace_casts", "inplace", "sub_.Tensor", "a float result is truncated into an "
           "int64 self instead of refused as CPU refuses it", _sub_inplace_casts,
           w(t([1], I64), t([0.5])), needs="the inplace check"),
    # -- layout: kernels right only for contiguous input (the noncontiguous check) -----------
    Mutant("abs_ignores_strides", "layout", "abs", "reads self's storage as if contiguous "
           "from offset 0 (a transposed input comes out untransposed)", _reads_as_contiguous(0),
           w(t([[1.0, -2.0], [3.0, -4.0]]).t()),
           needs="the noncontiguous check"),
    Mutant("mm_ignores_transpose", "layout", "mm", "mat2's transpose flag dropped: a "
           "transposed mat2 is read as stored", _reads_as_contiguous(1),
           w(t([[1.0, 0.0], [0.0, 1.0]]), t([[1.0, 2.0], [3.0, 4.0]]).t()),
           needs="the noncontiguous check"),
    # -- out= contents: a kernel that reads what out= held (empty outs, as forward passes
    # them, hide it; the out check's pre-sized outs show it) --------------------------------
    Mutant("mul_out_accumulates", "variants", "mul.out", "a pre-sized out= is accumulated "
           "into (out += self * other)", _mul_out_accumulates,
           w(t([2.0]), t([3.0]), out=torch.ones(1)), needs="the out check"),
    Mutant("clamp_out_reads_out", "variants", "clamp.out", "a pre-sized out= is clamped in "
           "place instead of self", _clamp_out_reads_out,
           w(t([5.0, -5.0]), -1.0, 1.0, out=torch.zeros(2)),
           needs="the out check"),
    # -- issue 26 (blind spots) -------------------------------------------------------------
    # distribution: seeded-random samplers of the wrong distribution (the distribution check)
    Mutant("bernoulli_p_ignored", "distribution", "bernoulli_.float", "p ignored: every "
           "element 1 with probability 0.5", _sampler(_bernoulli_half_), w(torch.zeros(64), 0.0)),
    Mutant("bernoulli_first_p", "distribution", "bernoulli_.Tensor", "the first element's p "
           "used for every element", _sampler(_bernoulli_first_p_),
           w(torch.zeros(64), torch.linspace(0, 1, 64))),
    Mutant("multinomial_never_last", "distribution", "multinomial", "the last category of "
           "positive weight is never drawn", _sampler(_multinomial_never_last),
           w(t([1.0, 1.0]), 1)),
    Mutant("uniform_midpoint", "distribution", "uniform_", "a constant (the midpoint) inside "
           "[from, to)", _sampler(_uniform_midpoint_), w(torch.zeros(8), 0.0, 1.0)),
    Mutant("normal_variance", "distribution", "normal_", "the variance taken for std",
           _sampler(_normal_variance_), w(torch.zeros(8), 0.0, 10.0)),
    Mutant("exponential_mean", "distribution", "exponential_", "lambda read as the mean "
           "(rate 1/lambda)", _sampler(_exponential_mean_), w(torch.zeros(8), 4.0)),
    Mutant("random_to_inclusive", "distribution", "random_.to", "[0, to] drawn instead of "
           "[0, to)", _sampler(_random_to_inclusive_), w(torch.zeros(64), 1)),
    Mutant("dropout_keep_swapped", "distribution", "native_dropout", "p taken as the keep "
           "probability", _sampler(_dropout_keep_swapped), w(torch.ones(64), 0.0, True)),
    # invalid: a kernel without its argument checks (the invalid check)
    Mutant("index_select_wraps", "invalid", "index_select", "positions taken modulo the size "
           "(an out-of-range index accepted)", _unchecked(_index_select_wraps),
           w(t([1.0, 2.0]), 0, t([2], I64))),
    Mutant("gather_clamps", "invalid", "gather", "positions clamped into range (an "
           "out-of-range index accepted)", _unchecked(_gather_clamps),
           w(t([1.0, 2.0]), 0, t([5], I64))),
    Mutant("mm_truncates", "invalid", "mm", "inner sizes not compared: the shorter wins",
           _unchecked(_mm_truncates), w(torch.ones(2, 3), torch.ones(2, 2))),
    Mutant("sum_dim_wraps", "invalid", "sum.dim_IntList", "dim taken modulo the rank (an "
           "out-of-range dim accepted)", _unchecked(_sum_dim_wraps), w(torch.ones(2, 3), [2])),
    Mutant("view_negative_infers", "invalid", "view", "any negative size read as -1 "
           "(infer)", _view_any_negative_infers, w(torch.ones(4), [-2])),
    # empty: an index/mask argument empty next to a non-empty self (the invalid check)
    Mutant("index_select_empty_is_self", "empty", "index_select", "an empty index returns "
           "self instead of an empty selection", _index_select_empty_is_self,
           w(t([1.0, 2.0]), 0, torch.zeros(0, dtype=I64))),
    Mutant("index_add_empty_raises", "empty", "index_add.out", "an empty index (and source) "
           "refused where CPU returns self", _index_add_empty_raises,
           w(t([1.0, 2.0]), 0, torch.zeros(0, dtype=I64), torch.zeros(0), out=torch.zeros(2))),
    Mutant("masked_fill_empty_mask", "empty", "masked_fill_.Scalar", "an empty mask next to "
           "a non-empty self accepted (no broadcast check)", _masked_fill_empty_mask_ignored,
           w(t([1.0, 2.0]), torch.zeros(0, dtype=torch.bool), 0.0)),
    # large: a threshold past the handful of elements drawn otherwise (large sizes)
    Mutant("add_tail_past_256", "large", "add.Tensor", "elements from position 256 on are "
           "self's (a vector tail never added)", _past(256, lambda out: out * 0),
           w(torch.ones(300), torch.ones(300))),
    Mutant("neg_past_2_16", "large", "neg", "elements from position 65536 on wrong (a 16-bit "
           "index wraps)", _past(2**16, lambda out: -out), w(torch.ones(2**16 + 1))),
    Mutant("sum_drops_tail", "large", "sum.dim_IntList", "a block reduction of 256 drops the "
           "last partial block", _unchecked(_sum_drops_tail), w(torch.ones(300), [0])),
    Mutant("mm_k_tiles", "large", "mm", "a GEMM tiling K by 256 skips the partial last tile",
           _unchecked(_mm_k_tiles), w(torch.ones(1, 300), torch.ones(300, 1))),
    # composite layouts: right for each layout alone, wrong for their combination (the
    # noncontiguous check)
    Mutant("avg_pool2d_channels_last_offset", "composite", "avg_pool2d", "a channels_last "
           "self at a storage offset read from offset 0",
           _composite(_channels_last_at_offset, 0),
           w(Laid(lambda d: torch.cat([torch.zeros(3), torch.arange(24.0)]).to(d)[3:]
                  .view(1, 2, 3, 4).permute(0, 3, 1, 2)), [1, 1]),
           needs="the noncontiguous check"),
    Mutant("mul_expanded_transposed", "composite", "mul.Tensor", "rows taken as packed where "
           "the innermost stride is 1 (a transposed view of an expanded tensor)",
           _composite(_rows_packed_by_unit_stride, 0),
           w(Laid(lambda d: t([[1.0, 2.0, 3.0]]).to(d).t().expand(3, 2).t()), t([1.0])),
           needs="the noncontiguous check"),
    Mutant("add_offset_scalar_mixed", "composite", "add.Tensor", "a 0-dim other at a storage "
           "offset read from offset 0 when self is a view",
           _offset_scalar_next_to_view,
           w(Laid(lambda d: t([[1.0, 2.0], [3.0, 4.0]]).to(d).t()),
             Laid(lambda d: torch.tensor([9.0, 5.0]).to(d)[1:].view(()))),
           needs="the noncontiguous check"),
)


# ----------------------------------------------------------------------------- witnesses


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit agreement (dtype, shape, values, NaN where NaN, the sign of zero)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point() or a.is_complex():
            ar, br = torch.view_as_real(a) if a.is_complex() else a, \
                torch.view_as_real(b) if b.is_complex() else b
            an, bn = torch.isnan(ar), torch.isnan(br)
            zero = torch.zeros((), dtype=ar.dtype)
            return bool(torch.equal(an, bn)
                        and torch.equal(torch.where(an, zero, ar), torch.where(bn, zero, br))
                        and torch.equal(torch.signbit(ar) & ~an, torch.signbit(br) & ~bn))
        return torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def witness_differs(m: Mutant) -> tuple[bool, str]:
    """Run ``m``'s witness on CPU and on the mutated ``mlu``: ``(differs, what each side gave)``.

    Compares the result and every tensor argument afterwards (out= and in-place bugs show in
    the arguments). The caller installs the override."""
    from kernels.registry import resolve_overload

    op = resolve_overload(m.overload)
    args, kwargs = m.witness()

    def clone(x: Any) -> Any:
        return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, x)

    def run(device: str) -> Any:
        a, k = clone(args), clone(kwargs)
        # a witness argument built on the side's device (a composite view: moving a CPU view
        # to the device would not keep its strides and storage offset)
        a, k = tree_map(lambda v: v(device) if isinstance(v, Laid) else v, (a, k))
        if device != "cpu":
            a, k = dev(a), dev(k)
        try:
            res = op(*a, **k)
        except Exception as exc:  # noqa: BLE001 - a raise is an answer too
            return ("raised", type(exc).__name__)
        return host((res, a, k))

    cpu, mut = run("cpu"), run(DEV)
    if torch.Tag.nondeterministic_seeded in op.tags and "raised" not in (cpu[0], mut[0]):
        return _distribution_differs(run)
    return (not _same(cpu, mut), f"cpu: {cpu!r}\n{DEV}: {mut!r}")


def _distribution_differs(run: Callable[[str], Any]) -> tuple[bool, str]:
    """A seeded-random witness: its first result's samples on the device against CPU's, per
    element, by the distribution check's KS bound (one sample each would always differ)."""
    from conformance.compare.distribution import columns, distances, ks_bound

    def first(out: Any) -> torch.Tensor:
        res = out[0]
        return (res[0] if isinstance(res, tuple | list) else res).double()

    cpu = [first(run("cpu")) for _ in range(1024)]
    mut = [first(run(DEV)) for _ in range(256)]
    d = distances(columns(mut), columns(cpu), 1e-5, 1e-5)
    bound = ks_bound(256, 1024, d.numel())
    return bool(d.max() > bound), f"KS distance {float(d.max()):.2f} (bound {bound:.2f})"
