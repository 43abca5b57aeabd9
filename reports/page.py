"""What the HTML report shows, as plain JSON-able data: the universe of overloads, the matrix
cells, the counts. :mod:`reports.html` renders it; :mod:`reports.export` writes its summary as
JSON. Nothing here knows HTML."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opdb import outcomes
from opdb.fingerprints import split_key
from reports.crossbackend import matrix as cross_matrix
from reports.ops import STATUSES, Annotations, scope
from reports.results import DTYPES, VERDICTS
from reports.tables import (
    NOT_TESTED,
    cause_table,
    column_keys,
    column_of,
    count,
    crash_table,
    dtype_gaps,
    failure_table,
    latest,
    worst,
)

if TYPE_CHECKING:
    import pandas as pd

    from reports.fixfirst import Blocker

#: Families listed in the summary's "where to look" card.
WHERE_TOP = 6

#: Verdict codes used in the page data (index into this tuple); unknown verdicts are appended.
PAGE_VERDICTS: tuple[str, ...] = (*VERDICTS, NOT_TESTED)


def _int_or_none(x: Any) -> int | None:
    try:
        return None if x is None or x != x else int(x)
    except TypeError:  # pandas.NA
        return None


def _finite(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


class _Interner:
    """Strings → indices into one list (``-1``: no string; ``""`` too unless ``keep_empty``)."""

    def __init__(self, *, keep_empty: bool = False) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}
        self.keep_empty = keep_empty

    def __call__(self, s: Any) -> int:
        if not isinstance(s, str) or (s == "" and not self.keep_empty):
            return -1  # None, and pandas' NaN for a missing string
        got = self.index.get(s)
        if got is None:
            got = self.index[s] = len(self.items)
            self.items.append(s)
        return got


def universe_of(df: pd.DataFrame, ann: Annotations) -> tuple[list[str], str]:
    """Every overload the report counts (tested or not) and a sentence saying where from."""
    runs = df.attrs.get("runs", [])
    in_results = list(dict.fromkeys(df["overload"]))
    if ann.universe is None:
        return in_results, (
            "overloads named in the results only — without --coverage or opdb, overloads the "
            "run never reached cannot be counted as not tested"
        )
    patterns = [r.get("ops") for r in runs]
    names = scope(ann.universe, patterns, ann) if patterns else list(ann.universe)
    known = set(names)
    extra = [n for n in in_results if n not in known]
    where = "the static coverage" if ann.source == "coverage" else "opdb"
    restricted = [p for p in patterns if p is not None]
    text = f"all {len(names):,} overloads in {where}"
    if restricted and len(restricted) == len(patterns):
        text = f"{len(names):,} overloads in {where} matching the run's --ops " + ", ".join(
            repr(p) for p in restricted
        )
    if extra:
        text += f", plus {len(extra):,} named only in the results"
    return [*names, *extra], text


def _run_info(run: Mapping[str, Any]) -> dict[str, Any]:
    """A run header as the page shows it; the backend's declared properties with their
    one-line summaries, and those a probe saw undeclared with the evidence."""
    from opdb.properties import properties

    keys = ("backend", "device", "dispatch_key", "torch_version", "seed", "started_at",
            "checks", "ops", "max_examples", "hostname", "opconform_version", "source")
    known = properties()
    info = {k: _finite(run.get(k)) for k in keys}
    info["assumes"] = [{"name": n, "summary": known[n].summary if n in known else "?"}
                       for n in run.get("assumes") or []]
    info["probed"] = [{"name": n, "evidence": str(e)}
                      for n, e in sorted((run.get("probed") or {}).items())]
    return info


def page_data(
    df: pd.DataFrame,
    ann: Annotations,
    *,
    title: str | None = None,
    fix_first: Sequence[Blocker] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as plain JSON-able data (no NaN). ``fix_first``: the census'
    ranking (:mod:`reports.fixfirst`), shown first; None without a census."""
    cur = latest(df)
    universe, universe_text = universe_of(cur, ann)
    keys = column_keys(cur)
    cols = column_of(cur)
    col_index = {k: i for i, k in enumerate(keys)}
    verdict_names = list(PAGE_VERDICTS)
    for v in cur["verdict"]:
        if v not in verdict_names:
            verdict_names.append(v)
    vcode = {v: i for i, v in enumerate(verdict_names)}
    dtype_index = {d: i for i, d in enumerate(DTYPES)}
    outcome_index = {o: i for i, o in enumerate(outcomes.DTYPE_OUTCOMES)}
    strings = _Interner()
    sources = list(dict.fromkeys(cur["source"]))
    src_index = {s: i for i, s in enumerate(sources)}

    details: list[list[Any]] = []
    cells: dict[str, list[int]] = {}
    ncol = len(keys)
    records = cur[["overload", "verdict", "category", "message", "missing_op", "repro",
                   "expected", "examples", "duration_s", "seed", "dtypes", "source", "line",
                   "dtype_support", "failures"]]
    for rec, col in zip(records.itertuples(index=False), cols, strict=True):
        dts: list[list[int]] = []
        for name, c in (rec.dtypes or {}).items():
            if name in dtype_index:
                dts.append([dtype_index[name], c["examples"], c["cpu_ok"], c["backend_ok"],
                            c["agree"]])
        support = [[dtype_index[n], outcome_index[o]] for n, o in (rec.dtype_support or {}).items()
                   if n in dtype_index and o in outcome_index]
        dur = rec.duration_s
        details.append([
            vcode[rec.verdict], strings(rec.category), strings(rec.message),
            strings(rec.missing_op), strings(rec.repro), strings(rec.expected),
            int(rec.examples), None if dur is None or not math.isfinite(dur) else round(dur, 4),
            _int_or_none(rec.seed),
            dts, src_index[rec.source], int(rec.line), support,
            distinct_failures(rec.failures, strings),
        ])
        row = cells.get(rec.overload)
        if row is None:
            row = cells[rec.overload] = [-1] * ncol
        row[col_index[col]] = len(details) - 1

    families = _Interner(keep_empty=True)
    tags = _Interner(keep_empty=True)
    rows: list[list[Any]] = []
    overall_verdicts: list[str] = []
    per_column: list[list[str]] = [[] for _ in keys]
    infos = {n: ann.info(n) for n in universe}
    fam_of = {n: infos[n].family for n in universe}
    fam_cells = {n: [(verdict_names[details[d][0]], details[d][1], details[d][5])
                     for d in cells.get(n, ()) if d >= 0] for n in universe}
    rank = family_rank(fam_of, fam_cells, strings.items)
    scores = family_scores(fam_of, fam_cells, strings.items)
    order = sorted(universe, key=lambda n: (rank[fam_of[n]], n))
    where = [{"family": f, "weight": scores[f][0], "unsupported": scores[f][1]}
             for f in sorted(rank, key=lambda f: rank[f]) if scores[f][0] or scores[f][1]][:WHERE_TOP]
    for name in order:
        info = infos[name]
        row_cells = cells.get(name, [-1] * ncol)
        vs = [verdict_names[details[d][0]] for d in row_cells if d >= 0]
        for j, d in enumerate(row_cells):
            if d >= 0:
                per_column[j].append(verdict_names[details[d][0]])
        overall = worst(vs)
        overall_verdicts.append(overall)
        rows.append([
            name, families(info.family), info.kind, [tags(t) for t in info.tags],
            STATUSES.index(info.status) if info.status in STATUSES else -1,
            row_cells, vcode.get(overall, vcode[NOT_TESTED]),
        ])

    total = len(universe)
    overall_counts = count(overall_verdicts, total)
    check_counts = {k: count(per_column[j], total) for j, k in enumerate(keys)}
    static: dict[str, int] | None = None
    static_by_verdict: dict[str, dict[str, int]] | None = None
    if any(infos[n].status for n in universe):
        static = {s: 0 for s in STATUSES}
        static_by_verdict = {}
        for n, overall in zip(order, overall_verdicts, strict=True):
            st = infos[n].status
            key = st if st is not None and st in STATUSES else "unknown"
            static[key] = static.get(key, 0) + 1
            by_v = static_by_verdict.setdefault(key, {})
            by_v[overall] = by_v.get(overall, 0) + 1

    runs = [_run_info(r) for r in df.attrs.get("runs", [])]
    kinds = _fail_kinds(cur, cols)
    failures = failure_table(cur)
    causes = cause_table(cur, failures)
    backends = list(dict.fromkeys(b for b in cur["backend"] if b)) or list(
        dict.fromkeys(r["backend"] for r in runs if r.get("backend"))
    )
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    return {
        "fix_first": None if fix_first is None else [b.as_json() for b in fix_first],
        # several backends: their verdicts side by side (reports.crossbackend)
        "cross": cross_matrix(cur).as_json() if len(backends) > 1 else None,
        "title": title or "Conformance report — " + (", ".join(backends) or "unknown backend"),
        "generated_at": now,
        "backends": backends,
        "runs": runs,
        "sources": sources,
        "warnings": list(df.attrs.get("warnings", [])),
        "annotation": {"source": ann.source, "note": ann.note},
        "universe": universe_text,
        "columns": keys,
        "verdicts": verdict_names,
        "statuses": list(STATUSES),
        "dtypes": list(DTYPES),
        # the dtypes check's per-dtype outcomes (details[i][12] holds [dtype, outcome] codes)
        "dtype_outcomes": [[o, what] for o, what in outcomes.DTYPE_OUTCOMES.items()],
        "dtype_gaps": gaps_by_backend(cur),
        "severity": dict(outcomes.FAIL_SEVERITY),
        "families": families.items,
        "tags": tags.items,
        "strings": strings.items,  # packed by render(): see pack_strings()
        "details": details,
        "rows": rows,
        "summary": {
            "overloads": overall_counts.as_dict(),
            "checks": {k: c.as_dict() for k, c in check_counts.items()},
            "static": static,
            "static_by_verdict": static_by_verdict,
            "fail_kinds": kinds,
            "where": where,
            "causes": cause_summary(cur, failures, causes),
        },
        # failures grouped by fingerprint (reports.tables.cause_table); texts index `strings`
        "causes": causes_data(causes, failures, strings,
                              multi_backend=cur["backend"].fillna("").nunique() > 1),
        # crash verdicts grouped by their top frames (reports.tables.crash_table)
        "crashes": crashes_data(crash_table(cur)),
        "missing_variants": [dict(x) for x in ann.missing_variants],
        "missing_backward": [dict(x) for x in ann.missing_backward],
        "backward_parity": backward_parity(cur, ann),
        # the static twin of the compile check (conformance coverage --decompositions)
        "decompositions": ann.decomposition_setting,
        "decomposition_parity": decomposition_parity(cur, ann),
    }


