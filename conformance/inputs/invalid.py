"""Deliberately invalid and empty arguments: a valid forward call with one argument changed
where the schema or the hints give a validity rule (:func:`sites`), as an :class:`EdgeCall`.

The strategies draw valid input (indices in range, shapes that fit), and the value checks drop
what CPU refuses, so a backend that answers a call CPU refuses is judged only where another
check draws such a call by chance. Here one argument is changed on purpose:

* ``dim``    an ``int`` dim argument one past either end (``rank``, ``-rank - 1``);
* ``dims``   an ``int[]`` dim list given an out-of-range entry;
* ``size``   an ``int[]`` size given a negative entry (``-2``: ``-1`` often means "infer");
* ``count``  a ``SymInt`` (or a hinted non-negative ``int``) made negative;
* ``index``  an index tensor (hint ``along``, or named ``index``/``indices``) given one
  position past every size of ``self`` (``max(self.shape)``, or ``-max - 1``);
* ``dtype``  a tensor whose hint pins integral/bool dtypes given float32 instead;
* ``shape``  a tensor whose symbolic shape shares a size with another argument grown by one
  along it (``mm``'s inner dimensions disagree);
* ``empty``  an index, mask or source argument (a hint relates it to ``self``, or its name
  says it is one) made empty while ``self`` is not (the index's ``length_of`` companion too).

CPU's answer is the expectation: its refusal must be the backend's (``error_accepts``
otherwise); an empty argument CPU accepts is compared as the forward check compares.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch

from conformance.core.call import Call
from conformance.core.signature import ArgSpec, OpSignature
from conformance.inputs.drawing import cached_booleans, cached_integers, cached_sampled, composite
from conformance.inputs.strategies import forward_calls
from opdb.dtypes import BOOL, INTEGRAL
from opdb.opdata import OpHints

#: Tensor arguments that are an index, a mask or a source by name (the schema's convention)
EMPTY_NAMES = frozenset({"index", "indices", "mask", "source", "src"})
INDEX_NAMES = frozenset({"index", "indices"})
SIZE_NAMES = frozenset({"size", "sizes", "shape"})
#: The kinds of change, in the order :func:`sites` lists them: Hypothesis draws its first
#: choices more often than their share (and shrinks toward them), so the most common real bug
#: (an index out of range taken without a check) comes first.
KINDS = ("index", "shape", "empty", "size", "dim", "dims", "count", "dtype")


@dataclass(frozen=True)
class Site:
    """An argument that can be made invalid (or empty), and how (one of :data:`KINDS`)."""

    kind: str
    name: str


@dataclass(frozen=True)
class EdgeCall(Call):
    """A call with one argument made invalid or empty (:attr:`mutation` says which and how),
    and the valid call it was made from (:attr:`base`)."""

    base: Call | None = field(default=None, compare=False)
    mutation: str = field(default="", compare=False)
    kind: str = field(default="", compare=False)


def is_dim_name(name: str) -> bool:
    return name in ("dim", "dim0", "dim1") or name.endswith("_dim")


def _shared_letters(sig: OpSignature, hints: OpHints, name: str) -> tuple[str, ...]:
    """Letters of ``name``'s symbolic shape that another tensor argument's shape shares."""
    own = hints.get(name).shape or ()
    others = {d for a in sig.args if a.name != name and not a.is_out
              for d in (hints.get(a.name).shape or ())}
    return tuple(d for d in own if isinstance(d, str) and d in others)


def _tensor_sites(spec: ArgSpec, sig: OpSignature, hints: OpHints) -> list[Site]:
    h = hints.get(spec.name)
    out = []
    if (h.along is not None and h.length_of is None) or spec.name in INDEX_NAMES:
        out.append(Site("index", spec.name))
    if h.dtypes and all(d in INTEGRAL or d in BOOL for d in h.dtypes):
        out.append(Site("dtype", spec.name))
    shared = _shared_letters(sig, hints, spec.name)
    if shared and not spec.is_list:
        out.append(Site("shape", spec.name))
    if h.along is not None or h.length_of is not None or h.dtypes is not None or shared \
            or spec.name in EMPTY_NAMES:
        out.append(Site("empty", spec.name))
    return out


def sites(sig: OpSignature, hints: OpHints) -> tuple[Site, ...]:
    """Every argument of ``sig`` with a validity rule (see the module's docstring)."""
    tensors = [a for a in sig.args if a.base == "Tensor" and not a.is_out]
    first = tensors[0].name if tensors else None
    out: list[Site] = []
    for a in sig.args:
        h = hints.get(a.name)
        if a.is_out or h.choices is not None:
            continue
        if a.base in ("int", "SymInt") and not a.is_list:
            if is_dim_name(a.name):
                out.append(Site("dim", a.name))
            elif a.base == "SymInt" or (h.min is not None and h.min >= 0):
                out.append(Site("count", a.name))
        elif a.base in ("int", "SymInt"):
            if a.name in ("dim", "dims"):
                out.append(Site("dims", a.name))
            elif a.name in SIZE_NAMES or (a.base == "SymInt" and "size" in a.name):
                out.append(Site("size", a.name))
        elif a.base == "Tensor" and a.name != first:
            out += _tensor_sites(a, sig, hints)
    return tuple(sorted(out, key=lambda s: KINDS.index(s.kind)))


def _rank(values: dict[str, Any], sig: OpSignature) -> int:
    t = _self(values, sig)
    return max(t.dim(), 1) if t is not None else 1


def _self(values: dict[str, Any], sig: OpSignature) -> torch.Tensor | None:
    for a in sig.args:
        v = values.get(a.name)
        if a.base == "Tensor" and not a.is_out and isinstance(v, torch.Tensor):
            return v
    return None


def _first_tensor(value: Any) -> tuple[torch.Tensor | None, int | None]:
    """The tensor of an argument (a ``Tensor[]``'s first one and its position)."""
    if isinstance(value, torch.Tensor):
        return value, None
    if isinstance(value, list | tuple):
        for j, t in enumerate(value):
            if isinstance(t, torch.Tensor):
                return t, j
    return None, None


def _put(value: Any, j: int | None, t: torch.Tensor) -> Any:
    if j is None:
        return t
    return [t if k == j else v for k, v in enumerate(value)]


def _emptied(t: torch.Tensor, dim: int = 0) -> torch.Tensor:
    shape = list(t.shape) or [1]
    shape[dim % len(shape)] = 0
    return torch.zeros(shape, dtype=t.dtype)


def _grown(t: torch.Tensor, dim: int) -> torch.Tensor:
    if t.shape[dim] == 0:
        shape = list(t.shape)
        shape[dim] = 1
        return torch.zeros(shape, dtype=t.dtype)
    return torch.cat([t, t.narrow(dim, 0, 1)], dim=dim)


def _mutate_value(site: Site, value: Any, values: dict[str, Any], sig: OpSignature,
                  hints: OpHints, low: bool, pos: int) -> tuple[Any, str] | None:
    """The invalid value for ``site`` and how messages say it, or ``None`` where the drawn
    value cannot be made so (an omitted or ``None`` argument, an empty index)."""
    r = _rank(values, sig)
    kind = site.kind
    bad = -r - 1 if low else r
    if kind == "dim" and isinstance(value, int):
        return bad, f"{site.name}={bad} out of range for rank {r}"
    if kind == "dims" and isinstance(value, list):
        dims = [*value, bad]
        return dims, f"{site.name}={dims} out of range for rank {r}"
    if kind == "size" and isinstance(value, list):
        sizes = list(value) or [1]
        sizes[pos % len(sizes)] = -2
        return sizes, f"{site.name}={sizes} negative"
    if kind == "count" and isinstance(value, int) and not isinstance(value, bool):
        return -2, f"{site.name}=-2 negative"
    t, j = _first_tensor(value)
    if t is None:
        return None
    if kind == "index":
        if t.numel() == 0 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            return None
        me = _self(values, sig)
        m = max(me.shape, default=1) if me is not None else 1
        far = t.clone()
        far.view(-1)[pos % t.numel()] = -m - 1 if low else m
        return _put(value, j, far), f"{site.name} holds {-m - 1 if low else m}, out of range"
    if kind == "dtype":
        return _put(value, j, t.to(torch.float32)), f"{site.name} float32, not {t.dtype}"
    if kind == "shape":
        own = hints.get(site.name).shape or ()
        shared = _shared_letters(sig, hints, site.name)
        if len(own) != t.dim() or not shared:
            return None
        d = own.index(shared[pos % len(shared)])
        grown = _grown(t, d)
        return _put(value, j, grown), f"{site.name} of shape {tuple(grown.shape)}, its size " \
                                      f"{own[d]} one more than the other arguments'"
    if kind == "empty":
        me = _self(values, sig)
        if me is None or me.numel() == 0 or t.numel() == 0:
            return None
        return _put(value, j, _emptied(t)), f"{site.name} empty next to a non-empty self"
    return None


def _companions(site: Site, values: dict[str, Any], hints: OpHints) -> dict[str, Any]:
    """An emptied index's ``length_of`` companions (index_add's source: one slice per
    position), emptied along their ``along`` dim to match."""
    if site.kind != "empty":
        return {}
    out = {}
    for name, value in values.items():
        h = hints.get(name)
        dim = values.get(h.along) if isinstance(h.along, str) else h.along
        if h.length_of == site.name and isinstance(value, torch.Tensor) and isinstance(dim, int):
            out[name] = _emptied(value, dim) if value.dim() else value
    return out


def mutate(call: Call, site: Site | None, hints: OpHints, low: bool, pos: int) -> EdgeCall:
    """``call`` with ``site`` made invalid or empty (``low``: the negative side; ``pos``: which
    element or entry), or unchanged with no :attr:`EdgeCall.mutation` where it cannot be."""
    values = dict(call.values)
    done = None if site is None or site.name not in values else _mutate_value(
        site, values[site.name], values, call.sig, hints, low, pos)
    if done is None or site is None:
        return EdgeCall(sig=call.sig, values=call.values, on_cpu=call.on_cpu, base=call)
    values[site.name] = done[0]
    values.update(_companions(site, values, hints))
    return EdgeCall(sig=call.sig, values=tuple((n, values[n]) for n, _ in call.values),
                    on_cpu=call.on_cpu, notes=(*call.notes, done[1]), base=call,
                    mutation=done[1], kind=site.kind)


@composite
def invalid_calls(draw: Any, sig: OpSignature, hints: OpHints) -> EdgeCall:
    """A forward call with one of its :func:`sites` made invalid or empty."""
    base: Call = draw(forward_calls(sig, hints))
    found = sites(sig, hints)
    site = draw(cached_sampled(found), label="site") if found else None
    low = draw(cached_booleans(), label="negative side")
    pos = draw(cached_integers(0, 2**16), label="position")
    return mutate(replace(base, fills=()), site, hints, low, pos)
