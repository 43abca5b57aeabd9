"""pandas tables over results: the verdict table, one row per overload, counts, dtype outcomes.

Definitions used everywhere (report, CSV/JSON, diff):

* *tested* — the check ran the overload on the backend and got an outcome: ``pass``, ``fail``,
  ``unsupported``, ``crash`` or ``timeout``. ``skip`` and "no record" are *not tested*.
* *parity* — two numbers, always shown together: ``passed ÷ tested`` and ``tested ÷ total``.
* an overload's overall verdict is the worst verdict among its tested checks
  (``crash`` > ``timeout`` > ``fail`` > ``unsupported`` > ``pass``), or ``not tested``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opdb import outcomes
from opdb.fingerprints import crash_key, failure_key
from reports.ops import Annotations, annotate
from reports.results import DTYPES, TESTED_VERDICTS, VERDICT_FIELDS, Results, read

if TYPE_CHECKING:
    import pandas as pd

NOT_TESTED = "not tested"

#: Most severe first; used to pick an overload's overall verdict and to sort matrix columns.
SEVERITY: tuple[str, ...] = ("crash", "timeout", "fail", "unsupported", "pass", "skip", NOT_TESTED)

def frame(results: Results) -> pd.DataFrame:
    """The verdict table of already-read results (see :func:`reports.load` for the columns)."""
    import pandas as pd

    cols = [*VERDICT_FIELDS, "source", "line", "run"]
    df = pd.DataFrame.from_records(list(results.verdicts), columns=cols)
    for col in ("examples", "line"):
        df[col] = df[col].astype("int64")
    for col in ("seed", "run"):
        df[col] = df[col].astype("Int64")
    df["duration_s"] = df["duration_s"].astype("float64")
    df.attrs["runs"] = [dict(r) for r in results.runs]
    df.attrs["sources"] = list(results.sources)
    df.attrs["warnings"] = list(results.warnings)
    return df


def add_annotations(df: pd.DataFrame, ann: Annotations) -> pd.DataFrame:
    """Add ``family``, ``kind``, ``tags`` (tuple) and ``status`` columns from ``ann``."""
    infos = [ann.info(n) for n in df["overload"]]
    df = df.copy()
    df["family"] = [i.family for i in infos]
    df["kind"] = [i.kind for i in infos]
    df["tags"] = [i.tags for i in infos]
    df["status"] = [i.status for i in infos]
    df.attrs["annotation"] = ann.source
    df.attrs["annotation_note"] = ann.note
    return df


def load(
    path_or_paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    coverage: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    annotate_ops: bool = True,
) -> pd.DataFrame:
    """Read results files (JSONL) into a pandas DataFrame, one row per verdict record.

    Columns: ``overload check backend verdict category message missing_op examples duration_s
    seed torch_version repro expected dtypes`` as the engine wrote them (``dtypes`` is a dict
    ``{dtype: {"examples", "cpu_ok", "backend_ok", "agree"}}``; ``"NaN"``-style strings are
    floats again), ``dtype_support`` and ``failures`` (a tuple of the distinct failures'
    dicts, see :func:`failure_table`; ``()`` in older files), then ``source`` (file), ``line`` (1-based line in it), ``run`` (index into
    ``df.attrs["runs"]``, the run header records) and, unless ``annotate_ops=False``,
    ``family kind tags status`` — from ``coverage`` (a static coverage JSON path or dict) when
    given, else from :mod:`opdb`, else guessed from the overload name
    (``df.attrs["annotation"]`` says which; ``status`` needs ``coverage``).

    Records are kept as written: if a file holds the same (backend, overload, check) twice (a
    re-run appended to it), both rows are there; :func:`latest` keeps the last one.
    Damaged lines are skipped with a :class:`reports.results.ResultsWarning` naming
    ``file:line`` (also listed in ``df.attrs["warnings"]``); a missing or wholly unreadable
    file raises :class:`opdb.errors.InputError`.

    >>> df = reports.load("results.jsonl")
    >>> df[df.verdict == "fail"].groupby("check").size()
    """
    results = read(path_or_paths)
    df = frame(results)
    if annotate_ops or coverage is not None:
        df = add_annotations(df, annotate(df["overload"].unique(), coverage))
    return df


def latest(df: pd.DataFrame) -> pd.DataFrame:
    """Keep the last record for each (backend, overload, check)."""
    key = ["backend", "overload", "check"]
    out = df.copy()
    out["backend"] = out["backend"].fillna("")
    out = out.drop_duplicates(subset=key, keep="last")
    out.attrs.update(df.attrs)
    return out


def worst(verdicts: Iterable[str]) -> str:
    """The overall verdict of one overload from the verdicts of its checks."""
    seen = [v for v in verdicts if v in TESTED_VERDICTS or v not in SEVERITY]
    if not seen:
        return NOT_TESTED
    rank = {v: i for i, v in enumerate(SEVERITY)}
    return min(seen, key=lambda v: rank.get(v, -1))


@dataclass(frozen=True)
class Counts:
    """``total`` overloads (or overload × check cells), how many tested, how many passed."""

    total: int
    tested: int
    passed: int
    by_verdict: Mapping[str, int]

    @property
    def not_tested(self) -> int:
        return self.total - self.tested

    @property
    def pass_rate(self) -> float | None:
        """passed ÷ tested (``None`` when nothing was tested)."""
        return self.passed / self.tested if self.tested else None

    @property
    def tested_rate(self) -> float | None:
        """tested ÷ total."""
        return self.tested / self.total if self.total else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total, "tested": self.tested, "passed": self.passed,
            "not_tested": self.not_tested, "pass_rate": self.pass_rate,
            "tested_rate": self.tested_rate, "by_verdict": dict(self.by_verdict),
        }


def count(verdicts: Iterable[str], total: int) -> Counts:
    """Counts over a list of verdicts; cells of ``total`` without a verdict are not tested."""
    by: dict[str, int] = {}
    n = 0
    for v in verdicts:
        by[v] = by.get(v, 0) + 1
        n += 1
    tested = sum(c for v, c in by.items() if v in TESTED_VERDICTS)
    by[NOT_TESTED] = by.get(NOT_TESTED, 0) + max(total - n, 0)
    return Counts(total=total, tested=tested, passed=by.get("pass", 0), by_verdict=by)


def annotations_of(df: pd.DataFrame) -> Annotations:
    """The annotations :func:`load` put in ``df`` (``family kind tags status`` columns), or
    opdb's (names-only guesses when opdb is unavailable) when it has none."""
    from reports.ops import OverloadFacts

    if "family" not in df.columns:
        return annotate(df["overload"].unique())
    infos = {}
    for ov, fam, kind, tags, status in zip(df["overload"], df["family"], df["kind"], df["tags"],
                                           df["status"], strict=True):
        infos[ov] = OverloadFacts(ov, fam, kind, tuple(tags or ()),
                           status if isinstance(status, str) else None)
    return Annotations(source=df.attrs.get("annotation", "frame"),
                       note=df.attrs.get("annotation_note", ""), infos=infos, universe=None)


