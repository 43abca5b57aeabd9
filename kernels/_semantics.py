"""CPU semantics every kernel shares, decided by torch's own rules.

* Result dtypes come from ``torch.result_type`` (C++, knows wrapped Python numbers) and
  ``torch._prims_common.elementwise_dtypes`` with an ``ELEMENTWISE_TYPE_PROMOTION_KIND`` — never
  from a table of our own. Both answers are cached per dtype signature.
* ``out=``: a result type the ``out`` tensor cannot hold safely (``can_safe_cast_to``) is refused
  with CPU's message; a wrong-shaped ``out`` is resized (with CPU's deprecation warning when it
  had elements); ``out`` is returned.
* In-place: ``self`` is mutated and returned; a result type ``self`` cannot hold is refused with
  CPU's message, a result shape that is not ``self``'s too.
* Dtype support: :func:`check_dtype` is CPU's one refusal of a dtype a kernel is not compiled for
  (``"op" not implemented for 'Half'``); the dtype sets it is given (:data:`FLOATING`,
  :data:`REAL`...) are built from :mod:`opdb.dtypes`, where the twelve dtypes are defined.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from torch._prims_common import (
    ELEMENTWISE_TYPE_PROMOTION_KIND,
    can_safe_cast_to,
    elementwise_dtypes,
)

from kernels._tensor import DEVICE, NP_DTYPE, from_numpy, np_dtype, restride, to_numpy
from opdb import dtypes as _dtypes

__all__ = [
    "ALL",
    "BOOL",
    "COMPLEX",
    "FLOATING",
    "INTEGRAL",
    "LOW_PRECISION",
    "REAL",
    "Kind",
    "ScalarConversionError",
    "aten_type_name",
    "check_dtype",
    "checked_scalar",
    "check_out_exact",
    "check_result_fits",
    "cpp_type_name",
    "compute_array",
    "dtype_set",
    "dtypes",
    "dtypes3",
    "emit",
    "exact_outs",
    "held_exact",
    "infer_size",
    "opmath",
    "promote",
    "quiet",
    "resize_out",
    "scalar_type_name",
    "write_inplace",
    "write_out",
]

Kind = ELEMENTWISE_TYPE_PROMOTION_KIND

# --------------------------------------------------------------------------------------------
# Dtype sets (of opdb.dtypes' twelve), names, and CPU's refusal of an unsupported dtype
# --------------------------------------------------------------------------------------------
ALL = frozenset(_dtypes.torch_dtypes())
BOOL = frozenset(_dtypes.torch_dtypes(_dtypes.BOOL))
INTEGRAL = frozenset(_dtypes.torch_dtypes(_dtypes.INTEGRAL))
FLOATING = frozenset(_dtypes.torch_dtypes(_dtypes.FLOATING))
COMPLEX = frozenset(_dtypes.torch_dtypes(_dtypes.COMPLEX))
#: float16/bfloat16: CPU computes them in float32 ("opmath") and rounds once.
LOW_PRECISION = frozenset(_dtypes.torch_dtypes(_dtypes.LOW_PRECISION))
#: Integral and floating: what ATen's ``AT_DISPATCH_ALL_TYPES`` covers.
REAL = INTEGRAL | FLOATING



@functools.cache
def _low_np() -> frozenset[np.dtype[Any]]:
    """The NumPy dtypes of :data:`LOW_PRECISION` (made on first use: bfloat16's imports
    ``ml_dtypes``, :data:`kernels._tensor.NP_DTYPE`)."""
    return frozenset(NP_DTYPE[d] for d in LOW_PRECISION)


def _beyond_the_twelve(flag: str) -> frozenset[torch.dtype]:
    """torch's other dtypes (complex32, uint16..., float8...) in a category, by torch's flags."""
    others = {d for d in vars(torch).values() if isinstance(d, torch.dtype)} - ALL
    if flag == "complex":
        return frozenset(d for d in others if d.is_complex)
    if flag == "floating":
        return frozenset(d for d in others if d.is_floating_point)
    return frozenset(d for d in others if not (d.is_complex or d.is_floating_point))


#: A category refusal covers the dtypes promotion can reach beyond the twelve: ``float16`` with a
#: complex Scalar computes in complex32, which CPU refuses as it refuses complex64.
_BY_CATEGORY = {"bool": BOOL, "integral": INTEGRAL | _beyond_the_twelve("integral"),
                "floating": FLOATING | _beyond_the_twelve("floating"),
                "complex": COMPLEX | _beyond_the_twelve("complex")}


def dtype_set(*specs: str | torch.dtype) -> frozenset[torch.dtype]:
    """The dtypes named by ``specs``: categories of :mod:`opdb.dtypes` (``"bool"``,
    ``"integral"``, ``"floating"``, ``"complex"``; with torch's dtypes beyond the twelve that
    fall in them) and single dtypes."""
    out: set[torch.dtype] = set()
    for s in specs:
        if isinstance(s, str):
            out |= _BY_CATEGORY[s]
        else:
            out.add(s)
    return frozenset(out)


def check_dtype(op: str, dtype: torch.dtype, *, allowed: frozenset[torch.dtype] | None = None,
                refused: frozenset[torch.dtype] = frozenset()) -> None:
    """CPU's refusal of a dtype the kernel named ``op`` is not compiled for (ATen's
    ``AT_DISPATCH_*`` macros): ``NotImplementedError: "op" not implemented for 'Half'``.
    Refused: a dtype in ``refused``, or one not in ``allowed`` when that is given."""
    if dtype in refused or (allowed is not None and dtype not in allowed):
        raise NotImplementedError(f'"{op}" not implemented for \'{scalar_type_name(dtype)}\'')


def _conversion_name(dtype: torch.dtype) -> str:
    name = _dtypes.SCALAR_CONVERSION_NAMES.get(_dtypes.dtype_name(dtype))
    if name is None:  # beyond the twelve: complex32 is c10::complex<c10::Half>
        part = {torch.complex32: torch.float16}.get(dtype)
        name = f"c10::complex<{_conversion_name(part)}>" if part is not None else str(dtype)
    return name


def _overflows(value: Any, dtype: torch.dtype) -> bool:
    """c10's ``overflows<To, From>`` for a real Python number and a real dtype."""
    if isinstance(value, bool) or dtype == torch.bool:
        return False
    if dtype.is_floating_point:
        if isinstance(value, float) and not math.isfinite(value):
            return False  # inf and NaN convert to any floating type
        big = float(torch.finfo(dtype).max)
        return value < -big or value > big
    info = torch.iinfo(dtype)
    if isinstance(value, float) and math.isnan(value):
        return True
    if info.min == 0 and isinstance(value, int) and value < 0:
        return -value > info.max  # unsigned: negative integers wrap (uint8 - 1 is + 255)
    return value < info.min or value > info.max


