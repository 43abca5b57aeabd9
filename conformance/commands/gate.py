"""``conformance gate --baseline FILE RESULTS...``: exit 1 when a run is worse than the baseline."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "gate",
        help="fail (exit 1) when results regress against a parity baseline",
        description=(
            "Compare results files with a parity baseline (`conformance baseline`). Exit 1 on "
            "any regression: pass → fail/unsupported/crash/timeout/skip, a known failure that "
            "got worse (verdict or category severity), a baseline entry in the run's scope "
            "that the run did not reach, a new failure not in the baseline. Unexpected passes "
            "(known failures that now pass) are reported, and fail the gate with --strict. "
            "Exit 0 otherwise; 2 on bad input."
        ),
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results file(s), JSONL")
    p.add_argument("--baseline", required=True, metavar="FILE", help="parity baseline (YAML)")
    p.add_argument("--strict", action="store_true",
                   help="unexpected passes fail the gate too (the baseline only ratchets forward)")
    p.add_argument("--ignore", action="append", default=[], metavar="CATEGORY",
                   help="do not fail on findings of this category (repeatable or comma "
                        "list), e.g. --ignore error_type")
    p.add_argument("--junitxml", metavar="FILE", help="write JUnit XML (one testcase per cell)")
    p.add_argument("--summary", metavar="FILE",
                   help="append a GitHub-flavoured markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--limit", type=int, default=200,
                   help="rows per section in the text output (0: all; default 200)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.commands.report import emit_warnings
    from opdb.errors import InputError
    from reports import baseline as bl
    from reports import gate
    from reports.results import read

    if args.limit < 0:
        raise InputError(f"--limit must be >= 0, got {args.limit}")
    ignore = gate.check_ignore(args.ignore)
    base = bl.read(args.baseline)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = read(args.results)
    emit_warnings(caught, "gate")
    backend, _ = bl.run_facts(res)
    if base.backend and backend and base.backend != backend:
        raise InputError(f"baseline is for backend {base.backend!r}, the results are for "
                         f"{backend!r}", file=args.baseline)
    result = gate.evaluate(base, res, strict=args.strict, ignore=ignore)
    stale, note = gate.unmatched(base)
    if note:
        print(f"conformance gate: warning: {note}; baseline entries not checked against it",
              file=sys.stderr)
    for ov, line in stale:
        print(f"conformance gate: warning: {args.baseline}:{line}: {ov!r} matches no overload "
              f"of the installed torch; delete its entries", file=sys.stderr)
    sys.stdout.write(gate.render_text(result, limit=args.limit or None))
    if args.junitxml:
        try:
            with open(args.junitxml, "wb") as fh:
                fh.write(gate.junit(result))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", file=args.junitxml) from None
    if args.summary:
        try:
            with open(args.summary, "a", encoding="utf-8") as fh:
                fh.write(gate.markdown(result))
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", file=args.summary) from None
    return 0 if result.passed else 1