def distinct_failures(failures: Any, strings: Any) -> list[list[int]]:
    """A verdict's distinct failures for its drawer, when it has more than one (one is the
    verdict's own message and repro): ``[[key, category, message, repro, expected], ...]`` as
    indices into ``strings`` (``-1``: none)."""
    if not isinstance(failures, (list, tuple)) or len(failures) < 2:
        return []
    return [[strings(f["key"]), strings(f["category"]), strings(f["message"]),
             strings(f["repro"]), strings(f["expected"])] for f in failures]


def cause_summary(cur: pd.DataFrame, failures: pd.DataFrame,
                  causes: pd.DataFrame) -> dict[str, int]:
    """The by-cause view's headline: ``causes`` (and ``new_causes``: with a new failure),
    ``failures`` (``new``, ``expected``), the ``overloads`` and ``verdicts`` they fall in, and
    the other bad verdicts, which have no fingerprint (``crash``, ``timeout``,
    ``unsupported``)."""
    verdicts = cur["verdict"]
    return {
        "causes": len(causes),
        "new_causes": int((causes["new"] > 0).sum()) if len(causes) else 0,
        "failures": len(failures),
        "new": int(failures["expected"].isna().sum()),
        "expected": int(failures["expected"].notna().sum()),
        "overloads": int(failures["overload"].nunique()),
        "verdicts": int((verdicts == "fail").sum()),
        "crash": int((verdicts == "crash").sum()),
        "timeout": int((verdicts == "timeout").sum()),
        "unsupported": int((verdicts == "unsupported").sum()),
    }