def overload_table(
    df: pd.DataFrame,
    ann: Annotations | None = None,
    *,
    universe: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One row per overload: ``overload family kind tags status verdict`` and one column per
    check key (verdict string, ``"not tested"`` where there is no record).

    ``ann`` defaults to the annotations :func:`load` added to ``df``. ``universe`` adds
    overloads that have no record at all (all cells ``"not tested"``). Rows are ordered by
    family, then name.
    """
    import pandas as pd

    if ann is None:
        ann = annotations_of(df)

    cur = latest(df)
    keys = column_keys(cur)
    cur = cur.assign(column=column_of(cur))
    wide = cur.pivot(index="overload", columns="column", values="verdict") if len(cur) else (
        pd.DataFrame(index=pd.Index([], name="overload"))
    )
    names = list(dict.fromkeys([*(universe or ()), *wide.index]))
    wide = wide.reindex(index=names, columns=keys).fillna(NOT_TESTED)
    infos = [ann.info(n) for n in names]
    out = pd.DataFrame({
        "overload": names,
        "family": [i.family for i in infos],
        "kind": [i.kind for i in infos],
        "tags": [",".join(i.tags) for i in infos],
        "status": [i.status for i in infos],
    })
    for k in keys:
        out[k] = wide[k].to_numpy() if len(names) else []
    out["verdict"] = [worst(row) for row in wide.itertuples(index=False)] if keys else NOT_TESTED
    out = out.sort_values(["family", "overload"], kind="stable").reset_index(drop=True)
    return out


def column_keys(df: pd.DataFrame) -> list[str]:
    """Matrix column keys, in first-seen order: ``check``, or ``backend:check`` when the data
    holds more than one backend. Run headers' ``checks`` lists count as seen."""
    backends = list(dict.fromkeys(df["backend"].fillna("")))
    multi = len(backends) > 1
    keys: list[str] = []
    if not multi:
        for run in df.attrs.get("runs", []):
            for c in run.get("checks") or ():
                if isinstance(c, str):
                    keys.append(c)
    keys.extend(column_of(df))
    return list(dict.fromkeys(keys))


def column_of(df: pd.DataFrame) -> list[str]:
    backends = df["backend"].fillna("")
    if backends.nunique() > 1:
        return [f"{b}:{c}" for b, c in zip(backends, df["check"], strict=True)]
    return list(df["check"])


def dtype_table(df: pd.DataFrame) -> pd.DataFrame:
    """Long table of per-dtype outcomes: ``overload check backend dtype examples cpu_ok
    backend_ok agree`` — one row per (verdict record, dtype) that the record counted."""
    import pandas as pd

    rows = []
    for ov, check, backend, dts in zip(
        df["overload"], df["check"], df["backend"], df["dtypes"], strict=True
    ):
        for dt, c in (dts or {}).items():
            rows.append((ov, check, backend, dt, c["examples"], c["cpu_ok"], c["backend_ok"],
                         c["agree"]))
    cols = ["overload", "check", "backend", "dtype", "examples", "cpu_ok", "backend_ok", "agree"]
    out = pd.DataFrame(rows, columns=cols)
    order = {d: i for i, d in enumerate(DTYPES)}
    out["_o"] = out["dtype"].map(lambda d: order.get(d, len(order)))
    return out.sort_values(["overload", "check", "_o"], kind="stable").drop(columns="_o")


def dtype_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Dtypes CPU supports but the backend refuses, from the ``dtypes`` check's per-dtype
    outcomes (latest record per (backend, overload, check)): ``backend overload dtype`` —
    one row per pair, in backend, overload, dtype order. Only where the backend computes the
    overload at some other dtype: an overload refused at every dtype CPU computes is missing
    altogether (``unsupported``), not a dtype gap."""
    import pandas as pd

    cur = latest(df)
    order = {d: i for i, d in enumerate(DTYPES)}
    ran = {outcomes.DTYPE_OK, outcomes.DTYPE_DIFFERS, outcomes.DTYPE_RAISES,
           outcomes.DTYPE_UNCOMPARED}
    rows = sorted(
        ((b, ov, dt) for b, ov, sup in zip(cur["backend"], cur["overload"],
                                          cur["dtype_support"], strict=True)
         if ran & set((sup or {}).values())
         for dt, outcome in (sup or {}).items() if outcome == outcomes.DTYPE_REFUSED),
        key=lambda r: (r[0], r[1], order.get(r[2], len(order))))
    return pd.DataFrame(rows, columns=["backend", "overload", "dtype"])


def dtype_cell(examples: int, cpu_ok: int, backend_ok: int, agree: int) -> str:
    """Classify one dtype-matrix cell (see docs/reports.md, "Dtype matrix")."""
    if examples <= 0:
        return "none"
    if agree >= examples:
        return "agree" if cpu_ok > 0 else "both_reject"
    if backend_ok < cpu_ok:
        return "backend_rejects"
    if backend_ok > cpu_ok:
        return "backend_accepts"
    return "disagree"


#: Columns of :func:`failure_table`, in order.
FAILURE_TABLE_COLUMNS: tuple[str, ...] = (
    "backend", "overload", "check", "key", "category", "message", "repro", "expected", "dtypes",
    "derived_key", "source", "line",
)

#: Columns of :func:`cause_table`, in order (docs/reports.md, "By cause").
CAUSE_COLUMNS: tuple[str, ...] = (
    "backend", "key", "category", "message", "failures", "new", "expected", "overloads",
    "checks", "dtypes", "overload_names", "reason", "repro", "repro_overload", "repro_check",
)


def _verdict_failures(rec: Any) -> list[tuple[Any, ...]]:
    """``(key, category, message, repro, expected, dtypes, derived_key)`` per distinct failure
    of one ``fail`` record: its ``failures`` as the engine wrote them, or — a file from before
    the field, or a fail that lists none — the verdict's own category and message, keyed here
    by the engine's own normalization (:func:`opdb.fingerprints.failure_key`, without the lead
    dtype, which only the call knew)."""
    entries = rec.failures if isinstance(rec.failures, (list, tuple)) else ()
    if not entries:
        return [(failure_key(rec.category, rec.message or ""), rec.category, rec.message or "",
                 rec.repro, rec.expected, (), True)]
    return [(f["key"] or failure_key(f["category"], f["message"], f["dtypes"]), f["category"],
             f["message"], f["repro"], f["expected"], tuple(f["dtypes"]), f["key"] is None)
            for f in entries]


def failure_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct failure of every ``fail`` verdict (latest record per (backend,
    overload, check)), in file order: ``backend overload check key category message repro
    expected dtypes derived_key source line`` — ``key`` is the failure's fingerprint,
    ``expected`` the reason of the expected-failure entry that matched it (``None``: new),
    ``dtypes`` the shrunk call's tensor dtypes (a tuple), ``derived_key`` true where the record
    held no key (an older file: the verdict's own category and message, keyed by reports)."""
    import pandas as pd

    cur = latest(df)
    fails = cur[cur["verdict"] == "fail"]
    if "failures" not in fails.columns:
        fails = fails.assign(failures=[()] * len(fails))
    rows = []
    for rec in fails.itertuples(index=False):
        for key, cat, msg, repro, expected, dts, derived in _verdict_failures(rec):
            rows.append((rec.backend, rec.overload, rec.check, key,
                         cat if isinstance(cat, str) else None, msg,
                         repro if isinstance(repro, str) else None,
                         expected if isinstance(expected, str) else None,
                         dts, derived, rec.source, rec.line))
    return pd.DataFrame(rows, columns=list(FAILURE_TABLE_COLUMNS))


