"""Compare two sets of results: before/after a change, or two backends side by side.

Cells are keyed by (overload, check) — the backend is deliberately not part of the key, so two
backends compare directly. Every cell that differs becomes a :class:`Change` with a ``kind``:

=================  ===========================================================================
``regression``     pass → fail / crash / timeout / unsupported
``fix``            fail / crash / timeout / unsupported → pass
``changed``        still not passing, but differently (fail → crash, unsupported → fail, a fail
                   of another category: ``fail/error_type`` → ``fail/value``)
``lost``           tested → not tested (skipped, or no record any more)
``gained``         not tested → tested
=================  ===========================================================================

Overloads also change support as a whole (:class:`SupportChange`): *supported* means tested with
no ``unsupported`` verdict, *unsupported* means some check found no kernel.

:func:`compare` returns a frozen :class:`Diff`; the text and HTML renderings and a future CI gate
all read that one structure (``diff.regressions`` is what a gate fails on). ``conformance diff``
itself always exits 0: it reports, it does not judge.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reports.results import TESTED_VERDICTS
from reports.tables import NOT_TESTED, Counts, count, latest

if TYPE_CHECKING:
    import pandas as pd

KINDS: tuple[str, ...] = ("regression", "fix", "changed", "lost", "gained")

KIND_TITLES: Mapping[str, str] = {
    "regression": "Regressions (pass → not passing)",
    "fix": "Fixes (not passing → pass)",
    "changed": "Changed failures (still not passing, differently)",
    "lost": "Tested → not tested",
    "gained": "Not tested → tested",
    "newly_unsupported": "Newly unsupported overloads",
    "newly_supported": "Newly supported overloads",
}


def _with_category(verdict: str, category: str | None) -> str:
    return f"{verdict}/{category}" if verdict == "fail" and category else verdict


def _tested(v: str) -> bool:
    return v in TESTED_VERDICTS or v not in (NOT_TESTED, "skip")


def classify(before: str, after: str) -> str | None:
    """The kind of change from verdict ``before`` to ``after`` (``None``: no change)."""
    if before == after:
        return None
    tb, ta = _tested(before), _tested(after)
    if tb and not ta:
        return "lost"
    if ta and not tb:
        return "gained"
    if not tb and not ta:
        return None  # skip ↔ no record: still not tested
    if before == "pass":
        return "regression"
    if after == "pass":
        return "fix"
    return "changed"


@dataclass(frozen=True)
class Change:
    """One (overload, check) cell whose verdict differs between A and B."""

    overload: str
    check: str
    before: str
    after: str
    kind: str
    before_message: str | None = None
    after_message: str | None = None
    after_repro: str | None = None
    before_category: str | None = None
    after_category: str | None = None

    @property
    def before_label(self) -> str:
        """``fail/value``: the verdict, with the category for fails."""
        return _with_category(self.before, self.before_category)

    @property
    def after_label(self) -> str:
        return _with_category(self.after, self.after_category)

    @property
    def id(self) -> str:
        return f"{self.overload}[{self.check}]"


@dataclass(frozen=True)
class SupportChange:
    overload: str
    before: str  # "supported" | "unsupported" | "not tested"
    after: str
    kind: str  # "newly_supported" | "newly_unsupported"


@dataclass(frozen=True)
class Side:
    """What one side of the diff was: label, files, run headers, cell counts."""

    label: str
    sources: tuple[str, ...]
    runs: tuple[Mapping[str, Any], ...]
    cells: Counts
    overloads: Counts


@dataclass(frozen=True)
class Diff:
    a: Side
    b: Side
    changes: tuple[Change, ...]
    support: tuple[SupportChange, ...]
    unchanged: int
    checks: tuple[str, ...] = field(default=())

    def of_kind(self, kind: str) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind == kind)

    @property
    def regressions(self) -> tuple[Change, ...]:
        """What a CI gate fails on."""
        return self.of_kind("regression")

    @property
    def fixes(self) -> tuple[Change, ...]:
        return self.of_kind("fix")

    @property
    def newly_unsupported(self) -> tuple[SupportChange, ...]:
        return tuple(s for s in self.support if s.kind == "newly_unsupported")

    @property
    def newly_supported(self) -> tuple[SupportChange, ...]:
        return tuple(s for s in self.support if s.kind == "newly_supported")

    def counts(self) -> dict[str, int]:
        out = {k: len(self.of_kind(k)) for k in KINDS}
        out["newly_unsupported"] = len(self.newly_unsupported)
        out["newly_supported"] = len(self.newly_supported)
        out["unchanged"] = self.unchanged
        return out


def _support(verdicts: Iterable[str]) -> str:
    vs = list(verdicts)
    if "unsupported" in vs:
        return "unsupported"
    return "supported" if any(_tested(v) for v in vs) else NOT_TESTED


def _label(df: pd.DataFrame, fallback: str) -> str:
    backends = [b for b in dict.fromkeys(df["backend"].dropna()) if b] or [
        str(r["backend"]) for r in df.attrs.get("runs", ()) if r.get("backend")]
    return ", ".join(dict.fromkeys(backends)) if backends else fallback


def compare(
    a: pd.DataFrame, b: pd.DataFrame, *, labels: tuple[str, str] | None = None
) -> Diff:
    """Compare two verdict tables (from :func:`reports.load`)."""
    a_cur, b_cur = latest(a), latest(b)
    cells_a = {(o, c): v for o, c, v in zip(a_cur["overload"], a_cur["check"], a_cur["verdict"],
                                            strict=True)}
    cells_b = {(o, c): v for o, c, v in zip(b_cur["overload"], b_cur["check"], b_cur["verdict"],
                                            strict=True)}

    def lookup(df: pd.DataFrame, col: str) -> dict[tuple[str, str], Any]:
        return {(o, c): (x if isinstance(x, str) else None)
                for o, c, x in zip(df["overload"], df["check"], df[col], strict=True)}

    cat_a, cat_b = lookup(a_cur, "category"), lookup(b_cur, "category")
    msg_a, msg_b, repro_b = lookup(a_cur, "message"), lookup(b_cur, "message"), lookup(
        b_cur, "repro")
    overloads = list(dict.fromkeys([*a_cur["overload"], *b_cur["overload"]]))
    checks = tuple(dict.fromkeys([*a_cur["check"], *b_cur["check"]]))
    changes: list[Change] = []
    unchanged = 0
    for ov in sorted(overloads):
        for ch in checks:
            va = cells_a.get((ov, ch), NOT_TESTED)
            vb = cells_b.get((ov, ch), NOT_TESTED)
            if (ov, ch) not in cells_a and (ov, ch) not in cells_b:
                continue
            kind = classify(va, vb)
            if kind is None and va == vb == "fail" and cat_a.get((ov, ch)) != cat_b.get((ov, ch)):
                kind = "changed"  # still failing, a different kind of failure
            if kind is None:
                unchanged += 1
                continue
            changes.append(Change(ov, ch, va, vb, kind, msg_a.get((ov, ch)),
                                  msg_b.get((ov, ch)), repro_b.get((ov, ch)),
                                  cat_a.get((ov, ch)), cat_b.get((ov, ch))))
    support: list[SupportChange] = []
    by_a: dict[str, list[str]] = {}
    by_b: dict[str, list[str]] = {}
    for (ov, _), v in cells_a.items():
        by_a.setdefault(ov, []).append(v)
    for (ov, _), v in cells_b.items():
        by_b.setdefault(ov, []).append(v)
    for ov in sorted(overloads):
        sa, sb = _support(by_a.get(ov, ())), _support(by_b.get(ov, ()))
        if sa == "unsupported" and sb == "supported":
            support.append(SupportChange(ov, sa, sb, "newly_supported"))
        elif sa == "supported" and sb == "unsupported":
            support.append(SupportChange(ov, sa, sb, "newly_unsupported"))

    from reports.tables import worst

    total_cells = len({*cells_a, *cells_b})

    def side(df: pd.DataFrame, cells: Mapping[tuple[str, str], str], by: Mapping[str, list[str]],
             label: str) -> Side:
        return Side(
            label=label,
            sources=tuple(df.attrs.get("sources", ())),
            runs=tuple(df.attrs.get("runs", ())),
            cells=count(cells.values(), total_cells),
            overloads=count([worst(by[o]) for o in by], len(overloads)),
        )

    la, lb = labels or (_label(a_cur, "A"), _label(b_cur, "B"))
    if la == lb and not labels:
        sa, sb = a.attrs.get("sources", ()), b.attrs.get("sources", ())
        la = ", ".join(os.path.basename(s) for s in sa) or "A"
        lb = ", ".join(os.path.basename(s) for s in sb) or "B"
        if la == lb:
            la, lb = ", ".join(sa) or "A", ", ".join(sb) or "B"
    return Diff(
        a=side(a_cur, cells_a, by_a, la),
        b=side(b_cur, cells_b, by_b, lb),
        changes=tuple(changes),
        support=tuple(support),
        unchanged=unchanged,
        checks=checks,
    )


def _rate(c: Counts) -> str:
    pr = "—" if c.pass_rate is None else f"{100 * c.pass_rate:.1f} %"
    tr = "—" if c.tested_rate is None else f"{100 * c.tested_rate:.1f} %"
    return (f"{c.passed:,} passed ÷ {c.tested:,} tested = {pr}; {c.tested:,} tested ÷ "
            f"{c.total:,} = {tr} ({c.not_tested:,} not tested)")


def _one_line(text: str | None, width: int = 100) -> str:
    if not text:
        return ""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def render_text(d: Diff, *, limit: int | None = 200) -> str:
    """Plain-text diff for terminals and CI logs (``limit`` rows per section, None: all)."""
    out: list[str] = []
    out.append(f"A: {d.a.label}  ({', '.join(d.a.sources)})")
    out.append(f"B: {d.b.label}  ({', '.join(d.b.sources)})")
    out.append(f"overloads A: {_rate(d.a.overloads)}")
    out.append(f"overloads B: {_rate(d.b.overloads)}")
    c = d.counts()
    out.append("changes: " + ", ".join(f"{k.replace('_', ' ')} {c[k]:,}" for k in (
        *KINDS, "newly_unsupported", "newly_supported")) + f"; unchanged cells {d.unchanged:,}")
    for kind in KINDS:
        rows = d.of_kind(kind)
        if not rows:
            continue
        out.append("")
        out.append(f"{KIND_TITLES[kind]}: {len(rows):,}")
        width = max(len(r.id) for r in rows[: limit or None])
        for r in rows[: limit or None]:
            msg = r.after_message if kind != "fix" else r.before_message
            out.append(f"  {r.id:<{width}}  {r.before_label} → {r.after_label}"
                       + (f"  {_one_line(msg)}" if msg and kind in ("regression", "changed") else ""))
        if limit and len(rows) > limit:
            out.append(f"  … {len(rows) - limit:,} more (use --format html, or --limit 0)")
    for kind, rows2 in (("newly_unsupported", d.newly_unsupported),
                        ("newly_supported", d.newly_supported)):
        if not rows2:
            continue
        out.append("")
        out.append(f"{KIND_TITLES[kind]}: {len(rows2):,}")
        for s in rows2[: limit or None]:
            out.append(f"  {s.overload}  {s.before} → {s.after}")
        if limit and len(rows2) > limit:
            out.append(f"  … {len(rows2) - limit:,} more")
    return "\n".join(out) + "\n"


def render_html(d: Diff) -> str:
    """Self-contained HTML diff (server-rendered with autoescape; a little inline JS filters)."""
    from reports.templating import environment, inline_asset

    env = environment()
    sections = [(k, KIND_TITLES[k], d.of_kind(k)) for k in KINDS]
    support = [("newly_unsupported", KIND_TITLES["newly_unsupported"], d.newly_unsupported),
               ("newly_supported", KIND_TITLES["newly_supported"], d.newly_supported)]
    return env.get_template("diff.html.j2").render(
        d=d, counts=d.counts(), sections=sections, support=support, rate=_rate,
        css=inline_asset("report.css"),
    )
