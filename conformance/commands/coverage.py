"""``conformance coverage``: static coverage of one backend from the live dispatcher."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from conformance.commands.ops import add_native_functions_option, derivatives_note, load_db

FORMATS = ("table", "json")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "coverage",
        help="static coverage of one backend (what its dispatch key has)",
        description="For every overload: native kernel, composite, fallback or missing for the "
        "backend's dispatch key; then the families that lack variants and the forwards whose "
        "backward needs ops the backend lacks.",
    )
    p.add_argument(
        "--backend", required=True, metavar="NAME",
        help="cpu, meta, cuda, mps, xpu, mlu, or privateuse1:MODULE",
    )
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default) or json; with -o, json goes only to the file")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the coverage JSON to FILE (the table, if asked for, still "
                        "prints)")
    p.add_argument(
        "--without", metavar="OVERLOADS",
        help="comma-separated overloads to leave out of the reference backend 'mlu'",
    )
    p.add_argument(
        "--decompositions", nargs="?", const="", metavar="COMPILE_BACKEND",
        help="also: what each overload decomposes into under torch.compile with COMPILE_BACKEND "
             "(aot_eager, aot_eager_decomp_partition, inductor, core_aten; bare: the backend's "
             "own, aot_eager by default) and which of those ops the backend lacks (traced once "
             "per torch version, minutes; cached in --decompositions-cache)",
    )
    p.add_argument("--decompositions-cache", metavar="DIR", default=None,
                   help="where the traced decompositions are cached (default "
                        ".conformance/decompositions; 'none': no cache)")
    add_native_functions_option(p)
    p.set_defaults(func=run)


def render_table(cov: dict[str, Any]) -> str:
    lines = [
        f"backend {cov['backend']} (dispatch key {cov['dispatch_key']}), "
        f"torch {cov['torch_version']}",
    ]
    total = sum(cov["summary"].values())
    lines.append(f"{total} overloads")
    for status, n in cov["summary"].items():
        pct = 100.0 * n / total if total else 0.0
        lines.append(f"  {status:<20} {n:>6}  {pct:5.1f}%")
    if cov.get("fallback_origin"):
        lines.append(f"  (fallback: the boxed fallback registered at {cov['fallback_origin']})")

    mv = cov["missing_variants"]
    lines.append("")
    lines.append(f"Missing variants: {len(mv)} families have some overloads but not all")
    if mv:
        width = max(len(r["family"]) for r in mv)
        for r in mv:
            lines.append(
                f"  {r['family']:<{width}}  lacks {', '.join(r['missing'])}"
                f"  (has {', '.join(r['present'])})"
            )

    mb = cov["missing_backward"]
    lines.append("")
    if cov.get("derivatives") is None:
        lines.append("Missing backward ops: unknown (no derivatives.yaml)")
    else:
        lines.append(f"Missing backward ops: {len(mb)} forwards need backward ops the backend lacks")
        if mb:
            width = max(len(r["forward"]) for r in mb)
            for r in mb:
                lines.append(f"  {r['forward']:<{width}}  needs {', '.join(r['missing'])}")
    if "decompositions" in cov:
        lines.extend(render_decompositions(cov["decompositions"], cov["backend"]))
    return "\n".join(lines) + "\n"


def render_decompositions(dec: dict[str, Any], backend: str) -> list[str]:
    """The table's decompositions section: counts, then each decomposed overload that needs
    an op the backend lacks, then those not traced (counted, never taken as fine)."""
    s = dec["summary"]
    lines = ["", f"Decompositions under torch.compile (compile backend {dec['compile_backend']}, "
                 f"table {dec['table']}): {s['decomposed']} overloads decompose, {s['traced']} "
                 f"traced, {s['untraced']} not traced; {s['needs_missing']} need ops {backend} "
                 f"lacks"]
    needing = [r for r in dec["rows"] if r["missing"]]
    if needing:
        width = max(len(r["overload"]) for r in needing)
        for r in needing:
            lines.append(f"  {r['overload']:<{width}}  decomposes into {len(r['calls'])} ops, "
                         f"{len(r['missing'])} missing on {backend}: {', '.join(r['missing'])}")
    untraced = [r for r in dec["rows"] if r["calls"] is None]
    if untraced:
        lines.append(f"  not traced ({len(untraced)}): "
                     + ", ".join(r["overload"] for r in untraced[:20])
                     + (", ..." if len(untraced) > 20 else "") + " (the JSON says why)")
    return lines


def decompositions_for(args: argparse.Namespace, db: Any, backend: Any
                       ) -> tuple[Any, str, str] | tuple[None, str, str]:
    """The traced decompositions ``--decompositions`` asks for (None if not asked), with the
    compile backend and its table's name."""
    from opdb.decompositions import table_name

    if args.decompositions is None:
        return None, backend.compile_backend, "none"
    from conformance.trace.decompositions import CACHE_DIR, traced

    compile_backend = args.decompositions or backend.compile_backend
    table = table_name(compile_backend)
    cache = args.decompositions_cache or CACHE_DIR
    # on the backend's device: a composite branches on it (lstm.input's mkldnn path is CPU's)
    device = "cpu" if backend.is_cpu else backend.device
    decomps = traced(db, table, cache_dir=None if cache == "none" else cache,
                     log=lambda m: print(f"conformance coverage: {m}", file=sys.stderr),
                     device=device)
    return decomps, compile_backend, table


def run(args: argparse.Namespace) -> int:
    from conformance.core.backends import parse_without, resolve
    from opdb.coverage import static_coverage
    from opdb.errors import InputError

    without = parse_without(args.without) if args.without is not None else None
    backend = resolve(args.backend, without=without, touch=False)  # static: no device work
    db = load_db(args.native_functions)
    decomps, compile_backend, table = decompositions_for(args, db, backend)
    cov = static_coverage(db, backend=backend.name, dispatch_key=backend.dispatch_key,
                          decompositions=decomps, compile_backend=compile_backend, table=table)
    # compact: the C encoder (indent= falls back to the pure-Python one, 0.12 s for 3,000 rows)
    text = json.dumps(cov, separators=(",", ":")) + "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise InputError(f"-o: cannot write {args.output}: {exc.strerror}") from None
    if args.format == "json" and args.output:
        # the JSON went to the file: the terminal gets one line, not 30,000
        summary = ", ".join(f"{n} {status}" for status, n in cov["summary"].items())
        print(f"conformance coverage: wrote {args.output} ({summary})", file=sys.stderr)
    elif args.format == "json":
        sys.stdout.write(text)
    else:
        sys.stdout.write(render_table(cov))
    note = derivatives_note(db)
    if note:
        print(note, file=sys.stderr)
    return 0