def causes_data(causes: pd.DataFrame, failures: pd.DataFrame, strings: Any, *,
                multi_backend: bool) -> list[dict[str, Any]]:
    """The by-cause view's rows (:func:`reports.tables.cause_table`, same order), texts as
    indices into ``strings``: ``key``, ``title`` (the fingerprint without its category and
    lead dtype, which come as ``category`` and ``lead``), ``message``, ``reason``, ``repro``
    and ``repro_at`` (``[overload, matrix column]``), the counts, ``checks``, ``dtypes``, and
    ``members``: ``[[overload, [[column, new (0/1)], ...]], ...]`` by overload name — every
    matrix cell whose verdict holds a failure of that cause."""
    def column(backend: str, check: str) -> str:
        return f"{backend}:{check}" if multi_backend else check

    cells: dict[tuple[str, str], dict[str, list[list[Any]]]] = {}
    for backend, overload, check, key, expected in zip(
            failures["backend"], failures["overload"], failures["check"], failures["key"],
            failures["expected"], strict=True):
        by = cells.setdefault((backend, key), {})
        new = int(not isinstance(expected, str))
        by.setdefault(overload, []).append([column(backend, check), new])
    out = []
    for c in causes.itertuples(index=False):
        category = c.category if isinstance(c.category, str) else None  # pandas' NaN: none
        title, lead = split_key(c.key, category)
        members = cells.get((c.backend, c.key), {})
        out.append({
            "key": strings(c.key), "backend": c.backend, "category": category,
            "title": strings(title), "lead": list(lead), "message": strings(c.message),
            "failures": int(c.failures), "new": int(c.new), "expected": int(c.expected),
            "overloads": int(c.overloads), "checks": list(c.checks), "dtypes": list(c.dtypes),
            "reason": strings(c.reason), "repro": strings(c.repro),
            "repro_at": [c.repro_overload, column(c.backend, c.repro_check)],
            "members": [[name, members[name]] for name in sorted(members)],
        })
    return out


