"""The CI gate: a run's verdicts against a team's parity baseline (:mod:`reports.baseline`).

Every (overload, check[, dtype]) cell the run covered, or the baseline lists within the run's
scope (its ``--ops`` and checks), gets one :class:`Finding`:

==================  ======================================================  ============
kind                what                                                    exit status
==================  ======================================================  ============
``regression``      the baseline says pass; now fail / unsupported / crash   1
                    / timeout
``untested``        the baseline says pass; now skipped (no longer checked)  1
``worse``           known not to pass, now worse: a worse verdict            1
                    (skip < unsupported < fail < timeout, crash) or a fail
                    of a more severe category (``opdb.outcomes.severity``)
``missing``         in the baseline, in the run's scope, but not in the run  1
``new_failure``     not in the baseline and not passing                      1
``unexpected_pass`` known not to pass, now passes: delete the line           1 with
                                                                             ``--strict``
``improved``        known not to pass, now less bad                          1 with
                                                                             ``--strict``
``ignored``         would fail the gate, but its category was ``--ignore``d  0
``known``           as bad as the baseline says                              0
``new``             not in the baseline, passes or is skipped                0
``ok``              passes, as the baseline says                             0
==================  ======================================================  ============
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opdb import outcomes
from opdb.errors import InputError
from reports.baseline import Baseline, Entry, Key, State, key_id, latest_states, scope_of
from reports.results import Results

FAILING = ("regression", "untested", "worse", "missing", "new_failure")
KINDS = (*FAILING, "unexpected_pass", "improved", "ignored", "known", "new", "ok")

TITLES: Mapping[str, str] = {
    "regression": "Regressions (pass → not passing)",
    "untested": "No longer tested (pass → skip)",
    "worse": "Known failures that got worse",
    "missing": "In the baseline, not reached by the run",
    "new_failure": "New failures (not in the baseline)",
    "unexpected_pass": "Unexpected passes (known failures that now pass)",
    "improved": "Known failures that got better",
    "ignored": "Ignored by --ignore",
}

#: How bad a verdict is, for "worse" (a fail is refined by its category's severity).
VERDICT_RANK: Mapping[str, int] = {"pass": 0, "skip": 1, "unsupported": 2, "fail": 3,
                                   "timeout": 4, "crash": 4}


def badness(state: State) -> tuple[int, int]:
    rank = VERDICT_RANK.get(state.verdict, 4)
    return rank, outcomes.severity(state.category) if state.verdict == "fail" else 0


def describe(state: State | None) -> str:
    if state is None:
        return "not run"
    return f"{state.verdict}/{state.category}" if state.category else state.verdict


@dataclass(frozen=True)
class Finding:
    kind: str
    key: Key
    baseline: State | None
    now: State | None
    line: int | None  # of the baseline entry
    message: str | None = None
    repro: str | None = None

    @property
    def id(self) -> str:
        return key_id(self.key)


@dataclass(frozen=True)
class GateResult:
    baseline: Baseline
    findings: tuple[Finding, ...]
    strict: bool
    ignore: frozenset[str]
    out_of_scope: int

    def of_kind(self, kind: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == kind)

    @property
    def failing(self) -> tuple[Finding, ...]:
        kinds = (*FAILING, "unexpected_pass", "improved") if self.strict else FAILING
        return tuple(f for f in self.findings if f.kind in kinds)

    @property
    def passed(self) -> bool:
        return not self.failing

    def counts(self) -> dict[str, int]:
        c = Counter(f.kind for f in self.findings)
        return {k: c.get(k, 0) for k in KINDS}


def check_ignore(categories: Iterable[str]) -> frozenset[str]:
    """``--ignore`` values, each a category name of :data:`opdb.outcomes.CATEGORIES`."""
    out = set()
    for cat in categories:
        for c in cat.split(","):
            c = c.strip()
            if not c:
                continue
            if c not in outcomes.CATEGORIES:
                raise InputError(f"--ignore: unknown category {c!r}; expected one of "
                                 f"{', '.join(outcomes.CATEGORIES)}")
            out.add(c)
    return frozenset(out)


def evaluate(baseline: Baseline, results: Results, *, strict: bool = False,
             ignore: Iterable[str] = ()) -> GateResult:
    """Judge ``results`` against ``baseline``."""
    ign = frozenset(ignore)
    runs = latest_states(results)
    inside = scope_of(results)
    findings: list[Finding] = []
    out_of_scope = 0

    def add(kind: str, key: Key, base: Entry | None, now: tuple[State, Mapping[str, Any]] | None
            ) -> None:
        state, rec = now if now is not None else (None, {})
        if kind in FAILING and state is not None and state.category in ign:
            kind = "ignored"
        message = rec.get("message") if isinstance(rec.get("message"), str) else None
        repro = rec.get("repro") if isinstance(rec.get("repro"), str) else None
        findings.append(Finding(kind, key, base.state if base else None, state,
                                base.line if base else None, message, repro))

    for key, entry in baseline.entries.items():
        now = runs.get(key)
        if now is None:
            if inside(key):
                add("missing", key, entry, None)
            else:
                out_of_scope += 1
            continue
        add(_classify(entry.state, now[0]), key, entry, now)
    for key, now in runs.items():
        if key in baseline.entries:
            continue
        add("new_failure" if now[0].verdict in outcomes.BAD_VERDICTS else "new", key, None, now)
    findings.sort(key=lambda f: (KINDS.index(f.kind), f.key[0], f.key[1], f.key[2] or ""))
    return GateResult(baseline, tuple(findings), strict, ign, out_of_scope)


def _classify(base: State, now: State) -> str:
    if base.verdict == "pass":
        if now.verdict == "pass":
            return "ok"
        return "untested" if now.verdict == "skip" else "regression"
    if now.verdict == "pass":
        return "unexpected_pass"
    b, n = badness(base), badness(now)
    if n > b:
        return "worse"
    return "improved" if n < b else "known"


def unmatched(baseline: Baseline) -> tuple[list[tuple[str, int]], str | None]:
    """Overloads of the baseline (with the line each starts on) that the installed torch does
    not have, and a note when the installed torch's overloads could not be listed."""
    from reports.ops import _load_opdb

    try:
        db = _load_opdb()
    except Exception as exc:  # noqa: BLE001 - a warning, not a reason to fail the gate
        return [], f"cannot list the installed torch's overloads ({type(exc).__name__}: {exc})"
    known = {ov.name for ov in db.overloads} | set(getattr(db, "extra_dispatcher_ops", ()))
    return [(ov, line) for ov, line in baseline.overload_lines() if ov not in known], None


