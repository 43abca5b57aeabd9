"""The twelve dtypes the engine draws, named once, in the order used everywhere.

Promotion itself is never re-implemented here: the engine compares against what CPU does.
"""

from __future__ import annotations

import torch

#: name -> torch dtype, in the canonical order (docs/ARCHITECTURE.md).
DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
DTYPE_NAMES: tuple[str, ...] = tuple(DTYPES)
NAME_OF: dict[torch.dtype, str] = {v: k for k, v in DTYPES.items()}

BOOL = ("bool",)
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")

#: Dtypes the forward check draws (all twelve; CPU rejects what an op does not take).
FORWARD_DTYPES = DTYPE_NAMES


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``float32``; dtypes outside the twelve keep torch's spelling."""
    return NAME_OF.get(dtype, str(dtype).removeprefix("torch."))


def category(name: str) -> str:
    if name in BOOL:
        return "bool"
    if name in INTEGRAL:
        return "int"
    if name in FLOATING:
        return "float"
    return "complex"


#: torch.testing.assert_close's documented defaults (rtol, atol), by floating/complex dtype; the
#: engine uses them to loosen a comparison to the least precise floating *input* of a call
#: (float16 inputs written to a float32 ``out=`` are only float16-accurate).
ASSERT_CLOSE_DEFAULTS: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def loosest(names: frozenset[str] | set[str], result: str) -> tuple[float, float] | None:
    """The loosest default tolerance among ``result`` and the floating ``names`` (None: use
    torch.testing's defaults for ``result`` unchanged)."""
    if result not in ASSERT_CLOSE_DEFAULTS:
        return None
    best = ASSERT_CLOSE_DEFAULTS[result]
    for n in names:
        tol = ASSERT_CLOSE_DEFAULTS.get(n)
        if tol is not None and tol[0] > best[0]:
            best = tol
    return None if best == ASSERT_CLOSE_DEFAULTS[result] else best
