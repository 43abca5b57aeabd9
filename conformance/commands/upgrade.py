"""``conformance upgrade --from OLD --to NEW``: what moving from one torch release to another
changes for a backend — overloads added and removed, schemas, defaults and returns that changed,
ops that became (or stopped being) composite, derivative formulas that call other ops, tags.

Each side is a ``native_functions.yaml`` (or the folder holding it; ``derivatives.yaml`` is
looked for beside it), a saved ``conformance ops --format json`` snapshot, or another Python's
torch (``--from-python PATH/bin/python``: the YAML that torch packages, located by asking that
interpreter, never imported here). ``--backend B`` (or ``--coverage FILE``) adds what B has
today, and each row says what B must do. Exit status 1 when the backend must act, 0 otherwise,
2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opdb.release import Release
    from opdb.upgrade import Coverage

FORMATS = ("table", "json", "markdown")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "upgrade",
        help="what a torch upgrade changes for a backend (and what it must do)",
        description="Compare the operator declarations of two torch releases and, with "
        "--backend, say what that backend must do about each change. Exit 1 when it must act.",
    )
    for side, when in (("from", "old"), ("to", "new")):
        g = p.add_mutually_exclusive_group()
        g.add_argument(f"--{side}", dest=f"{side}_path", metavar="PATH",
                       help=f"the {when} release: native_functions.yaml (or its folder) or a "
                            "`conformance ops --format json` snapshot")
        g.add_argument(f"--{side}-python", dest=f"{side}_python", metavar="PYTHON",
                       help=f"the {when} release: the torch installed for this interpreter "
                            "(its packaged YAML is read; torch is not imported)")
    p.add_argument("--backend", metavar="NAME",
                   help="cpu, meta, cuda, mlu, privateuse1:MODULE, ...: what it registers today "
                        "decides what it must do")
    p.add_argument("--coverage", metavar="COVERAGE.json",
                   help="instead of --backend: a static coverage JSON (`conformance coverage -o`)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--limit", type=int, default=200,
                   help="rows in the table (0: all; default 200)")
    p.set_defaults(func=run)


def _side(args: argparse.Namespace, side: str) -> Release:
    from opdb.errors import InputError
    from opdb.release import read_side

    path, python = getattr(args, f"{side}_path"), getattr(args, f"{side}_python")
    if path is None and python is None:
        if side == "to":
            return read_side(sys.executable, python=True)
        raise InputError("--from PATH or --from-python PYTHON is required")
    return read_side(python, python=True) if python else read_side(path)


def _coverage_from_file(path: str) -> Coverage:
    from opdb.errors import InputError
    from opdb.upgrade import Coverage

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        native = frozenset(o["name"] for o in doc["overloads"] if o["status"] == "native")
        fallback = bool(doc.get("summary", {}).get("fallback"))
        return Coverage(str(doc.get("backend") or path), native, fallback)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a static coverage JSON: {exc}", file=path) from None


def coverage_of(args: argparse.Namespace, names: set[str]) -> Coverage | None:
    """What the backend registers today (the live dispatcher, or a coverage JSON)."""
    from opdb.errors import InputError

    if args.backend and args.coverage:
        raise InputError("--backend and --coverage are exclusive")
    if args.coverage:
        return _coverage_from_file(args.coverage)
    if not args.backend:
        return None
    from conformance.core.backends import resolve
    from opdb.dispatch import Status, classify, has_fallback
    from opdb.upgrade import Coverage

    backend = resolve(args.backend)
    statuses = classify(backend.dispatch_key, sorted(names))
    return Coverage(backend.name, frozenset(n for n, s in statuses.items() if s is Status.native),
                    has_fallback(backend.dispatch_key))


def run(args: argparse.Namespace) -> int:
    from opdb.errors import InputError
    from opdb.upgrade import assess, compare
    from reports.files import write_text
    from reports.upgrade import render_markdown, render_text, to_json

    if args.limit < 0:
        raise InputError(f"--limit must be >= 0, got {args.limit}")
    old, new = _side(args, "from"), _side(args, "to")
    cov = coverage_of(args, set(old.ops) | set(new.ops))
    actions = assess(compare(old, new), new, old, cov)
    head = {"from": old.label, "to": new.label, "backend": cov.backend if cov else None,
            "from_yaml": old.native_functions, "to_yaml": new.native_functions,
            "from_derivatives": old.derivatives, "to_derivatives": new.derivatives}
    if args.format == "json":
        text = json.dumps(to_json(actions, head), indent=1) + "\n"
    elif args.format == "markdown":
        text = render_markdown(actions, head)
    else:
        text = render_text(actions, head, limit=args.limit or None)
    if args.output and args.output != "-":
        write_text(args.output, text)
        print(f"conformance upgrade: wrote {args.output} ({len(actions)} changes)",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 1 if any(a.level == "must" for a in actions) else 0
