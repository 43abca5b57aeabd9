"""Fix these first: failing, unsupported and missing overloads ranked by how many workloads they
block, from a census of workloads (``conformance trace A.py B.py ... --format json``) joined
with a results file.

The rule: an overload blocks a workload when the workload reaches it (as a kernel the backend
is asked for, or as a composite it called) and, on this backend, it is missing (the census'
static classification), or a check on it ended ``fail``, ``crash``, ``timeout`` or
``unsupported``. Ranked by workloads blocked, then by calls in those workloads, then by the
worst check's severity (:func:`opdb.outcomes.severity`), then by name. A failure in an op no
workload calls is not ranked here (the family matrix still shows it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opdb import outcomes
from opdb.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: Verdicts that block a workload.
BLOCKING = ("fail", "crash", "timeout", "unsupported")


@dataclass(frozen=True)
class Workload:
    """One traced workload: its name and the calls per overload it reached."""

    name: str
    backend: str | None
    calls: Mapping[str, int]
    missing: frozenset[str]  # overloads the census classified missing for its backend


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
    missing = set()
    for need in [*doc["overloads"], *(doc.get("composites") or ())]:
        name = str(need["name"])
        calls[name] = calls.get(name, 0) + int(need.get("count") or 0)
        if need.get("status") == "missing":
            missing.add(name)
    name = Path(str(doc.get("target") or where)).name
    return Workload(name, doc.get("backend"), calls, frozenset(missing))


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
                                                    w.missing)
        for i, w in enumerate(out, 1))


def _bad_cells(cur: pd.DataFrame) -> dict[str, list[tuple[str, str, int]]]:
    """Per overload: (check, verdict(category), severity) of each blocking verdict."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    bad = cur[cur["verdict"].isin(BLOCKING)]
    for ov, check, verdict, cat in zip(bad["overload"], bad["check"], bad["verdict"],
                                       bad["category"], strict=True):
        cat = cat if isinstance(cat, str) else None
        sev = outcomes.severity(cat) if verdict == "fail" else (
            outcomes.severity(None) if verdict in ("crash", "timeout") else 1)
        label = f"{check}: {verdict}" + (f" ({cat})" if cat and verdict == "fail" else "")
        out.setdefault(ov, []).append((check, label, sev))
    return out


def rank(workloads: Sequence[Workload], cur: pd.DataFrame | None) -> list[Blocker]:
    """Blocking overloads, most workloads blocked first (see the module's rule)."""
    bad = _bad_cells(cur) if cur is not None else {}
    names = set(bad) | set().union(*(w.missing for w in workloads)) if workloads else set()
    out = []
    for name in names:
        users = [w for w in workloads if name in w.calls]
        if not users:
            continue
        why = [c[1] for c in bad.get(name, ())]
        if any(name in w.missing for w in users) and not bad.get(name):
            why.insert(0, "missing (static coverage)")
        severity = max([c[2] for c in bad.get(name, ())] + [1])
        out.append(Blocker(name, tuple(w.name for w in users), len(workloads),
                           sum(w.calls[name] for w in users), tuple(why), severity))
    out.sort(key=lambda b: (-len(b.workloads), -b.calls, -b.severity, b.overload))
    return out


__all__ = ["BLOCKING", "Blocker", "Workload", "rank", "read_census"]