class ScalarConversionError(RuntimeError):
    """A Scalar argument the kernel's dtype cannot hold; CPU converts scalars inside its dtype
    dispatch, so a kernel that checks dtypes after its arguments defers this one
    (``kernels._define.plain`` turns it into the plain ``RuntimeError`` CPU raises)."""


def checked_scalar(value: Any, dtype: torch.dtype, *, deferred: bool = False) -> Any:
    """``value`` (a Python number) as CPU's kernels read a Scalar argument in ``dtype``
    (c10's ``Scalar::to<T>()``, ``checked_convert``): a value the dtype cannot hold raises
    CPU's ``RuntimeError: value cannot be converted to type uint8_t without overflow`` — an
    integer beyond the integral range (unsigned types accept down to ``-max``), a finite float
    beyond the floating type's largest, NaN or inf for an integral type, a complex number with
    an imaginary part for a real type. Conversion to ``bool`` never raises. Returns ``value``
    (its real part for a real dtype). Kernels call it where ATen converts a Scalar argument
    (fill values, clamp bounds, ``alpha``, thresholds), not for operands ATen wraps into tensors.
    ``deferred``: raise :class:`ScalarConversionError` (a ``define`` kernel raises it after its
    dtype check, as CPU does)."""
    if not isinstance(value, int | float | complex) or dtype == torch.bool:
        return value
    if isinstance(value, complex):
        if dtype.is_complex:
            part = dtype.to_real()
            bad = _overflows(value.real, part) or _overflows(value.imag, part)
        else:
            bad = value.imag != 0 or _overflows(value.real, dtype)
            value = value.real
    else:
        bad = _overflows(value, dtype.to_real() if dtype.is_complex else dtype)
    if bad:
        error = ScalarConversionError if deferred else RuntimeError
        raise error(f"value cannot be converted to type {_conversion_name(dtype)} "
                    "without overflow")
    return value


