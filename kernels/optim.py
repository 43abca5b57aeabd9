"""``_foreach_*`` overloads of ``mlu``: what ``torch.optim`` runs by default on this device.

``torch.optim`` uses its ``foreach`` implementation on every device listed by
``torch.utils._foreach_utils._get_foreach_kernels_supported_devices()``, and the PrivateUse1
device is in that list, so SGD (momentum) and Adam/AdamW call ``_foreach_add_``, ``_foreach_mul_``,
``_foreach_lerp_``, ``_foreach_addcmul_``, ``_foreach_sqrt``, ``_foreach_div_``,
``_foreach_addcdiv_``... ATen has a CompositeExplicitAutograd "slow path" for every one of them
(one per-tensor op per list element), which a backend may leave alone; here the common ones get a
kernel with the same split that CUDA makes:

* **fast path** — every tensor on ``mlu`` with one floating dtype (float32/float64), matching
  shapes, real Python-number scalars: one NumPy ufunc per list element, written in place through
  the aliasing NumPy views (no dispatcher round trip per tensor);
* **slow path** — anything else (mixed dtypes or devices, integer or half tensors, broadcasting,
  the ``.Tensor`` overloads): the per-tensor ATen op for each element, exactly as ATen's own slow
  path does, so promotion and error messages are CPU's.

The fast path evaluates each formula in the order ATen's CPU kernel does (``self + alpha * other``,
``self + value * t1 * t2``, ``self + value * t1 / t2``, lerp's two-sided form). Results agree with
CPU within float32 rounding, not bit for bit: CPU's vectorized ``sqrt``/``exp`` are not always
correctly rounded, NumPy's are.

Overloads not registered here (``_foreach_norm``, ``_foreach_pow``, ``_foreach_maximum``, the
rarely used unary ones...) run on ATen's slow path, built from the per-tensor kernels.

``fused=True`` is also allowed for the PrivateUse1 device
(``_get_fused_kernels_supported_devices``), so ``_fused_sgd_``, ``_fused_adam_`` and
``_fused_adamw_`` are here too: one NumPy pass per parameter, ``found_inf`` skips the step,
``grad_scale`` unscales the gradients in place, as ATen's fused CPU kernels do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from kernels._tensor import DEVICE, NP_DTYPE, TORCH_DTYPE, from_numpy, to_numpy
from kernels.elementwise import _FUSED_IN, _fma_in, addcmul_value
from kernels.elementwise import _lerp as _fused_lerp
from kernels.reductions import powsum
from kernels.registry import register

__all__: list[str] = []

aten = torch.ops.aten
_FAST_DTYPES = (torch.float32, torch.float64)
_REAL = (bool, int, float)


def _fast(*lists: Sequence[Any]) -> bool:
    """CUDA-style fast-route test: one float dtype, one device (mlu), equal shapes."""
    first = lists[0]
    if not first:
        return False
    dtype = first[0].dtype
    if dtype not in _FAST_DTYPES:
        return False
    for lst in lists:
        if len(lst) != len(first):
            return False
        for t, ref in zip(lst, first, strict=True):
            if (not isinstance(t, torch.Tensor) or t.dtype != dtype or t.device.type != DEVICE
                    or t.shape != ref.shape):
                return False
    return True


def _real(*scalars: Any) -> bool:
    return all(isinstance(s, _REAL) for s in scalars)


def _written(tensors: Sequence[torch.Tensor]) -> None:
    """Tensors the fast path wrote through NumPy: their version counters move, as ATen's foreach
    kernels move them (``increment_version``), so autograd sees the in-place update."""
    torch.autograd.graph.increment_version(list(tensors))


def _check_lengths(name: str, *lists: Sequence[Any]) -> None:
    n = len(lists[0])
    if n == 0:
        raise RuntimeError(f"{name}: Tensor list must have at least one tensor.")
    for lst in lists[1:]:
        if len(lst) != n:
            raise RuntimeError(
                f"{name}: Tensor lists must have the same number of tensors, got {n} and {len(lst)}"
            )


def _scalars_from_tensor(scalars: torch.Tensor, n: int) -> list[Any]:
    if scalars.dim() != 1 or scalars.numel() != n:
        raise RuntimeError(
            f"Expected length of scalars to match input of length {n} but got {scalars.numel()} "
            "instead."
        )
    return to_numpy(scalars).tolist()


# --------------------------------------------------------------------------------------------
# binary: add / sub (with alpha), mul / div


def _with_alpha(ufunc: np.ufunc, a: np.ndarray, b: Any, alpha: Any) -> Any:
    """``a + alpha * b`` (``a - alpha * b``) as CPU's add/sub kernels form it for float32/float64
    with ``alpha`` != 1: one rounding of a fused multiply-add (``kernels.elementwise._fused``),
    so ``inf + 1.4 * -1.8e308`` stays ``inf`` where the rounded product would give NaN."""
    if alpha == 1 or isinstance(alpha, bool):
        return ufunc(a, b * alpha if alpha != 1 else b)
    scale = np.asarray(alpha if ufunc is np.add else -alpha).astype(a.dtype)
    return _fma_in(_FUSED_IN[TORCH_DTYPE[a.dtype]], a, b, scale).astype(a.dtype)


_BINARY: dict[str, tuple[np.ufunc, bool]] = {
    # foreach name: (ufunc, takes alpha)
    "add": (np.add, True),
    "sub": (np.subtract, True),
    "mul": (np.multiply, False),
    "div": (np.divide, False),
}


def _make_binary(name: str, ufunc: np.ufunc, has_alpha: bool) -> None:
    op, op_ = getattr(aten, name), getattr(aten, name + "_")
    fname = f"_foreach_{name}"

    def per_tensor(inplace: bool, t: torch.Tensor, other: Any, alpha: Any) -> Any:
        fn = op_ if inplace else op
        kw = {"alpha": alpha} if has_alpha and alpha != 1 else {}
        return (fn.Tensor if isinstance(other, torch.Tensor) else fn.Scalar)(t, other, **kw)

    def run(inplace: bool, self: list[torch.Tensor], others: list[Any], alpha: Any,
            fast: bool) -> list[torch.Tensor] | None:
        if fast:
            results = []
            for t, o in zip(self, others, strict=True):
                a = to_numpy(t)
                b = to_numpy(o) if isinstance(o, torch.Tensor) else o
                value = _with_alpha(ufunc, a, b, alpha) if has_alpha else ufunc(a, b)
                if inplace:
                    np.copyto(a, value)
                else:
                    results.append(from_numpy(np.asarray(value), t.dtype))
            if inplace:
                _written(self)
            return None if inplace else results
        out = [per_tensor(inplace, t, o, alpha) for t, o in zip(self, others, strict=True)]
        return None if inplace else out

    def scalar_kernel(inplace: bool) -> Callable[..., Any]:
        def kernel(self: list[torch.Tensor], scalar: Any) -> Any:
            _check_lengths(fname, self)
            with np.errstate(all="ignore"):
                return run(inplace, self, [scalar] * len(self), 1, _fast(self) and _real(scalar))
        return kernel

    def list_kernel(inplace: bool) -> Callable[..., Any]:
        def kernel(self: list[torch.Tensor], other: list[torch.Tensor], **kw: Any) -> Any:
            _check_lengths(fname, self, other)
            alpha = kw.get("alpha", 1)
            with np.errstate(all="ignore"):
                return run(inplace, self, list(other), alpha, _fast(self, other) and _real(alpha))
        return kernel

    def scalarlist_kernel(inplace: bool) -> Callable[..., Any]:
        def kernel(self: list[torch.Tensor], scalars: list[Any]) -> Any:
            _check_lengths(fname, self, scalars)
            with np.errstate(all="ignore"):
                return run(inplace, self, list(scalars), 1, _fast(self) and _real(*scalars))
        return kernel

    def tensor_kernel(inplace: bool) -> Callable[..., Any]:
        def kernel(self: list[torch.Tensor], other: torch.Tensor, **kw: Any) -> Any:
            _check_lengths(fname, self)
            if other.dim() != 0:
                raise RuntimeError(
                    f"scalar tensor expected to be 0 dim but it has {other.dim()} dimensions and "
                    f"{other.numel()} elements."
                )
            alpha = kw.get("alpha", 1)
            return run(inplace, self, [other] * len(self), alpha, False)
        return kernel

    variants = {"Scalar": scalar_kernel, "List": list_kernel, "ScalarList": scalarlist_kernel}
    if name in ("add", "mul", "div"):
        variants["Tensor"] = tensor_kernel
    for overload, factory in variants.items():
        for inplace in (False, True):
            kname = f"{fname}{'_' if inplace else ''}.{overload}"
            k = factory(inplace)
            k.__name__ = k.__qualname__ = kname.replace(".", "__")
            register(kname)(k)


for _name, (_ufunc, _alpha) in _BINARY.items():
    _make_binary(_name, _ufunc, _alpha)


# --------------------------------------------------------------------------------------------
# pointwise: addcmul / addcdiv


def _make_pointwise(name: str,
                    combine: Callable[[np.ndarray, np.ndarray, np.ndarray, Any], np.ndarray]
                    ) -> None:
    op, op_ = getattr(aten, name), getattr(aten, name + "_")
    fname = f"_foreach_{name}"

    def run(inplace: bool, self: list[torch.Tensor], t1: list[torch.Tensor],
            t2: list[torch.Tensor], values: list[Any]) -> Any:
        _check_lengths(fname, self, t1, t2, values)
        if _fast(self, t1, t2) and _real(*values):
            results = []
            with np.errstate(all="ignore"):
                for t, a1, a2, v in zip(self, t1, t2, values, strict=True):
                    a = to_numpy(t)
                    value = combine(a, to_numpy(a1), to_numpy(a2), v)
                    if inplace:
                        a[...] = value
                    else:
                        results.append(from_numpy(value, t.dtype))
            if inplace:
                _written(self)
            return None if inplace else results
        fn = op_ if inplace else op
        out = [fn(t, a1, a2, value=v) for t, a1, a2, v in zip(self, t1, t2, values, strict=True)]
        return None if inplace else out

    for inplace in (False, True):
        suffix = "_" if inplace else ""

        def scalar(self: list, tensor1: list, tensor2: list, value: Any = 1, *,
                   _i: bool = inplace) -> Any:
            return run(_i, self, tensor1, tensor2, [value] * len(self))

        def scalarlist(self: list, tensor1: list, tensor2: list, scalars: list, *,
                       _i: bool = inplace) -> Any:
            return run(_i, self, tensor1, tensor2, list(scalars))

        def tensor(self: list, tensor1: list, tensor2: list, scalars: torch.Tensor, *,
                   _i: bool = inplace) -> Any:
            return run(_i, self, tensor1, tensor2, _scalars_from_tensor(scalars, len(self)))

        for overload, k in (("Scalar", scalar), ("ScalarList", scalarlist), ("Tensor", tensor)):
            kname = f"{fname}{suffix}.{overload}"
            k.__name__ = k.__qualname__ = kname.replace(".", "__")
            register(kname)(k)


def _addcdiv_value(s: np.ndarray, t1: np.ndarray, t2: np.ndarray, value: Any) -> np.ndarray:
    term = np.multiply(t1, value) if value != 1 else t1.copy()
    term /= t2
    return s + term


_make_pointwise("addcmul", addcmul_value)
_make_pointwise("addcdiv", _addcdiv_value)


# --------------------------------------------------------------------------------------------
# lerp


def _lerp(start: np.ndarray, end: np.ndarray, weight: Any) -> np.ndarray:
    """ATen's two-sided lerp: ``start + w*(end-start)`` for ``|w| < 0.5``, else from ``end``."""
    diff = end - start
    if isinstance(weight, np.ndarray):
        small = np.abs(weight) < 0.5
        return np.where(small, start + weight * diff, end - diff * (1 - weight))
    if abs(weight) < 0.5:
        return start + weight * diff
    return end - diff * (1 - weight)


