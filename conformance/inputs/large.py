"""A drawn call made large by tiling: every tensor argument that shares the call's last size
repeated along its last dimension past a threshold, so each drawn call of the ``forward`` check
also runs once past the sizes where kernels change path (a vector tail past 256, a block of
256, a 16-bit index past 2**16), whatever Hypothesis drew (:data:`conformance.inputs.strategies.
LARGE_ONE_IN` makes a whole drawn call large one time in 32: a mutant then slips through at 10
examples about three times in four).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch

from conformance.core.call import Call
from conformance.inputs.strategies import HUGE_SIDE, LARGE_SIDES

#: One drawn call in this many (by its first fill's seed: drawn, so a shrink or replay of the
#: call makes the same choice) gets the tiled refill: at 10 drawn calls an item is tiled at
#: least once all but about one time in a thousand, for half the cost of tiling every drawn
#: call (that cost +14-30% of forward item time on 40 overloads; one in two about half of it;
#: one in four missed sum_drops_tail at seed 0). docs/decisions.md#tiled-large-refill.
TILED_ONE_IN = 2

#: Elements a tiled tensor may hold at most (a rank-3 tensor of a wide last dimension is not
#: tiled to 2**16 per row: the refill stays cheap).
MAX_TILED = 2**17


def _tensors(call: Call) -> list[torch.Tensor]:
    outs = {a.name for a in call.sig.args if a.is_out}
    found: list[torch.Tensor] = []
    for name, value in call.values:
        if name in outs:
            continue
        for v in value if isinstance(value, list | tuple) else (value,):
            if isinstance(v, torch.Tensor):
                found.append(v)
    return found


def _tiled(value: Any, size: int, reps: int) -> Any:
    if isinstance(value, list | tuple):
        return type(value)(_tiled(v, size, reps) for v in value)
    if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[-1] == size:
        return value.repeat(*([1] * (value.dim() - 1)), reps)
    return value


def takes_tiling(call: Call) -> bool:
    """Whether this drawn call gets the tiled refill (:data:`TILED_ONE_IN`)."""
    return bool(call.fills) and call.fills[0][2].seed % TILED_ONE_IN == 0


def tiled_large(call: Call, max_side: int | None) -> Call:
    """``call`` (one drawn call in :data:`TILED_ONE_IN`) with every input tensor whose last
    size is the call's common last size ``n`` (tensors of last size 1 or rank 0 broadcast and
    stay) repeated along that dimension to at least :data:`LARGE_SIDES`\\[0] elements, or
    :data:`HUGE_SIDE` for a pointwise op on vectors; unchanged where the inputs have no common
    last size above 1 (a GEMM's ``[m, k] @ [k, n]``), where the op's hints cap its sides
    (``max_side``: costly per element), where a tiled tensor would pass :data:`MAX_TILED`
    elements, for ops tagged neither pointwise nor reduction, and for seeded random ops. Values repeat: a kernel wrong past a size is wrong
    there whatever the values."""
    if max_side is not None or not takes_tiling(call) \
            or not call.sig.tags & {"pointwise", "reduction"} \
            or "nondeterministic_seeded" in call.sig.tags:
        # only where every input broadcasts to the result or is reduced (native_functions'
        # tags): another op ties its arguments' sizes otherwise (batch norm's running mean is
        # [C], not the last size), and repeated values make ties a sort's indices leave open
        # a seeded op is judged against the range CPU's further samples span: the extremes of
        # 2**16 draws of a heavy tail (geometric) pass that range by chance, and its sampler's
        # size paths are the distribution check's to reach
        return call
    tensors = _tensors(call)
    sizes = {t.shape[-1] for t in tensors if t.dim() >= 1 and t.shape[-1] != 1}
    if len(sizes) != 1:
        return call
    (n,) = sizes
    if n == 0:
        return call
    rows = max(math.prod(t.shape[:-1]) for t in tensors if t.dim() >= 1 and t.shape[-1] == n)
    target = HUGE_SIDE if call.sig.is_pointwise and rows == 1 else LARGE_SIDES[0]
    reps = -(-target // n)
    if rows * n * reps > MAX_TILED or reps <= 1:
        return call
    outs = {a.name for a in call.sig.args if a.is_out}
    values = tuple((name, value if name in outs else _tiled(value, n, reps))
                   for name, value in call.values)
    return replace(call, values=values)
