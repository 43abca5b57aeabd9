"""A backend that computes every floating op in float64 and rounds back once (``proof_backends``).

float16, bfloat16 and float32 arguments are widened to float64, complex64 to complex128; each
floating result is the float64 answer rounded to the dtype CPU's result has. Skipped (CPU's own
answer): ops whose meaning is the dtype's own limits — ``nextafter`` (the next float32 is not the
next float64) and ``nan_to_num`` (infinity becomes the dtype's largest finite value).
"""

from __future__ import annotations

import torch

from proof_backends import fallback
from proof_backends.fallback import Transform

FORK_SAFE = True
_WIDE = {torch.float16: torch.float64, torch.bfloat16: torch.float64,
         torch.float32: torch.float64, torch.complex32: torch.complex128,
         torch.complex64: torch.complex128}


def widen(x: torch.Tensor) -> torch.Tensor:
    """A float64 (complex128) copy of a low-precision floating ``x``; any other a clone."""
    wide = _WIDE.get(x.dtype)
    return x.clone() if wide is None else x.to(wide, copy=True)


TRANSFORM = Transform(inputs=widen, skip=frozenset({"nextafter", "nan_to_num"}))
fallback.install("wide", TRANSFORM)