def _lerp_run(inplace: bool, self: list[torch.Tensor], ends: list[torch.Tensor],
              weights: list[Any]) -> Any:
    _check_lengths("_foreach_lerp", self, ends, weights)
    tensor_weights = isinstance(weights[0], torch.Tensor)
    fast = (_fast(self, ends, weights) if tensor_weights else _fast(self, ends) and _real(*weights))
    if fast:
        results = []
        with np.errstate(all="ignore"):
            for t, e, w in zip(self, ends, weights, strict=True):
                a = to_numpy(t)
                value = _lerp(a, to_numpy(e), to_numpy(w) if tensor_weights else w)
                if inplace:
                    np.copyto(a, value)
                else:
                    results.append(from_numpy(value, t.dtype))
        if inplace:
            _written(self)
        return None if inplace else results
    fn = aten.lerp_ if inplace else aten.lerp
    out = [(fn.Tensor if tensor_weights else fn.Scalar)(t, e, w)
           for t, e, w in zip(self, ends, weights, strict=True)]
    return None if inplace else out


for _inplace in (False, True):
    _sfx = "_" if _inplace else ""

    def _lerp_list(self: list, tensors1: list, weights: list, *, _i: bool = _inplace) -> Any:
        return _lerp_run(_i, self, tensors1, list(weights))

    def _lerp_scalar(self: list, tensors1: list, weight: Any, *, _i: bool = _inplace) -> Any:
        return _lerp_run(_i, self, tensors1, [weight] * len(self))

    def _lerp_scalarlist(self: list, tensors1: list, weight: list, *, _i: bool = _inplace
                         ) -> Any:
        return _lerp_run(_i, self, tensors1, list(weight))

    for _ov, _k in (("List", _lerp_list), ("Scalar", _lerp_scalar),
                    ("ScalarList", _lerp_scalarlist)):
        _kname = f"_foreach_lerp{_sfx}.{_ov}"
        _k.__name__ = _k.__qualname__ = _kname.replace(".", "__")
        register(_kname)(_k)


