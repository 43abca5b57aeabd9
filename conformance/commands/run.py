"""``conformance run``: the parity job — a thin front over the pytest plugin.

It validates the options (bad input: one line, exit 2), runs pytest in this process with the
conformance plugin and the progress display, always through pytest-xdist workers unless
``-n 0`` (so a backend that crashes or hangs costs one item, not the run), then prints the
one-screen summary and, with ``--html``, writes the report. Exit status 0 when the run
completed, fails included.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.backends import Backend


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="check every overload on a backend against CPU (values, promotion, broadcast)",
        description="Run the parity checks on a backend against CPU and write verdict records.")
    p.add_argument("--backend", required=True, metavar="NAME",
                   help="cpu, meta, cuda, mps, xpu, mlu, privateuse1:MODULE")
    p.add_argument("--ops", metavar="REGEX",
                   help="overloads whose name, base name or family fully matches REGEX")
    p.add_argument("--checks", metavar="LIST", help="comma-separated (default: all)")
    p.add_argument("--max-examples", type=int, metavar="K",
                   help="Hypothesis examples per (overload, check) (default 10)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="same seed, same verdicts (default 0)")
    p.add_argument("-n", "--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: CPU count, at most 8; 0 = in this "
                        "process, without crash isolation)")
    p.add_argument("-o", "--output", default="results.jsonl", metavar="FILE",
                   help="results file (JSONL) (default results.jsonl)")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report")
    p.add_argument("--without", metavar="LIST",
                   help="reference backend only: overloads to leave out (comma-separated)")
    p.add_argument("--native-functions", metavar="PATH",
                   help="native_functions.yaml (default: the copy packaged with torch)")
    p.add_argument("--expected-failures", metavar="FILE",
                   help="expected failures YAML (default: the packaged one for the backend)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="per-item timeout; a hung item gets the verdict 'timeout' (default 120)")
    p.add_argument("--shard", metavar="K/N", help="run only shard K of N (0-based)")
    p.add_argument("--pytest-args", default="", metavar="ARGS",
                   help="extra pytest arguments, e.g. \"-k 'promotion' -x\"")
    p.set_defaults(func=run)


def _validate(args: argparse.Namespace) -> Backend:
    from opdb.errors import InputError

    if args.max_examples is not None and args.max_examples < 1:
        raise InputError("--max-examples must be at least 1")
    if args.workers is not None and args.workers < 0:
        raise InputError("-n/--workers must be 0 or more")
    if args.shard and not re.fullmatch(r"\d+/\d+", args.shard):
        raise InputError(f"--shard must be K/N, e.g. 0/4, not {args.shard!r}")
    if args.timeout < 0:
        raise InputError("--timeout must be 0 (off) or more")
    if args.ops:
        try:
            re.compile(args.ops)
        except re.error as exc:
            raise InputError(f"--ops: invalid regular expression {args.ops!r}: {exc}") from None
    if args.checks:
        from conformance.checks import CHECKS

        for c in (c.strip() for c in args.checks.split(",")):
            if c and c not in CHECKS:
                raise InputError(f"--checks: unknown check {c!r} (known: {', '.join(CHECKS)})")
    for opt in ("native_functions", "expected_failures"):
        path = getattr(args, opt)
        if path and not Path(path).is_file():
            raise InputError(f"--{opt.replace('_', '-')}: file not found", file=path)
    out_dir = Path(args.output).resolve().parent
    if not out_dir.is_dir():
        raise InputError(f"-o: directory {str(out_dir)!r} does not exist")
    if args.ops:
        import opdb

        rx = re.compile(args.ops)
        db = opdb.load(args.native_functions)
        if not any(rx.fullmatch(s) for ov in db.overloads for s in (ov.name, ov.base, ov.family)):
            raise InputError(f"--ops {args.ops!r} matched no overload")
    # Resolving brings the backend up: an unknown or unavailable one is bad input here.
    from conformance.backends import parse_without, resolve

    return resolve(args.backend, without=parse_without(args.without) if args.without else None)


def _static_coverage(args: argparse.Namespace, backend: Backend) -> dict[str, Any]:
    """What the backend's dispatch key has, for the report's static status column and lists."""
    import opdb
    from opdb.coverage import static_coverage

    db = opdb.load(args.native_functions)
    return static_coverage(db, backend=backend.name, dispatch_key=backend.dispatch_key)


def pytest_argv(args: argparse.Namespace, workers: int, empty_dir: str) -> list[str]:
    argv = [empty_dir, "-p", "conformance", "--backend", args.backend,
            "--results", str(Path(args.output).resolve()),
            "--conformance-seed", str(args.seed), "--conformance-timeout", str(args.timeout),
            "-p", "no:cacheprovider", "-p", "no:benchmark",
            "-p", "no:faulthandler", "--noconftest", "-o", "addopts=", "-q",
            "--rootdir", os.getcwd()]
    for flag, value in (("--ops", args.ops), ("--checks", args.checks),
                        ("--max-examples", args.max_examples), ("--without", args.without),
                        ("--native-functions", args.native_functions),
                        ("--expected-failures", args.expected_failures),
                        ("--shard", args.shard)):
        if value is not None:
            argv += [flag, str(value)]
    if workers > 0:
        argv += ["-n", str(workers), "--max-worker-restart", "1000000"]
    if args.pytest_args:
        import shlex

        argv += shlex.split(args.pytest_args)
    return argv


def run(args: argparse.Namespace) -> int:
    import pytest

    from conformance.progress import Progress, summarize
    from opdb.errors import InputError

    backend = _validate(args)
    workers = args.workers if args.workers is not None else min(os.cpu_count() or 1, 8)
    if workers > 0 and importlib.util.find_spec("xdist") is None:
        if args.workers:
            raise InputError("-n needs pytest-xdist (pip install pytest-xdist)")
        print("conformance run: pytest-xdist is not installed: running in this process, "
              "without crash isolation", file=sys.stderr)
        workers = 0
    progress = Progress(sys.stderr)
    with tempfile.TemporaryDirectory(prefix="conformance-") as empty:
        argv = pytest_argv(args, workers, empty)
        code = pytest.main(argv, plugins=[progress])
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        raise InputError(f"--ops {args.ops!r} matched no overload" if args.ops
                         else "no overload was selected")
    if code == pytest.ExitCode.USAGE_ERROR:
        text = progress.captured.getvalue().strip().splitlines()
        raise InputError(text[-1] if text else "pytest rejected the options")
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        sys.stderr.write(progress.captured.getvalue())
        print(f"conformance run: pytest ended with status {int(code)}", file=sys.stderr)
        return 1
    html_note = html_error = None
    if args.html:
        import reports

        try:
            reports.write_html(results=[args.output], output=args.html,
                               coverage=_static_coverage(args, backend))
            html_note = args.html
        except InputError as exc:  # e.g. an unwritable path: keep the summary, then say so
            html_note, html_error = "NOT written", str(exc)
    print(summarize(args.output, html=html_note))
    stale = _stale_expectations(args)
    if stale:
        print(f"\nexpected-failure entries that match no overload/check ({len(stale)}): "
              + ", ".join(f"{e.file}:{e.line} {e.id}" for e in stale[:5]))
    if html_error:
        # The results file is complete; only the report could not be written.
        raise InputError(f"--html: {html_error} (the results are in {args.output})")
    return 0


def _stale_expectations(args: argparse.Namespace) -> list[Any]:
    import opdb
    from conformance.checks import CHECKS
    from conformance.expectations import expected_failures_path, load_expectations

    path = args.expected_failures or expected_failures_path(args.backend)
    exp = load_expectations(path)
    if not exp.entries:
        return []
    names = [ov.name for ov in opdb.load(args.native_functions).overloads]
    return exp.unmatched(f"{n}::{c}" for n in names for c in CHECKS)
