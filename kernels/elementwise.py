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
from torch._prims_common import get_computation_dtype

from kernels._semantics import (
    LOW_PRECISION,
    Kind,
    check_dtype,
    check_result_fits,
    checked_scalar,
    cpp_type_name,
    dtype_set,
    dtypes,
    dtypes3,
    infer_size,
    promote,
    quiet,
    scalar_type_name,
    write_inplace,
    write_out,
)
from kernels._tensor import NP_DTYPE, from_numpy, np_dtype, to_numpy
from kernels.registry import register, resolve_overload

ArrayFn = Callable[..., Any]

# --------------------------------------------------------------------------------------------
# Operand handling shared by every pointwise kernel
# --------------------------------------------------------------------------------------------


def check_same_device(name: str, args: tuple[Any, ...], argnames: tuple[str, ...]) -> None:
    """CPU tensors are allowed next to mlu tensors only as 0-dim "CPU scalars" (as on CUDA)."""
    for a, n in zip(args, argnames, strict=False):
        if isinstance(a, torch.Tensor) and a.is_cpu and a.dim() != 0:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but got {n} is on cpu, "
                f"different from other tensors on mlu:0 (when checking argument in method "
                f"mlu::{name})"
            )


def operand(x: Any, npd: np.dtype[Any]) -> Any:
    """A tensor or Python number as a NumPy operand of dtype ``npd`` (``None`` stays ``None``)."""
    if isinstance(x, torch.Tensor):
        arr = to_numpy(x)
        return arr if arr.dtype == npd else arr.astype(npd)
    if x is None:
        return None
    return np.asarray(x).astype(npd)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, torch.Tensor) else ()


def _raise_broadcast(*args: Any) -> None:
    shapes = [_shape(a) for a in args]
    acc = shapes[0]
    for s in shapes[1:]:
        acc = infer_size(acc, s)


def _inplace_shape_check(self: torch.Tensor, operands: tuple[Any, ...]) -> None:
    shape: tuple[int, ...] = ()
    for o in operands:
        shape = infer_size(shape, _shape(o))
    if shape != tuple(self.shape):
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}"
        )


def _finish(name: str, mode: str, result: Any, result_dtype: torch.dtype,
            self: torch.Tensor | None, out: torch.Tensor | None) -> Any:
    if mode == "out":
        assert out is not None
        return write_out(out, result, result_dtype, exact=False)  # TensorIterator's rule
    if mode == "inplace":
        assert self is not None
        return write_inplace(self, result, result_dtype)
    return from_numpy(result, result_dtype)


def _mode(name: str) -> str:
    """``out`` (has an out= argument), ``inplace`` (mutates its first argument) or ``functional``."""
    schema = resolve_overload(name)._schema
    if any(a.is_out for a in schema.arguments):
        return "out"
    first = schema.arguments[0].alias_info if schema.arguments else None
    if first is not None and first.is_write:
        return "inplace"
    return "functional"


_TENSOR_TYPES = frozenset({"Tensor", "Optional[Tensor]", "Tensor?"})
_OPERAND_TYPES = _TENSOR_TYPES | {"number", "Optional[number]", "Scalar", "Scalar?"}


def _overloads(base: str) -> list[str]:
    names: list[str] = []
    for b in (base, base + "_"):
        packet = getattr(torch.ops.aten, b, None)
        if packet is None:
            continue
        for ov in packet.overloads():
            schema = getattr(packet, ov)._schema
            # Skip TorchScript's scalar/list overloads (add.int, mul.left_t...): ATen ops only.
            if not any(str(a.type) in _TENSOR_TYPES for a in schema.arguments):
                continue
            # CompositeImplicitAutograd overloads decompose above autograd; a backend kernel
            # for them would never be reached consistently.
            full = b if ov == "default" else f"{b}.{ov}"
            try:
                if torch._C._dispatch_has_kernel_for_dispatch_key(
                    f"aten::{full}", "CompositeImplicitAutograd"
                ):
                    continue
                # An out= overload ATen composes from the functional one (autogen'd .Scalar_out
                # and friends) keeps ATen's kernel: it applies CPU's exact out dtype rule.
                if any(a.is_out for a in schema.arguments) and \
                        torch._C._dispatch_has_kernel_for_dispatch_key(
                            f"aten::{full}", "CompositeExplicitAutograd"):
                    continue
            except RuntimeError:  # a TorchScript-only overload the dispatcher does not know
                continue
            names.append(b if ov == "default" else f"{b}.{ov}")
    return names


# --------------------------------------------------------------------------------------------
# Factories
# --------------------------------------------------------------------------------------------


KindSpec = Kind | tuple[Kind, ...]


def kind_dtypes(kind: KindSpec, *operands: Any) -> tuple[torch.dtype, torch.dtype, torch.dtype]:
    """``(computation, result, promoted)`` dtypes for one kind, or for a chain of kinds
    (``angle``: INT_TO_FLOAT then COMPLEX_TO_FLOAT, each applied to the previous result)."""
    if not isinstance(kind, tuple):
        return dtypes3(kind, *operands)
    compute, result, promoted = dtypes3(kind[0], *operands)
    for k in kind[1:]:
        result = dtypes(k, torch.empty(1, dtype=result, device="meta"))[1]
    return compute, result, promoted


def input_dtype(*operands: Any) -> torch.dtype:
    """The promoted dtype of the operands (what CPU's kernels dispatch on)."""
    ops = [o for o in operands if o is not None]
    if len(ops) == 1 and isinstance(ops[0], torch.Tensor):
        return ops[0].dtype
    return promote(*ops)


def early_refusal(message: str) -> NotImplementedError:
    """A dtype refusal ATen makes before any shape or out= check (in the op's meta function)."""
    exc = NotImplementedError(message)
    exc._opconform_early = True  # type: ignore[attr-defined]
    return exc


def refuse(op: str, *refused: str | torch.dtype) -> Callable[..., None]:
    """A ``validate`` hook: :func:`~kernels._semantics.check_dtype` on the operands' promoted
    dtype, refusing the categories (``bool``, ``integral``, ``floating``, ``complex``) and single
    dtypes ``refused``."""
    dtypes = dtype_set(*refused)

    def validate(compute: torch.dtype, result: torch.dtype, *operands: Any, **kw: Any) -> None:
        check_dtype(op, input_dtype(*operands), refused=dtypes)

    return validate