# --------------------------------------------------------------------------------------------
# unary


_UNARY: dict[str, np.ufunc] = {
    "sqrt": np.sqrt,
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "reciprocal": np.reciprocal,
}


def _make_unary(name: str, ufunc: np.ufunc) -> None:
    op, op_ = getattr(aten, name), getattr(aten, name + "_")
    fname = f"_foreach_{name}"

    def functional(self: list[torch.Tensor]) -> list[torch.Tensor]:
        _check_lengths(fname, self)
        if _fast(self):
            with np.errstate(all="ignore"):
                return [from_numpy(ufunc(to_numpy(t)), t.dtype) for t in self]
        return [op(t) for t in self]

    def inplace(self: list[torch.Tensor]) -> None:
        _check_lengths(fname, self)
        if _fast(self):
            with np.errstate(all="ignore"):
                for t in self:
                    a = to_numpy(t)
                    ufunc(a, out=a)
            _written(self)
            return
        for t in self:
            op_(t)

    functional.__name__ = functional.__qualname__ = fname
    inplace.__name__ = inplace.__qualname__ = fname + "_"
    register(fname)(functional)
    register(fname + "_")(inplace)


for _name, _uf in _UNARY.items():
    _make_unary(_name, _uf)


@register("_foreach_zero_")
def _foreach_zero_(self: list[torch.Tensor]) -> None:
    for t in self:
        if t.device.type == DEVICE:
            to_numpy(t)[...] = 0
            _written([t])
        else:
            t.zero_()


