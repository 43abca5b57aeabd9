"""What a torch upgrade changes for a backend: the changes between two releases' operator
declarations (:mod:`opdb.release`), one frozen :class:`Change` each, and — given what a backend
has today (:class:`Coverage`) — what that backend must do about each (:class:`Action`).

Change kinds (``CHANGES``) and the rule that decides the backend's part:

- an overload ``added`` needs a kernel unless a composite (or the backend's fallback) serves it;
- an overload ``removed`` that the backend registers a kernel for must lose that registration
  (registering a kernel for an operator that does not exist fails at import);
- ``arguments``, ``argument_type``, ``returns``: a backend kernel's signature follows the schema;
  ``default``: the kernel's signature stays, the value it receives changes (a review);
- ``became_composite``: the new release decomposes the op (CompositeImplicitAutograd); a kernel
  the backend registers for its key now takes over from the decomposition for that backend,
  without an autograd formula of its own unless derivatives.yaml has one — drop it or keep it
  knowingly;
- ``lost_composite``: no composite serves the op any more; a backend without its own kernel
  (or fallback) must write one;
- ``dispatch``: another change of the composite that serves it (informational);
- ``derivative``: the backward formula calls other ops; one the backend has no overload of
  (at base-name level, as :mod:`opdb.coverage`) must be implemented when the backend serves the
  forward itself (a composite-implicit forward is differentiated through its decomposition);
- ``tags``: tags added or removed (``pointwise``, ``core``, ``inplace_view``: informational).

Where the backend stands in the new release is projected from what it registers today and the
new release's declarations (:func:`projected`), so the answer holds whichever torch is running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opdb.release import COMPOSITE_IMPLICIT, OpFacts, Release, SchemaArg, split_schema

CHANGES: Mapping[str, str] = {
    "added": "new overload",
    "removed": "overload removed",
    "arguments": "arguments added, removed, renamed or reordered",
    "argument_type": "an argument's type or alias annotation changed",
    "default": "an argument's default value changed",
    "returns": "the returns changed",
    "became_composite": "now CompositeImplicitAutograd: decomposed above the backend",
    "lost_composite": "no composite kernel serves it any more: backends need their own",
    "dispatch": "the composite kernel that serves it changed",
    "derivative": "the backward formula changed",
    "tags": "tags added or removed",
}

#: What a row asks of the backend: ``must`` (exit 1), ``review``, ``none``; ``n/a`` without one.
LEVELS = ("must", "review", "none", "n/a")

#: Tags torchgen implies on every entry, and the generated marker: not compared.
_IMPLIED_TAGS = frozenset({"pt2_compliant_tag", "out", "inplace", "generated"})


@dataclass(frozen=True)
class Change:
    """One change of one overload between the old and the new release."""

    overload: str
    kind: str  # a key of CHANGES
    detail: str
    old_loc: str | None
    new_loc: str | None
    new_backward: tuple[str, ...] = ()  # derivative: bases the new formula calls, the old not

    @property
    def what(self) -> str:
        return CHANGES[self.kind]


@dataclass(frozen=True)
class Coverage:
    """What a backend has today: the overloads it registers a kernel for, and whether a boxed
    fallback serves its key (a static coverage JSON or the live dispatcher says)."""

    backend: str
    native: frozenset[str]
    fallback: bool


@dataclass(frozen=True)
class Action:
    """A change as one backend sees it: where the overload stands for it in the new release
    (``status``: native, composite_implicit, composite_explicit, fallback, missing, gone) and
    what it must do."""

    change: Change
    level: str  # one of LEVELS
    status: str
    reason: str


# ---- comparing two releases -------------------------------------------------------------


def _args_changes(old: tuple[SchemaArg, ...], new: tuple[SchemaArg, ...]) -> list[tuple[str, str]]:
    if [(a.name, a.kwarg_only) for a in old] != [(a.name, a.kwarg_only) for a in new]:
        gone = [str(a) for a in old if a.name not in {b.name for b in new}]
        came = [str(a) for a in new if a.name not in {b.name for b in old}]
        parts = ([f"added {', '.join(came)}"] if came else []) + (
            [f"removed {', '.join(gone)}"] if gone else [])
        return [("arguments", "; ".join(parts) or "reordered or moved across `*`")]
    out = []
    for a, b in zip(old, new, strict=True):
        if (a.type, a.alias) != (b.type, b.alias):
            out.append(("argument_type", f"{a.name}: {a.type}{a.alias} -> {b.type}{b.alias}"))
        if a.default != b.default:
            out.append(("default", f"{a.name}: {a.default if a.default is not None else '(none)'}"
                                   f" -> {b.default if b.default is not None else '(none)'}"))
    return out


def schema_changes(old: str, new: str) -> list[tuple[str, str]]:
    """``(kind, detail)`` for each difference of two schemas' texts."""
    if old == new:
        return []
    _, a_args, a_ret = split_schema(old)
    _, b_args, b_ret = split_schema(new)
    out = _args_changes(a_args, b_args)
    if a_ret != b_ret:
        out.append(("returns", f"{a_ret} -> {b_ret}"))
    return out


