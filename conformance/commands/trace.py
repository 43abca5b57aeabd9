"""``conformance trace``: which overloads a model needs, and which of them a backend lacks.

Runs the model's forward and backward (and one optimizer step with ``--train``) on CPU, or on
the meta device with ``--meta``, under the dispatch recorder; classifies every overload that
reached the kernels with the backend's static coverage; says why each missing one is needed.
``--run`` then runs the workload on the backend to confirm the prediction; ``--check`` runs the
parity engine on the overloads the model uses. Exit status 1 when anything is missing (or
``--run``/``--check`` disagree), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.trace.census import Census, RunCheck

FORMATS = ("table", "json")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "trace",
        help="which overloads a model needs, and which of them the backend lacks",
        description="Trace a model's forward/backward under a dispatch recorder and classify "
        "every aten overload it reaches for the backend: available or missing, and why.",
    )
    p.add_argument("target", metavar="TARGET",
                   help="FILE.py defining make() -> (model, example input), FILE.py:NAME, "
                        "MODULE:CALLABLE, or a saved torch.export program (.pt2)")
    p.add_argument("--backend", metavar="NAME",
                   help="cpu, meta, cuda, mps, xpu, mlu, privateuse1:MODULE (default: no "
                        "classification, just the list)")
    p.add_argument("--without", metavar="OVERLOADS",
                   help="comma-separated overloads to leave out of the reference backend 'mlu'")
    p.add_argument("--train", action="store_true", help="also trace one optimizer step")
    p.add_argument("--meta", action="store_true",
                   help="trace on the meta device (no values: for models too big to run)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--examples", type=int, default=3, metavar="K",
                   help="distinct argument specs kept per overload (default 3): the table "
                        "shows the first, json all; 0 keeps none")
    p.add_argument("--run", action="store_true",
                   help="run the workload on the backend and confirm the prediction")
    p.add_argument("--check", action="store_true",
                   help="run the parity engine (conformance run) on the model's overloads")
    g = p.add_argument_group("--check options (passed to conformance run)")
    g.add_argument("-o", "--output", default="trace-results.jsonl", metavar="FILE",
                   help="results file of --check (default trace-results.jsonl)")
    g.add_argument("--html", metavar="FILE", help="also write the HTML report of --check")
    g.add_argument("-n", "--workers", type=int, default=None, metavar="N",
                   help="worker processes of --check (default: conformance run's)")
    g.add_argument("--max-examples", type=int, default=None, metavar="K",
                   help="Hypothesis examples per (overload, check) of --check")
    p.add_argument("--native-functions", metavar="PATH",
                   help="native_functions.yaml (default: the copy packaged with torch)")
    p.set_defaults(func=run)


def _validate(args: argparse.Namespace) -> Any:
    from opdb.errors import InputError

    if (args.run or args.check) and not args.backend:
        raise InputError(f"--{'run' if args.run else 'check'} needs --backend")
    if args.without and not args.backend:
        raise InputError("--without needs --backend mlu")
    if args.examples < 0:
        raise InputError("--examples must be 0 or more")
    if args.backend is None:
        return None
    from conformance.core.backends import parse_without, resolve

    without = parse_without(args.without) if args.without is not None else None
    return resolve(args.backend, without=without)


def run(args: argparse.Namespace) -> int:
    import opdb
    from conformance.core.verdicts import error_line
    from conformance.trace import census as cs
    from opdb.errors import InputError

    backend = _validate(args)
    maker, where = cs.load_target(args.target)
    db = opdb.load(args.native_functions)
    device = "meta" if args.meta else None
    wl = cs.build(maker, where, device=device)
    optimizer_device = backend.device if backend is not None else (device or "cpu")
    try:
        rec = cs.trace(wl, train=args.train, optimizer_device=optimizer_device,
                       expand=cs.expand_for(backend), max_examples=args.examples)
    except InputError:
        raise
    except Exception as exc:
        on = "meta" if args.meta else "CPU"
        hint = " (a kernel without a meta implementation? try without --meta)" if args.meta \
            else ""
        raise InputError(f"the workload raised on {on} while tracing: "
                         f"{error_line(exc)}{hint}", file=where,
                         line=cs.error_line_in(exc, where)) from None
    result = cs.census(rec, db, backend)
    runcheck = None
    if args.run:
        runcheck = cs.confirm(cs.build(maker, where), backend,
                              frozenset(n.name for n in result.missing),
                              frozenset(rec.names()), train=args.train)
    status = 1 if result.missing else 0
    if runcheck is not None and not runcheck.confirmed:
        status = 1
    if args.format == "json":
        doc = _json(args, result, runcheck)
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(render_table(args, result, runcheck))
    sys.stdout.flush()
    if args.check:
        status = max(status, _check(args, result, db))
    return status


def _json(args: argparse.Namespace, result: Census, runcheck: RunCheck | None) -> dict[str, Any]:
    import torch

    return {
        "target": args.target,
        "backend": result.backend,
        "dispatch_key": result.dispatch_key,
        "traced_on": "meta" if args.meta else "cpu",
        "train": args.train,
        "torch_version": torch.__version__,
        "calls": result.calls,
        "summary": result.summary(),
        "missing": [{"name": n.name, "reasons": list(n.reasons)} for n in result.missing],
        "overloads": [n.as_json() for n in result.needs],
        "composites": [n.as_json() for n in result.composites],
        "run": runcheck.as_json() if runcheck is not None else None,
    }


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def render_table(args: argparse.Namespace, result: Census, runcheck: RunCheck | None) -> str:
    on = "meta" if args.meta else "CPU"
    steps = "forward, backward" + (", optimizer step" if args.train else "")
    lines = [f"{args.target}: {len(result.needs)} overloads reached the kernels "
             f"({result.calls} calls; {steps}; traced on {on})"]
    if result.backend is not None:
        lines[0] += f"; backend {result.backend} (dispatch key {result.dispatch_key})"
    lines.append("")
    rows = sorted(result.needs, key=lambda n: not n.missing)  # missing first, else call order
    width = max([len(n.name) for n in rows] + [8])
    head = f"{'status':<18} {'calls':>6}  {'overload':<{width}}  {'phases':<26} "
    lines.append(head + ("needed by / example" if result.backend else "example"))
    for n in rows:
        phases = ",".join(n.phases)
        if n.missing:
            detail = "; ".join(n.reasons)
        else:
            detail = (f"via {','.join(n.via)}  " if n.via else "") + (
                n.example if args.examples else "")
        st = "MISSING" if n.missing else (n.status or "-")
        lines.append(f"{st:<18} {n.count:>6}  {n.name:<{width}}  {phases:<26} "
                     f"{_clip(detail, 110)}")
    if result.composites:
        lines.append("")
        lines.append(f"Composites the model called ({len(result.composites)}), expanded into "
                     "what they decomposed to:")
        cw = max(len(c.name) for c in result.composites)
        for c in result.composites:
            lines.append(f"  {c.name:<{cw}}  -> {', '.join(c.expands_to)}")
    lines.append("")
    if result.backend is None:
        lines.append("no --backend: nothing classified")
    elif result.missing:
        lines.append(f"{len(result.missing)} missing overload(s) on {result.backend}:")
        for n in result.missing:
            lines.append(f"  {n.name}: {'; '.join(n.reasons)}")
    else:
        summary = ", ".join(f"{k} {v}" for k, v in result.summary().items())
        lines.append(f"nothing missing on {result.backend} ({summary})")
    if runcheck is not None:
        lines.append("")
        lines.append(f"--run: {runcheck.summary}")
        if runcheck.error:
            lines.append(f"  {_clip(runcheck.error, 200)}")
        if runcheck.diffs:
            lines.append("  largest |backend - CPU| (every output; the worst gradient and "
                         "parameter; every mismatch):")
            for d in _shown_diffs(runcheck):
                shown = "n/a" if d.max_abs is None else f"{d.max_abs:.3g}"
                mark = "" if d.ok else f"  MISMATCH {_clip(d.message, 100)}"
                lines.append(f"    {d.name:<40} {shown:>10}{mark}")
        for note in runcheck.notes:
            lines.append(f"  note: {note}")
        if runcheck.unpredicted:
            lines.append(f"  the {runcheck.backend} run also reached (not seen in the trace: "
                         f"a device-dependent decomposition): {', '.join(runcheck.unpredicted)}")
    return "\n".join(lines) + "\n"


def _shown_diffs(runcheck: RunCheck) -> list[Any]:
    shown = [d for d in runcheck.diffs if not d.name.startswith(("grad ", "param ")) or not d.ok]
    for prefix in ("grad ", "param "):
        group = [d for d in runcheck.diffs if d.name.startswith(prefix) and d.ok]
        if group:
            worst = max(group, key=lambda d: -1.0 if d.max_abs is None else d.max_abs)
            shown.append(type(worst)(f"{worst.name} (worst of {len(group)})", worst.max_abs,
                                     worst.ok, worst.message))
    return shown


def _check(args: argparse.Namespace, result: Census, db: Any) -> int:
    """``conformance run --ops`` with the model's aten overloads; 1 if any unexpected fail."""
    from conformance.commands import run as run_command
    from conformance.store.results import read_verdicts

    names = [n.name for n in (*result.needs, *result.composites) if n.name in db]
    names = list(dict.fromkeys(names))
    regex = "|".join(re.escape(n) for n in names)
    argv = ["run", "--backend", args.backend, "--ops", regex, "-o", args.output, "--overwrite"]
    for flag, value in (("--without", args.without), ("--html", args.html),
                        ("-n", args.workers), ("--max-examples", args.max_examples),
                        ("--native-functions", args.native_functions)):
        if value is not None:
            argv += [flag, str(value)]
    print(f"\n--check: conformance run on the model's {len(names)} overloads", flush=True)
    parser = argparse.ArgumentParser(prog="conformance")
    run_command.register(parser.add_subparsers(dest="command"))
    ns = parser.parse_args(argv)
    code = int(ns.func(ns) or 0)
    bad = [v for v in read_verdicts(args.output)
           if v.verdict in ("fail", "crash", "timeout") and not v.expected]
    return 1 if code or bad else 0
