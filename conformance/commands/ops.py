"""``conformance ops``: list the overloads of native_functions.yaml (autogen'd ones included)."""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opdb import OpDB, Overload

FORMATS = ("table", "json", "csv")
KINDS = ("functional", "inplace", "out")


def add_native_functions_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--native-functions",
        metavar="PATH",
        help="native_functions.yaml to read (default: the copy packaged with the installed torch); "
        "derivatives.yaml is looked for beside it",
    )


def load_db(path: str | None) -> OpDB:
    import opdb

    return opdb.load(path)


def derivatives_note(db: OpDB) -> str | None:
    if db.derivatives_path is not None:
        return None
    return (
        f"note: no derivatives.yaml found beside {db.native_functions_path}; "
        "backward information is unknown"
    )


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "ops",
        help="list the overloads of native_functions.yaml",
        description="List every overload of native_functions.yaml, autogen'd ones included.",
    )
    p.add_argument("--match", metavar="REGEX", help="keep overloads whose name matches (re.search)")
    p.add_argument(
        "--tag", metavar="TAG", action="append", default=[],
        help="keep overloads with this tag (repeat: all of them)",
    )
    p.add_argument("--kind", choices=KINDS, help="keep overloads of this kind")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument(
        "--extra", action="store_true",
        help="list instead the aten ops the live dispatcher knows that the YAML lacks",
    )
    add_native_functions_option(p)
    p.set_defaults(func=run)


def record(db: OpDB, ov: Overload) -> dict[str, Any]:
    d = db.derivatives.get(ov.name)
    # what the backward formula calls (base names; [] without an entry, null without a
    # derivatives.yaml): `conformance upgrade` compares two snapshots by it
    backward = sorted(d.backward_bases) if d is not None else (
        [] if db.derivatives_path is not None else None)
    return {
        "name": ov.name,
        "base": ov.base,
        "overload": ov.overload_name,
        "kind": ov.kind,
        "family": ov.family,
        "tags": sorted(ov.tags),
        "dispatch": dict(ov.dispatch),
        "autogen": ov.autogen,
        "autogen_from": ov.autogen_from,
        "schema": ov.schema_str,
        "structured": ov.structured,
        "structured_delegate": ov.structured_delegate,
        "variants": sorted(ov.variants),
        "python_module": ov.python_module,
        "autograd": db.autograd(ov.name),
        "source": str(ov.loc),
        "backward_bases": backward,
        "derivative_source": str(d.loc) if d is not None else None,
    }


def compile_match(text: str | None) -> re.Pattern[str] | None:
    from opdb.errors import InputError

    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise InputError(f"--match: bad regular expression {text!r}: {exc}") from None


def select(db: OpDB, args: argparse.Namespace) -> list[Overload]:
    pattern = compile_match(args.match)
    wanted = set(args.tag)
    return [
        ov
        for ov in db.overloads
        if (pattern is None or pattern.search(ov.name))
        and wanted <= ov.tags
        and (args.kind is None or ov.kind == args.kind)
    ]


def _dispatch_cell(ov: Overload, width: int = 48) -> str:
    if ov.autogen:
        return f"autogen from {ov.autogen_from}"
    if ov.structured_delegate and not ov.dispatch:
        return f"delegate {ov.structured_delegate}"
    text = ",".join(ov.dispatch)
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    pattern = compile_match(args.match)
    db = load_db(args.native_functions)
    out = sys.stdout
    if args.extra:
        names = [n for n in db.extra_dispatcher_ops if pattern is None or pattern.search(n)]
        if args.format == "json":
            json.dump(names, out, indent=1)
            out.write("\n")
        else:
            out.write("".join(f"{n}\n" for n in names))
        return 0
    chosen = select(db, args)
    if args.format == "json":
        json.dump([record(db, ov) for ov in chosen], out, indent=1)
        out.write("\n")
    elif args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        header = ["name", "base", "overload", "kind", "family", "tags", "dispatch", "autogen",
                  "autogen_from", "autograd", "schema", "source"]
        writer.writerow(header)
        for ov in chosen:
            r = record(db, ov)
            r["tags"] = " ".join(r["tags"])
            r["dispatch"] = " ".join(f"{k}={v}" for k, v in r["dispatch"].items())
            r["autogen_from"] = r["autogen_from"] or ""
            writer.writerow([r[h] for h in header])
    else:
        rows = [
            [
                ov.name,
                ov.kind,
                ov.family,
                _dispatch_cell(ov),
                db.autograd(ov.name),
                " ".join(sorted(ov.tags - {"pt2_compliant_tag"})),
            ]
            for ov in chosen
        ]
        if rows:
            out.write(_table(rows, ["name", "kind", "family", "dispatch", "autograd", "tags"]))
            out.write("\n\n")
        n_auto = sum(ov.autogen for ov in db.overloads)
        out.write(
            f"{len(chosen)} of {len(db.overloads)} overloads ({n_auto} autogen'd) from "
            f"{db.native_functions_path}\n"
        )
        if db.unresolved_autogen:
            listed = ", ".join(n for n, _ in db.unresolved_autogen)
            out.write(
                f"{len(db.unresolved_autogen)} autogen names the live dispatcher does not have "
                f"(not listed): {listed}\n"
            )
        if db.extra_dispatcher_ops:
            out.write(
                f"{len(db.extra_dispatcher_ops)} aten ops in the live dispatcher are not in the "
                "YAML (conformance ops --extra)\n"
            )
    note = derivatives_note(db)
    if note:
        print(note, file=sys.stderr)
    return 0