def _dispatch_changes(a: OpFacts, b: OpFacts) -> list[tuple[str, str]]:
    ca, cb = a.composite, b.composite
    if ca == cb:
        return []
    if cb == COMPOSITE_IMPLICIT:
        return [("became_composite", f"{ca or 'backend kernels'} -> {cb}")]
    if cb is None:
        return [("lost_composite", f"{ca} -> backend kernels ({', '.join(b.dispatch) or 'none'}"
                                   f"{'; delegate ' + b.structured_delegate if b.structured_delegate else ''})")]
    return [("dispatch", f"{ca or 'backend kernels'} -> {cb}")]


def _derivative_change(a: OpFacts, b: OpFacts, bases: frozenset[str]) -> Change | None:
    if a.backward_bases is None or b.backward_bases is None:
        return None  # a side without derivatives: unknown, not "unchanged"
    old, new = a.backward_bases & bases, b.backward_bases & bases
    came = tuple(sorted(new - old))
    gone = sorted(old - new)
    parts = []
    if a.differentiable != b.differentiable and None not in (a.differentiable, b.differentiable):
        parts.append("now differentiable" if b.differentiable else "no longer differentiable")
    if came:
        parts.append(f"calls {', '.join(came)}")
    if gone:
        parts.append(f"no longer calls {', '.join(gone)}")
    if not parts:
        return None
    return Change(b.name, "derivative", "; ".join(parts), a.derivative_loc or a.loc,
                  b.derivative_loc or b.loc, new_backward=came)


def _pair_changes(a: OpFacts, b: OpFacts, bases: frozenset[str]) -> list[Change]:
    found: list[tuple[str, str]] = []
    if a.schema is not None and b.schema is not None:
        found += schema_changes(a.schema, b.schema)
    found += _dispatch_changes(a, b)
    if not (a.autogen or b.autogen):
        ta, tb = a.tags - _IMPLIED_TAGS, b.tags - _IMPLIED_TAGS
        if ta != tb:
            added = [f"+{t}" for t in sorted(tb - ta)]
            removed = [f"-{t}" for t in sorted(ta - tb)]
            found.append(("tags", " ".join(added + removed)))
    out = [Change(b.name, kind, detail, a.loc, b.loc) for kind, detail in found]
    d = _derivative_change(a, b, bases)
    return out + ([d] if d is not None else [])


def compare(old: Release, new: Release) -> list[Change]:
    """Every change from ``old`` to ``new``: removed overloads in old's order, then the new
    release's overloads in its order (added, or changed)."""
    out = [Change(n, "removed", f"{f.kind}{' (autogen)' if f.autogen else ''}", f.loc, None)
           for n, f in old.ops.items() if n not in new.ops]
    bases = frozenset(n.partition(".")[0] for n in (*old.ops, *new.ops))
    for name, b in new.ops.items():
        a = old.ops.get(name)
        if a is None:
            how = b.composite or ("delegate " + b.structured_delegate if b.structured_delegate
                                  else "backend kernels")
            out.append(Change(name, "added", f"{b.kind}, {how}", None, b.loc))
        else:
            out.extend(_pair_changes(a, b, bases))
    return out


