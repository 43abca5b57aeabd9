"""reports: pandas tables, the self-contained HTML report, diffs between runs.

The pandas entry point (see docs/reports.md)::

    import reports
    df = reports.load("results.jsonl")            # one row per verdict record
    df[df.verdict == "fail"].groupby("check").size()

    reports.write_html(results=["results.jsonl"], output="report.html",
                       coverage="coverage.json")   # coverage optional

Nothing here imports the engine (``conformance``); :mod:`opdb` is imported lazily, only to name
families, kinds and tags when no static coverage JSON is given.
"""

from __future__ import annotations

from reports.html import write_html
from reports.results import DTYPES, ResultsWarning, read
from reports.tables import dtype_table, latest, load, overload_table

__all__ = [
    "DTYPES",
    "ResultsWarning",
    "dtype_table",
    "latest",
    "load",
    "overload_table",
    "read",
    "write_html",
]
