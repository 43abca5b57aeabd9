"""``conformance merge SHARDS... -o all.jsonl``: join shard results into one results file."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "merge",
        help="join shard results (run --shard K/N) into one results file",
        description=(
            "Join results files of `conformance run --shard K/N` into one, records copied as "
            "written. Refuses shards of different torch versions, backends or seeds unless "
            "--allow-mixed; reports overlaps (the same item in two files: the later is kept) "
            "and holes (shards no file covered, items of the run's scope with no verdict). "
            "Exit 0; 2 on bad input."
        ),
    )
    p.add_argument("results", nargs="+", metavar="SHARD", help="shard results file(s), JSONL")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="merged results file")
    p.add_argument("--allow-mixed", action="store_true",
                   help="merge shards of different torch versions, backends or seeds")
    p.add_argument("--overwrite", action="store_true", help="replace an existing FILE")
    p.add_argument("--native-functions", metavar="PATH",
                   help="native_functions.yaml the run used (for holes; default: torch's)")
    p.set_defaults(func=run)


def _universe(path: str | None) -> tuple[list[str] | None, str | None]:
    try:
        import opdb

        return [ov.name for ov in opdb.load(path).overloads], None
    except Exception as exc:  # noqa: BLE001 - holes are a report, not a reason to refuse
        return None, f"{type(exc).__name__}: {str(exc)[:120]}"


def run(args: argparse.Namespace) -> int:
    from conformance.commands.report import emit_warnings
    from opdb.errors import InputError
    from reports.files import write_text
    from reports.merge import merge

    out = args.output
    if any(os.path.exists(p) and os.path.exists(out) and os.path.samefile(p, out)
           for p in args.results):
        raise InputError("is one of the inputs; write the merge to a new file", file=out)
    if os.path.exists(out) and not args.overwrite:
        raise InputError("exists; pass --overwrite to replace it", file=out)
    universe, why = _universe(args.native_functions)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = merge(args.results, allow_mixed=args.allow_mixed, universe=universe)
    emit_warnings(caught, "merge")
    write_text(out, "\n".join(m.lines) + "\n")
    say = lambda s: print(f"conformance merge: {s}", file=sys.stderr)  # noqa: E731
    for note in m.notes:
        say(f"warning: {note}")
    if m.overlaps:
        conflicts = [o for o in m.overlaps if o.conflict]
        say(f"warning: {len(m.overlaps):,} overlapping items ({len(conflicts):,} with "
            f"different verdicts; the later record is kept)")
        for o in (conflicts or list(m.overlaps))[:10]:
            say(f"  {o.key[1]}::{o.key[2]}: {o.first} and {o.second}")
    if m.missing_shards:
        say(f"warning: hole: no file for shard(s) {', '.join(m.missing_shards)}")
    if m.holes is None:
        say(f"note: items without a verdict not computed (opdb unavailable: {why})")
    elif m.holes:
        say(f"warning: hole: {len(m.holes):,} items of the run's scope have no verdict, e.g. "
            + ", ".join(f"{ov}::{c}" for ov, c in m.holes[:5]))
    say(f"wrote {out}: {m.verdicts:,} verdicts from {len(args.results)} file(s)")
    return 0