def crashes_data(crashes: pd.DataFrame, *, names: int = 20) -> list[dict[str, Any]]:
    """The crashes-by-frames panel's rows (:func:`reports.tables.crash_table`, same order):
    ``backend``, ``cause`` (``""``: no frames), ``frames_by``, ``crashes``, ``overloads``,
    ``checks``, the first ``names`` overload names (``more``: how many are left out), the
    first crash's ``frames`` and ``message``."""
    out = []
    for c in crashes.itertuples(index=False):
        out.append({
            "backend": c.backend, "cause": c.cause,
            "frames_by": c.frames_by if isinstance(c.frames_by, str) else None,
            "crashes": int(c.crashes), "overloads": int(c.overloads), "checks": list(c.checks),
            "overload_names": list(c.overload_names[:names]),
            "more": max(0, len(c.overload_names) - names),
            "frames": list(c.frames), "message": c.message,
        })
    return out


def gaps_by_backend(cur: pd.DataFrame) -> list[dict[str, Any]]:
    """Per backend, the overloads with dtypes CPU supports and the backend refuses:
    ``[{"backend", "overload", "dtypes": [...]}]`` (:func:`reports.tables.dtype_gaps`)."""
    out: list[dict[str, Any]] = []
    for (backend, overload), grp in dtype_gaps(cur).groupby(["backend", "overload"], sort=False):
        out.append({"backend": backend or "", "overload": overload,
                    "dtypes": list(grp["dtype"])})
    return out


def family_scores(family: Mapping[str, str],
                  cells: Mapping[str, list[tuple[str, int, int]]],
                  strings: list[str]) -> dict[str, list[int]]:
    """Per family ``[weight of unexpected fails, unsupported cells, weight of expected fails]``:
    a fail weighs its category's severity (:func:`opdb.outcomes.severity`), a crash or timeout
    as much as the worst fail. ``cells``: per overload, ``(verdict, category string index,
    expected string index)``."""
    score: dict[str, list[int]] = {}
    for name, fam in family.items():
        s = score.setdefault(fam, [0, 0, 0])
        for verdict, cat, expected in cells.get(name, ()):
            if verdict in ("fail", "crash", "timeout"):
                weight = outcomes.severity(strings[cat] if verdict == "fail" and cat >= 0
                                           else None)
                s[2 if expected >= 0 else 0] += weight
            elif verdict == "unsupported":
                s[1] += 1
    return score


def family_rank(family: Mapping[str, str],
                cells: Mapping[str, list[tuple[str, int, int]]],
                strings: list[str]) -> dict[str, int]:
    """Families ordered by where to look first (see :func:`family_scores`): unexpected fails by
    weight, then unsupported cells, then expected fails by weight, then A–Z."""
    score = family_scores(family, cells, strings)
    ordered = sorted(score, key=lambda f: (-score[f][0], -score[f][1], -score[f][2], f))
    return {f: i for i, f in enumerate(ordered)}


#: How the static prediction and the ``autograd`` verdict of one forward relate.
PARITY_AGREE = "agree"  # predicted missing, and the autograd check found that op missing
PARITY_OTHER_OP = "other op"  # both found a missing backward, naming different ops
PARITY_STATIC_ONLY = "static only"  # predicted missing, but the backward ran (or failed otherwise)
PARITY_DYNAMIC_ONLY = "dynamic only"  # not predicted, but the autograd check found one missing
PARITY_NOT_TESTED = "not tested"  # predicted missing; no autograd outcome for the overload
PARITY_INCONCLUSIVE = "inconclusive"  # predicted missing; the autograd item crashed or timed out


