"""Edge parameters on purpose: a forward call whose bounded arguments sit on their bounds.

A seeded-random op's parameters are drawn inside the range the hints give them (``p`` of
``bernoulli`` in [0, 1], ``multinomial``'s weights from 0); the bounds themselves are where a
sampler's special cases live (``p = 0`` never draws a 1, ``p = 1`` always does, a category of
weight 0 is never drawn) and a uniform draw almost never lands on them. Half the calls of
:func:`edge_calls` put them there: each floating or integral tensor argument whose hint bounds
it on both sides gets its elements set to the lower or upper bound at random positions (about
a third each), each bounded float or Scalar argument is its lower or upper bound, one time in
three each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.drawing import cached_booleans, cached_integers, composite
from conformance.inputs.strategies import forward_calls
from opdb.opdata import ArgHint, OpHints


def _bounded(hint: ArgHint) -> bool:
    return hint.min is not None and hint.max is not None and hint.along is None \
        and hint.choices is None


def _pinned_tensor(t: torch.Tensor, hint: ArgHint, seed: int) -> torch.Tensor:
    """``t`` with about a third of its elements at ``hint.min`` and a third at ``hint.max``."""
    if t.numel() == 0 or not (t.is_floating_point() or (not t.is_complex()
                                                         and t.dtype != torch.bool)):
        return t
    gen = torch.Generator().manual_seed(seed)
    pick = torch.randint(0, 3, t.shape, generator=gen)
    lo = torch.full_like(t, hint.min)  # type: ignore[arg-type]
    hi = torch.full_like(t, hint.max)  # type: ignore[arg-type]
    return torch.where(pick == 0, lo, torch.where(pick == 1, hi, t))


def _pinned_scalar(value: Any, hint: ArgHint, pick: int) -> Any:
    if pick == 2 or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    bound = hint.min if pick == 0 else hint.max
    return type(value)(bound)  # type: ignore[arg-type]


def with_edges(call: Call, hints: OpHints, seed: int) -> Call:
    """``call`` with its bounded arguments on their bounds (see the module's docstring); the
    fills are dropped (the values are no longer the fills')."""
    values = []
    for k, (name, value) in enumerate(call.values):
        hint = hints.get(name)
        if _bounded(hint):
            if isinstance(value, torch.Tensor):
                value = _pinned_tensor(value, hint, seed + k)
            else:
                value = _pinned_scalar(value, hint, (seed + k) % 3)
        values.append((name, value))
    return replace(call, values=tuple(values), fills=(),
                   notes=(*call.notes, "edge parameters"))


@composite
def edge_calls(draw: Any, sig: OpSignature, hints: OpHints) -> Call:
    """:func:`~conformance.inputs.strategies.forward_calls`, half the time with its bounded
    arguments on their bounds (:func:`with_edges`)."""
    call: Call = draw(forward_calls(sig, hints))
    if not draw(cached_booleans(), label="edge parameters"):
        return call
    return with_edges(call, hints, draw(cached_integers(0, 2**16), label="edge positions"))