def quiet() -> np.errstate:
    """NumPy's floating-point warnings off: torch is silent about inf/nan results."""
    return np.errstate(all="ignore")


def opmath(a: np.ndarray) -> np.ndarray:
    """float16/bfloat16 arrays upcast to float32 (CPU's "opmath" type); others unchanged.
    bfloat16 is ml_dtypes' (a ``V`` kind): only an array of such a kind asks for the table,
    so a float32 matmul (the backend probes' at start-up) does not import ml_dtypes."""
    dt = a.dtype
    if dt == np.float16 or (dt.kind == "V" and dt in _low_np()):
        return a.astype(np.float32)
    return a


def scalar_type_name(dtype: torch.dtype) -> str:
    """c10's ScalarType name (``Float``, ``Long``, ``BFloat16``...) as CPU error messages use it
    (:data:`opdb.dtypes.SCALAR_TYPE_NAMES`; torch's own spelling for dtypes outside the twelve)."""
    name = _dtypes.SCALAR_TYPE_NAMES.get(_dtypes.dtype_name(dtype))
    if name is None:
        name = _NAMES.get(dtype)
        if name is None:
            name = torch.empty(0, dtype=dtype).type().removeprefix("torch.").removesuffix("Tensor")
            _NAMES[dtype] = name
    return name


_NAMES: dict[torch.dtype, str] = {}


def cpp_type_name(dtype: torch.dtype) -> str:
    """The C++ type name c10 prints for ``dtype`` in some messages (``float``, ``long int``)."""
    name = _dtypes.dtype_name(dtype)
    return _dtypes.CPP_TYPE_NAMES.get(name, name)


def aten_type_name(dtype: torch.dtype, default: str = "double") -> str:
    """The type name ATen's templated kernels print (``at::Half``, ``int64_t``)."""
    return _dtypes.ATEN_TYPE_NAMES.get(_dtypes.dtype_name(dtype), default)

# --------------------------------------------------------------------------------------------
# Promotion
# --------------------------------------------------------------------------------------------
_INT_PROBE = torch.empty(1, dtype=torch.int32)
_WRAPPABLE = (torch.float64, torch.complex128)


def _normalize(x: Any) -> Any:
    """Wrapped Python numbers (0-dim CPU tensors made from ``x + 2.5``) back to numbers."""
    if isinstance(x, torch.Tensor):
        if (x.dim() == 0 and x.dtype in _WRAPPABLE and x.device.type == "cpu"
                and torch.result_type(_INT_PROBE, x) != x.dtype):
            return x.item()
        return x
    return x


