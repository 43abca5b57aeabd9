"""The twelve dtypes: names, order, categories and C spellings, defined once for every package.

The engine draws these, the reference backend implements them, the report's dtype matrix has
one column each — all in the order of :data:`DTYPE_NAMES`. Names are torch's own attribute
names (``torch.float32`` -> ``"float32"``), so this module needs no torch import for the
string-level facts: ``reports`` reads them without paying for torch. The torch-level views
(:data:`DTYPES`, :func:`torch_dtype`, :func:`default_tolerance`) import torch on first use.

Promotion is never tabulated here: it is torch's (``torch.result_type``,
``torch._prims_common.elementwise_dtypes``). Default tolerances are torch.testing's own table.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: The twelve dtypes, in the order used everywhere (docs/ARCHITECTURE.md).
DTYPE_NAMES: tuple[str, ...] = (
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
)

BOOL: tuple[str, ...] = ("bool",)
INTEGRAL: tuple[str, ...] = ("uint8", "int8", "int16", "int32", "int64")
FLOATING: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")
COMPLEX: tuple[str, ...] = ("complex64", "complex128")
#: Floating dtypes that CPU computes in float32 ("opmath") and rounds back.
LOW_PRECISION: tuple[str, ...] = ("float16", "bfloat16")

#: Category of each dtype: ``bool``, ``integral``, ``floating`` or ``complex``.
CATEGORY_OF: dict[str, str] = {
    **dict.fromkeys(BOOL, "bool"), **dict.fromkeys(INTEGRAL, "integral"),
    **dict.fromkeys(FLOATING, "floating"), **dict.fromkeys(COMPLEX, "complex"),
}
CATEGORIES: tuple[str, ...] = ("bool", "integral", "floating", "complex")

#: c10's ScalarType names, as CPU's error messages print them (``"add_cpu" not implemented
#: for 'Half'``).
SCALAR_TYPE_NAMES: dict[str, str] = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
    "float64": "Double", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}

#: The C++ type names c10 prints through ``typeid`` in some messages (``value cannot be
#: converted to type long int without overflow``).
CPP_TYPE_NAMES: dict[str, str] = {
    "bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
    "int32": "int", "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}

#: The type names c10's ``Scalar::to<T>()`` accessors print when a Python scalar does not fit
#: the dtype (``value cannot be converted to type uint8_t without overflow``).
SCALAR_CONVERSION_NAMES: dict[str, str] = {
    "bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
    "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
    "float64": "double", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}

#: The type names ATen's templated kernels print (``at::Half``, ``int64_t``), e.g. in
#: ``max_pool2d`` / scalar-check messages.
ATEN_TYPE_NAMES: dict[str, str] = {
    "float32": "float", "float64": "double", "float16": "at::Half",
    "bfloat16": "at::BFloat16", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
    "int32": "int32_t", "int64": "int64_t",
}


def category(name: str) -> str:
    """``bool``, ``integral``, ``floating`` or ``complex`` for a dtype name of the twelve."""
    return CATEGORY_OF[name]


def dtype_name(dtype: torch.dtype | str) -> str:
    """``torch.float32`` -> ``"float32"``; dtypes outside the twelve keep torch's spelling."""
    return str(dtype).removeprefix("torch.")


def torch_dtype(name: str) -> torch.dtype:
    """``"float32"`` -> ``torch.float32``."""
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise KeyError(f"not a torch dtype: {name!r}")
    return dtype


@cache
def _dtypes() -> dict[str, torch.dtype]:
    return {n: torch_dtype(n) for n in DTYPE_NAMES}


def torch_dtypes(names: tuple[str, ...] | None = None) -> tuple[torch.dtype, ...]:
    """The torch dtypes of ``names`` (default: all twelve, in order)."""
    table = _dtypes()
    return tuple(table[n] for n in (names or DTYPE_NAMES))


@cache
def default_tolerance(dtype: torch.dtype | str) -> tuple[float, float]:
    """``(rtol, atol)`` that ``torch.testing.assert_close`` uses by default for ``dtype``
    (``(0.0, 0.0)`` for exact dtypes): torch's own table, not a copy (read once per dtype:
    every compared tensor asks)."""
    from torch.testing._comparison import default_tolerances

    return default_tolerances(torch_dtype(dtype) if isinstance(dtype, str) else dtype)


def __getattr__(name: str) -> Any:
    # ``DTYPES`` (name -> torch.dtype) is built on first use so that importing this module does
    # not import torch.
    if name == "DTYPES":
        return _dtypes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
