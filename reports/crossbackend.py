"""Backends side by side: per (overload, check), the verdict of each backend in results files of
several backends (same torch, same seed), so that the backend that disagrees with all the others
stands out, and a failure every backend shares points at the reference or the harness.

The rules:

- verdicts are compared by outcome: ``pass``; ``fail`` (a fail, crash or timeout: the backend
  ran and went wrong); ``unsupported``. A ``skip`` or an untested cell has no outcome and
  disagrees with nobody (meta skips what needs values; that is not a disagreement);
- a row's *lone dissenter* is the one backend whose outcome differs from the one every other
  backend with an outcome shares, where at least three backends have one (with two, neither is
  alone: the row only *differs*);
- a row *fails everywhere* when at least two backends have an outcome and every one of them is
  ``fail``: a likely reference (CPU) or harness issue rather than a backend's bug;
- a backend whose run's device is the oracle's (``cpu``: CPU compared with itself) passes by
  construction: it votes with the backends that agree with CPU, but it is never the lone
  dissenter and does not count for "fails everywhere". Measured on
  cpu, meta and mlu runs of ``add``, ``add.Scalar_out``'s promotion check failed ``error_type``
  on meta and mlu alike and passed on cpu, which made cpu "alone" where the two backends' shared
  failure is the finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reports.tables import NOT_TESTED

if TYPE_CHECKING:
    import pandas as pd

#: The device of the oracle: a run on it compares CPU with CPU.
ORACLE_DEVICE = "cpu"

#: verdict -> outcome compared across backends (absent: no outcome)
OUTCOME = {"pass": "pass", "fail": "fail", "crash": "fail", "timeout": "fail",
           "unsupported": "unsupported"}


@dataclass(frozen=True)
class Cell:
    verdict: str  # a verdict, or NOT_TESTED
    category: str | None
    expected: bool

    @property
    def outcome(self) -> str | None:
        return OUTCOME.get(self.verdict)


@dataclass(frozen=True)
class Row:
    overload: str
    check: str
    cells: tuple[Cell, ...]  # one per backend, in the matrix's order
    lone: str | None  # the lone dissenter's backend
    all_fail: bool

    @property
    def differs(self) -> bool:
        return len({c.outcome for c in self.cells if c.outcome is not None}) > 1


@dataclass(frozen=True)
class Matrix:
    backends: tuple[str, ...]
    rows: tuple[Row, ...]
    notes: tuple[str, ...]  # e.g. the runs' torch versions or seeds differ
    references: tuple[str, ...] = ()  # backends run on the oracle's device

    def totals(self) -> list[dict[str, Any]]:
        """Per backend: verdict counts, lone disagreements, cells tested."""
        out = []
        for i, b in enumerate(self.backends):
            counts: dict[str, int] = {}
            for r in self.rows:
                v = r.cells[i].verdict
                counts[v] = counts.get(v, 0) + 1
            out.append({"backend": b, "verdicts": counts,
                        "lone": sum(r.lone == b for r in self.rows),
                        "tested": sum(n for v, n in counts.items() if v in OUTCOME)})
        return out

    def counts(self) -> dict[str, int]:
        return {"rows": len(self.rows), "differ": sum(r.differs for r in self.rows),
                "lone": sum(r.lone is not None for r in self.rows),
                "all_fail": sum(r.all_fail for r in self.rows)}

    def as_json(self) -> dict[str, Any]:
        return {
            "backends": list(self.backends), "references": list(self.references),
            "notes": list(self.notes), "counts": self.counts(),
            "totals": self.totals(),
            "rows": [{"overload": r.overload, "check": r.check, "lone": r.lone,
                      "all_fail": r.all_fail, "differs": r.differs,
                      "verdicts": [[c.verdict, c.category, c.expected] for c in r.cells]}
                     for r in self.rows],
        }


def lone_dissenter(outcomes: Sequence[str | None], backends: Sequence[str],
                   references: Sequence[str] = ()) -> str | None:
    """The one backend (not a reference) whose outcome differs from the one all the others
    share, where at least three have one."""
    have = [(b, o) for b, o in zip(backends, outcomes, strict=True) if o is not None]
    if len(have) < 3:
        return None
    for i, (b, o) in enumerate(have):
        rest = {x for j, (_, x) in enumerate(have) if j != i}
        if len(rest) == 1 and o not in rest and b not in references:
            return b
    return None


def _notes(runs: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    notes = []
    for key, what in (("torch_version", "torch versions"), ("seed", "seeds")):
        seen = sorted({str(r.get(key)) for r in runs if r.get(key) is not None})
        if len(seen) > 1:
            notes.append(f"the runs' {what} differ ({', '.join(seen)}): a disagreement may be "
                         "the runs', not the backends'")
    return tuple(notes)


def matrix(cur: pd.DataFrame) -> Matrix:
    """The side-by-side matrix of :func:`reports.tables.latest` records of several backends."""
    backends = tuple(dict.fromkeys(b for b in cur["backend"].fillna("")))
    runs = cur.attrs.get("runs", [])
    refs = tuple(b for b in backends if any(r.get("backend") == b and r.get("device")
                                            == ORACLE_DEVICE for r in runs))
    index = {b: i for i, b in enumerate(backends)}
    grid: dict[tuple[str, str], list[Cell]] = {}
    empty = Cell(NOT_TESTED, None, False)
    for b, ov, check, v, cat, exp in zip(cur["backend"].fillna(""), cur["overload"],
                                         cur["check"], cur["verdict"], cur["category"],
                                         cur["expected"], strict=True):
        cells = grid.setdefault((ov, check), [empty] * len(backends))
        cells[index[b]] = Cell(v, cat if isinstance(cat, str) else None, isinstance(exp, str))
    rows = []
    for (ov, check), cells in grid.items():
        outs = [c.outcome for c in cells]
        have = [o for b, o in zip(backends, outs, strict=True) if o is not None and b not in refs]
        rows.append(Row(ov, check, tuple(cells), lone_dissenter(outs, backends, refs),
                        len(have) >= 2 and all(o == "fail" for o in have)))
    rows.sort(key=lambda r: (r.overload, r.check))
    notes = _notes(runs) + tuple(
        f"{b} ran on the oracle's device (CPU against itself): it votes with the backends that "
        "agree with CPU, is never alone, and does not count for 'every backend fails'"
        for b in refs)
    return Matrix(backends, tuple(rows), notes, refs)


def render_text(m: Matrix, *, limit: int | None = None) -> str:
    """The rows where the backends differ or all fail, and the per-backend totals."""
    c = m.counts()
    lines = [f"{len(m.backends)} backends side by side: {', '.join(m.backends)}",
             f"{c['rows']} (overload, check) rows: {c['differ']} differ, {c['lone']} with a "
             f"lone dissenter, {c['all_fail']} fail on every backend (likely reference or "
             "harness)"]
    lines += [f"note: {n}" for n in m.notes]
    lines.append("")
    for t in m.totals():
        by = ", ".join(f"{v} {n}" for v, n in sorted(t["verdicts"].items()))
        lines.append(f"  {t['backend']}: {by}; alone in {t['lone']} rows")
    shown = [r for r in m.rows if r.differs or r.all_fail]
    if limit is not None:
        shown = shown[:limit]
    if shown:
        table = [["overload", "check", *m.backends, "flag"]]
        for r in shown:
            flag = (f"only {r.lone} disagrees" if r.lone else "") or (
                "every backend fails" if r.all_fail else "differ")
            table.append([r.overload, r.check,
                          *[c.verdict + (f" ({c.category})" if c.category and c.verdict == "fail"
                                         else "") for c in r.cells], flag])
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines.append("")
        lines += ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
                  for row in table]
    return "\n".join(lines) + "\n"


def render_html(m: Matrix) -> str:
    """A self-contained page of the matrix alone (``conformance diff`` of three or more files;
    ``conformance report`` shows the same section inside the full report)."""
    from reports.templating import environment, inline_asset

    order = ["pass", "fail", "unsupported", "crash", "timeout", "skip", NOT_TESTED]
    return environment().get_template("cross_page.html.j2").render(
        cross=m.as_json(), verdict_order=order, css=inline_asset("report.css"))


__all__ = ["OUTCOME", "Cell", "Matrix", "Row", "lone_dissenter", "matrix", "render_html", "render_text"]