def _signature(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return (x.dtype, x.dim() == 0)
    if x is None:
        return None
    return type(x)


_REPR = {bool: True, int: 1, float: 1.0, complex: 1j}


def _representative(sig: Any) -> Any:
    if isinstance(sig, tuple):
        dtype, zero_dim = sig
        return torch.empty(() if zero_dim else (1,), dtype=dtype, device="meta")
    return _REPR[sig]


def dtypes(kind: ELEMENTWISE_TYPE_PROMOTION_KIND, *args: Any) -> tuple[torch.dtype, torch.dtype]:
    """``(computation dtype, result dtype)`` of an elementwise op over ``args`` (tensors/numbers;
    ``None`` is ignored), as ``torch._prims_common.elementwise_dtypes`` decides."""
    compute, result, _ = dtypes3(kind, *args)
    return compute, result


_cache3: dict[Any, tuple[torch.dtype, torch.dtype, torch.dtype]] = {}


def _kind_of(kind: ELEMENTWISE_TYPE_PROMOTION_KIND, promoted: torch.dtype
             ) -> tuple[torch.dtype, torch.dtype, torch.dtype]:
    key = (kind, promoted)
    hit = _cache3.get(key)
    if hit is None:
        c, r = elementwise_dtypes(
            torch.empty(1, dtype=promoted, device="meta"), type_promotion_kind=kind
        )
        hit = _cache3[key] = (c, r, promoted)
    return hit


def dtypes3(kind: ELEMENTWISE_TYPE_PROMOTION_KIND, *args: Any
            ) -> tuple[torch.dtype, torch.dtype, torch.dtype]:
    """:func:`dtypes` plus the promoted (common) dtype of the operands."""
    if len(args) == 2 and args[0] is not None and args[1] is not None:
        return _kind_of(kind, torch.result_type(args[0], args[1]))
    if len(args) == 1 and isinstance(args[0], torch.Tensor):
        return _kind_of(kind, args[0].dtype)
    norm = [_normalize(a) for a in args if a is not None]
    key = (kind, *(_signature(a) for a in norm))
    hit = _cache3.get(key)
    if hit is None:
        reps = [_representative(s) for s in key[1:]]
        c, r = elementwise_dtypes(*reps, type_promotion_kind=kind)
        p = elementwise_dtypes(*reps, type_promotion_kind=Kind.NO_OPMATH)[1]
        hit = _cache3[key] = (c, r, p)
    return hit


def promote(*args: Any) -> torch.dtype:
    """The promoted dtype of ``args`` (torch's tensor/0-dim/number category rules)."""
    if len(args) == 2:
        return torch.result_type(args[0], args[1])
    return dtypes3(Kind.NO_OPMATH, *args)[2]


def compute_array(x: Any, dtype: torch.dtype) -> Any:
    """``x`` (tensor or number) as a NumPy array/scalar of the computation dtype ``dtype``."""
    npd = np_dtype(dtype)
    if isinstance(x, torch.Tensor):
        arr = to_numpy(x)
        return arr if arr.dtype == npd else arr.astype(npd)
    return np.asarray(x, dtype=npd) if not isinstance(x, np.ndarray) else x.astype(npd)


def infer_size(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """Broadcast two shapes; raises CPU's (TensorIterator's) message when they do not."""
    ndim = max(len(a), len(b))
    out = [1] * ndim
    for i in range(ndim - 1, -1, -1):
        off = ndim - 1 - i
        sa = a[len(a) - 1 - off] if len(a) - 1 - off >= 0 else 1
        sb = b[len(b) - 1 - off] if len(b) - 1 - off >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                f"at non-singleton dimension {i}"
            )
        out[i] = sb if sa == 1 else sa
    return tuple(out)


# --------------------------------------------------------------------------------------------
# out= and in-place
# --------------------------------------------------------------------------------------------
def check_result_fits(result_dtype: torch.dtype, target_dtype: torch.dtype) -> None:
    """CPU's refusal of an ``out``/``self`` dtype that cannot hold the result type."""
    if result_dtype != target_dtype and not can_safe_cast_to(
        cast_to=target_dtype, cast_from=result_dtype
    ):
        raise RuntimeError(
            f"result type {scalar_type_name(result_dtype)} can't be cast to the desired output "
            f"type {scalar_type_name(target_dtype)}"
        )


#: The ``out=`` tensors of the running ``out=`` overload when its CPU kernel accepts no ``out``
#: dtype but the result's (set by :mod:`kernels.registry` from the op database,
#: ``Overload.out_dtype_exact``: a structured kernel not built on TensorIterator).
_EXACT_OUTS: ContextVar[tuple[torch.Tensor, ...]] = ContextVar("exact_outs", default=())


@contextmanager
def exact_outs(outs: tuple[torch.Tensor, ...]) -> Iterator[None]:
    """Inside the block :func:`write_out` holds ``outs`` (and only them: not a kernel's own
    buffers) to the result dtype exactly, unless its caller turns the check off."""
    token = _EXACT_OUTS.set(outs)
    try:
        yield
    finally:
        _EXACT_OUTS.reset(token)


def held_exact(out: torch.Tensor) -> bool:
    """Whether ``out`` is an ``out=`` tensor of the running overload that CPU holds to the result
    dtype exactly (:func:`exact_outs`)."""
    return any(o is out for o in _EXACT_OUTS.get())


def check_out_exact(out: torch.Tensor, dtype: torch.dtype) -> None:
    """Structured kernels that are not TensorIterator-based need ``out.dtype`` exactly."""
    if out.dtype != dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {cpp_type_name(dtype)}, but got "
            f"{cpp_type_name(out.dtype)} instead"
        )


