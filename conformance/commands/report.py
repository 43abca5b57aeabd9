"""``conformance report``: results files → one self-contained HTML report, or CSV/JSON/parquet."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

FORMATS = ("html", "csv", "json", "parquet")
TABLES = ("verdicts", "causes", "crashes")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="render results files as an HTML report (or CSV/JSON/parquet tables)",
        description=(
            "Render one or more results files (JSONL written by `conformance run`) as one "
            "self-contained HTML page — summary, family matrix, dtype matrix, missing variants "
            "and backward ops — or as a table (--format csv|json|parquet). Damaged lines are "
            "skipped with a warning naming file:line."
        ),
    )
    p.add_argument("results", nargs="*", default=["results.jsonl"], metavar="RESULTS",
                   help="results file(s), JSONL (default: results.jsonl, what `conformance "
                        "run` writes)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="output file (default: report.html, report.csv, ...; '-' = stdout "
                        "for csv/json)")
    p.add_argument("--coverage", metavar="COVERAGE.json",
                   help="static coverage JSON from `conformance coverage -o` (adds static "
                        "status, tags, missing variants and missing backward ops)")
    p.add_argument("--census", metavar="CENSUS.json", action="append", default=[],
                   help="workloads traced by `conformance trace A.py B.py ... --format json` "
                        "(repeatable): the report opens on the failing, unsupported and "
                        "missing overloads ranked by how many workloads they block")
    p.add_argument("--format", choices=FORMATS, default="html")
    p.add_argument("--table", choices=TABLES, default=None,
                   help="the table --format csv|parquet writes: verdicts (one row per verdict, "
                        "the default), causes (failures grouped by fingerprint across "
                        "overloads: the report's by-cause view) or crashes (crash verdicts "
                        "grouped by their top native frames); json holds them all")
    p.add_argument("--title", help="page title (html)")
    p.set_defaults(func=run)


def emit_warnings(caught: list[warnings.WarningMessage], command: str) -> None:
    """Print results-file warnings as one line each on stderr."""
    from reports.results import ResultsWarning

    for w in caught:
        if issubclass(w.category, ResultsWarning):
            print(f"conformance {command}: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def fix_first(census: list[str], df: Any) -> list[Any] | None:
    """The census' ranking of blocking overloads (None without a census), its head printed."""
    if not census:
        return None
    from reports.fixfirst import rank, read_census
    from reports.tables import latest

    workloads = read_census(census)
    blockers = rank(workloads, latest(df))
    print(f"Fix these first ({len(blockers)} overloads block some of {len(workloads)} "
          "workloads):", file=sys.stderr)
    for b in blockers[:10]:
        print(f"  {b.sentence()}", file=sys.stderr)
    return blockers


def run(args: argparse.Namespace) -> int:
    from reports import export, html
    from reports.files import write_text
    from reports.ops import annotate
    from reports.page import page_data
    from reports.results import read
    from reports.tables import add_annotations, frame

    export.check_table(args.format, args.table)
    output = args.output or f"report.{args.format}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = read(args.results)
    emit_warnings(caught, "report")
    df = frame(res)
    ann = annotate(df["overload"].unique(), args.coverage)
    blockers = fix_first(args.census, df)
    if args.format == "html":
        page = html.render(page_data(df, ann, title=args.title, fix_first=blockers))
        if output == "-":
            sys.stdout.write(page)
        else:
            write_text(output, page)
    else:
        export.write(add_annotations(df, ann), ann, args.format, output,
                     table=args.table or export.TABLES[0])
    if output != "-":
        print(f"conformance report: wrote {output} ({len(df):,} verdict records from "
              f"{len(res.sources)} file(s))", file=sys.stderr)
    return 0
