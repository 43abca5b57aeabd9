"""``conformance diff A B``: what changed between two runs, or between two backends.

Exit status is 0 whatever changed (diff reports; it does not judge) and 2 for bad input. A CI
gate reads the same structure: ``reports.diff.compare(a, b).regressions``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diff",
        help="compare two results files: regressions, fixes, newly (un)supported overloads",
        description=(
            "Compare results A (before, or backend 1) with results B (after, or backend 2), "
            "cell by cell (overload, check): regressions (pass → not passing), fixes, changed "
            "failures, tested → not tested and back, newly supported and newly unsupported "
            "overloads. Exits 0 whatever changed; 2 on bad input."
        ),
    )
    p.add_argument("files", nargs="+", metavar="RESULTS",
                   help="A and B (JSONL): before and after, or two backends; three or more "
                        "files of different backends: their verdicts side by side (rows where "
                        "they differ or all fail, per-backend totals)")
    p.add_argument("--format", choices=("text", "html"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--limit", type=int, default=200,
                   help="rows per section in text output (0: all; default 200)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.commands.report import emit_warnings
    from reports.diff import compare, render_html, render_text
    from reports.results import read
    from reports.tables import frame

    if args.limit < 0:
        from opdb.errors import InputError

        raise InputError(f"--limit must be >= 0, got {args.limit}")
    if len(args.files) < 2:
        from opdb.errors import InputError

        raise InputError("diff needs two results files (or three or more backends)")
    if len(args.files) > 2:
        return _cross(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a, b = frame(read(args.files[0])), frame(read(args.files[1]))
    emit_warnings(caught, "diff")
    d = compare(a, b)
    text = render_html(d) if args.format == "html" else render_text(d, limit=args.limit or None)
    c = d.counts()
    return _emit(args, text, f"{c['regression']} regressions, {c['fix']} fixes")


def _emit(args: argparse.Namespace, text: str, summary: str) -> int:
    """``text`` to ``-o`` (a one-line ``summary`` on stderr) or to stdout."""
    from reports.files import write_text

    if args.output and args.output != "-":
        write_text(args.output, text)
        print(f"conformance diff: wrote {args.output} ({summary})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _cross(args: argparse.Namespace) -> int:
    """Three or more files: the backends side by side (:mod:`reports.crossbackend`)."""
    from conformance.commands.report import emit_warnings
    from reports.crossbackend import matrix, render_html, render_text
    from reports.results import read
    from reports.tables import frame, latest

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = matrix(latest(frame(read(args.files))))
    emit_warnings(caught, "diff")
    text = render_html(m) if args.format == "html" else render_text(m, limit=args.limit or None)
    c = m.counts()
    return _emit(args, text, f"{c['lone']} rows with a lone dissenter, {c['all_fail']} failing "
                             f"on every backend")