def resize_out(out: torch.Tensor, shape: Sequence[int]) -> None:
    """Resize ``out`` to ``shape`` as ``at::native::resize_output`` does (warning included)."""
    shape = list(shape)
    if list(out.shape) == shape:
        return
    if out.numel() != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
            f"which does not match the required output shape {shape}. This behavior is deprecated, "
            "and in a future PyTorch release outputs will not be resized unless they have zero "
            "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
            "elements with t.resize_(0).",
            UserWarning,
            stacklevel=2,
        )
    restride(out, shape)


def _drop_imag(value: np.ndarray, dst: np.dtype) -> np.ndarray:
    """A complex value stored into a real tensor: c10's cast keeps the real part, except into
    bool, which is true where either part is nonzero (complex(-0.0, nan) and -2.5j are true)."""
    if dst.kind == "c" or value.dtype.kind != "c":
        return value
    if dst.kind == "b":
        return value != 0
    return value.real


def write_out(out: torch.Tensor, value: Any, result_dtype: torch.dtype | None = None,
              *, check: bool = True, exact: bool | None = None, silent_resize: bool = False
              ) -> torch.Tensor:
    """Store ``value`` (array or number) in ``out`` after CPU's dtype check and resize; return
    ``out``. ``exact``: ``out`` must have ``result_dtype`` itself (non-TensorIterator structured
    kernels); false: the result type must cast safely to ``out``'s (TensorIterator's rule);
    ``None``: the running overload's rule (:func:`exact_outs`, from the op database).
    ``silent_resize``: a wrong-sized ``out`` is resized without resize_output's warning (CPU
    kernels that call a plain ``resize_``/``resize_as_``)."""
    value = np.asarray(value)
    if exact is None:
        exact = check and held_exact(out)
    if exact and result_dtype is not None:
        check_out_exact(out, result_dtype)
    elif check and result_dtype is not None:
        check_result_fits(result_dtype, out.dtype)
    if out.device.type != DEVICE:
        raise RuntimeError(
            f"Expected out tensor to have device {DEVICE}:0, but got {out.device} instead"
        )
    if result_dtype is not None and value.dtype != np_dtype(result_dtype):
        # Round to the result dtype first: CPU computes in it, then casts to out's dtype.
        # (np_dtype: a result mlu cannot hold, complex32, is its documented refusal)
        value = value.astype(np_dtype(result_dtype))
    if silent_resize and tuple(out.shape) != value.shape:
        restride(out, value.shape)
    resize_out(out, value.shape)
    dst = to_numpy(out)
    np.copyto(dst, _drop_imag(value, dst.dtype), casting="unsafe")
    return out


def emit(value: Any, dtype: torch.dtype, out: torch.Tensor | None = None, *,
         into: torch.Tensor | None = None, **write: Any) -> torch.Tensor:
    """A kernel's result ``value`` of ``dtype``: a new mlu tensor (functional overload), written
    into ``out`` with :func:`write_out` (``write``: its keyword arguments), or into ``into`` with
    :func:`write_inplace` (the in-place overload's ``self``)."""
    if into is not None:
        return write_inplace(into, value, dtype)
    if out is None:
        return from_numpy(value, dtype)
    return write_out(out, value, dtype, **write)


def write_inplace(self: torch.Tensor, value: Any, result_dtype: torch.dtype | None = None
                  ) -> torch.Tensor:
    """Store ``value`` into ``self`` (in-place op): dtype and shape checks as on CPU; return ``self``."""
    value = np.asarray(value)
    if result_dtype is not None:
        check_result_fits(result_dtype, self.dtype)
        if value.dtype != np_dtype(result_dtype):
            value = value.astype(np_dtype(result_dtype))
    if value.shape != tuple(self.shape):
        try:
            bshape = np.broadcast_shapes(value.shape, tuple(self.shape))
        except ValueError:
            bshape = None
        if bshape != tuple(self.shape):
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(bshape) if bshape is not None else list(value.shape)}"
            )
    dst = to_numpy(self)
    np.copyto(dst, _drop_imag(value, dst.dtype), casting="unsafe")
    return self


def np_result(arr: Any, dtype: torch.dtype) -> np.ndarray:
    """``arr`` cast to the NumPy dtype of ``dtype`` (no copy when it already is)."""
    npd = np_dtype(dtype)
    arr = np.asarray(arr)
    return arr if arr.dtype == npd else arr.astype(npd)