@register("_foreach_powsum.Scalar")
def _foreach_powsum(self: list[torch.Tensor], ord: Any = 2, dtype: torch.dtype | None = None
                    ) -> list[torch.Tensor]:
    """CPU's ``foreach_tensor_powsum_slow``: ``linalg__powsum`` (:func:`reductions.powsum`) of
    each tensor over all its dims."""
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return [powsum(t, ord, dtype=dtype) for t in self]


# --------------------------------------------------------------------------------------------
# fused optimizers: torch.optim's ``fused=True`` path (allowed for the PrivateUse1 device)


def _scalar(t: Any) -> float:
    return float(to_numpy(t).reshape(-1)[0]) if isinstance(t, torch.Tensor) else float(t)


def _grad_array(g: torch.Tensor, grad_scale: torch.Tensor | None, maximize: bool,
                opmath: Any = None) -> np.ndarray:
    """The gradient to use, in ``opmath`` (default: its own dtype); with ``grad_scale`` the
    gradient tensor itself is unscaled in place (the schema marks ``grads`` as mutated), as
    ATen's fused kernels do, and the quotient used is ``opmath``'s, not the stored one."""
    a = to_numpy(g)
    opmath = a.dtype if opmath is None else opmath
    value = a.astype(opmath)
    if grad_scale is not None and a.size:  # an empty gradient has nothing to unscale
        value = np.divide(value, np.asarray(_scalar(grad_scale), opmath))
        np.copyto(a, value, casting="unsafe")
    return -value if maximize else value