def backward_parity(cur: pd.DataFrame, ann: Annotations) -> list[dict[str, Any]]:
    """Per forward overload, the static prediction (``missing_backward`` of the coverage) beside
    what the ``autograd`` check found: ``[{"forward", "predicted": [ops], "verdict", "category",
    "missing_op", "relation"}]`` for every forward the coverage lists or whose autograd verdict
    is ``unsupported``; in the coverage's order, then the dynamic-only ones by name."""
    predicted = {str(x.get("forward")): [str(m) for m in x.get("missing") or ()]
                 for x in ann.missing_backward}
    return [{"forward": r.pop("overload"), **r}
            for r in static_parity(cur, predicted, "autograd")]


def decomposition_parity(cur: pd.DataFrame, ann: Annotations) -> list[dict[str, Any]]:
    """Per decomposed overload, the static twin (the coverage's ``decompositions``: ops its
    compiled graph calls that the backend lacks) beside what the ``compile`` check found:
    ``[{"overload", "predicted": [ops], "verdict", "category", "missing_op", "relation"}]``,
    as :func:`backward_parity` relates them."""
    predicted = {str(x.get("overload")): [str(m) for m in x.get("missing") or ()]
                 for x in ann.decompositions}
    return static_parity(cur, predicted, "compile")


def static_parity(cur: pd.DataFrame, predicted: dict[str, list[str]], check: str
                  ) -> list[dict[str, Any]]:
    """A static prediction of missing ops per overload (``predicted``, listed ones first, in
    their order) beside ``check``'s verdicts, plus the overloads ``check`` found ``unsupported``
    for an op other than themselves (dynamic only, by name)."""
    found: dict[str, tuple[str, Any, Any]] = {}
    rows = cur[cur["check"] == check]
    for name, v, cat, op in zip(rows["overload"], rows["verdict"], rows["category"],
                                rows["missing_op"], strict=True):
        found[name] = (v, cat if isinstance(cat, str) else None, op if isinstance(op, str) else None)
    names = list(predicted) + sorted(n for n, (v, _, _) in found.items()
                                     if v == "unsupported" and n not in predicted
                                     and found[n][2] != n)
    out = []
    for name in names:
        missing = predicted.get(name, [])
        verdict, cat, op = found.get(name, (None, None, None))
        if not missing:
            relation = PARITY_DYNAMIC_ONLY
        elif verdict is None or verdict == "skip":
            relation = PARITY_NOT_TESTED
        elif verdict in ("crash", "timeout"):
            relation = PARITY_INCONCLUSIVE
        elif verdict == "unsupported":
            relation = PARITY_AGREE if op in missing else PARITY_OTHER_OP
        else:
            relation = PARITY_STATIC_ONLY
        out.append({"overload": name, "predicted": missing, "verdict": verdict, "category": cat,
                    "missing_op": op, "relation": relation})
    return out


def _fail_kinds(cur: pd.DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    """Fails by category (and informational categories of passes), per matrix column:
    ``[{"category", "what", "severity", "informational", "counts": {column: n}, "total"}]``,
    most severe first, in :mod:`opdb.outcomes` order."""
    counts: dict[str, dict[str, int]] = {}
    for verdict, cat, col in zip(cur["verdict"], cur["category"], cols, strict=True):
        if not isinstance(cat, str):
            cat = None
        if verdict == "fail" or (verdict == "pass" and cat in outcomes.INFO_CATEGORIES):
            key = cat or "(none)"
            by = counts.setdefault(key, {})
            by[col] = by.get(col, 0) + 1
    order = list(outcomes.FAIL_CATEGORIES)
    out = []
    for cat in sorted(counts, key=lambda c: (c in outcomes.INFO_CATEGORIES,
                                             -outcomes.severity(c),
                                             order.index(c) if c in order else len(order), c)):
        info = cat in outcomes.INFO_CATEGORIES
        out.append({
            "category": cat, "what": outcomes.CATEGORIES.get(cat, ""),
            "severity": None if info else outcomes.severity(cat), "informational": info,
            "counts": counts[cat], "total": sum(counts[cat].values()),
        })
    return out
