"""reports: pandas tables, the self-contained HTML report, diffs between runs.

The pandas entry point (see docs/reports.md)::

    import reports
    df = reports.load("results.jsonl")            # one row per verdict record
    df[df.verdict == "fail"].groupby("check").size()
    reports.cause_table(df)                       # failures grouped by fingerprint
    reports.crash_table(df)                       # crashes grouped by their top frames

    reports.write_html(results=["results.jsonl"], output="report.html",
                       coverage="coverage.json")   # coverage optional

Nothing here imports the engine (``conformance``) or torch: from :mod:`opdb` come the string
tables (:mod:`opdb.dtypes`, :mod:`opdb.outcomes`) and name rules (:mod:`opdb.model`);
``opdb.load()`` is called lazily, only to name families, kinds and tags when no static coverage
JSON is given. CI commands: :mod:`reports.baseline`, :mod:`reports.gate`, :mod:`reports.merge`.
"""

from __future__ import annotations

from reports.html import write_html
from reports.results import DTYPES, ResultsWarning, read
from reports.tables import (
    cause_table,
    crash_table,
    dtype_table,
    failure_table,
    latest,
    load,
    overload_table,
)

__all__ = [
    "DTYPES",
    "ResultsWarning",
    "cause_table",
    "crash_table",
    "dtype_table",
    "failure_table",
    "latest",
    "load",
    "overload_table",
    "read",
    "write_html",
]