def make_pointwise(name: str, fn: ArrayFn, kind: KindSpec, *, nin: int, mode: str,
                   argnames: tuple[str, ...], kw: tuple[str, ...] = (),
                   validate: Callable[..., None] | None = None,
                   out_same_dtype: bool | str = False,
                   scalar_opmath: bool = False, raw_scalars: bool = False,
                   scalars: Callable[..., None] | None = None,
                   prepare: Callable[..., tuple[Any, ...]] | None = None) -> Callable[..., Any]:
    """One kernel for overload ``name``: ``fn(*numpy operands, compute=, result=, **kw)``.

    ``fn`` receives operands in torch's computation dtype plus the keyword arguments named in
    ``kw``, ``compute`` (computation dtype) and ``result`` (result dtype); its value is cast to the
    result dtype. ``validate(compute, result, *args, **kw)`` may raise CPU's errors first.
    ``out_same_dtype``: ``out=`` must have exactly the result dtype (ATen's plain unary ops);
    ``"noncomplex"``: only for non-complex inputs (``abs``; a complex input's complex out must
    have the input's dtype); ``"tensor_weight"``: only when the
    last operand is a tensor of at least one dimension (``lerp``: a 0-dim weight promotes). ``scalar_opmath``: a Python-number
    last operand keeps the computation precision instead of being rounded to a float16/bfloat16
    common dtype first (``lerp``'s weight). ``raw_scalars``: Python-number operands reach ``fn``
    unconverted (``pow``'s exponent is used as a double). ``scalars(result, *operands)``: CPU's
    refusal of a Python-number operand (or keyword argument: ``alpha``) the dtype it is read in
    cannot hold (``checked_scalar``), after the out=/in-place checks. ``prepare(*operands)``:
    operands as the overload's promotion sees them (``lerp``'s Scalar weight does not promote).
    """
    base = name.split(".")[0]

    def kernel(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        operands = args[:nin]
        if prepare is not None:
            operands = prepare(*operands)
        check_same_device(name, operands, argnames)
        compute, result, common = kind_dtypes(kind, *operands)
        extra = {k: kwargs[k] for k in kw if k in kwargs}
        if len(args) > nin:  # non-operand positional arguments (logit's eps, mvlgamma's p)
            extra.update(zip(argnames[nin:], args[nin:], strict=False))
        def check_target() -> None:
            if mode == "inplace":
                if kind is Kind.COMPLEX_TO_FLOAT and args[0].dtype.is_complex:
                    raise RuntimeError(
                        f"In-place {base.rstrip('_')} is not supported for complex tensors."
                    )
                check_result_fits(result, args[0].dtype)
            elif mode == "out":
                if (out_same_dtype and out.dtype != result and not (
                        out_same_dtype == "noncomplex" and operands[0].dtype.is_complex)
                        and not (out_same_dtype == "scalar_args" and any(
                            isinstance(o, torch.Tensor) for o in operands[1:]))
                        and not (out_same_dtype == "tensor_weight" and not (
                            isinstance(operands[-1], torch.Tensor) and operands[-1].dim()))):
                    raise RuntimeError(
                        f"Found dtype {scalar_type_name(out.dtype)} but expected "
                        f"{scalar_type_name(result)}"
                    )
                if (out_same_dtype == "noncomplex" and operands[0].dtype.is_complex
                        and out.dtype.is_complex and out.dtype != operands[0].dtype):
                    # a complex input into a complex out runs ATen's complex -> complex kernel,
                    # whose TensorIterator wants the input's own dtype (abs(complex64,
                    # out=complex128) raises on CPU); a real out takes the real result, cast
                    raise RuntimeError(
                        f"Found dtype {scalar_type_name(out.dtype)} but expected "
                        f"{scalar_type_name(operands[0].dtype)}"
                    )
                check_result_fits(result, out.dtype)

        if validate is not None:
            try:
                validate(compute, result, *operands, **extra)
            except NotImplementedError as exc:
                if getattr(exc, "_opconform_early", False):
                    raise
                # ATen checks shapes and the in-place/out= cast before the dtype dispatch.
                _raise_broadcast(*operands)
                if mode == "inplace":
                    _inplace_shape_check(args[0], operands)
                check_target()
                raise
        if mode != "functional":
            check_target()
        if scalars is not None:
            scalars(result, *operands, **extra)
        npd = np_dtype(compute)
        if common in LOW_PRECISION and compute != common:
            # CPU first casts every operand to the common (low-precision) dtype.
            low = NP_DTYPE[common]
            # scalar_opmath: only the last operand (ATen's iter.is_scalar(2) /
            # original_scalar_value); a leading Python number rounds to the common dtype too
            last = len(operands) - 1
            ops = [operand(a, npd) if (scalar_opmath and i == last
                                       and not isinstance(a, torch.Tensor))
                   else None if a is None else operand(a, low).astype(npd)
                   for i, a in enumerate(operands)]
            if raw_scalars:  # still told apart from tensors: a NumPy scalar, not an array
                ops = [o[()] if o is not None and not isinstance(a, torch.Tensor) else o
                       for a, o in zip(operands, ops, strict=True)]
        elif raw_scalars:
            ops = [a if (a is None or not isinstance(a, torch.Tensor)) else operand(a, npd)
                   for a in operands]
        else:
            ops = [operand(a, npd) for a in operands]
        with quiet():
            try:
                value = fn(*ops, compute=compute, result=result, **extra)
            except ValueError:
                _raise_broadcast(*operands)
                raise
        return _finish(name, mode, value, result, args[0] if mode == "inplace" else None, out)

    kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
    return kernel


def register_family(base: str, fn: ArrayFn, kind: KindSpec, *, kw: tuple[str, ...] = (),
                    validate: Callable[..., None] | None = None,
                    skip: tuple[str, ...] = (), out_same_dtype: bool | str = False,
                    scalar_opmath: bool = False, raw_scalars: bool = False,
                    scalars: Callable[..., None] | None = None,
                    prepare: Callable[..., tuple[Any, ...]] | None = None) -> list[str]:
    """Register ``fn`` for every ATen overload of ``base`` and ``base_`` (minus ``skip``)."""
    done = []
    for name in _overloads(base):
        if name in skip:
            continue
        op = resolve_overload(name)
        args = [a for a in op._schema.arguments if not a.kwarg_only]
        # Operands are the leading Tensor/Scalar arguments; later positional ones (int p,
        # float? eps) reach ``fn`` as keywords.
        nin = 0
        while (nin < len(args) and str(args[nin].type) in _OPERAND_TYPES
               and args[nin].name not in kw):
            nin += 1
        register(name)(make_pointwise(name, fn, kind, nin=nin, mode=_mode(name),
                                      argnames=tuple(a.name for a in args), kw=kw,
                                      validate=validate, out_same_dtype=out_same_dtype,
                                      scalar_opmath=scalar_opmath, raw_scalars=raw_scalars,
                                      scalars=scalars, prepare=prepare))
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


def _scaled(b: Any, alpha: Any, compute: torch.dtype, result: torch.dtype | None = None) -> Any:
    # CPU computes ``a + alpha * b`` even for alpha == 1: for complex operands the product is
    # not a no-op ((1+0j) * (0+infj) = nan+infj), so only real dtypes may skip it.
    if compute.is_complex:
        return np.multiply(b, np.asarray(1 if alpha is None else alpha).astype(NP_DTYPE[compute]))
    if alpha is None or (alpha == 1 and not isinstance(alpha, bool)) or alpha is True:
        return b
    if result in (torch.float16, torch.bfloat16) and not isinstance(alpha, bool):
        # CPU reads alpha in the result's dtype (alpha=1e-41 is 0 for float16: inf * 0 = nan)
        alpha = torch.tensor(alpha, dtype=torch.float64).to(result).item()
        # and its scalar loop (0-dim and small tensors, the tail of every vectorized loop)
        # computes ``alpha * other`` in the result's dtype, rounding the product before the
        # sum; only its vectorized body fuses them (one rounding). CPU's answer for one element
        # thus depends on its position; mlu follows the scalar loop, which small inputs get.
        product = np.multiply(b, np.asarray(alpha).astype(NP_DTYPE[compute]))
        return np.asarray(product).astype(NP_DTYPE[result]).astype(NP_DTYPE[compute])
    return np.multiply(b, np.asarray(alpha).astype(NP_DTYPE[compute]))


#: Wider NumPy types in which ``a + alpha * b`` of float32/float64 is formed with one rounding
#: in effect: float32 products are exact in float64; float64 ones keep x87's 64-bit significand
#: and its exponent range (no overflow of the product alone).
_FUSED_IN = {torch.float32: np.float64, torch.float64: np.longdouble}


def _fused(a: Any, b: Any, alpha: Any, compute: torch.dtype, result: torch.dtype) -> Any:
    """``a + alpha * b`` as CPU computes it in float32/float64 with ``alpha`` != 1: a fused
    multiply-add (vectorized ``fmadd``, and the compiler contracts the scalar loop too), one
    rounding of the exact value. Two roundings differ where the sum cancels the product
    (``-1 + x * x`` for ``x = 1 + 2**-12``: 4.8834e-4 fused, 4.8828e-4 not) or where the
    product alone overflows (``-inf - 2.5 * -3.4e38`` is ``-inf``, not ``-inf + inf = nan``).
    ``None`` where CPU does not fuse (other dtypes, ``alpha`` 1 or bool)."""
    wide = _FUSED_IN.get(compute)
    if wide is None or result != compute or alpha is None or isinstance(alpha, bool) \
            or alpha == 1:
        return None
    scale = np.asarray(alpha).astype(NP_DTYPE[compute])  # read in scalar_t
    return _fma_in(wide, a, b, scale).astype(NP_DTYPE[compute])


def _fma_in(wide: Any, a: Any, b: Any, c: Any) -> Any:
    """``a + b * c`` formed in the NumPy type ``wide`` (:data:`_FUSED_IN`): a stand-in for a
    fused multiply-add, which NumPy lacks; the caller rounds the result to its dtype."""
    return np.add(np.asarray(a).astype(wide),
                  np.multiply(np.asarray(b).astype(wide), np.asarray(c).astype(wide)))


def _add(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    if compute == torch.bool:
        return np.logical_or(a, np.logical_and(b, bool(alpha)))
    fused = _fused(a, b, alpha, compute, result)
    if fused is not None:
        return fused
    return np.add(a, _scaled(b, alpha, compute, result))


#: c10's Scalar holds an integral alpha as int64: ATen's sub (add with -alpha) negates it there,
#: and -(-2**63) wraps to -2**63 (sub(x, 1, alpha=-2**63) is x - 2**63 on CPU, not x + 2**63).
_INT64_MIN = -(2 ** 63)


def _sub(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    if type(alpha) is int and alpha == _INT64_MIN:
        return np.add(a, _scaled(b, alpha, compute, result))
    fused = _fused(a, b, -alpha, compute, result) if not isinstance(alpha, bool) else None
    if fused is not None:
        return fused
    return np.subtract(a, _scaled(b, alpha, compute, result))


def _rsub(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype, alpha: Any = 1) -> Any:
    if type(alpha) is int and alpha == _INT64_MIN:
        return np.add(b, _scaled(a, alpha, compute, result))
    fused = _fused(b, a, -alpha, compute, result) if not isinstance(alpha, bool) else None
    if fused is not None:
        return fused
    return np.subtract(b, _scaled(a, alpha, compute, result))


def _alpha_range(result: torch.dtype, *operands: Any, alpha: Any = 1) -> None:
    """ATen reads ``alpha`` in the result dtype (``alpha.to<scalar_t>()``)."""
    checked_scalar(alpha, result)


def _negated_alpha_range(result: torch.dtype, *operands: Any, alpha: Any = 1) -> None:
    """sub and rsub are ATen's add with ``-alpha``: that is the value read in the result dtype.
    c10's Scalar holds an integral ``alpha`` as int64, whose negation wraps: -(-2**63) is
    -2**63, which int64 holds (CPU's sub_(x, 2, alpha=-2**63) computes)."""
    if not isinstance(alpha, bool):
        checked_scalar(alpha if type(alpha) is int and alpha == _INT64_MIN else -alpha, result)


register_family("add", _add, Kind.DEFAULT, kw=("alpha",), validate=_check_alpha,
                scalars=_alpha_range)
register_family("sub", _sub, Kind.DEFAULT, kw=("alpha",), validate=_sub_check,
                scalars=_negated_alpha_range)
register_family("rsub", _rsub, Kind.DEFAULT, kw=("alpha",),
                validate=lambda c, r, a, b, alpha=1: _sub_check(c, r, b, a, alpha=alpha),
                scalars=_negated_alpha_range)


def _mul(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    if compute == torch.bool:
        return np.logical_and(a, b)
    return np.multiply(a, b)


# ATen's mul_(Tensor&, const Scalar&) is at::mul_out(self, wrapped_scalar_tensor(other), self): the
# number is the first operand there, so a float16/bfloat16 self gets it rounded to its dtype
# (fft_rfftfreq's arange(...).mul_(1 / (n * d)): 0 * inf = NaN where mul.Scalar gives 0).
register_family("mul", _mul, Kind.DEFAULT, scalar_opmath=True, skip=("mul_.Scalar",))
register("mul_.Scalar")(make_pointwise("mul_.Scalar", _mul, Kind.DEFAULT, nin=2, mode="inplace",
                                       argnames=("self", "other")))


def _zero_division_check(b: Any, compute: torch.dtype, a: Any = None) -> None:
    if (not (compute.is_floating_point or compute.is_complex) and not np.all(b)
            and (a is None or np.size(a) != 0)):
        raise RuntimeError("ZeroDivisionError")


def trunc_divide(a: Any, b: Any, compute: torch.dtype) -> Any:
    """C-style (truncating) division; integers raise CPU's ZeroDivisionError."""
    if compute.is_floating_point:
        return np.trunc(np.true_divide(a, b))
    _zero_division_check(b, compute, a)
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def floor_divide(a: Any, b: Any, compute: torch.dtype) -> Any:
    """Python-style (flooring) division, NumPy's float algorithm equals ATen's div_floor."""
    if not compute.is_floating_point:
        _zero_division_check(b, compute, a)
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


def _div_mode_check(compute: torch.dtype, result: torch.dtype, *ops: Any,
                    rounding_mode: str | None = None) -> None:
    refuse(f"div_{rounding_mode}", "bool", "complex")(compute, result, *ops)


def _div_mode_kernels() -> None:
    for name in _overloads("div"):
        op = resolve_overload(name)
        args = [a for a in op._schema.arguments if not a.kwarg_only]
        has_mode = any(a.name == "rounding_mode" for a in op._schema.arguments)
        mode = _mode(name)
        # div_true_kernel reads a Python-number divisor of a float16/bfloat16 tensor in float32
        # (iter.original_scalar_value<opmath_t>): x / 3.4e38 is not x / inf; its floor and
        # trunc modes (and floor_divide) too: bfloat16 -9.2e-41 // 1.4e-45 is -65536, not -inf
        true_k = make_pointwise(name, _div, Kind.INT_TO_FLOAT, nin=len(args), mode=mode,
                                argnames=tuple(a.name for a in args), scalar_opmath=True)
        if not has_mode:
            register(name)(true_k)
            continue
        round_k = make_pointwise(name, _div, Kind.DEFAULT, nin=len(args), mode=mode,
                                 argnames=tuple(a.name for a in args), kw=("rounding_mode",),
                                 validate=_div_mode_check, scalar_opmath=True)

        def kernel(*a: Any, _t: Any = true_k, _r: Any = round_k, **k: Any) -> Any:
            if k.get("rounding_mode") is None:
                k.pop("rounding_mode", None)
                return _t(*a, **k)
            return _r(*a, **k)

        kernel.__name__ = kernel.__qualname__ = name.replace(".", "_")
        register(name)(kernel)


_div_mode_kernels()


# --------------------------------------------------------------------------------------------
# Unary math: table + factory
# --------------------------------------------------------------------------------------------


def _special() -> Any:
    import scipy.special  # deferred: ~0.1 s to import

    return scipy.special


def _lazy_special(fname: str) -> ArrayFn:
    def f(*xs: Any) -> Any:
        return getattr(_special(), fname)(*xs)

    f.__name__ = fname
    return f


def _erfcx(x: Any) -> Any:
    """erfcx; for x < 0 ATen's calc_erfcx (Math.h, Faddeeva's) computes 2 exp(x^2) -
    erfcx(-x) in x's own dtype (2 exp(x^2) alone below -6.1, inf below -26.7): in float32, x^2
    is rounded before exp, which that exponent amplifies (erfcx(-7.7356) = 1.9440906e26 on CPU,
    SciPy's float64 evaluation 1.9440878e26), so float32 rounds x^2 as ATen does."""
    r = _special().erfcx(x)
    if x.dtype != np.float32:
        return r  # float64: SciPy's Faddeeva evaluation is ATen's
    with quiet():
        big = (np.float32(2) * np.exp((x * x).astype(np.float64)).astype(np.float32))
        tail = np.where(x < -6.1, big, big - _special().erfcx(-x).astype(np.float32))
        tail = np.where(x < -26.7, np.float32(np.inf), tail)
    return np.where(x < 0, tail, r).astype(r.dtype)


def _lgamma(x: Any) -> Any:
    """log|Gamma(x)|; ATen's is +inf at x = -inf (SciPy's gammaln says -inf there), and
    -log|x| for a nonzero |x| below 2**-60 (SciPy's gammaln overflows to inf for subnormals)."""
    r = _special().gammaln(x)
    with quiet():
        tiny = (x != 0) & (np.abs(x) < 2.0 ** -60)
        r = np.where(tiny, -np.log(np.abs(x)).astype(r.dtype), r)
    return np.where(np.isneginf(x), np.asarray(np.inf, r.dtype), r)


def _sigmoid(x: Any) -> Any:
    return np.reciprocal(np.add(1, np.exp(np.negative(x)), dtype=x.dtype))


def _rsqrt(x: Any) -> Any:
    return np.reciprocal(np.sqrt(x))


def _digamma(x: Any) -> Any:
    # ATen: digamma(+0) = -inf and digamma(-0) = +inf (the pole's side), scipy gives nan/inf.
    r = _special().psi(x)
    return np.where(x == 0, np.copysign(np.inf, np.negative(x)), r).astype(r.dtype)


#: name -> (NumPy function of one operand, promotion kind, refused dtype categories)
UNARY: dict[str, tuple[ArrayFn, Kind, tuple[str | torch.dtype, ...]]] = {
    "exp": (np.exp, Kind.INT_TO_FLOAT, ()),
    "exp2": (np.exp2, Kind.INT_TO_FLOAT, ()),
    "expm1": (np.expm1, Kind.INT_TO_FLOAT, ()),
    "log": (np.log, Kind.INT_TO_FLOAT, ()),
    "log2": (np.log2, Kind.INT_TO_FLOAT, ()),
    "log10": (np.log10, Kind.INT_TO_FLOAT, ()),
    "log1p": (np.log1p, Kind.INT_TO_FLOAT, ()),
    "sqrt": (np.sqrt, Kind.INT_TO_FLOAT, ()),
    "rsqrt": (_rsqrt, Kind.INT_TO_FLOAT, ()),
    "reciprocal": (np.reciprocal, Kind.INT_TO_FLOAT, ()),
    "sin": (np.sin, Kind.INT_TO_FLOAT, ()),
    "cos": (np.cos, Kind.INT_TO_FLOAT, ()),
    "tan": (np.tan, Kind.INT_TO_FLOAT, ()),
    "asin": (np.arcsin, Kind.INT_TO_FLOAT, ()),
    "acos": (np.arccos, Kind.INT_TO_FLOAT, ()),
    "atan": (np.arctan, Kind.INT_TO_FLOAT, ()),
    "sinh": (np.sinh, Kind.INT_TO_FLOAT, ()),
    "cosh": (np.cosh, Kind.INT_TO_FLOAT, ()),
    "tanh": (np.tanh, Kind.INT_TO_FLOAT, ()),
    "asinh": (np.arcsinh, Kind.INT_TO_FLOAT, ()),
    "acosh": (np.arccosh, Kind.INT_TO_FLOAT, ()),
    "atanh": (np.arctanh, Kind.INT_TO_FLOAT, ()),
    "sigmoid": (_sigmoid, Kind.INT_TO_FLOAT, ()),
    "sinc": (np.sinc, Kind.INT_TO_FLOAT, ()),
    "erf": (_lazy_special("erf"), Kind.INT_TO_FLOAT, ("complex",)),
    "erfc": (_lazy_special("erfc"), Kind.INT_TO_FLOAT, ("complex",)),
    "erfinv": (_lazy_special("erfinv"), Kind.INT_TO_FLOAT, ("complex",)),
    "lgamma": (_lgamma, Kind.INT_TO_FLOAT, ("complex",)),
    "digamma": (_digamma, Kind.INT_TO_FLOAT, ("complex",)),
    "i0": (_lazy_special("i0"), Kind.INT_TO_FLOAT, ("complex",)),
    "special_erfcx": (_erfcx, Kind.INT_TO_FLOAT, ("complex", *LOW_PRECISION)),
    "special_i0e": (_lazy_special("i0e"), Kind.INT_TO_FLOAT, ("complex",)),
    "special_i1": (_lazy_special("i1"), Kind.INT_TO_FLOAT, ("complex",)),
    "special_i1e": (_lazy_special("i1e"), Kind.INT_TO_FLOAT, ("complex",)),
    "special_ndtri": (_lazy_special("ndtri"), Kind.INT_TO_FLOAT, ("complex", *LOW_PRECISION)),
    "special_log_ndtr": (_lazy_special("log_ndtr"), Kind.INT_TO_FLOAT, ("complex", *LOW_PRECISION)),
    "conj_physical": (np.conj, Kind.DEFAULT, ("same_dtype_out",)),
    "_conj_physical": (np.conj, Kind.DEFAULT, ()),
}


def _register_unary() -> None:
    for name, (f, kind, flags) in UNARY.items():
        refused = tuple(c for c in flags if c != "same_dtype_out")
        register_family(name, _plain(f), kind, validate=refuse(name, *refused) if refused else None,
                        out_same_dtype="same_dtype_out" in flags)


_register_unary()


def _int_identity(f: ArrayFn) -> ArrayFn:
    """Rounding functions are the identity on integers (NumPy would go through float64)."""

    def g(x: Any, *, compute: torch.dtype, result: torch.dtype, **kw: Any) -> Any:
        if not compute.is_floating_point:
            return x.copy(order="K")  # the input's layout, as CPU's result
        return f(x, **kw)

    return g


def _rounding_check(name: str) -> Callable[..., None]:
    def validate(compute: torch.dtype, result: torch.dtype, x: Any, **kw: Any) -> None:
        if x.dtype.is_complex:
            raise early_refusal(f"{name} is not supported for complex inputs")
        refuse(f"{name}_vml_cpu", "bool")(compute, result, x)

    return validate


def _round(x: Any, decimals: int = 0) -> Any:
    return np.round(x, decimals)


register_family("ceil", _int_identity(np.ceil), Kind.DEFAULT, out_same_dtype=True,
                validate=_rounding_check("ceil"))
register_family("floor", _int_identity(np.floor), Kind.DEFAULT, out_same_dtype=True,
                validate=_rounding_check("floor"))
register_family("trunc", _int_identity(np.trunc), Kind.DEFAULT, out_same_dtype=True,
                validate=_rounding_check("trunc"))
def _round_check(compute: torch.dtype, result: torch.dtype, x: Any, decimals: Any = None
                 ) -> None:
    if x.dtype.is_complex:  # round checks out= first, unlike ceil/floor/trunc
        raise NotImplementedError("round is not supported for complex inputs")
    _rounding_check("round")(compute, result, x)
    if decimals is not None:
        refuse("round_vml_cpu", "integral")(compute, result, x)


register_family("round", _int_identity(_round), Kind.DEFAULT, kw=("decimals",),
                out_same_dtype=True, validate=_round_check)
register_family("frac", _plain(lambda x: x - np.trunc(x)), Kind.DEFAULT, out_same_dtype=True,
                validate=refuse("frac", "bool", "integral", "complex"))


def _abs(x: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    return np.abs(x)


register_family("abs", _abs, Kind.COMPLEX_TO_FLOAT, validate=refuse("abs", "bool"),
                out_same_dtype="noncomplex")


def _neg_check(compute: torch.dtype, result: torch.dtype, x: Any) -> None:
    if x.dtype == torch.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )


register_family("neg", _plain(np.negative), Kind.DEFAULT, validate=_neg_check,
                out_same_dtype=True)


def _sign(x: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    if compute == torch.bool:
        return x.copy(order="K")  # the input's layout, as CPU's result (C order otherwise)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _sign_check(compute: torch.dtype, result: torch.dtype, x: Any) -> None:
    if x.dtype.is_complex:
        raise NotImplementedError(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. "
            "Please use torch.sgn instead."
        )


register_family("sign", _sign, Kind.DEFAULT, validate=_sign_check, out_same_dtype=True)


def _sgn(x: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    if compute.is_complex:
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return _sign(x, compute=compute, result=result)


register_family("sgn", _sgn, Kind.DEFAULT, out_same_dtype=True)


def _angle(x: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    if compute.is_complex:
        return np.angle(x)
    return np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0)).astype(x.dtype)


register_family("angle", _angle, (Kind.INT_TO_FLOAT, Kind.COMPLEX_TO_FLOAT))


def _logit(x: Any, *, compute: torch.dtype, result: torch.dtype, eps: float | None = None) -> Any:
    if result in LOW_PRECISION:
        # ATen forms x / (1 - x) in the low-precision dtype, then takes the log in float.
        low = NP_DTYPE[result]
        xl = x.astype(low)
        if eps is not None:
            xl = np.clip(xl, low.type(eps), low.type(1 - eps))
        return np.log((xl / (low.type(1) - xl)).astype(np.float32))
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


register_family("logit", _logit, Kind.INT_TO_FLOAT, kw=("eps",),
                validate=refuse("logit", "complex"))


def _nan_to_num(x: Any, *, compute: torch.dtype, result: torch.dtype, nan: float | None = None,
                posinf: float | None = None, neginf: float | None = None) -> Any:
    if not (compute.is_floating_point or compute.is_complex):
        return x.copy(order="K")  # the input's layout, as CPU's result
    if compute.is_complex:
        real_dt = {torch.complex64: torch.float32}.get(compute, torch.float64)
        parts = [_nan_to_num(p, compute=real_dt, result=real_dt, nan=nan, posinf=posinf,
                             neginf=neginf) for p in (x.real, x.imag)]
        return (parts[0] + 1j * parts[1]).astype(x.dtype)
    info = np.finfo(x.real.dtype) if x.dtype.kind != "V" else None
    if info is None or x.dtype == NP_DTYPE[torch.bfloat16]:
        import ml_dtypes

        info = ml_dtypes.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    r = np.where(np.isnan(x), 0.0 if nan is None else nan, x)
    r = np.where(np.isposinf(r), hi, r)
    return np.where(np.isneginf(r), lo, r).astype(x.dtype)


register_family("nan_to_num", _nan_to_num, Kind.NO_OPMATH, kw=("nan", "posinf", "neginf"),
                out_same_dtype=True)  # "nan_to_num: dtype of out: ... should be same as input"

# Predicates (always bool)


def _isnan(x: Any) -> Any:  # zeros_like: the result keeps the input's layout, as CPU's
    return np.isnan(x) if x.dtype.kind in "fcV" else np.zeros_like(x, np.bool_)


def _float_pred(f: ArrayFn) -> ArrayFn:
    def g(x: Any) -> Any:
        if x.dtype.kind in "biu":
            return np.zeros_like(x, np.bool_)  # in the input's layout, as CPU's
        return f(x)

    return g


register_family("isnan", _plain(_isnan), Kind.ALWAYS_BOOL)
register_family("isinf", _plain(_float_pred(np.isinf)), Kind.ALWAYS_BOOL)
def _no_complex_input(name: str) -> Callable[..., None]:
    def validate(compute: torch.dtype, result: torch.dtype, x: Any) -> None:
        if x.dtype.is_complex:
            raise RuntimeError(f"{name} does not support complex inputs.")

    return validate


register_family("isposinf", _plain(_float_pred(np.isposinf)), Kind.ALWAYS_BOOL,
                validate=_no_complex_input("isposinf"), out_same_dtype=True)  # bool outs only
register_family("isneginf", _plain(_float_pred(np.isneginf)), Kind.ALWAYS_BOOL,
                validate=_no_complex_input("isneginf"), out_same_dtype=True)  # bool outs only
def _signbit_no_complex(compute: torch.dtype, result: torch.dtype, x: Any) -> None:
    if x.dtype.is_complex:  # signbit_out: before its out dtype check
        raise early_refusal("signbit is not implemented for complex tensors.")


register_family("signbit", _plain(lambda x: np.signbit(x) if x.dtype.kind in "fV" else x < 0),
                Kind.ALWAYS_BOOL, validate=_signbit_no_complex,
                out_same_dtype=True)  # "signbit does not support non-boolean outputs."
register_family("logical_not", _plain(np.logical_not), Kind.ALWAYS_BOOL)


def _bitwise_not(x: Any) -> Any:
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


register_family("bitwise_not", _plain(_bitwise_not), Kind.DEFAULT, out_same_dtype=True,
                validate=refuse("bitwise_not", "floating", "complex"))

# --------------------------------------------------------------------------------------------
# Binary: table + factory; hand-written where torch differs from NumPy
# --------------------------------------------------------------------------------------------


def _c10_log1p(z: np.ndarray) -> np.ndarray:
    """c10's complex ``log1p`` (complex_math.h): the angle of 1 + z, and for |z| < 0.5 the
    modulus' log from ``log1p(x (2 + x) + y^2) / 2`` (``x`` itself where that underflows to 0),
    else ``log(hypot(1 + x, y))``."""
    x, y = z.real, z.imag
    one = np.ones((), x.dtype)
    r = x * (one + one + x) + y * y
    near = np.where(r == 0, x, np.log1p(r) * x.dtype.type(0.5))
    modulus = np.where(np.abs(z) < 0.5, near, np.log(np.hypot(x + one, y)))
    out = np.empty(z.shape, z.dtype)
    out.real, out.imag = modulus, np.arctan2(y, x + one)
    return out


def log_add_exp_complex(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ATen's complex ``_log_add_exp_helper`` (LogAddExp.h; logaddexp and logcumsumexp):
    ``max + log1p(exp(min - max))`` with min/max by real part, a NaN in either part taken as
    both, so the imaginary part is max's plus an angle in (-pi, pi], not wrapped again as
    NumPy's ``log(exp(x) + exp(y))`` is (the same value modulo 2 pi i, another branch).
    Equal infinite real parts: ``min`` for -inf, ``log(exp(min) + exp(max))`` for +inf."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    nan_x = np.isnan(x.real) | np.isnan(x.imag)
    nan_y = np.isnan(y.real) | np.isnan(y.imag)
    x_less = x.real < y.real
    mn = np.where(nan_y, y, np.where(nan_x, x, np.where(x_less, x, y)))
    mx = np.where(nan_y, y, np.where(nan_x, x, np.where(x_less, y, x)))
    with quiet():
        general = _c10_log1p(np.exp(mn - mx)) + mx
        both_inf = np.log(np.exp(mn) + np.exp(mx))
    out = np.where(~np.isfinite(mn.real) & (mn.real == mx.real),
                   np.where(mn.real < 0, mn, both_inf), general)
    nan = np.array(complex(np.nan, np.nan), x.dtype)
    return np.where(np.isnan(mn.real) | np.isnan(mn.imag), nan, out).astype(x.dtype)


def _igamma(a: Any, x: Any, *, upper: bool) -> Any:
    """The regularized lower (upper: its complement) incomplete gamma function with ATen's
    boundary cases first, in its order (calc_igamma / calc_igammac, Math.h): NaN for a negative
    a or x, a = 0 (1 / 0 for x > 0, else NaN), x = 0 (0 / 1, whatever a is, NaN too), an infinite
    a (NaN with an infinite x, else 0 / 1: also for a NaN x), an infinite x (1 / 0); SciPy's
    gammainc/gammaincc, which return NaN for every NaN argument, only past them."""
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    with quiet():
        r = (_special().gammaincc if upper else _special().gammainc)(a, x)
        nan = np.nan
        cases = [(x < 0) | (a < 0), a == 0, x == 0, np.isinf(a), np.isinf(x)]
        values = [nan, np.where(x > 0, hi, nan), lo, np.where(np.isinf(x), nan, lo), hi]
        out = np.select(cases, [np.asarray(v, r.dtype) for v in values], r)
    return out.astype(r.dtype)


#: name -> (NumPy function of two operands, promotion kind, refused dtype categories)
BINARY: dict[str, tuple[ArrayFn, Kind, tuple[str | torch.dtype, ...]]] = {
    "atan2": (np.arctan2, Kind.INT_TO_FLOAT, ("complex",)),
    "hypot": (np.hypot, Kind.DEFAULT, ("bool", "integral", "complex")),
    "copysign": (np.copysign, Kind.INT_TO_FLOAT, ("complex",)),
    "logaddexp": (lambda a, b: np.logaddexp(a, b) if a.dtype.kind != "c"
                  else log_add_exp_complex(a, b), Kind.DEFAULT, ("bool", "integral")),
    "logaddexp2": (np.logaddexp2, Kind.DEFAULT, ("bool", "integral", "complex")),
    "maximum": (np.maximum, Kind.DEFAULT, ()),
    "minimum": (np.minimum, Kind.DEFAULT, ()),
    "fmax": (np.fmax, Kind.DEFAULT, ()),
    "fmin": (np.fmin, Kind.DEFAULT, ()),
    "bitwise_and": (np.bitwise_and, Kind.DEFAULT, ("floating", "complex")),
    "bitwise_or": (np.bitwise_or, Kind.DEFAULT, ("floating", "complex")),
    "bitwise_xor": (np.bitwise_xor, Kind.DEFAULT, ("floating", "complex")),
    "eq": (np.equal, Kind.ALWAYS_BOOL, ()),
    "ne": (np.not_equal, Kind.ALWAYS_BOOL, ()),
    "lt": (np.less, Kind.ALWAYS_BOOL, ("complex",)),
    "le": (np.less_equal, Kind.ALWAYS_BOOL, ("complex",)),
    "gt": (np.greater, Kind.ALWAYS_BOOL, ("complex",)),
    "ge": (np.greater_equal, Kind.ALWAYS_BOOL, ("complex",)),
    "logical_and": (np.logical_and, Kind.ALWAYS_BOOL, ()),
    "logical_or": (np.logical_or, Kind.ALWAYS_BOOL, ()),
    "logical_xor": (np.logical_xor, Kind.ALWAYS_BOOL, ()),
    "igamma": (lambda a, x: _igamma(a, x, upper=False), Kind.DEFAULT,
               ("bool", "integral", "complex")),
    "igammac": (lambda a, x: _igamma(a, x, upper=True), Kind.DEFAULT,
                ("bool", "integral", "complex")),
}


def _no_complex(name: str) -> Callable[..., None]:
    def validate(compute: torch.dtype, result: torch.dtype, *operands: Any) -> None:
        if compute.is_complex:
            raise RuntimeError(f"{name} not implemented for complex tensors.")

    return validate


_SPECIAL_VALIDATE = {n: _no_complex(n) for n in ("maximum", "minimum", "fmax", "fmin")}


def _register_binary() -> None:
    for name, (f, kind, refused) in BINARY.items():
        check = _SPECIAL_VALIDATE.get(name) or (refuse(name, *refused) if refused else None)
        register_family(name, _plain(f), kind, validate=check)


_register_binary()


def _nextafter(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    """The neighbour in the result dtype itself: float16/bfloat16 step by their own ulp (the
    float32 neighbour of a float16 value rounds back to it)."""
    npd = NP_DTYPE[result]
    return np.nextafter(a.astype(npd, copy=False), b.astype(npd, copy=False))


register_family("nextafter", _nextafter, Kind.DEFAULT,
                validate=refuse("nextafter", "bool", "integral", "complex"))


def _heaviside_check(compute: torch.dtype, result: torch.dtype, a: Any, b: Any) -> None:
    da = a.dtype if isinstance(a, torch.Tensor) else None
    db = b.dtype if isinstance(b, torch.Tensor) else None
    if da != db:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    refuse("heaviside", "complex")(compute, result, a, b)


def _heaviside(x: Any, v: Any) -> Any:
    return np.where(x == 0, v, x > 0)  # NaN input gives 0, as ATen's (x == 0 ? v : x > 0)


register_family("heaviside", _plain(_heaviside), Kind.DEFAULT, validate=_heaviside_check,
                out_same_dtype=True)  # ATen: "... for tensors with different dtypes" for out= too


def _xlogy(x: Any, y: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    r = np.where(x == 0, np.zeros((), x.dtype), x * np.log(y))
    return np.where(np.isnan(y), y, r)


register_family("xlogy", _xlogy, Kind.INT_TO_FLOAT, validate=refuse("xlogy", "complex"))


def _shift_operands(a: Any, b: Any) -> tuple[Any, Any, int]:
    bits = a.dtype.itemsize * 8
    bad = (b < 0) | (b >= bits)
    return bad, np.where(bad, 0, b).astype(a.dtype), bits


def _lshift(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    bad, s, _ = _shift_operands(a, b)
    return np.where(bad, np.zeros((), a.dtype), np.left_shift(a, s))


def _rshift(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    bad, s, bits = _shift_operands(a, b)
    fill = np.right_shift(a, np.asarray(bits - 1, a.dtype)) if a.dtype.kind == "i" else 0
    return np.where(bad, fill, np.right_shift(a, s)).astype(a.dtype)


for _name in ("bitwise_left_shift", "__lshift__", "__ilshift__"):
    register_family(_name, _lshift, Kind.DEFAULT,
                    validate=refuse(_name, "bool", "floating", "complex"))
for _name in ("bitwise_right_shift", "__rshift__", "__irshift__"):
    register_family(_name, _rshift, Kind.DEFAULT,
                    validate=refuse(_name, "bool", "floating", "complex"))


def _remainder(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    _zero_division_check(b, compute, a)
    return np.remainder(a, b)


def _fmod(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    _zero_division_check(b, compute, a)
    return np.fmod(a, b)


def _floor_divide(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    return floor_divide(a, b, compute)


register_family("remainder", _remainder, Kind.DEFAULT,
                validate=refuse("remainder", "bool", "complex"))
register_family("fmod", _fmod, Kind.DEFAULT, validate=refuse("fmod", "bool", "complex"))
register_family("floor_divide", _floor_divide, Kind.DEFAULT,
                validate=refuse("div_floor", "bool", "complex"), scalar_opmath=True)


def _pow(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    npd = np_dtype(compute)
    if not isinstance(a, np.ndarray):  # pow.Scalar: a Python base
        if a == 1 and not isinstance(a, bool) and compute != torch.bool:
            # ATen's pow_Scalar_out: base.equal(1.0) fills ones (1 ** nan is 1, complex too)
            return np.ones(np.shape(b), npd)
        a = np.asarray(a).astype(npd)
    if not isinstance(b, np.ndarray):  # pow.Tensor_Scalar: a Python exponent
        if compute.is_complex:
            # ATen's pow_tensor_scalar_kernel: sqrt, rsqrt, reciprocal (a complex division,
            # 0 where the base is infinite) and x*x, x*x*x, 1/(x*x) for these exponents
            special = {0.5: np.sqrt, -0.5: lambda x: np.divide(1, np.sqrt(x)),
                       -1: lambda x: np.divide(1, x), 2: lambda x: x * x,
                       3: lambda x: x * x * x, -2: lambda x: np.divide(1, x * x)}
            fn = special.get(complex(b))  # type: ignore[call-overload]
            if fn is not None:
                return fn(a)
        elif compute.is_floating_point and not isinstance(b, complex):
            # ATen's pow_tensor_scalar_kernel: exponent 0.5 is sqrt and -0.5 is rsqrt
            # (1 / sqrt: -0.0 gives -inf, -inf gives nan), except for float16, whose loop
            # calls pow itself (pow(-inf, 0.5) is inf, pow(-0.0, 0.5) is +0.0). (float16 and
            # bfloat16 results get the exponent already read in their dtype: a NumPy scalar.)
            if b in (0.5, -0.5) and result != torch.float16:
                root = np.sqrt(a)
                return root if b == 0.5 else np.divide(np.ones((), a.dtype), root)
            if b == 0.5:  # an array exponent: NumPy's scalar (and 0-dim) power takes sqrt
                if a.ndim == 0:
                    return np.power(a.reshape(1), np.full(1, 0.5, a.dtype)).reshape(())
                return np.power(a, np.full_like(a, 0.5))  # full_like: a's layout
            if result == torch.float32:
                # ATen raises a float tensor to a Scalar exponent held as double (its scalar
                # loop; the vectorized one reads it as float: expected failures)
                return np.power(a.astype(np.float64), float(b))
        b = np.asarray(b).astype(npd)
    elif compute.is_floating_point and b.shape != np.broadcast_shapes(np.shape(a), b.shape):
        # a tensor exponent broadcast over the base (a 0-dim one: float_power's double
        # exponent): CPU's loop calls std::pow per element (pow(-inf, 0.5) is inf), where
        # NumPy's power loop takes sqrt for a repeated 0.5 (nan); spell the exponent out
        a = np.asarray(a)
        full = np.empty_like(a) if a.shape == np.broadcast_shapes(a.shape, b.shape) else (
            np.empty(np.broadcast_shapes(a.shape, b.shape), npd))
        full[...] = b
        b = full
    elif compute.is_floating_point and b.ndim == 0 and np.ndim(a) == 0:  # NumPy's scalar path
        return np.power(np.reshape(a, 1), b.reshape(1)).reshape(())
    if compute.is_floating_point or compute.is_complex:
        return np.power(a, b)
    if compute == torch.bool:
        return np.logical_or(a, np.logical_not(b))
    like = a if b.ndim == 0 else None  # a Scalar exponent: the result in the base's layout
    a, b = np.broadcast_arrays(a, b)
    neg = b < 0
    r = np.power(a, np.where(neg, 0, b))
    if neg.any():
        # ATen's integer pow: x ** -n is 1 for x == 1, +-1 for x == -1, 0 otherwise.
        alt = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        r = np.where(neg, alt.astype(r.dtype), r)
    if like is not None and like.shape == r.shape:
        kept = np.empty_like(like, dtype=r.dtype)  # order K: like's strides
        kept[...] = r
        return kept
    return r


def _pow_check(compute: torch.dtype, result: torch.dtype, a: Any, b: Any) -> None:
    if isinstance(b, torch.Tensor):
        refuse("pow", "bool")(compute, result, a, b)
    if (isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor)
            and not (a.dtype.is_floating_point or a.dtype.is_complex)
            and isinstance(b, int) and not isinstance(b, bool) and b < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _pow_exponent(result: torch.dtype, a: Any, b: Any) -> None:
    """ATen reads a Scalar exponent as a double (complex double) for float32/float64 and complex
    results, in the result dtype itself for integral, float16 and bfloat16 ones."""
    if isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        wide = torch.complex128 if result.is_complex else torch.float64
        checked_scalar(b, result if result in LOW_PRECISION or not (
            result.is_floating_point or result.is_complex) else wide)


register_family("pow", _pow, Kind.DEFAULT, validate=_pow_check, raw_scalars=True,
                scalars=_pow_exponent, skip=("pow.Scalar_out",))
_pow_scalar_out = make_pointwise("pow.Scalar_out", _pow, Kind.DEFAULT, nin=2, mode="out",
                                 argnames=("self", "exponent"), validate=_pow_check,
                                 raw_scalars=True, scalars=_pow_exponent)


@register("pow.Scalar_out")
def pow_scalar_out(self: Any, exponent: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    """ATen's pow_Scalar_out: a base that ``equal(1.0)`` (1, 1.0, 1+0j; not True) fills ``out``
    with ones, whatever its dtype (no result-type cast check: 1 ** float64 into a bool out is
    True); another base goes through pow.Tensor_Tensor_out and its checks."""
    if self == 1 and not isinstance(self, bool):
        check_same_device("pow.Scalar_out", (exponent,), ("exponent",))
        return write_out(out, np.ones(tuple(exponent.shape), NP_DTYPE[out.dtype]))
    return _pow_scalar_out(self, exponent, out=out)

# --------------------------------------------------------------------------------------------
# Ternary and clamp
# --------------------------------------------------------------------------------------------


def _where_check(compute: torch.dtype, result: torch.dtype, cond: Any, a: Any, b: Any) -> None:
    if cond.dtype not in (torch.bool, torch.uint8):
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{scalar_type_name(cond.dtype)}"
        )


def _where_kernel(mode: str, name: str) -> Callable[..., Any]:
    def kernel(condition: torch.Tensor, self: Any, other: Any, *, out: Any = None) -> Any:
        check_same_device(name, (condition, self, other), ("condition", "self", "other"))
        _where_check(torch.bool, torch.bool, condition, self, other)
        result = promote(self, other)
        if out is not None and out.dtype != result:
            raise RuntimeError(
                f"Expected out type to be {scalar_type_name(result)} but got "
                f"{scalar_type_name(out.dtype)}"
            )
        npd = np_dtype(result)
        c = to_numpy(condition)
        try:
            value = np.where(c, operand(self, npd), operand(other, npd))
        except ValueError:
            _raise_broadcast(condition, self, other)
            raise
        return _finish(name, mode, value, result, None, out)

    return kernel


register("where.self")(_where_kernel("functional", "where.self"))
register("where.self_out")(_where_kernel("out", "where.self_out"))


def _clamp(x: Any, lo: Any = None, hi: Any = None, *, compute: torch.dtype,
           result: torch.dtype) -> Any:
    # maximum/minimum propagate NaN from either side, as ATen's clamp does.
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _clamp_check(compute: torch.dtype, result: torch.dtype, x: Any, lo: Any = None,
                 hi: Any = None) -> None:
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if compute.is_complex:
        raise early_refusal("clamp is not supported for complex types")
    # ATen's bool support: only the tensor-bound single-sided kernels (maximum/minimum).
    one_tensor_bound = (lo is None) != (hi is None) and isinstance(
        hi if lo is None else lo, torch.Tensor)
    if not one_tensor_bound:
        refuse("clamp", "bool")(compute, result, x, lo, hi)


def _scalar_bounds(result: torch.dtype, *bounds: Any) -> None:
    """Scalar bounds as ATen's clamp kernels read them (``min.to<scalar_t>()``): in the result
    dtype, after the out=/in-place checks (a ``scalars`` hook of :func:`make_pointwise`)."""
    for b in bounds:
        if b is not None and not isinstance(b, torch.Tensor):
            checked_scalar(b, result)


def _bound_check(name: str) -> Callable[..., None]:
    def validate(compute: torch.dtype, result: torch.dtype, x: Any, bound: Any) -> None:
        if compute.is_complex:
            if isinstance(bound, torch.Tensor):  # ATen checks shapes and casts first here
                raise NotImplementedError("clamp is not supported for complex types")
            raise early_refusal("clamp is not supported for complex types")
        if not isinstance(bound, torch.Tensor):
            refuse(name, "bool")(compute, result, x, bound)

    return validate


def _clamp_operands(x: Any, *bounds: Any) -> tuple[Any, ...]:
    """A floating ``self`` is not promoted by Scalar bounds: ATen reads them as doubles (a
    complex one without an imaginary part is its real part; one with is refused)."""
    if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
        bounds = tuple(checked_scalar(b, torch.float64) if isinstance(b, complex) else b
                       for b in bounds)
    return (x, *bounds)


register_family("clamp", _clamp, Kind.DEFAULT, validate=_clamp_check,
                out_same_dtype="scalar_args", scalars=_scalar_bounds, prepare=_clamp_operands)
register_family("clamp_min", _plain(np.maximum), Kind.DEFAULT, validate=_bound_check("clamp_min"),
                out_same_dtype="scalar_args", scalars=_scalar_bounds)
register_family("clamp_max", _plain(np.minimum), Kind.DEFAULT, validate=_bound_check("clamp_max"),
                out_same_dtype="scalar_args", scalars=_scalar_bounds)


def _lerp(a: Any, b: Any, w: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    """ATen's ``w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w)``, compiled with fused
    multiply-adds on CPU: each product-and-sum rounds once, so ``b - 2 * (b - a)`` near the top
    of the range is finite. Real dtypes emulate that by the product and sum in a wider type."""
    diff = b - a
    small = np.abs(w) < 0.5
    if diff.dtype.kind == "c":
        return np.where(small, a + w * diff, b - diff * (1 - w))
    npd = diff.dtype
    wide = np.float64 if npd.itemsize < 8 else np.longdouble
    w_ = np.asarray(w).astype(npd)
    d = diff.astype(wide)
    lo = w_.astype(wide) * d + np.asarray(a).astype(wide)
    hi = np.asarray(b).astype(wide) - d * (1 - w_).astype(wide)
    return np.where(small, lo, hi).astype(npd)


def _lerp_check(compute: torch.dtype, result: torch.dtype, a: Any, b: Any, w: Any) -> None:
    if isinstance(b, torch.Tensor) and b.dtype != a.dtype:
        raise RuntimeError(
            f"expected dtype {a.dtype} for `end` but got dtype {b.dtype}".replace("torch.", "")
        )
    if isinstance(w, torch.Tensor) and w.dim() > 0 and w.dtype != a.dtype:
        raise RuntimeError(
            f"expected dtype {a.dtype} for `weight` but got dtype {w.dtype}".replace("torch.", "")
        )
    if isinstance(w, torch.Tensor):
        # ATen's meta: a 0-dim weight promotes with self and end (int64 self, float32 0-dim
        # weight: float32; out= then takes any dtype the result casts to), another weight
        # must have self's dtype and out= must have it too; the dispatch is on the common dtype
        refuse("lerp_kernel_tensor", "bool", "integral", torch.complex32)(compute, result, a, b, w)
        return
    if not isinstance(w, torch.Tensor) and not (a.dtype.is_floating_point or a.dtype.is_complex):
        # a Scalar weight does not promote: ATen dispatches on self's dtype (after the shape
        # and out= cast checks, as for every refusal)
        raise NotImplementedError(f'"lerp_kernel_scalar" not implemented for '
                                  f"'{scalar_type_name(a.dtype)}'")
    refuse("lerp", "bool", "integral")(compute, result, a)


def _lerp_operands(a: Any, b: Any, w: Any) -> tuple[Any, Any, Any]:
    """A Scalar weight does not take part in promotion: a complex one is read in the opmath type
    of a real ``self`` (its real part, or CPU's refusal when it has an imaginary part). An
    integral or bool ``self`` is refused by the dtype dispatch (``_lerp_check``) after the out=
    and in-place cast checks, which then see ``self``'s dtype: the weight stands as ``False``."""
    if isinstance(a, torch.Tensor) and not isinstance(w, torch.Tensor) and not (
            a.dtype.is_floating_point or a.dtype.is_complex):
        return a, b, False
    if isinstance(w, complex) and isinstance(a, torch.Tensor) and not a.dtype.is_complex:
        w = checked_scalar(w, get_computation_dtype(a.dtype)) if a.dtype.is_floating_point \
            else w.real
    return a, b, w


def _opmath_scalars(result: torch.dtype, *operands: Any, **kw: Any) -> None:
    """Python-number operands and keyword scalars read in the opmath type (float32 for
    float16/bfloat16): ``lerp``'s weight, ``addcmul``'s value."""
    compute = get_computation_dtype(result)
    for v in (*operands, *kw.values()):
        if v is not None and not isinstance(v, torch.Tensor):
            checked_scalar(v, compute)


register_family("lerp", _lerp, Kind.DEFAULT, validate=_lerp_check, scalar_opmath=True,
                scalars=_opmath_scalars, prepare=_lerp_operands, out_same_dtype="tensor_weight")


def _addcmul(s: Any, t1: Any, t2: Any, *, compute: torch.dtype, result: torch.dtype,
             value: Any = 1) -> Any:
    if compute == torch.bool:
        return np.logical_or(s, np.logical_and(bool(value), np.logical_and(t1, t2)))
    return addcmul_value(s, t1, t2, value)


def addcmul_value(s: Any, t1: Any, t2: Any, value: Any) -> Any:
    """``s + value * t1 * t2`` as CPU's addcmul forms it (also the kernel of its foreach
    routes): float32/float64 fused, ``fma(value * t1, t2, self)`` with one rounding, so a
    product past the dtype's range added to an infinity keeps it (float32 inf + 814741 *
    -1.35e33 is inf, float64 -inf + 1.6 * -1.4e302 * -3.3e253 is -inf, not NaN) and a
    cancelling sum keeps the product's low bits (float64 -1 + (1 + 2**-30)**2 is
    1.8626451500983e-09, not 2**-29)."""
    p = np.asarray(value).astype(s.dtype) * t1
    rt = np.result_type(s, p, t2)
    wide = {np.dtype(NP_DTYPE[k]): w for k, w in _FUSED_IN.items()}.get(rt)
    if wide is not None:
        with np.errstate(all="ignore"):
            return _fma_in(wide, s, p, t2).astype(rt)
    return s + p * t2


def _addcdiv(s: Any, t1: Any, t2: Any, *, compute: torch.dtype, result: torch.dtype,
             value: Any = 1) -> Any:
    return s + np.asarray(value).astype(s.dtype) * t1 / t2  # ATen's order: (value * t1) / t2


def _addcdiv_check(compute: torch.dtype, result: torch.dtype, s: Any, t1: Any, t2: Any,
                   value: Any = 1) -> None:
    if not (t1.dtype.is_floating_point or t1.dtype.is_complex) and not (
            t2.dtype.is_floating_point or t2.dtype.is_complex):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes."
        )


register_family("addcmul", _addcmul, Kind.DEFAULT, kw=("value",),
                validate=refuse("addcmul_cpu_out", "bool"), scalars=_opmath_scalars)
register_family("addcdiv", _addcdiv, Kind.DEFAULT, kw=("value",), validate=_addcdiv_check,
                scalars=_opmath_scalars)


# --------------------------------------------------------------------------------------------
# More pointwise families
# --------------------------------------------------------------------------------------------


def _gcd(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    """ATen's ``calc_gcd``: Euclid on ``abs`` of each operand in the operand's own type, so
    abs(INT_MIN) wraps to INT_MIN and gcd(INT_MIN, INT_MAX) is -1 (np.gcd says 1)."""
    a, b = np.broadcast_arrays(np.abs(a), np.abs(b))
    a, b = a.copy(), b.copy()
    with quiet():
        while True:
            live = a != 0
            if not live.any():
                return b
            c = a.copy()
            a = np.where(live, np.fmod(b, np.where(live, a, 1)), 0).astype(a.dtype)
            b = np.where(live, c, b)


def _lcm(a: Any, b: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    """ATen's ``abs(a / gcd * b)`` in C++'s int arithmetic: int8/int16 are widened to int before
    the product and abs, so an overflow wraps only when the result is stored."""
    wide = np.promote_types(a.dtype, np.int32)
    g = np.gcd(a, b).astype(wide)
    safe = np.where(g == 0, 1, g)
    r = np.abs(a.astype(wide) // safe * b.astype(wide))
    return np.where(g == 0, 0, r).astype(a.dtype)


register_family("gcd", _gcd, Kind.DEFAULT, validate=refuse("gcd", "bool", "floating", "complex"))
register_family("lcm", _lcm, Kind.DEFAULT, validate=refuse("lcm", "bool", "floating", "complex"))


def _entr(x: Any) -> Any:
    """-x log x for x > 0, 0 at 0, -inf below, NaN kept."""
    pos = np.where(x > 0, x, 1)
    r = np.where(x > 0, -x * np.log(pos), np.where(x == 0, 0, -np.inf)).astype(x.dtype)
    return np.where(np.isnan(x), x, r)


register_family("special_entr", _plain(_entr), Kind.INT_TO_FLOAT,
                validate=refuse("entr", "complex"))


def _xlog1py(x: Any, y: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
    r = np.where(x == 0, np.zeros((), x.dtype), x * np.log1p(y))
    return np.where(np.isnan(y), y, r)


register_family("special_xlog1py", _xlog1py, Kind.INT_TO_FLOAT,
                validate=refuse("xlog1py", "complex"))
def _zeta(x: Any, q: Any) -> Any:
    """Hurwitz zeta. Where every term pow(q + i, -x) underflows to 0 (SciPy then returns the
    limit 0), ATen's Cephes loop (in double) reaches its Euler-Maclaurin tail with s = b = 0
    and returns NaN when 0 meets an infinity there: w = q = +inf (b * w), or the running
    product a = x (x + 1) ... (x + 22) overflowing (inf * 0)."""
    r = _special().zeta(x, q)
    with quiet():
        xd, qd = np.asarray(x, np.float64), np.asarray(q, np.float64)
        tail = sum(np.log(np.maximum(xd + j, 1.0)) for j in range(23))
        nan = (xd > 1) & (qd > 0) & ((qd == np.inf) | (
            (np.power(qd, -xd) == 0) & (tail > np.log(np.finfo(np.float64).max))))
    return np.where(nan, np.asarray(np.nan, np.result_type(r)), r)


register_family("special_zeta", _plain(_zeta), Kind.INT_TO_FLOAT,
                validate=refuse("zeta_cpu", "complex", *LOW_PRECISION))


def _trigamma(x: Any) -> Any:
    """ATen's calc_trigamma (Math.h) in x's dtype (float32 for the half types): below 1/2 the
    reflection pi^2 / sin^2(pi x) - trigamma(1 - x), then six recurrence steps and the
    asymptotic series. At a negative integer pi x is not one in floating point, so the result
    is large and finite (trigamma(-1.02e10) = 82.5 in float32), and -inf gives NaN; SciPy's
    polygamma(1, x) returns inf for both."""
    t = x.dtype.type
    with quiet():
        reflect = x < t(0.5)
        pi_x = t(np.pi) * x  # rounded to x's dtype, then sin as libm's (correctly rounded)
        s = np.sin(pi_x.astype(np.float64)).astype(x.dtype)
        result = np.where(reflect, -(t(np.pi) * t(np.pi)) / (s * s), t(0))
        y = np.where(reflect, t(1) - x, x)
        for _ in range(6):
            result = result + t(1) / (y * y)
            y = y + t(1)
        ixx = t(1) / (y * y)
        series = t(1) / t(6) - ixx * (t(1) / t(30) - ixx * (t(1) / t(42)))
        result = result + (t(1) + t(1) / (t(2) * y) + ixx * series) / y
        return np.where(reflect, -result, result).astype(x.dtype)


def _polygamma_kernel(mode: str) -> Callable[..., Any]:
    def kernel(n: int, self: torch.Tensor, *, out: torch.Tensor | None = None) -> Any:
        if n < 0:
            raise RuntimeError("polygamma(n, x) does not support negative n.")
        compute, result = dtypes(Kind.INT_TO_FLOAT, self)
        refuse("polygamma", "complex")(compute, result, self)
        x = operand(self, np_dtype(compute))
        with quiet():
            if n == 0:
                v = _digamma(x)
            elif n == 1:
                v = _trigamma(x)
            else:  # ATen's calc_polygamma: +-exp(lgamma(n + 1)) zeta(n + 1, x), zeta's NaNs too
                v = (_special().polygamma(n, x) * np.where(
                    np.isnan(_zeta(np.asarray(n + 1.0, x.dtype), x)), np.nan, 1.0)
                     ).astype(x.dtype)
        return _finish("polygamma", mode, v, result, None, out)

    return kernel


register("polygamma.out")(_polygamma_kernel("out"))


def _mvlgamma_vec(x: Any, p: int, dt: Any) -> Any:
    """log Gamma_p(x) = p(p-1)/4 log(pi) + sum_{j<p} lgamma(x - j/2), step by step in x's dtype
    as ATen's composite (``arange + x``, ``lgamma_``, ``sum``, ``add_``): each step rounds, so a
    float16 lgamma beyond 65504 is inf before the sum. The result is contiguous whatever x's
    layout, as the composite's: its sum(-1) over the [..., p] arguments lays it out in C order."""
    dt = np.dtype(dt)
    opm = np.dtype(np.float32) if dt.itemsize < 4 else dt
    j = (np.arange(p, dtype=np.float64) / 2).astype(opm).reshape((p,) + (1,) * x.ndim)
    args = (x.astype(opm)[None] - j).astype(dt)
    terms = _lgamma(args.astype(opm)).astype(dt)
    total = terms.astype(opm).sum(0).astype(dt)
    # asarray, not ascontiguousarray: that makes a 0-d result 1-d
    return np.asarray((total.astype(opm) + opm.type(p * (p - 1) / 4 * np.log(np.pi))).astype(dt),
                      order="C")


def _mvlgamma_check(compute: torch.dtype, result: torch.dtype, x: Any, p: int = 1) -> None:
    if x.dtype == torch.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    refuse("arange_cpu", "complex")(compute, result, x)


register_family("mvlgamma", lambda x, *, compute, result, p=1: _mvlgamma_vec(x, p,
                                                                              np_dtype(result)),
                Kind.INT_TO_FLOAT, kw=("p",), validate=_mvlgamma_check)


@register("complex.out")
def complex_out(real: torch.Tensor, imag: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {scalar_type_name(real.dtype)} but got scalar type "
            f"{scalar_type_name(imag.dtype)} for second argument"
        )
    return _complex_like(real, imag, out, _pair)


def _pair(re: Any, im: Any) -> Any:
    """The complex array with these exact parts: ``re + 1j * im`` turns a NaN or infinite
    imaginary part into a NaN real part (1j * nan is nan+nanj), as CPU's complex(re, im) does
    not."""
    z = np.empty(np.broadcast_shapes(np.shape(re), np.shape(im)),
                 np.result_type(re, im, np.complex64))
    z.real, z.imag = re, im
    return z


def _complex_like(real: torch.Tensor, imag: torch.Tensor, out: torch.Tensor, fn: ArrayFn
                  ) -> torch.Tensor:
    want = {torch.float16: torch.complex32, torch.float32: torch.complex64,
            torch.float64: torch.complex128}.get(real.dtype)
    if want is not None and out.dtype != want:
        raise RuntimeError(
            f"Expected object of scalar type {scalar_type_name(want)} but got scalar type "
            f"{scalar_type_name(out.dtype)} for argument 'out'"
        )
    if real.dtype not in (torch.float32, torch.float64, torch.float16):
        raise RuntimeError(
            "Expected both inputs to be Half, Float or Double tensors but got "
            f"{scalar_type_name(real.dtype)} and {scalar_type_name(imag.dtype)}"
        )
    r, i = np.broadcast_arrays(to_numpy(real), to_numpy(imag))
    with quiet():
        return write_out(out, fn(r, i.astype(r.dtype)), out.dtype, check=False)


@register("polar.out")
def polar_out(abs: torch.Tensor, angle: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
    if abs.dtype != angle.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {scalar_type_name(abs.dtype)} but got scalar type "
            f"{scalar_type_name(angle.dtype)} for second argument"
        )
    return _complex_like(abs, angle, out, lambda a, t: _pair(a * np.cos(t), a * np.sin(t)))


@register("frexp.Tensor_out")
def frexp_out(self: torch.Tensor, *, mantissa: torch.Tensor, exponent: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
    if not self.dtype.is_floating_point:
        raise RuntimeError(
            "torch.frexp() only supports floating-point dtypes"
        )
    # ATen's frexp_out takes no other out dtypes: mantissa has self's, exponent is int32
    if mantissa.dtype != self.dtype:
        raise RuntimeError(f"torch.frexp() expects mantissa to have dtype "
                           f"{cpp_type_name(self.dtype)} but got {cpp_type_name(mantissa.dtype)}")
    if exponent.dtype != torch.int32:
        raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                           f"{cpp_type_name(exponent.dtype)}")
    x = to_numpy(self)
    m, e = np.frexp(x.astype(np.float32) if self.dtype in LOW_PRECISION else x)
    write_out(mantissa, m, self.dtype)
    write_out(exponent, e.astype(np.int32), torch.int32)
    return mantissa, exponent


# --------------------------------------------------------------------------------------------
# Special functions: Bessel/Airy (float32/float64 only, as on CPU) and orthogonal polynomials
# --------------------------------------------------------------------------------------------

_FLOAT_ONLY: tuple[str | torch.dtype, ...] = ("complex", *LOW_PRECISION)


def _sp_unary(fname: str) -> ArrayFn:
    def f(x: Any) -> Any:
        return getattr(_special(), fname)(x)

    return f


def _airy_ai(x: Any) -> Any:
    """Ai(x): ATen's 0 beyond x = 103.892 and NaN at +-inf; below x = -1e6, where SciPy's airy
    gives NaN, the leading term of the asymptotic series (relative error below 1e-9 there)."""
    with quiet():
        xd = np.asarray(x, np.float64)
        v = _special().airy(xd)[0]
        far = xd < -1e6
        if far.any():
            m = np.abs(np.where(far, xd, -1.0))
            asym = np.sin(2.0 / 3.0 * m * np.sqrt(m) + np.pi / 4) / (np.sqrt(np.pi) * m ** 0.25)
            v = np.where(far, asym, v)
        v = np.where(xd > 103.892, 0.0, v)
        v = np.where(np.isinf(xd), np.nan, v)
    return v.astype(np.result_type(x, np.float32))


SPECIAL_UNARY: dict[str, ArrayFn] = {
    "special_bessel_j0": _sp_unary("j0"),
    "special_bessel_j1": _sp_unary("j1"),
    "special_bessel_y0": _sp_unary("y0"),
    "special_bessel_y1": _sp_unary("y1"),
    "special_modified_bessel_i0": _sp_unary("i0"),
    "special_modified_bessel_i1": _sp_unary("i1"),
    "special_modified_bessel_k0": _sp_unary("k0"),
    "special_modified_bessel_k1": _sp_unary("k1"),
    "special_scaled_modified_bessel_k0": _sp_unary("k0e"),
    "special_scaled_modified_bessel_k1": _sp_unary("k1e"),
    "special_spherical_bessel_j0": lambda x: _special().spherical_jn(0, x),
    "special_airy_ai": lambda x: _airy_ai(x),
}

for _name, _f in SPECIAL_UNARY.items():
    register_family(_name, _plain(_f), Kind.INT_TO_FLOAT,
                    validate=refuse(_name.removeprefix("special_") + "_cpu", *_FLOAT_ONLY))


def _degree(n: Any) -> Any:
    """ATen truncates the degree to an integer; negative degrees give 0."""
    return np.trunc(n).astype(np.int64) if n.dtype.kind in "fc" else n.astype(np.int64)


def _poly(kind: str) -> ArrayFn:
    def f(x: Any, n: Any, *, compute: torch.dtype, result: torch.dtype) -> Any:
        out = _f(x, n)
        # a scalar operand broadcast (stride 0) makes NumPy's result C-ordered; CPU lays it out
        # like the tensor operand of the result's shape (a transposed x gives a transposed
        # result); an operand that broadcasts (size 1 against 0 or 4) lends no layout
        like = next((a for a in (x, n) if np.shape(a) == out.shape), None)
        if like is not None and out.ndim and out.strides != np.empty_like(like, out.dtype).strides:
            laid = np.empty_like(like, out.dtype)
            laid[...] = out
            return laid
        return out

    def _f(x: Any, n: Any) -> Any:
        k = _degree(np.asarray(n))
        x, k = np.broadcast_arrays(x, k)
        if kind.startswith("shifted_"):
            x = 2 * x - 1
        base = kind.removeprefix("shifted_")
        if base in ("t", "u", "v", "w"):
            v = _chebyshev(base, np.asarray(x), k, trig_above=6 if kind != base else None)
        else:  # "h", "he", "l", "p"
            v = _recurrence(base, x, k)
        return np.where(k < 0, 0, v)

    return f


#: degrees up to this run ATen's three-term recurrence; higher ones take SciPy's closed forms
_RECURRENCE_MAX = 1 << 14


def _libm(fn: Any, v: Any) -> Any:
    """``fn`` of a float32 array as C's correctly rounded ``cosf``/``sinf``/``acosf`` give it (what
    ATen's float kernels call): computed in float64 and rounded once. NumPy's own float32 SIMD
    trigonometry is a few ulps off and differs with the CPU it dispatches to (AVX512 vs AVX2),
    which T_50(0.3) multiplies into 1e-4."""
    v = np.asarray(v)
    if v.dtype == np.float32:
        return fn(v.astype(np.float64)).astype(np.float32)
    return fn(v)


def _chebyshev(kind: str, x: Any, n: Any, trig_above: int | None = None) -> Any:
    """Chebyshev T/U/V/W as ATen's ``chebyshev_polynomial_*_forward`` (Math.h) computes them in
    x's dtype: its early returns at |x| = 1, its trigonometric form for |x| < 1 above degree 6
    (T) or 8, 1 at degree 0 whatever x is (NaN, inf), then its three-term recurrence, so an
    overflow gives CPU's inf - inf = NaN where SciPy's closed forms give inf (each step
    (x + x) * q - p rounded once, the fused multiply-add CPU's compiler makes). The shifted
    polynomials are these at x + x - 1 (ATen's early returns at x = 1 and x = 0 are those),
    with the trigonometric forms above degree 6 for all four (``trig_above``)."""
    dt = x.dtype
    one = np.ones_like(x)
    nf = n.astype(dt)
    with quiet():
        first = {"t": x, "u": x + x, "v": x + x - one, "w": x + x + one}[kind]
        # the recurrence, stopped where every element still running is NaN
        p, q = one, first
        r = np.where(n <= 0, one, first)
        if trig_above is None:
            trig_above = 6 if kind == "t" else 8
        trig_form = (n > trig_above) & (np.abs(x) < 1)
        live = (n >= 2) & ~trig_form & (np.abs(x) != 1)
        k = 2
        wide = np.float64 if dt.itemsize < 8 else np.longdouble  # one rounding: CPU's FMA
        two_x = (x + x).astype(wide)
        while live.any() and k <= _CHEB_MAX:
            nxt = (two_x * q.astype(wide) - p.astype(wide)).astype(dt)
            r = np.where(live, nxt, r)
            p, q = np.where(live, q, p), np.where(live, nxt, q)
            k += 1
            live = live & (n >= k) & ~np.isnan(q)
        if live.any():  # degrees beyond _CHEB_MAX with x close to +-1: SciPy's closed forms
            sp = _special()
            big = np.where(live, n, 0)
            closed = {"t": sp.eval_chebyt(big, x), "u": sp.eval_chebyu(big, x),
                      "v": sp.eval_chebyu(big, x) - sp.eval_chebyu(np.maximum(big - 1, 0), x),
                      "w": sp.eval_chebyu(big, x) + sp.eval_chebyu(np.maximum(big - 1, 0), x)}
            r = np.where(live, closed[kind].astype(dt), r)
        # |x| < 1 above degree 6 (T) or 8: the trigonometric forms
        acos = _libm(np.arccos, np.where(np.abs(x) < 1, x, 0)).astype(dt)
        if kind == "t":
            trig = _libm(np.cos, nf * acos)
        elif kind == "u":
            s1 = _libm(np.sin, acos)
            trig = np.where(s1 != 0, _libm(np.sin, (nf + 1) * acos) / s1,
                            (nf + 1) * _libm(np.cos, (nf + 1) * acos) / x)
        elif kind == "v":
            half = acos / dt.type(2)
            trig = np.where(_libm(np.sin, half) != 1, _libm(np.cos, (nf + dt.type(0.5)) * acos) / _libm(np.cos, half),
                            np.where(n % 2 == 0, nf + nf + 1, -(nf + nf + 1)))
        else:
            half = acos / dt.type(2)
            trig = np.where(_libm(np.cos, half) != 1, _libm(np.sin, (nf + dt.type(0.5)) * acos) / _libm(np.sin, half),
                            np.where(x > 0, nf + nf + 1, np.where(n % 2 == 0, one, -one)))
        r = np.where(trig_form, trig, r)
        # |x| = 1
        odd = n % 2 == 1
        at_one = {"t": np.where((x > 0) | ~odd, one, -one),
                  "u": np.where((x > 0) | ~odd, nf + 1, -(nf + 1)),
                  "v": np.where(x > 0, one, np.where(~odd, nf + nf + 1, -(nf + nf + 1))),
                  "w": np.where(x > 0, nf + nf + 1, np.where(~odd, one, -one))}[kind]
        r = np.where(np.abs(x) == 1, at_one, r)
    return r.astype(dt)


#: a Chebyshev recurrence runs at most this many steps (ATen runs n); x with |x| > 1 reaches
#: NaN (inf - inf) long before, only x within a few ulps of +-1 is left to the closed forms
_CHEB_MAX = 1 << 20


def _recurrence(kind: str, x: Any, n: Any) -> Any:
    """Hermite H/He, Laguerre L and Legendre P as ATen's ``*_polynomial_*_forward`` compute
    them (Math.h): its early returns, then its three-term recurrence in the compute dtype, so an
    overflow gives CPU's inf - inf = NaN where SciPy's closed forms give inf."""
    sp = _special()
    x = np.asarray(x)
    one = np.ones_like(x)
    with quiet():
        if kind == "h":
            p, q, first = one, x + x, x + x
        elif kind == "he":
            p, q, first = one, x, x
        elif kind == "l":
            p, q, first = one, 1 - x, 1 - x
        else:
            p, q, first = one, x, x
        r = np.where(n <= 0, one, first)
        top = int(min(n.max(initial=0), _RECURRENCE_MAX))
        dt = x.dtype
        wide = np.float64 if dt.itemsize < 8 else np.longdouble

        def fms(a: Any, b: Any, c: Any) -> Any:
            """a * b - c rounded once, as the fused multiply-add CPU's compiler makes of it
            (exact for float32 through double; float64 through long double)."""
            return (np.asarray(a).astype(wide) * np.asarray(b).astype(wide)
                    - np.asarray(c).astype(wide)).astype(dt)

        for k in range(1, top):
            kp = (k * p).astype(dt) if kind != "h" else ((2 * k) * p).astype(dt)
            if kind == "h":
                nxt = fms(x + x, q, kp)
            elif kind == "he":
                nxt = fms(x, q, kp)
            elif kind == "l":
                nxt = fms((k + k) + (1 - x), q, kp) / dt.type(k + 1)
            else:
                nxt = fms((k + k + 1) * x, q, kp) / dt.type(k + 1)
            live = n > k
            r = np.where(live, nxt, r)
            p, q = np.where(live, q, p), np.where(live, nxt, q)
        big = n > _RECURRENCE_MAX
        if big.any():
            closed = {"h": sp.eval_hermite, "he": sp.eval_hermitenorm, "l": sp.eval_laguerre,
                      "p": sp.eval_legendre}[kind]
            r = np.where(big, closed(np.where(big, n, 0), x), r)
        if kind == "l":  # ATen: L_n(0) = 1 before anything else
            r = np.where(x == 0, one, r)
        if kind == "p":  # ATen: P_n(+-1) = 1, or -1 for x = -1 and odd n
            r = np.where(np.abs(x) == 1, np.where((x > 0) | (n % 2 == 0), one, -one), r)
    return r.astype(x.dtype)


POLYNOMIALS = {
    "special_chebyshev_polynomial_t": "t", "special_chebyshev_polynomial_u": "u",
    "special_chebyshev_polynomial_v": "v", "special_chebyshev_polynomial_w": "w",
    "special_shifted_chebyshev_polynomial_t": "shifted_t",
    "special_shifted_chebyshev_polynomial_u": "shifted_u",
    "special_shifted_chebyshev_polynomial_v": "shifted_v",
    "special_shifted_chebyshev_polynomial_w": "shifted_w",
    "special_hermite_polynomial_h": "h", "special_hermite_polynomial_he": "he",
    "special_laguerre_polynomial_l": "l", "special_legendre_polynomial_p": "p",
}

for _name, _kind in POLYNOMIALS.items():
    register_family(_name, _poly(_kind), Kind.INT_TO_FLOAT,
                    validate=refuse(_name.removeprefix("special_") + "_cpu", *_FLOAT_ONLY))