# -- text ---------------------------------------------------------------------------------------
def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + line for line in text.rstrip("\n").splitlines())


def render_text(res: GateResult, *, limit: int | None = 200) -> str:
    out: list[str] = []
    path = res.baseline.path
    for kind in (*FAILING, "unexpected_pass", "improved", "ignored"):
        rows = res.of_kind(kind)
        if not rows:
            continue
        out.append(f"{TITLES[kind]}: {len(rows):,}")
        for f in rows[:limit]:
            where = f" ({path}:{f.line})" if f.line else ""
            out.append(f"  {f.id}: {describe(f.baseline)} → {describe(f.now)}{where}")
            if kind == "unexpected_pass":
                out.append(f"    delete line {f.line} of {path} (or set it to pass: "
                           f"`conformance baseline --update` does)")
                continue
            if f.message and f.now is not None and f.now.verdict != "pass":
                out.append(_indent(f.message, "    "))
            if f.repro and kind in FAILING:
                out.append("    repro:")
                out.append(_indent(f.repro, "      "))
        if limit and len(rows) > limit:
            out.append(f"  … {len(rows) - limit:,} more")
        out.append("")
    out.append(verdict_line(res))
    return "\n".join(out) + "\n"


def verdict_line(res: GateResult) -> str:
    c = res.counts()
    failing = len(res.failing)
    head = "PASSED" if res.passed else "FAILED"
    parts = [f"{k.replace('_', ' ')} {c[k]:,}" for k in (*FAILING, "unexpected_pass")
             if c[k]]
    tail = [f"known {c['known']:,}", f"ok {c['ok']:,}"]
    if c["ignored"]:
        tail.append(f"ignored {c['ignored']:,} ({', '.join(sorted(res.ignore))})")
    if c["improved"]:
        tail.append(f"improved {c['improved']:,}")
    if c["new"]:
        tail.append(f"new {c['new']:,} (not in the baseline)")
    if res.out_of_scope:
        tail.append(f"{res.out_of_scope:,} baseline entries outside the run's scope")
    what = ", ".join(parts) if parts else "no regression"
    strict = "" if res.strict or not c["unexpected_pass"] else " (unexpected passes fail " \
        "only with --strict)"
    return (f"conformance gate: {head}: {what}{strict}; " + ", ".join(tail)
            + (f" — {failing:,} failing" if failing else ""))


