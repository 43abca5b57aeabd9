"""Hypothesis draws of element values: how a tensor is filled (:func:`draw_fill`, over
:mod:`conformance.core.fills`) and Python scalars next to tensors.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from typing import Any

import torch
from hypothesis import strategies as st

from conformance.core.fills import (
    PROFILES,
    SCALAR_SPECIAL_ONE_IN,
    SEED_MAX,
    SPECIAL_KINDS,
    SPECIALS_ONE_IN,
    Fill,
    float_specials,
    int_specials,
)
from conformance.inputs.drawing import cached_integers, composite
from opdb.dtypes import category, torch_dtype


def draw_fill(draw: Any, name: str, shape: Sequence[int], *, adversarial: bool = True,
              bounds: tuple[float, float] | None = None, extremes: bool = True,
              label: str = "", seed_only: bool = False) -> Fill:
    """Draw how one tensor is filled inside a composite strategy (``draw`` is its draw
    function): a few integer choices (profile, seed, special values and their positions).
    ``seed_only``: the tensor is only ever checked refilled (the dtypes sweep), and an
    adversarial fill's refills take profile and specials from the seed (:meth:`Fill.refill`):
    the seed is the one choice drawn (a fill drew five on average)."""
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    if n == 0:
        return Fill(name, shape, adversarial=False)
    if seed_only and adversarial:
        return Fill(name, shape, seed=draw(cached_integers(0, SEED_MAX), label=f"{label} seed"),
                    bounds=bounds, extremes=extremes)
    profile = "small"
    if adversarial and bounds is None:
        profile = PROFILES[draw(cached_integers(0, len(PROFILES) - 1), label=f"{label} profile")]
    seed = draw(cached_integers(0, SEED_MAX), label=f"{label} seed")
    specials: list[tuple[int, int]] = []
    if (adversarial or bounds is not None) \
            and draw(cached_integers(0, SPECIALS_ONE_IN - 1), label="specials?") == SPECIALS_ONE_IN - 1:
        for _ in range(draw(cached_integers(1, min(n, 4)), label=f"{label} how many specials")):
            specials.append((draw(cached_integers(0, n - 1), label=f"{label} special at"),
                             draw(cached_integers(0, SPECIAL_KINDS - 1), label=f"{label} special")))
    return Fill(name, shape, profile=profile, seed=seed, specials=tuple(specials), bounds=bounds,
                extremes=extremes, adversarial=adversarial)


def fixed_fill(name: str, shape: Sequence[int], *, bounds: tuple[float, float],
               extremes: bool = True, label: str = "") -> Fill:
    """How a tensor whose values no comparison reads is filled (the promotion check's safe
    values, within ``bounds``): :func:`draw_fill`'s tame fill with no choice drawn, its seed
    from ``label`` (two tensors of a call differ). Hypothesis' choices are then the call's
    structure alone, and it does not draw a structure it has checked again with other values:
    a drawn seed made one promotion draw in three such a repeat."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) == 0:
        return Fill(name, shape, adversarial=False)
    return Fill(name, shape, profile="small", seed=zlib.crc32(label.encode()) % (SEED_MAX + 1),
                bounds=bounds, extremes=extremes, adversarial=False)


def draw_tensor(draw: Any, name: str, shape: Sequence[int], *, adversarial: bool = True,
                bounds: tuple[float, float] | None = None, extremes: bool = True,
                label: str = "") -> torch.Tensor:
    """Draw one tensor inside a composite strategy: :func:`draw_fill`, then fill it."""
    return draw_fill(draw, name, shape, adversarial=adversarial, bounds=bounds,
                     extremes=extremes, label=label).tensor()


def tensor_values(name: str, shape: Sequence[int], *, adversarial: bool = True,
                  bounds: tuple[float, float] | None = None, extremes: bool = True
                  ) -> st.SearchStrategy[torch.Tensor]:
    """The strategy: a CPU tensor of dtype ``name`` and ``shape`` (see the module docstring).

    ``adversarial=False`` keeps the bulk ``small`` and draws no specials (shape-focused checks).
    """
    return composite(lambda draw: draw_tensor(draw, name, shape, adversarial=adversarial,
                                                 bounds=bounds, extremes=extremes))()


