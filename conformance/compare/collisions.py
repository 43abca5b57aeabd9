"""Elements two indexed writes land on: compared by whether they hold one of the values written.

``scatter_.src``, ``index_copy``, ``index_put`` (``accumulate=False``), ``max_unpool`` and
``put`` write source elements to positions an index argument gives. Where two land on one
element, which of them stays is unspecified: CPU keeps the last, a device whose writes race keeps
any. The hints data (``collisions`` in ``opdb/data/hints.yaml``, read into
:class:`opdb.opdata.CollisionHint`) names such overloads; for them :func:`uncontested` finds the
elements written more than once and takes the backend's element there as agreeing where it is one
of the values written to it (NaN matching NaN). Every other element, and a contested one holding
a value nobody wrote, is compared as ever.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from opdb.outcomes import VALUE_UNSPECIFIED

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from conformance.core.call import Call
    from opdb.opdata import CollisionHint


@dataclass(frozen=True)
class Writes:
    """Where a call's writes land: ``positions`` (flat, into the result) and the ``values``
    written there, one per write, both 1-D."""

    positions: torch.Tensor
    values: torch.Tensor


def _ravel(coords: list[torch.Tensor], shape: tuple[int, ...]) -> torch.Tensor:
    """Flat positions in a contiguous tensor of ``shape`` of the (broadcast) coordinates."""
    flat = torch.zeros((), dtype=torch.int64)
    for c, size in zip(coords, shape, strict=True):
        flat = flat * size + c.to(torch.int64)
    return flat.reshape(-1)


def _along(call: Call, shape: tuple[int, ...], index: torch.Tensor, source: torch.Tensor,
           *, vector: bool) -> Writes | None:
    """Writes along ``dim``: element ``k`` of ``source`` (restricted to ``index``'s shape for
    scatter) lands where its coordinate along ``dim`` is ``index[k]`` (scatter) or
    ``index[k_dim]`` (``vector``: index_copy's positions of whole slices)."""
    dim = call.argument("dim")
    if not isinstance(dim, int) or not shape:
        return None
    d = dim % len(shape)
    if vector:
        if source.dim() != len(shape):
            return None
        index, used = index.reshape(-1), source
    else:
        if index.dim() != len(shape) or any(s > t for s, t in zip(index.shape, source.shape,
                                                                     strict=False)):
            return None
        used = source[tuple(slice(0, s) for s in index.shape)]
    coords = list(torch.meshgrid(*[torch.arange(s) for s in used.shape], indexing="ij"))
    coords[d] = index[coords[d]] if vector else index
    coords[d] = coords[d] % shape[d]
    return Writes(_ravel(coords, shape), used.reshape(-1))


def _scatter(call: Call, shape: tuple[int, ...]) -> Writes | None:
    return _along(call, shape, call.argument("index"), call.argument("src"), vector=False)


def _index_copy(call: Call, shape: tuple[int, ...]) -> Writes | None:
    return _along(call, shape, call.argument("index"), call.argument("source"), vector=True)


def _index_put(call: Call, shape: tuple[int, ...]) -> Writes | None:
    """Advanced indexing's own positions: ``index.Tensor`` of an arange of the result's shape
    (ATen's semantics for None, bool and negative indices), the values broadcast to them."""
    indices, values = call.argument("indices"), call.argument("values")
    places = torch.arange(math.prod(shape)).reshape(shape)
    positions = torch.ops.aten.index.Tensor(places, list(indices))
    return Writes(positions.reshape(-1), values.expand(positions.shape).reshape(-1))


def _unpool(call: Call, shape: tuple[int, ...]) -> Writes | None:
    """``max_unpool``: each (batch, channel) plane of ``self`` writes to flat positions of the
    same plane of the result (its last two or three dimensions)."""
    self, indices = call.argument("self"), call.argument("indices")
    k = len(call.argument("output_size"))
    planes = math.prod(self.shape[:-k])
    if tuple(indices.shape) != tuple(self.shape) or planes != math.prod(shape[:-k]):
        return None
    size = math.prod(shape[-k:])
    offsets = torch.arange(planes).reshape(-1, 1) * size
    return Writes((indices.reshape(planes, -1) + offsets).reshape(-1), self.reshape(-1))


def _put(call: Call, shape: tuple[int, ...]) -> Writes | None:
    index, source = call.argument("index"), call.argument("source")
    return Writes(index.reshape(-1) % max(math.prod(shape), 1), source.reshape(-1))


#: Per ``writes`` kind (:data:`opdb.opdata.COLLISION_WRITES`), where the writes of a call land
#: in a result of the given shape.
PLACES: dict[str, Callable[[Call, tuple[int, ...]], Writes | None]] = {
    "scatter": _scatter, "index_copy": _index_copy, "index_put": _index_put,
    "unpool": _unpool, "put": _put,
}


def writes(call: Call, hint: CollisionHint, shape: tuple[int, ...]) -> Writes | None:
    """Where ``call``'s writes land in its result of ``shape``; ``None`` where they accumulate
    (``unless``), cannot collide, or cannot be placed (a call CPU would refuse)."""
    if hint.unless is not None and call.argument(hint.unless) is True:
        return None
    try:
        found = PLACES[hint.writes](call, shape)
    except (RuntimeError, IndexError, TypeError, ValueError, AttributeError):
        return None  # arguments CPU refuses: nothing was written
    if found is None or found.positions.numel() < 2:
        return None
    positions = found.positions
    if bool(((positions < 0) | (positions >= math.prod(shape))).any()):
        return None
    return found


def uncontested(ctx: Context, call: Call, label: str, where: str, actual: torch.Tensor,
                expected: torch.Tensor) -> torch.Tensor:
    """``actual`` with each element written more than once (:func:`writes`) that holds one of
    the values written to it replaced by CPU's ``expected`` element (they agree: which write
    stays is unspecified); the verdict notes those that differed (``value_unspecified``). An
    element holding no value written there is left as it is, to be compared as ever."""
    hint = ctx.hints.collisions
    shape = tuple(expected.shape)
    if hint is None or tuple(actual.shape) != shape or actual.dtype != expected.dtype:
        return actual
    found = writes(call, hint, shape)
    if found is None:
        return actual
    n = math.prod(shape)
    positions = found.positions
    contested = torch.bincount(positions, minlength=n) > 1
    if not bool(contested.any()):
        return actual
    flat = actual.reshape(-1)
    values = found.values.to(actual.dtype)
    got = flat[positions]
    match = (got == values) | (_isnan(got) & _isnan(values))
    holds = torch.zeros(n, dtype=torch.int64).scatter_reduce(
        0, positions, match.to(torch.int64), "amax", include_self=True).bool()
    taken = contested & holds
    differed = taken & ~((flat == expected.reshape(-1)) | (_isnan(flat)
                                                           & _isnan(expected.reshape(-1))))
    if not bool(differed.any()):
        return actual
    count = int(differed.sum())
    first = int(differed.nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), shape))
    ctx.note_info(VALUE_UNSPECIFIED, f"{label}: {count} of {n} element(s) written more than "
                  f"once, where the backend kept another of the values written than CPU (which "
                  f"stays is unspecified; first at index {index}: {flat[first].item()!r}, CPU "
                  f"{expected.reshape(-1)[first].item()!r}) [{where}]", count)
    return torch.where(taken.reshape(shape), expected, actual)


def _isnan(t: torch.Tensor) -> torch.Tensor:
    return t.isnan() if t.is_floating_point() or t.is_complex() else torch.zeros_like(
        t, dtype=torch.bool)
