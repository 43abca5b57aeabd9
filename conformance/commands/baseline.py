"""``conformance baseline RESULTS... -o parity-baseline.yaml``: write (or ``--update``) a parity
baseline, the known state a CI gate compares runs against (see ``reports.baseline``)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

DEFAULT = "parity-baseline.yaml"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "baseline",
        help="write a parity baseline (known state per overload and check) from results files",
        description=(
            "Write the known state of a backend — overload → check → verdict, category and a "
            "reason for humans — from results files (JSONL), as YAML to commit next to your "
            "code. --update merges a new run into an existing baseline line by line: changed "
            "entries are rewritten in place, new ones inserted; reasons, comments, order and "
            "entries the run did not reach are kept. `conformance gate` reads the file. "
            "Exit 0; 2 on bad input."
        ),
    )
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results file(s), JSONL")
    p.add_argument("-o", "--output", metavar="FILE", default=DEFAULT,
                   help=f"baseline file (default: {DEFAULT})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true",
                      help="merge the results into the existing FILE (keeps reasons, comments, "
                           "order)")
    p.add_argument("--prune", action="store_true",
                   help="with --update: delete entries within the results' scope (their --ops "
                        "and checks) that the results did not reach")
    mode.add_argument("--overwrite", action="store_true",
                      help="replace an existing FILE (human reasons in it are lost)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from conformance.commands.report import emit_warnings
    from opdb.errors import InputError
    from reports import baseline as bl
    from reports.files import write_text
    from reports.results import read

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = read(args.results)
    emit_warnings(caught, "baseline")
    states = bl.states_from(res)
    backend, torch_version = bl.run_facts(res)
    out = args.output
    if args.prune and not args.update:
        raise InputError("--prune works with --update")
    if args.update:
        if not os.path.exists(out):
            raise InputError("no baseline to --update; write one first (without --update)",
                             file=out)
        base = bl.read(out)
        if base.backend and backend and base.backend != backend:
            raise InputError(f"baseline is for backend {base.backend!r}, the results are for "
                             f"{backend!r}", file=out)
        prune: list[bl.Key] = []
        if args.prune:
            inside = bl.scope_of(res)
            prune = [k for k in base.entries if k not in states and inside(k)]
        text, summary = bl.update(base, states, backend=backend, torch_version=torch_version,
                                  prune=prune)
        bl.parse(text, out)  # what we write must read back
        write_text(out, text)
        same = len(base.entries) - len(summary.changed) - summary.kept_unrun - summary.pruned
        print(f"conformance baseline: updated {out}: {len(summary.changed):,} changed, "
              f"{len(summary.added):,} added, {summary.pruned:,} pruned, {same:,} unchanged, "
              f"{summary.kept_unrun:,} kept that the results did not reach"
              + ("" if args.prune or not summary.kept_unrun else " (--prune deletes those "
                 "within the results' scope)"), file=sys.stderr)
        return 0
    if os.path.exists(out) and not args.overwrite:
        raise InputError("exists; --update merges the results into it, --overwrite replaces it",
                         file=out)
    text = bl.render(states, backend=backend, torch_version=torch_version)
    write_text(out, text)
    bad = sum(1 for s in states.values() if s.verdict not in ("pass", "skip"))
    print(f"conformance baseline: wrote {out}: {len(states):,} entries, {bad:,} not passing "
          f"(give each a reason)", file=sys.stderr)
    return 0