@functools.cache
def small_scalars(dtype: str) -> st.SearchStrategy[Any]:
    """A small Python Scalar next to tensors of ``dtype`` (negative ones included): floats and
    integers next to floating tensors; integers next to integral ones, and one time in four a
    float (a float Scalar promotes an integral tensor to the default dtype: ``clamp(int, 0.5)``
    is a float tensor)."""
    cat = category(dtype)
    if cat == "bool":
        return st.booleans() | st.integers(0, 2)
    if cat == "integral":
        ints = st.integers(-3, 3)
        return st.one_of(ints, ints, ints, st.sampled_from((0.5, -1.5, 2.0)))
    return st.integers(-3, 3) | st.floats(-2, 2, allow_subnormal=False)


@functools.cache
def scalar_values(dtype: str, *, extremes: bool = True,
                  bounds: tuple[float, float] | None = None) -> st.SearchStrategy[Any]:
    """A Python Scalar next to tensors of ``dtype``: mostly small (negative ones included),
    one in :data:`SCALAR_SPECIAL_ONE_IN` a special value of that dtype's category (NaN, ±inf,
    -0.0, ties, ``iinfo`` extremes, values just outside the dtype's range)."""
    if bounds is not None:
        lo, hi = bounds
        if float(lo).is_integer() and float(hi).is_integer():
            return st.integers(int(lo), int(hi)) | st.sampled_from((lo, hi))
        return st.floats(lo, hi, allow_nan=False)
    cat = category(dtype)
    small = small_scalars(dtype)
    if cat == "bool":
        return small
    if cat == "integral":
        info = torch.iinfo(torch_dtype(dtype))
        wild: list[Any] = list(int_specials(dtype, extremes))
        if extremes:  # one past the range: CPU raises (overflow) or wraps; the backend must too
            wild += [int(info.max) + 1, int(info.min) - 1]
    else:
        part = {"complex64": "float32", "complex128": "float64"}.get(dtype, dtype)
        wild = list(float_specials(part, extremes))
        if extremes:
            wild += [1e300, -1e300, 3.4e38 if part != "float64" else 1e308]
    special = st.sampled_from(tuple(wild))
    return st.integers(0, SCALAR_SPECIAL_ONE_IN - 1).flatmap(
        lambda k: special if k == SCALAR_SPECIAL_ONE_IN - 1 else small)


#: Python scalars for the promotion check, by kind: the dtype follows the type, CPU may still
#: refuse a value (``uint8 + 300`` overflow, ``int ** -1``), and then the backend must refuse too.
PYTHON_SCALARS: dict[str, tuple[Any, ...]] = {
    "bool": (True, False),
    "integral": (2, 0, -1, 1, 5, -7, 127, 128, 255, 256, -129, 2**31, -(2**31) - 1, 2**63 - 1,
                 -(2**63)),
    "floating": (2.5, 0.0, -0.0, -1.5, 0.1, 1e-40, 3.5e38, 1e300, math.inf, -math.inf, math.nan),
    "complex": (complex(1.5, 0.5), complex(0, 0), complex(-1, 2), complex(math.inf, 0),
                complex(0, math.nan), complex(1e300, -1e300)),
}


def python_scalars(dtype: str, *, bounds: tuple[float, float] | None = None
                   ) -> st.SearchStrategy[Any]:
    """A Python scalar of the kind that ``dtype`` stands for (shrinks to the first value).
    ``bounds`` (a hint's min/max): only the kind's values inside ``[lo, hi]`` (a complex one:
    both parts), or the kind's whole table where none is (a range no int fits, say)."""
    table = PYTHON_SCALARS[category(dtype)]
    if bounds is not None:
        lo, hi = bounds
        inside = tuple(v for v in table
                       if all(lo <= part <= hi for part in
                              ((v.real, v.imag) if isinstance(v, complex) else (v,))))
        table = inside or table
    return st.sampled_from(table)
