"""Table outputs of ``conformance report --format csv|json|parquet``.

* ``csv`` and ``parquet``, ``--table verdicts`` (the default): the verdict table of
  :func:`reports.load` (one row per verdict record, latest record per (backend, overload,
  check)), with ``family kind tags status``; ``dtypes``, ``dtype_support`` and ``failures``
  are JSON strings (``json.loads`` them back), ``tags`` and ``dtype_gaps`` (dtypes CPU
  supports that the backend refuses) comma-separated strings.
* ``csv`` and ``parquet``, ``--table causes``: the by-cause table
  (:func:`reports.tables.cause_table`), ``checks``, ``dtypes`` and ``overload_names``
  comma-separated; ``--table crashes``: crashes by their top frames
  (:func:`reports.tables.crash_table`), ``checks`` and ``overload_names`` comma-separated,
  ``frames`` a JSON list.
* ``json``: one object ``{"format", "version", "runs", "sources", "warnings", "universe",
  "summary", "causes", "crashes", "dtype_gaps", "overloads", "verdicts"}`` — strict JSON (no
  NaN: missing values are ``null``).
"""

from __future__ import annotations

import json
import math
import sys
from typing import TYPE_CHECKING, Any

from opdb.errors import InputError
from reports.files import write_text

if TYPE_CHECKING:
    import pandas as pd

    from reports.ops import Annotations

FORMATS = ("html", "csv", "json", "parquet")

#: The tables ``--format csv|parquet`` can write (``--table``); ``json`` holds them all.
TABLES = ("verdicts", "causes", "crashes")


def flat_table(df: pd.DataFrame) -> pd.DataFrame:
    """The verdict table with nested columns made flat (for CSV/parquet)."""
    from reports.tables import dtype_gaps, latest

    out = latest(df).drop(columns=["run"]).reset_index(drop=True)
    out["dtypes"] = [json.dumps(d, sort_keys=False) for d in out["dtypes"]]
    # the dtypes check: outcome per dtype, and the dtypes CPU supports that the backend refuses
    gaps = dtype_gaps(df)
    by = gaps.groupby(["backend", "overload"], sort=False)["dtype"].agg(",".join).to_dict()
    out["dtype_gaps"] = [by.get((b or "", ov), "") if sup else ""
                         for b, ov, sup in zip(out["backend"], out["overload"],
                                               out["dtype_support"], strict=True)]
    out["dtype_support"] = [json.dumps(s, sort_keys=False) for s in out["dtype_support"]]
    if "failures" in out:
        out["failures"] = [json.dumps(list(f), sort_keys=False) for f in out["failures"]]
    if "frames" in out:
        out["frames"] = [json.dumps(list(f)) for f in out["frames"]]
    if "tags" in out:
        out["tags"] = [",".join(t) for t in out["tags"]]
    return out


def flat_causes(df: pd.DataFrame) -> pd.DataFrame:
    """The by-cause table (:func:`reports.tables.cause_table`) with its tuples made flat:
    ``checks``, ``dtypes`` and ``overload_names`` comma-separated."""
    from reports.tables import cause_table

    out = cause_table(df)
    for col in ("checks", "dtypes", "overload_names"):
        out[col] = [",".join(v) for v in out[col]]
    return out


def flat_crashes(df: pd.DataFrame) -> pd.DataFrame:
    """Crashes by their top frames (:func:`reports.tables.crash_table`) made flat: ``checks``
    and ``overload_names`` comma-separated, ``frames`` a JSON list."""
    from reports.tables import crash_table

    out = crash_table(df)
    for col in ("checks", "overload_names"):
        out[col] = [",".join(v) for v in out[col]]
    out["frames"] = [json.dumps(list(f)) for f in out["frames"]]
    return out


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/NA → None, numpy scalars → Python, containers recursively."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return _clean(value.item())
    return str(value)


def json_document(df: pd.DataFrame, ann: Annotations) -> dict[str, Any]:
    from reports.page import page_data
    from reports.tables import cause_table, crash_table, latest, overload_table

    data = page_data(df, ann)
    cur = latest(df)
    universe = [r[0] for r in data["rows"]]
    table = overload_table(cur, ann, universe=universe)
    verdict_cols = [c for c in cur.columns if c != "run"]
    verdicts = [dict(zip(verdict_cols, row, strict=True))
                for row in cur[verdict_cols].itertuples(index=False)]
    causes = cause_table(cur).to_dict(orient="records")
    crashes = crash_table(cur).to_dict(orient="records")
    return _clean({
        "format": "opconform-report",
        "version": 1,
        "runs": data["runs"],
        "sources": data["sources"],
        "warnings": data["warnings"],
        "annotation": data["annotation"],
        "universe": data["universe"],
        "columns": data["columns"],
        "summary": data["summary"],
        "causes": causes,
        "crashes": crashes,
        "dtype_gaps": data["dtype_gaps"],
        "overloads": table.to_dict(orient="records"),
        "verdicts": verdicts,
    })


def check_table(fmt: str, table: str | None) -> None:
    """``--table`` chooses what ``--format csv|parquet`` holds (``None``: the default);
    :class:`InputError` for another format, whose output holds every table or view."""
    if table is None:
        return
    if table not in TABLES:
        raise InputError(f"unknown table {table!r}; expected one of {', '.join(TABLES)}")
    if fmt not in ("csv", "parquet") and not (fmt == "json" and table == TABLES[0]):
        held = ("holds every table (its 'causes' list is the by-cause table)" if fmt == "json"
                else "shows every view (the by-cause view first)")
        raise InputError(f"--table is for --format csv or parquet; --format {fmt} {held}")


def write(df: pd.DataFrame, ann: Annotations, fmt: str, output: str, *,
          table: str = "verdicts") -> None:
    """Write ``df`` as ``fmt`` (csv, json, parquet) to ``output`` (``-``: stdout, not parquet);
    ``table`` (:data:`TABLES`) picks what csv and parquet hold — json holds every table."""
    check_table(fmt, table)
    flat = {"causes": flat_causes, "crashes": flat_crashes}.get(table, flat_table)
    if fmt == "parquet":
        if output == "-":
            raise InputError("--format parquet cannot be written to stdout; give -o FILE")
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(
                "--format parquet needs pyarrow: pip install 'opconform[parquet]'") from None
        flat(df).to_parquet(output, index=False)
        return
    if fmt == "csv":
        text = flat(df).to_csv(index=False)
    elif fmt == "json":
        text = json.dumps(json_document(df, ann), indent=1, allow_nan=False) + "\n"
    else:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if output == "-":
        sys.stdout.write(text)
        return
    write_text(output, text)
