"""Dimension arguments and their other spelling: ATen wraps a dim ``d`` of a rank-``r`` tensor
and ``d - r`` (or ``d + r`` for a negative ``d``) to the same dimension, so a kernel that wraps
only one way computes along the wrong one (a negative dim taken as dim 0) for the other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from conformance.core.call import Call
from opdb.opdata import ArgHint, OpHints


def is_dim_name(name: str) -> bool:
    """Whether an ``int`` argument of this name is a dimension of a tensor argument (``dim``,
    ``dim0``, ``dim1``, ``*_dim``), which a drawn call takes in ``[-rank, rank)``."""
    return name == "dim" or name.endswith("_dim") or name in ("dim0", "dim1")


def _first_rank(call: Call) -> int | None:
    outs = {a.name for a in call.sig.args if a.is_out}
    for name, value in call.values:
        if name in outs:
            continue
        first = value[0] if isinstance(value, list | tuple) and value else value
        if isinstance(first, torch.Tensor):
            return max(first.dim(), 1)  # a 0-dim tensor's dims are those of rank 1 (wrap_dim)
    return None


def _twin(d: Any, rank: int) -> Any:
    if isinstance(d, bool) or not isinstance(d, int) or not -rank <= d < rank:
        return d
    return d - rank if d >= 0 else d + rank


def _bounded(hint: ArgHint) -> bool:
    return hint.min is not None or hint.max is not None


def twin_dims(call: Call, hints: OpHints | None = None) -> Call:
    """``call`` with each dimension argument (:func:`is_dim_name`, or an ``int[]`` named ``dim``
    or ``dims``) in its other spelling, counted against the first tensor argument's rank:
    ``cumprod(x[2, 3], dim=1)`` becomes ``dim=-1``. Unchanged where there is none, and for an
    argument whose ``hints`` bound it (``min: 0``: an internal op taking the dim its caller
    wrapped, which CPU does not wrap again: ``_cummax_helper`` of ``dim=-1`` corrupts memory)."""
    rank = _first_rank(call)
    if rank is None:
        return call
    ints = {a.name for a in call.sig.args if a.base in ("int", "SymInt")
            and (hints is None or not _bounded(hints.get(a.name)))}
    values, changed = [], False
    for name, value in call.values:
        if name in ints and (is_dim_name(name) or name == "dims"):
            if isinstance(value, list | tuple):
                twin: Any = type(value)(_twin(d, rank) for d in value)
            else:
                twin = _twin(value, rank)
            changed = changed or twin != value
            value = twin
        values.append((name, value))
    return replace(call, values=tuple(values)) if changed else call
