"""Fix these first: failing, unsupported and missing overloads ranked by how many workloads they
block, from a census of workloads (``conformance trace A.py B.py ... --format json``) joined
with a results file.

The rule: an overload blocks a workload when the workload reaches it (as a kernel the backend
is asked for, or as a composite it called) and, on this backend, it is missing (the census'
static classification), or a check on it ended ``fail``, ``crash``, ``timeout`` or
``unsupported`` — at a dtype the workload's recorded calls of it use, where the verdict says
which dtypes went wrong (a fail's distinct failures, a dtypes check's refused dtypes; measured:
without this, complex128 value failures of ``mm`` ranked above the float32 workloads' one
missing backward op). Ranked by workloads blocked, then by calls in those workloads, then by the
worst check's severity (:func:`opdb.outcomes.severity`), then by name. A failure in an op no
workload calls is not ranked here (the family matrix still shows it)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opdb import outcomes
from opdb.dtypes import DTYPE_NAMES
from opdb.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: Verdicts that block a workload.
BLOCKING = ("fail", "crash", "timeout", "unsupported")

#: A dtype named in a recorded call's spec (``self=float32[2, 4]``, ``dtype='uint8'``).
_DTYPE_WORD = re.compile(r"\b(" + "|".join(DTYPE_NAMES) + r")\b")


@dataclass(frozen=True)
class Workload:
    """One traced workload: its name and the calls per overload it reached."""

    name: str
    backend: str | None
    calls: Mapping[str, int]
    missing: frozenset[str]  # overloads the census classified missing for its backend
    #: per overload, the dtypes its recorded calls used (empty: not recorded, `--examples 0`)
    dtypes: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Blocker:
    """One overload and the workloads it blocks."""

    overload: str
    workloads: tuple[str, ...]
    of: int  # workloads in the census
    calls: int
    why: tuple[str, ...]  # "missing", "autograd: fail (value)", ...
    severity: int

    def sentence(self) -> str:
        return (f"{self.overload} blocks {len(self.workloads)} of {self.of} workload"
                f"{'s' if self.of != 1 else ''} ({', '.join(self.workloads)}; {self.calls:,} "
                f"call{'s' if self.calls != 1 else ''}): {'; '.join(self.why)}")

    def as_json(self) -> dict[str, Any]:
        return {"overload": self.overload, "blocks": len(self.workloads), "of": self.of,
                "workloads": list(self.workloads), "calls": self.calls, "why": list(self.why),
                "severity": self.severity}


def _workload(doc: Mapping[str, Any], where: str) -> Workload:
    if not isinstance(doc.get("overloads"), list):
        raise InputError("not a `conformance trace --format json` census (no 'overloads')",
                         file=where)
    calls: dict[str, int] = {}
    dtypes: dict[str, frozenset[str]] = {}
    missing = set()
    for need in [*doc["overloads"], *(doc.get("composites") or ())]:
        name = str(need["name"])
        calls[name] = calls.get(name, 0) + int(need.get("count") or 0)
        used = {m for ex in need.get("examples") or () for m in _DTYPE_WORD.findall(str(ex))}
        dtypes[name] = dtypes.get(name, frozenset()) | used
        if need.get("status") == "missing":
            missing.add(name)
    name = Path(str(doc.get("target") or where)).name
    return Workload(name, doc.get("backend"), calls, frozenset(missing), dtypes)


def read_census(paths: Iterable[str]) -> tuple[Workload, ...]:
    """Workloads from census files: one trace document, or ``{"workloads": [...]}``."""
    out: list[Workload] = []
    for path in paths:
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read the census: {exc}", file=path) from None
        docs = doc.get("workloads") if isinstance(doc, dict) and "workloads" in doc else [doc]
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            raise InputError("not a `conformance trace --format json` census", file=path)
        out.extend(_workload(d, path) for d in docs)
    names = [w.name for w in out]
    return tuple(
        w if names.count(w.name) == 1 else Workload(f"{w.name}#{i}", w.backend, w.calls,
                                                    w.missing, w.dtypes)
        for i, w in enumerate(out, 1))


@dataclass(frozen=True)
class BadCell:
    """One blocking verdict of an overload, and the dtypes it goes wrong at (None: any)."""

    check: str
    label: str
    severity: int
    dtypes: frozenset[str] | None

    def blocks(self, used: frozenset[str]) -> bool:
        """Whether it blocks a workload that calls the overload at ``used`` dtypes (empty:
        not known, so it does)."""
        return self.dtypes is None or not used or bool(self.dtypes & used)


def _cell_dtypes(verdict: str, failures: Any, support: Any) -> frozenset[str] | None:
    """The dtypes a verdict goes wrong at: a fail's distinct failures' call dtypes; an
    ``unsupported`` dtypes-check verdict's refused dtypes; None where not known (or a crash)."""
    if verdict == "fail" and isinstance(failures, (list, tuple)) and failures and all(
            f.get("dtypes") for f in failures):
        return frozenset(d for f in failures for d in f["dtypes"])
    if verdict == "unsupported" and isinstance(support, Mapping) and support:
        return frozenset(d for d, o in support.items() if o == "refused") or None
    return None


def _bad_cells(cur: pd.DataFrame) -> dict[str, list[BadCell]]:
    """Per overload: each blocking verdict."""
    out: dict[str, list[BadCell]] = {}
    bad = cur[cur["verdict"].isin(BLOCKING)]
    for ov, check, verdict, cat, exp, failures, support in zip(
            bad["overload"], bad["check"], bad["verdict"], bad["category"], bad["expected"],
            bad["failures"], bad["dtype_support"], strict=True):
        cat = cat if isinstance(cat, str) else None
        sev = outcomes.severity(cat) if verdict == "fail" else (
            outcomes.severity(None) if verdict in ("crash", "timeout") else 1)
        dts = _cell_dtypes(verdict, failures, support)
        # an expected failure still blocks the workload: ranked the same, and marked
        label = f"{check}: {verdict}" + (f" ({cat})" if cat and verdict == "fail" else "") + (
            f" at {', '.join(sorted(dts, key=DTYPE_NAMES.index))}" if dts else "") + (
            " [expected]" if isinstance(exp, str) else "")
        out.setdefault(ov, []).append(BadCell(check, label, sev, dts))
    return out


def rank(workloads: Sequence[Workload], cur: pd.DataFrame | None) -> list[Blocker]:
    """Blocking overloads, most workloads blocked first (see the module's rule). A failure
    at dtypes none of a workload's calls of the overload use does not block that workload."""
    bad = _bad_cells(cur) if cur is not None else {}
    names = set(bad) | set().union(*(w.missing for w in workloads)) if workloads else set()
    out = []
    for name in names:
        blocked, why = [], []
        for w in workloads:
            if name not in w.calls:
                continue
            cells = [c for c in bad.get(name, ()) if c.blocks(w.dtypes.get(name, frozenset()))]
            if name in w.missing and not bad.get(name):
                why.append("missing (static coverage)")
            elif not cells:
                continue
            blocked.append(w)
            why.extend(c.label for c in cells)
        if not blocked:
            continue
        severity = max([c.severity for c in bad.get(name, ())] + [1])
        out.append(Blocker(name, tuple(w.name for w in blocked), len(workloads),
                           sum(w.calls[name] for w in blocked), tuple(dict.fromkeys(why)),
                           severity))
    out.sort(key=lambda b: (-len(b.workloads), -b.calls, -b.severity, b.overload))
    return out


__all__ = ["BLOCKING", "BadCell", "Blocker", "Workload", "rank", "read_census"]
