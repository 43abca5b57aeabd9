"""Pointwise kernels: tables of NumPy functions plus factories that make every overload of a family.

For a binary family such as ``atan2`` the factory registers whatever overloads torch has of it —
``atan2``, ``atan2_``, ``atan2.out`` (or ``eq.Tensor``, ``eq.Scalar``, ``eq_.Tensor``,
``eq_.Scalar``, ``eq.Tensor_out``, ``eq.Scalar_out``) — each computing in torch's computation
dtype and returning torch's result dtype (``kernels._semantics.dtypes``). Only ops whose semantics
differ from NumPy's get a hand-written body (integer division and rounding modes, ``remainder``
sign rules, shifts, ``pow`` of integers, ``alpha``, bool subtraction...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from kernels._semantics import (
    Kind,
    check_result_fits,
    dtypes,
    infer_size,
    quiet,
    write_inplace,
    write_out,
)
from kernels._tensor import NP_DTYPE, from_numpy, to_numpy
from kernels.registry import register, resolve_overload

ArrayFn = Callable[..., Any]

# --------------------------------------------------------------------------------------------
# Operand handling shared by every pointwise kernel
# --------------------------------------------------------------------------------------------


def check_same_device(name: str, args: tuple[Any, ...], argnames: tuple[str, ...]) -> None:
    """CPU tensors are allowed next to mlu tensors only as 0-dim "CPU scalars" (as on CUDA)."""
    for a, n in zip(args, argnames, strict=False):
        if isinstance(a, torch.Tensor) and a.device.type == "cpu" and a.dim() != 0:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but got {n} is on cpu, "
                f"different from other tensors on mlu:0 (when checking argument in method "
                f"mlu::{name})"
            )


def operand(x: Any, npd: np.dtype[Any]) -> Any:
    """A tensor or Python number as a NumPy operand of dtype ``npd``."""
    if isinstance(x, torch.Tensor):
        arr = to_numpy(x)
        return arr if arr.dtype == npd else arr.astype(npd)
    return np.asarray(x).astype(npd) if not isinstance(x, bool) or npd.kind != "b" else np.bool_(x)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, torch.Tensor) else ()


def _raise_broadcast(*args: Any) -> None:
    shapes = [_shape(a) for a in args]
    acc = shapes[0]
    for s in shapes[1:]:
        acc = infer_size(acc, s)


def _finish(name: str, mode: str, result: Any, result_dtype: torch.dtype,
            self: torch.Tensor | None, out: torch.Tensor | None) -> Any:
    if mode == "out":
        assert out is not None
        return write_out(out, result, result_dtype)
    if mode == "inplace":
        assert self is not None
        return write_inplace(self, result, result_dtype)
    return from_numpy(result, result_dtype)


def _mode(name: str) -> str:
    op = resolve_overload(name)
    if any(a.is_out for a in op._schema.arguments):
        return "out"
    if op._schema.name.endswith("_"):
        return "inplace"
    return "functional"


def _overloads(base: str) -> list[str]:
    names: list[str] = []
    for b in (base, base + "_"):
        packet = getattr(torch.ops.aten, b, None)
        if packet is None:
            continue
        for ov in packet.overloads():
            names.append(b if ov == "default" else f"{b}.{ov}")
    return names


# --------------------------------------------------------------------------------------------
# Factories
# --------------------------------------------------------------------------------------------


def make_pointwise(name: str, fn: ArrayFn, kind: Kind, *, nin: int, mode: str,
                   argnames: tuple[str, ...], kw: tuple[str, ...] = (),
                   validate: Callable[..., None] | None = None) -> Callable[..., Any]:
    """One kernel for overload ``name``: ``fn(*numpy operands, **extra) -> array``.

    ``fn`` receives operands in torch's computation dtype plus the keyword arguments named in
    ``kw``, ``compute`` (computation dtype) and ``result`` (result dtype); its value is cast to the
    result dtype. ``validate(compute, result, *args, **kw)`` may raise CPU's errors first.
    """

    def kernel(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        operands = args[:nin]
        check_same_device(name, operands, argnames)
        compute, result = dtypes(kind, *operands)
        extra = {k: kwargs[k] for k in kw if k in kwargs}
        if validate is not None:
            validate(compute, result, *operands, **extra)
        if mode == "inplace":
            check_result_fits(result, args[0].dtype)
        npd = NP_DTYPE[compute]
        with quiet():
            try:
                value = fn(*(operand(a, npd) for a in operands), compute=compute, result=result,
                           **extra)
            except ValueError:
                _raise_broadcast(*operands)
                raise
        return _finish(name, mode, value, result, args[0] if mode == "inplace" else None, out)

    kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
    return kernel


def register_family(base: str, fn: ArrayFn, kind: Kind, *, kw: tuple[str, ...] = (),
                    validate: Callable[..., None] | None = None,
                    skip: tuple[str, ...] = ()) -> list[str]:
    """Register ``fn`` for every overload of ``base`` and ``base_`` torch has (minus ``skip``)."""
    done = []
    for name in _overloads(base):
        if name in skip:
            continue
        op = resolve_overload(name)
        args = [a for a in op._schema.arguments if not a.kwarg_only]
        nin = len(args)
        register(name)(make_pointwise(name, fn, kind, nin=nin, mode=_mode(name),
                                      argnames=tuple(a.name for a in args), kw=kw,
                                      validate=validate))
        done.append(name)
    return done


def _plain(f: ArrayFn) -> ArrayFn:
    """Adapt a NumPy function that takes only the operands."""

    def g(*ops: Any, compute: torch.dtype, result: torch.dtype) -> Any:
        return f(*ops)

    return g


# --------------------------------------------------------------------------------------------
# add / sub / rsub (alpha), mul, div (rounding modes)
# --------------------------------------------------------------------------------------------


def _check_alpha(compute: torch.dtype, result: torch.dtype, *ops: Any, alpha: Any = 1) -> None:
    """ATen's ``alpha_check``."""
    if isinstance(alpha, bool) and result != torch.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (result.is_floating_point or result.is_complex) and isinstance(alpha, (float, complex)):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if not result.is_complex and isinstance(alpha, complex):
        raise RuntimeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )


