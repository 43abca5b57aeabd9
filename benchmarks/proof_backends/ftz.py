"""A backend that flushes subnormals to zero and declares it (``proof_backends``): every
float32, bfloat16 and complex64 argument has its subnormal elements replaced by a zero of their
sign before the op, and every such result after it (float16 keeps its subnormals, as a unit that
flushes float32 does). ``ASSUMES = ("ftz",)`` tells the harness.
"""

from __future__ import annotations

import torch

from proof_backends import fallback
from proof_backends.fallback import Transform

FORK_SAFE = True
ASSUMES = ("ftz",)
_FLUSHED = (torch.float32, torch.bfloat16, torch.complex64)


def flush_(t: torch.Tensor) -> None:
    """Replace ``t``'s subnormal elements by zeros of their sign, in place."""
    if t.dtype not in _FLUSHED or t.numel() == 0:
        return
    if t.is_complex():
        flush_(torch.view_as_real(t.resolve_conj()) if t.is_conj() else torch.view_as_real(t))
        return
    tiny = torch.finfo(t.dtype).tiny
    with torch.no_grad():
        t.copy_(torch.where((t.abs() < tiny) & (t != 0), t * 0, t))


def flushed(x: torch.Tensor) -> torch.Tensor:
    y = x.resolve_conj().clone() if x.is_conj() else x.clone()
    flush_(y)
    return y


#: Copies move bits, as a device's copy engine does: no arithmetic to flush in.
COPIES = frozenset({"copy", "_to_copy", "clone", "_copy_from", "_copy_from_and_resize"})
TRANSFORM = Transform(inputs=flushed, finish=flush_, skip=COPIES, decides_all=True)
fallback.install("ftz", TRANSFORM)