def _skip_step(found_inf: torch.Tensor | None) -> bool:
    """Whether ``found_inf`` holds the flag 1.0 (an empty one holds no flag: ATen reads its
    first element unchecked, so a step over empty parameters is never refused for it)."""
    return found_inf is not None and found_inf.numel() > 0 and _scalar(found_inf) == 1.0


def _fused_adam(adamw: bool, self: list[torch.Tensor], grads: list[torch.Tensor],
                exp_avgs: list[torch.Tensor], exp_avg_sqs: list[torch.Tensor],
                max_exp_avg_sqs: list[torch.Tensor], state_steps: list[torch.Tensor], *,
                lr: Any, beta1: float, beta2: float, weight_decay: float, eps: float,
                amsgrad: bool, maximize: bool, grad_scale: torch.Tensor | None = None,
                found_inf: torch.Tensor | None = None) -> None:
    """ATen's fused CPU step (FusedAdamKernel.cpp): float16/bfloat16 computed in float32, each
    state stored rounded and its unrounded value used; ``exp_avg`` moves by ATen's two-sided
    ``lerp`` with a fused multiply-add (an infinite gradient with ``1 - beta1 >= 0.5`` gives
    NaN); the parameter moves by ``(step_size * exp_avg) / denom`` (the product may overflow
    where the quotient would not). Like ``_fused_sgd_``, the loop over whole ``Vectorized``
    widths (:func:`_vector_bytes`) and the scalar loop over the rest differ: the vectorized
    ``exp_avg_sq * beta2 + (1 - beta2) * grad * grad`` fuses the gradient's product, the
    scalar one the state's, and the AMSGrad maximum is :func:`_amsgrad_max`'s."""
    if _skip_step(found_inf):
        return
    lr = _scalar(lr)
    with np.errstate(all="ignore"):
        for i, p in enumerate(self):
            param = to_numpy(p)
            op = torch.float64 if p.dtype == torch.float64 else torch.float32
            opmath, wide, t = NP_DTYPE[op], _FUSED_IN[op], NP_DTYPE[op].type
            rest = param.size - param.size % (_vector_bytes() // param.itemsize)
            grad = _grad_array(grads[i], grad_scale, maximize, opmath)
            m_out, v_out = to_numpy(exp_avgs[i]), to_numpy(exp_avg_sqs[i])
            value, m, v = param.astype(opmath), m_out.astype(opmath), v_out.astype(opmath)
            step = float(np.float32(_scalar(state_steps[i])))  # ATen: item<float>()
            if weight_decay != 0:
                if adamw:
                    value = value * t(1 - lr * weight_decay)
                else:
                    grad = _fma_in(wide, grad, value, t(weight_decay)).astype(opmath)
            m = _fused_lerp(m, grad, t(1 - beta1), compute=op, result=op)
            scaled = t(1 - beta2) * grad
            v = np.where(np.arange(v.size).reshape(v.shape) < rest,
                         _fma_in(wide, v * t(beta2), scaled, grad),
                         _fma_in(wide, scaled * grad, v, t(beta2))).astype(opmath)
            np.copyto(m_out, m, casting="unsafe")
            np.copyto(v_out, v, casting="unsafe")
            # in double, as ATen's std::pow/std::sqrt: NaN (not a Python complex) for a
            # negative beta to a fractional step
            bias1 = 1 - np.power(np.float64(beta1), step)
            bias2_sqrt = np.sqrt(1 - np.power(np.float64(beta2), step))
            if amsgrad:
                vmax_out = to_numpy(max_exp_avg_sqs[i])
                vmax = _amsgrad_max(vmax_out.astype(opmath), v, rest)
                np.copyto(vmax_out, vmax, casting="unsafe")
                denom = np.sqrt(vmax)
            else:
                denom = np.sqrt(v)
            denom = denom / t(bias2_sqrt) + t(eps)
            np.copyto(param, value - t(lr / bias1) * m / denom, casting="unsafe")


def _amsgrad_max(vmax: np.ndarray, v: np.ndarray, rest: int) -> np.ndarray:
    """``max(vmax, v)`` as ATen's fused CPU step (FusedAdamKernel.cpp) takes it: ``vec::maximum``
    over the first ``rest`` elements (whole ``Vectorized`` widths), which propagates a NaN from
    either side, then ``std::max(max_exp_avg_sq, exp_avg_sq)`` over the scalar rest, which
    keeps the old maximum when the new second moment is NaN (``NaN < x`` is false) and a NaN
    maximum whatever comes. Measured on CPU's AVX2 build: the first 8 float32, 4 float64, 16
    float16/bfloat16 elements (and their multiples) propagate, the rest keep the maximum."""
    new, flat_v = vmax.reshape(-1).copy(), v.reshape(-1)
    np.maximum(new[:rest], flat_v[:rest], out=new[:rest])
    np.copyto(new[rest:], flat_v[rest:], where=new[rest:] < flat_v[rest:])
    return new.reshape(vmax.shape)


register("_fused_adam_", "_fused_adam_.tensor_lr")(partial(_fused_adam, False))
register("_fused_adamw_", "_fused_adamw_.tensor_lr")(partial(_fused_adam, True))


def _vector_bytes() -> int:
    """The width of ATen's ``Vectorized<T>`` on this CPU build (``VECTOR_WIDTH``): 64 bytes
    for the AVX512 kernels, 32 otherwise."""
    return 64 if torch.backends.cpu.get_cpu_capability() == "AVX512" else 32


def _fma(dtype: torch.dtype, a: np.ndarray, b: Any, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to float32/float64 ``dtype``: a product that alone would
    overflow does not (``grad + buf * momentum`` stays finite where the sum cancels it)."""
    return _fma_in(_FUSED_IN[dtype], c, a, b).astype(NP_DTYPE[dtype])


@register("_fused_sgd_", "_fused_sgd_.tensor_lr")
def _fused_sgd_(self: list[torch.Tensor], grads: list[torch.Tensor],
                momentum_buffer_list: list[torch.Tensor], *, weight_decay: float,
                momentum: float, lr: Any, dampening: float, nesterov: bool, maximize: bool,
                is_first_step: bool, grad_scale: torch.Tensor | None = None,
                found_inf: torch.Tensor | None = None) -> None:
    """ATen's fused CPU step (FusedSGDKernel.cpp): float32/float64 in their own dtype,
    float16/bfloat16 in float32 (the buffer stored rounded, the unrounded value used for the
    Nesterov step). The compiler contracts every ``x + y * z`` into a fused multiply-add, one
    rounding (``grad + buf * momentum`` stays finite where the product alone overflows), and
    ``buf * momentum + grad * (1 - dampening)`` fuses the gradient's product in the vectorized
    loop over whole ``Vectorized`` widths (:func:`_vector_bytes`), the buffer's product in the
    scalar loop over the rest: measured bit for bit against CPU's AVX2 build for 1..40 float32
    and float64 elements. CPU's vectorized float16/bfloat16 loop (16 elements at a time there)
    writes no parameter and reads the buffer as float32 words; here every element of those
    takes the scalar loop's formula."""
    if _skip_step(found_inf):
        return
    lr = _scalar(lr)
    with np.errstate(all="ignore"):
        for i, p in enumerate(self):
            param = to_numpy(p)
            op = torch.float64 if p.dtype == torch.float64 else torch.float32
            opmath, t = NP_DTYPE[op], NP_DTYPE[op].type
            fma = partial(_fma, op)
            grad = _grad_array(grads[i], grad_scale, maximize, opmath)
            value = param.astype(opmath)
            if weight_decay != 0:
                grad = fma(value, t(weight_decay), grad)
            if momentum != 0:
                buf = to_numpy(momentum_buffer_list[i])
                if is_first_step:
                    new = grad
                else:
                    old = buf.astype(opmath)
                    # an array, also for 0 dims (NumPy gives those a scalar, which the
                    # remainder's assignment below would not write through)
                    new = np.asarray(fma(grad, t(1 - dampening), old * t(momentum)))
                    if param.dtype == opmath:  # the scalar loop's remainder
                        rest = new.size - new.size % (_vector_bytes() // param.itemsize)
                        tail = fma(old, t(momentum), grad * t(1 - dampening))
                        new.reshape(-1)[rest:] = tail.reshape(-1)[rest:]
                    else:
                        new = fma(old, t(momentum), grad * t(1 - dampening))
                np.copyto(buf, new, casting="unsafe")
                grad = fma(new, t(momentum), grad) if nesterov else new
            np.copyto(param, fma(grad, t(-lr), value), casting="unsafe")
