"""What a backend has: classify overloads for one dispatch key from the live dispatcher.

The order is the dispatcher's own (``OperatorEntry::computeDispatchTableEntry``): a kernel
registered for the key itself wins (``native``), then a CompositeExplicitAutogradNonFunctional
or CompositeExplicitAutograd kernel (``composite_explicit``), then a CompositeImplicitAutograd
kernel (``composite_implicit``), then a boxed fallback registered for the key (``fallback``);
otherwise ``missing``. An op with both a CompositeImplicitAutograd kernel and a kernel for the
key is ``native`` for that key.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any


class Status(str, enum.Enum):
    native = "native"
    composite_explicit = "composite_explicit"
    composite_implicit = "composite_implicit"
    fallback = "fallback"
    missing = "missing"

    def __str__(self) -> str:
        return self.value

    @property
    def available(self) -> bool:
        """Whether calling the op on the backend reaches a kernel (any status but missing)."""
        return self is not Status.missing


#: Statuses in the order the dispatcher prefers them (and the CLI prints them).
STATUSES: tuple[Status, ...] = tuple(Status)

_EXPLICIT = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd")
_IMPLICIT = "CompositeImplicitAutograd"


def dispatch_key(name: str) -> Any:
    """``"CPU"`` -> ``torch._C.DispatchKey.CPU``; ValueError for an unknown key name."""
    import torch

    try:
        return getattr(torch._C.DispatchKey, name)
    except AttributeError:
        raise ValueError(f"unknown dispatch key {name!r}") from None


def registered(key: str) -> frozenset[str]:
    """Operators with a kernel registered for exactly ``key`` (``aten::`` prefix removed)."""
    import torch

    return frozenset(
        n[len("aten::"):]
        for n in torch._C._dispatch_get_registrations_for_dispatch_key(key)
        if n.startswith("aten::")
    )


def has_fallback(key: str) -> bool:
    """Whether a boxed backend fallback is registered for ``key`` (``m.fallback(...)``)."""
    import torch

    return bool(torch._C._dispatch_has_backend_fallback(dispatch_key(key)))


def fallback_origin(key: str, probe: str | None = None) -> str | None:
    """Where the backend fallback for ``key`` was registered (from the dispatcher's dump), or
    None. ``probe`` is an aten overload served by the fallback, used to read the dump."""
    import torch

    if probe is None or not has_fallback(key):
        return None
    try:
        table = torch._C._dispatch_dump_table(f"aten::{probe}")
    except RuntimeError:
        return None
    for line in table.splitlines():
        head, _, rest = line.partition(": ")
        if head == key and "[backend fallback]" in rest:
            rest = rest.replace("[backend fallback]", "").strip()
            return rest.removeprefix("registered at ").strip() or None
    return None


def classify(dispatch_key_name: str, names: Iterable[str]) -> dict[str, Status]:
    """Status of each overload name (``add.Tensor``) for a dispatch key (``CPU``, ``Meta``,
    ``PrivateUse1``, ...), from the live dispatcher's registrations."""
    import torch

    key = dispatch_key(dispatch_key_name)

    def serves(alias: str) -> bool:  # e.g. XLA and Lazy are outside ...NonFunctional
        return bool(torch._C._dispatch_is_included_in_alias(key, dispatch_key(alias)))

    native = registered(dispatch_key_name)
    explicit = frozenset().union(*(registered(k) for k in _EXPLICIT if serves(k)))
    implicit = registered(_IMPLICIT) if serves(_IMPLICIT) else frozenset()
    fallback = has_fallback(dispatch_key_name)
    out: dict[str, Status] = {}
    for name in names:
        if name in native:
            out[name] = Status.native
        elif name in explicit:
            out[name] = Status.composite_explicit
        elif name in implicit:
            out[name] = Status.composite_implicit
        elif fallback:
            out[name] = Status.fallback
        else:
            out[name] = Status.missing
    return out
