"""Table outputs of ``conformance report --format csv|json|parquet``.

* ``csv`` and ``parquet``: the verdict table of :func:`reports.load` (one row per verdict
  record, latest record per (backend, overload, check)), with ``family kind tags status``;
  ``dtypes`` and ``dtype_support`` are JSON strings (``json.loads`` them back), ``tags`` and
  ``dtype_gaps`` (dtypes CPU supports that the backend refuses) comma-separated strings.
* ``json``: one object ``{"format", "version", "runs", "sources", "warnings", "universe",
  "summary", "dtype_gaps", "overloads", "verdicts"}`` — strict JSON (no NaN: missing values are ``null``).
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
    if "tags" in out:
        out["tags"] = [",".join(t) for t in out["tags"]]
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
    from reports.tables import latest, overload_table

    data = page_data(df, ann)
    cur = latest(df)
    universe = [r[0] for r in data["rows"]]
    table = overload_table(cur, ann, universe=universe)
    verdict_cols = [c for c in cur.columns if c != "run"]
    verdicts = [dict(zip(verdict_cols, row, strict=True))
                for row in cur[verdict_cols].itertuples(index=False)]
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
        "dtype_gaps": data["dtype_gaps"],
        "overloads": table.to_dict(orient="records"),
        "verdicts": verdicts,
    })


def write(df: pd.DataFrame, ann: Annotations, fmt: str, output: str) -> None:
    """Write ``df`` as ``fmt`` (csv, json, parquet) to ``output`` (``-``: stdout, not parquet)."""
    if fmt == "parquet":
        if output == "-":
            raise InputError("--format parquet cannot be written to stdout; give -o FILE")
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(
                "--format parquet needs pyarrow: pip install 'opconform[parquet]'") from None
        flat_table(df).to_parquet(output, index=False)
        return
    if fmt == "csv":
        text = flat_table(df).to_csv(index=False)
    elif fmt == "json":
        text = json.dumps(json_document(df, ann), indent=1, allow_nan=False) + "\n"
    else:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if output == "-":
        sys.stdout.write(text)
        return
    write_text(output, text)