def _dtype_union(values: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    order = {d: i for i, d in enumerate(DTYPES)}
    names = {d for dts in values for d in dts}
    return tuple(sorted(names, key=lambda d: (order.get(d, len(order)), d)))


def _first_seen(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _first_text(values: Iterable[Any]) -> str | None:
    return next((v for v in values if isinstance(v, str)), None)


def cause_table(df: pd.DataFrame, failures: pd.DataFrame | None = None) -> pd.DataFrame:
    """Failures grouped by cause: one row per (backend, fingerprint ``key``) over every
    overload and check (:func:`failure_table`; pass it as ``failures`` if already built).

    Columns (:data:`CAUSE_COLUMNS`): ``backend key category``; ``message`` the first
    failure's (a representative); the counts ``failures`` (distinct failures with that key),
    ``new`` (no expected-failure entry matched), ``expected`` (one did) and ``overloads``
    (distinct); ``checks`` (first seen first), ``dtypes`` (the twelve's order) and
    ``overload_names`` (first seen first) as tuples; ``reason`` the first matched entry's
    reason; ``repro`` the shortest repro of the cause and the ``repro_overload`` /
    ``repro_check`` it comes from. New first (most new failures first; causes whose every
    failure is expected last), then by size (failures, then overloads), then by key.
    """
    import pandas as pd

    f = failure_table(df) if failures is None else failures
    if not len(f):
        return pd.DataFrame(columns=list(CAUSE_COLUMNS))
    f = f.assign(_new=f["expected"].isna(), _rlen=[len(r) if isinstance(r, str) else math.inf
                                                     for r in f["repro"]])
    g = f.groupby(["backend", "key"], sort=False)
    out = g.agg(
        category=("category", _first_text),
        message=("message", "first"),
        failures=("key", "size"),
        new=("_new", "sum"),
        overloads=("overload", "nunique"),
        checks=("check", _first_seen),
        dtypes=("dtypes", _dtype_union),
        overload_names=("overload", _first_seen),
        reason=("expected", _first_text),
    )
    shortest = f.loc[g["_rlen"].idxmin().to_numpy(), ["repro", "overload", "check"]]
    out["repro"] = shortest["repro"].to_numpy()
    out["repro_overload"] = shortest["overload"].to_numpy()
    out["repro_check"] = shortest["check"].to_numpy()
    out = out.reset_index()
    out["new"] = out["new"].astype("int64")
    out["expected"] = out["failures"] - out["new"]
    out = out.assign(_n=-out["new"], _f=-out["failures"], _o=-out["overloads"])
    out = out.sort_values(["_n", "_f", "_o", "key"], kind="stable")
    return out[list(CAUSE_COLUMNS)].reset_index(drop=True)


#: Columns of :func:`crash_table`, in order (docs/reports.md, "Crashes by top frames").
CRASH_COLUMNS: tuple[str, ...] = (
    "backend", "cause", "frames_by", "crashes", "overloads", "checks", "overload_names",
    "frames", "message", "repro", "repro_overload", "repro_check",
)


def crash_table(df: pd.DataFrame) -> pd.DataFrame:
    """``crash`` verdicts (latest record per cell) grouped by cause: one row per (backend,
    :func:`opdb.fingerprints.crash_key` of the record's ``frames``), the top frames the crash
    replay captured (gdb's native frames, else faulthandler's Python ones; ``frames_by`` says
    which, the first seen). ``cause`` is ``""`` for crashes without frames (not replayed, no
    side died alone, or a file from before the field). ``crashes`` counts the verdicts,
    ``overloads`` the distinct overloads; ``checks`` and ``overload_names`` first seen first;
    ``frames`` and ``message`` the first crash's; ``repro`` the shortest, and where it is from.
    Most crashes first, then most overloads, then by cause, crashes without frames last."""
    import pandas as pd

    cur = latest(df)
    crashes = cur[cur["verdict"] == "crash"]
    if not len(crashes):
        return pd.DataFrame(columns=list(CRASH_COLUMNS))
    frames = crashes["frames"] if "frames" in crashes else pd.Series([()] * len(crashes))
    by = crashes["frames_by"] if "frames_by" in crashes else pd.Series([None] * len(crashes))
    f = pd.DataFrame({
        "backend": crashes["backend"].fillna("").to_numpy(),
        "cause": [crash_key(fr if isinstance(fr, tuple) else ()) for fr in frames],
        "frames_by": list(by), "frames": [fr if isinstance(fr, tuple) else () for fr in frames],
        "overload": crashes["overload"].to_numpy(), "check": crashes["check"].to_numpy(),
        "message": crashes["message"].to_numpy(), "repro": crashes["repro"].to_numpy(),
    })
    f["_rlen"] = [len(r) if isinstance(r, str) else math.inf for r in f["repro"]]
    g = f.groupby(["backend", "cause"], sort=False)
    out = g.agg(frames_by=("frames_by", _first_text), crashes=("overload", "size"),
                overloads=("overload", "nunique"), checks=("check", _first_seen),
                overload_names=("overload", _first_seen), frames=("frames", "first"),
                message=("message", "first"))
    shortest = f.loc[g["_rlen"].idxmin().to_numpy(), ["repro", "overload", "check"]]
    out["repro"] = shortest["repro"].to_numpy()
    out["repro_overload"] = shortest["overload"].to_numpy()
    out["repro_check"] = shortest["check"].to_numpy()
    out = out.reset_index()
    out = out.assign(_none=out["cause"] == "", _c=-out["crashes"], _o=-out["overloads"])
    out = out.sort_values(["_none", "_c", "_o", "cause"], kind="stable")
    return out[list(CRASH_COLUMNS)].reset_index(drop=True)