def counts(changes: Iterable[Change]) -> dict[str, int]:
    """Changes per kind, every kind listed (in ``CHANGES`` order)."""
    out = dict.fromkeys(CHANGES, 0)
    for c in changes:
        out[c.kind] += 1
    return out


# ---- what one backend must do -------------------------------------------------------------


def projected(name: str, release: Release, cov: Coverage) -> str:
    """Where ``name`` stands for the backend in ``release``: ``native`` (it registers a kernel
    today), the composite that serves it, ``fallback``, ``missing``, or ``gone``."""
    f = release.ops.get(name)
    if f is None:
        return "gone"
    if name in cov.native:
        return "native"
    comp = f.composite
    if comp == COMPOSITE_IMPLICIT:
        return "composite_implicit"
    if comp is not None:
        return "composite_explicit"
    return "fallback" if cov.fallback else "missing"


def _lacking(bases: Iterable[str], release: Release, cov: Coverage) -> list[str]:
    """Bases of which the backend has no overload available in ``release``."""
    by_base: dict[str, list[str]] = {}
    for n, f in release.ops.items():
        if f.kind != "out":
            by_base.setdefault(n.partition(".")[0], []).append(n)
    return [b for b in bases
            if not any(projected(n, release, cov) != "missing" for n in by_base.get(b, ()))]


def _decide(c: Change, status: str, new: Release, cov: Coverage) -> tuple[str, str]:
    native = status == "native" or c.overload in cov.native
    if c.kind == "added":
        if status == "missing":
            return "must", "implement it: no kernel, composite or fallback serves it"
        return "none", f"served ({status})"
    if c.kind == "removed":
        if native:
            return "must", "drop the kernel registration: the operator is gone"
        return "none", "the backend registers no kernel for it"
    if c.kind in ("arguments", "argument_type", "returns"):
        if native:
            return "must", "the backend's kernel signature must follow the new schema"
        return "none", f"no kernel of the backend's own ({status})"
    if c.kind == "default":
        if native:
            return "review", "the kernel receives the new default where callers omit it"
        return "none", f"no kernel of the backend's own ({status})"
    if c.kind == "became_composite":
        if native:
            return "must", ("its kernel now bypasses the decomposition (and autograd has no "
                            "formula for it unless derivatives.yaml gives one): drop or keep it "
                            "knowingly")
        return "none", "the decomposition serves it"
    if c.kind == "lost_composite":
        if status == "missing":
            return "must", "implement it: the composite that served it is gone"
        return ("review", "only the backend's fallback serves it now") if status == "fallback" \
            else ("none", f"served ({status})")
    if c.kind == "derivative":
        lacking = _lacking(c.new_backward, new, cov)
        if lacking and status in ("native", "composite_explicit", "fallback"):
            return "must", f"implement {', '.join(lacking)}: the new formula calls it"
        if lacking:
            return "none", f"formula calls {', '.join(lacking)}, unused while the forward is " \
                           f"{status}"
        return "none", "the backend has every op the formula calls"
    return "none", "informational"


def assess(changes: Iterable[Change], new: Release, old: Release,
           cov: Coverage | None) -> list[Action]:
    """Each change as the backend sees it (``n/a`` levels without a backend)."""
    out = []
    for c in changes:
        if cov is None:
            out.append(Action(c, "n/a", "", ""))
            continue
        status = projected(c.overload, new if c.kind != "removed" else old, cov)
        level, reason = _decide(c, status, new, cov)
        out.append(Action(c, level, status if c.kind != "removed" else "gone", reason))
    return out


def action_json(a: Action) -> dict[str, Any]:
    c = a.change
    return {"overload": c.overload, "change": c.kind, "what": c.what, "detail": c.detail,
            "old": c.old_loc, "new": c.new_loc, "level": a.level, "status": a.status,
            "reason": a.reason}


__all__ = ["CHANGES", "LEVELS", "Action", "Change", "Coverage", "action_json", "assess",
           "compare", "counts", "projected", "schema_changes"]