def _sub_check(compute: torch.dtype, result: torch.dtype, a: Any, b: Any, alpha: Any = 1) -> None:
    a_bool = isinstance(a, bool) or (isinstance(a, torch.Tensor) and a.dtype == torch.bool)
    b_bool = isinstance(b, bool) or (isinstance(b, torch.Tensor) and b.dtype == torch.bool)
    if a_bool and b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if a_bool or b_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    _check_alpha(compute, result, a, b, alpha=alpha)


def _scaled(b: Any, alpha: Any, compute: torch.dtype) -> Any:
    if alpha is None or (alpha == 1 and not isinstance(alpha, bool)) or alpha is True:
        return b
    return np.multiply(b, np.asarray(alpha).astype(NP_DTYPE[compute]))


def _add(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    if compute == torch.bool:
        return np.logical_or(a, np.logical_and(b, bool(alpha)))
    return np.add(a, _scaled(b, alpha, compute))


def _sub(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    return np.subtract(a, _scaled(b, alpha, compute))


def _rsub(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    return np.subtract(b, _scaled(a, alpha, compute))


register_family("add", _add, Kind.DEFAULT, kw=("alpha",), validate=_check_alpha)
register_family("sub", _sub, Kind.DEFAULT, kw=("alpha",), validate=_sub_check)
register_family("rsub", _rsub, Kind.DEFAULT, kw=("alpha",),
                validate=lambda c, r, a, b, alpha=1: _sub_check(c, r, b, a, alpha=alpha))


def _mul(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    if compute == torch.bool:
        return np.logical_and(a, b)
    return np.multiply(a, b)


register_family("mul", _mul, Kind.DEFAULT)


def _zero_division_check(b: Any, compute: torch.dtype) -> None:
    if not (compute.is_floating_point or compute.is_complex) and not np.all(b):
        raise RuntimeError("ZeroDivisionError")


def trunc_divide(a: Any, b: Any, compute: torch.dtype) -> Any:
    """C-style (truncating) division; integers raise CPU's ZeroDivisionError."""
    if compute.is_floating_point:
        return np.trunc(np.true_divide(a, b))
    _zero_division_check(b, compute)
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def floor_divide(a: Any, b: Any, compute: torch.dtype) -> Any:
    """Python-style (flooring) division, NumPy's float algorithm equals ATen's div_floor."""
    if not compute.is_floating_point:
        _zero_division_check(b, compute)
    if compute == torch.bool:
        return np.floor_divide(a.astype(np.int8), b.astype(np.int8)).astype(np.bool_)
    return np.floor_divide(a, b)


def _div(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype,
         rounding_mode: str | None = None) -> Any:
    if rounding_mode is None:
        return np.true_divide(a, b)
    if rounding_mode == "trunc":
        return trunc_divide(a, b, compute)
    if rounding_mode == "floor":
        return floor_divide(a, b, compute)
    raise RuntimeError(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def _div_mode_kernels() -> None:
    for name in _overloads("div"):
        op = resolve_overload(name)
        args = [a for a in op._schema.arguments if not a.kwarg_only]
        has_mode = any(a.name == "rounding_mode" for a in op._schema.arguments)
        mode = _mode(name)
        true_k = make_pointwise(name, _div, Kind.INT_TO_FLOAT, nin=len(args), mode=mode,
                                argnames=tuple(a.name for a in args))
        if not has_mode:
            register(name)(true_k)
            continue
        round_k = make_pointwise(name, _div, Kind.DEFAULT, nin=len(args), mode=mode,
                                 argnames=tuple(a.name for a in args), kw=("rounding_mode",))

        def kernel(*a: Any, _t: Any = true_k, _r: Any = round_k, **k: Any) -> Any:
            if k.get("rounding_mode") is None:
                k.pop("rounding_mode", None)
                return _t(*a, **k)
            return _r(*a, **k)

        kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
        register(name)(kernel)


_div_mode_kernels()