# -- JUnit XML ----------------------------------------------------------------------------------
def junit(res: GateResult, *, name: str = "opconform-gate") -> bytes:
    """JUnit XML: one testcase per cell (classname ``gate.CHECK``, name ``OVERLOAD[::DTYPE]``);
    failing findings are ``<failure>``, known failures and skips ``<skipped>``."""
    suite = ET.Element("testsuite", name=name)
    failures = skipped = 0
    failing = {id(f) for f in res.failing}
    for f in res.findings:
        ov, check, dtype = f.key
        case = ET.SubElement(suite, "testcase", classname=f"gate.{check}",
                             name=ov + (f"[{dtype}]" if dtype else ""))
        text = f"{describe(f.baseline)} → {describe(f.now)}"
        if f.line:
            text += f" ({res.baseline.path}:{f.line})"
        if id(f) in failing:
            failures += 1
            el = ET.SubElement(case, "failure", type=f.kind, message=f"{f.kind}: {text}")
            body = [text]
            if f.kind == "unexpected_pass":
                body.append(f"delete line {f.line} of {res.baseline.path}")
            if f.message:
                body.append(f.message)
            if f.repro:
                body.append("repro:\n" + f.repro)
            el.text = "\n\n".join(body)
        elif f.now is None or f.now.verdict != "pass":
            if f.kind in ("known", "improved", "ignored", "new") or (
                    f.now is not None and f.now.verdict == "skip"):
                skipped += 1
                reason = f.baseline.reason if f.baseline and f.baseline.reason else ""
                ET.SubElement(case, "skipped", message=f"{f.kind}: {text}"
                              + (f" — {reason}" if reason else ""))
        elif f.kind == "unexpected_pass":
            out = ET.SubElement(case, "system-out")
            out.text = f"unexpected pass: {text}; delete line {f.line} of {res.baseline.path}"
    suite.set("tests", str(len(res.findings)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# -- GitHub markdown ----------------------------------------------------------------------------
def _cell(text: str | None, width: int = 300) -> str:
    if not text:
        return ""
    one = " ".join(text.split())
    if len(one) > width:
        one = one[: width - 1] + "…"
    return html.escape(one).replace("|", "\\|")


def markdown(res: GateResult, *, limit: int = 50) -> str:
    """A GitHub-flavoured markdown summary (what ``$GITHUB_STEP_SUMMARY`` takes)."""
    c = res.counts()
    icon = "✅" if res.passed else "❌"
    lines = [f"## {icon} Op parity gate: {'passed' if res.passed else 'failed'}", "",
             f"Baseline `{res.baseline.path}` ({res.baseline.backend or '?'}, torch "
             f"{res.baseline.torch_version or '?'}).", "",
             "| outcome | cells |", "|---|---:|"]
    for k in KINDS:
        if c[k]:
            fail = " ❌" if any(f.kind == k for f in res.failing) else ""
            lines.append(f"| {k.replace('_', ' ')}{fail} | {c[k]:,} |")
    if res.out_of_scope:
        lines.append(f"| outside the run's scope | {res.out_of_scope:,} |")
    lines.append("")
    for kind in (*FAILING, "unexpected_pass", "improved", "ignored"):
        rows = res.of_kind(kind)
        if not rows:
            continue
        lines += [f"### {TITLES[kind]}: {len(rows):,}", "",
                  "| overload | check | baseline | now | baseline line | message |",
                  "|---|---|---|---|---:|---|"]
        for f in rows[:limit]:
            ov, check, dtype = f.key
            msg = f.message if f.now is not None and f.now.verdict != "pass" else (
                "delete this line" if kind == "unexpected_pass" else "")
            lines.append(f"| `{ov}` | {check}{f'[{dtype}]' if dtype else ''} | "
                         f"{describe(f.baseline)} | {describe(f.now)} | {f.line or ''} | "
                         f"{_cell(msg)} |")
        if len(rows) > limit:
            lines.append(f"| … {len(rows) - limit:,} more | | | | | |")
        lines.append("")
        repros = [f for f in rows[:limit] if f.repro and kind in FAILING]
        if repros:
            lines.append("<details><summary>repros</summary>")
            lines.append("")
            for f in repros[:20]:
                lines += [f"**{html.escape(f.id)}**", "", "```python",
                          (f.repro or "").replace("```", "` ` `").rstrip(), "```", ""]
            lines.append("</details>")
            lines.append("")
    lines.append(verdict_line(res).replace("conformance gate: ", "", 1))
    return "\n".join(lines) + "\n"
