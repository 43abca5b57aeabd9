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
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.core.backends import Backend


class _HelpWithChecks(argparse.Action):
    """``-h``: the help, with the checks named from the ``CHECKS`` table (imported only now:
    it imports torch, which building the parser must not)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.epilog = checks_epilog()
        parser.print_help()
        parser.exit()


def checks_epilog() -> str:
    from conformance.checks.registry import CHECKS, DEFAULT_CHECKS

    width = max(len(n) for n in CHECKS)
    lines = ["checks (--checks; default: " + ",".join(DEFAULT_CHECKS) + "):"]
    lines += [f"  {name:<{width}}  {check.doc}" for name, check in CHECKS.items()]
    return "\n".join(lines)


def register(subparsers: Any) -> None:
    from conformance.checks import DEFAULT_CHECKS  # names only: no check (no torch) imported
    from conformance.core.backends import BACKEND_NAMES  # torch is imported by resolve() only
    from conformance.core.inflight import ITEM_CEILING  # torch-free

    p = subparsers.add_parser(
        "run", help="check every overload on a backend against CPU (values, promotion, broadcast, "
                    "dtypes; more with --checks)",
        description="Run the parity checks on a backend against CPU and write verdict records.",
        add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-h", "--help", action=_HelpWithChecks, help="show this help and exit")
    p.add_argument("--backend", required=True, metavar="NAME",
                   help=", ".join(BACKEND_NAMES) + " (xla: torch_xla, PJRT_DEVICE picks "
                        "CPU, TPU or CUDA)")
    p.add_argument("--ops", metavar="REGEX",
                   help="overloads whose name, base name or family fully matches REGEX")
    p.add_argument("--checks", metavar="LIST",
                   help="comma-separated checks (listed below; default: "
                        f"{','.join(DEFAULT_CHECKS)})")
    p.add_argument("--max-examples", type=int, metavar="K",
                   help="calls Hypothesis draws per (overload, check) (default 10); the "
                        "forward check checks each with 16 value refills")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="same seed, same verdicts (default 0)")
    p.add_argument("-n", "--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: CPU count, at most 8; 0 = in this "
                        "process, without crash isolation)")
    p.add_argument("-o", "--output", default="results.jsonl", metavar="FILE",
                   help="results file (JSONL) (default results.jsonl); an existing one is "
                        "refused unless --resume or --overwrite")
    p.add_argument("--resume", action="store_true",
                   help="continue the -o file of an interrupted run (killed, crashed, timed "
                        "out): keep its verdicts and run only the items it lacks")
    p.add_argument("--overwrite", action="store_true", help="replace an existing -o file")
    p.add_argument("--strict-expectations", action="store_true",
                   help="an expected failure that now passes (xpass) is an error (exit 1)")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report")
    p.add_argument("--without", metavar="LIST",
                   help="reference backend only: overloads to leave out (comma-separated)")
    p.add_argument("--assume", metavar="LIST",
                   help="properties the backend has on purpose, honoured by the value "
                        "comparison and stated in the report: ftz, tf32, half_accumulation "
                        "(opdb/data/backend_properties.yaml; a vendor module declares them "
                        "with ASSUMES); undeclared, a probe suggests them")
    p.add_argument("--compile-backend", metavar="NAME",
                   help="the compile check's torch.compile backend (default aot_eager: "
                        "functionalization without codegen, any device; inductor where the "
                        "device has a codegen); --checks compile runs it")
    p.add_argument("--shapes", choices=("fixed", "free"),
                   help="how shapes are drawn: fixed (each size from a small menu, so a "
                        "backend that compiles per shape reuses its graphs; shrinking "
                        "budgeted) or free (default: fixed where the backend compiles per "
                        "shape: xla; docs/decisions.md#per-shape-mode)")
    p.add_argument("--native-functions", metavar="PATH",
                   help="native_functions.yaml (default: the copy packaged with torch)")
    p.add_argument("--expected-failures", metavar="FILE",
                   help="expected failures YAML (default: the packaged one for the backend)")
    p.add_argument("--hints", metavar="FILE",
                   help="input hints YAML (default: the packaged opdb/data/hints.yaml)")
    p.add_argument("--tolerances", metavar="FILE",
                   help="per-overload tolerances YAML (default: the packaged "
                        "opdb/data/tolerances.yaml)")
    p.add_argument("--corpus", metavar="FILE|off",
                   help="recorded CPU calls mixed into the inputs (default: the packaged corpus; "
                        "'off': schema strategies only)")
    p.add_argument("--corpus-mix", action="store_true",
                   help="also mix recorded calls into items the schema strategies can feed")
    p.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="per-call timeout: a call on CPU or the backend (with a lazy "
                        "backend's read-back and compilation) running past it gets its item "
                        "the verdict 'timeout' ('cpu_timeout' when CPU's call hung); an item "
                        f"may run {ITEM_CEILING} x SECONDS in all (default 120)")
    p.add_argument("--shard", metavar="K/N", help="run only shard K of N (0-based)")
    p.add_argument("--durations", metavar="RESULTS",
                   help="with --shard: balance the shards by the durations in a previous "
                        "results file (default: by item counts)")
    p.add_argument("--pytest-args", default="", metavar="ARGS",
                   help="extra pytest arguments, e.g. \"-k 'promotion' -x\"")
    p.set_defaults(func=run)


def _validate(args: argparse.Namespace) -> Backend:
    from opdb.errors import InputError

    if args.max_examples is not None and args.max_examples < 1:
        raise InputError("--max-examples must be at least 1")
    if args.workers is not None and args.workers < 0:
        raise InputError("-n/--workers must be 0 or more")
    if args.shard:
        from conformance.store.shards import parse_shard

        parse_shard(args.shard)
    if args.durations:
        if not args.shard:
            raise InputError("--durations balances shards: it needs --shard K/N")
        from conformance.store.shards import load_durations

        load_durations(args.durations)
    if args.resume and args.overwrite:
        raise InputError("--resume and --overwrite exclude each other")
    if args.timeout < 0:
        raise InputError("--timeout must be 0 (off) or more")
    if args.ops:
        try:
            re.compile(args.ops)
        except re.error as exc:
            raise InputError(f"--ops: invalid regular expression {args.ops!r}: {exc}") from None
    if args.checks is not None:
        from conformance.checks.registry import CHECKS

        named = [c.strip() for c in args.checks.split(",") if c.strip()]
        if not named:
            raise InputError(f"--checks: no check named (known: {', '.join(CHECKS)})")
        for c in named:
            if c not in CHECKS:
                raise InputError(f"--checks: unknown check {c!r} (known: {', '.join(CHECKS)})")
    if args.html and not Path(args.html).resolve().parent.is_dir():
        # found out now, not after a run of many minutes
        raise InputError(f"--html: directory {str(Path(args.html).resolve().parent)!r} does "
                         f"not exist")
    out = Path(args.output)
    if out.is_dir():
        raise InputError("-o: is a directory, not a results file", file=args.output)
    if (out.exists() and out.stat().st_size > 0 and not args.resume
            and not args.overwrite):
        raise InputError(f"-o {args.output} exists (from an earlier run): continue it with "
                         f"--resume or replace it with --overwrite")
    if args.corpus and args.corpus != "off":
        from conformance.inputs.corpus import load as load_corpus

        load_corpus(args.corpus)  # InputError (file:line) before the workers start
    for opt in ("native_functions", "expected_failures", "hints", "tolerances"):
        path = getattr(args, opt)
        if path and not Path(path).is_file():
            raise InputError(f"--{opt.replace('_', '-')}: file not found", file=path)
    if args.hints or args.tolerances:
        # a malformed data file is a file:line error now, not after the workers start
        import opdb
        from opdb.opdata import load_hints, load_tolerances

        db = opdb.load(args.native_functions)
        if args.hints:
            load_hints(args.hints, db=db)
        if args.tolerances:
            load_tolerances(args.tolerances, db=db)
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
    from conformance.core.backends import parse_without, resolve
    from opdb.properties import parse_assumes

    backend = resolve(args.backend, without=parse_without(args.without) if args.without else None,
                      assumes=parse_assumes(args.assume), shapes=args.shapes)
    if args.resume:
        _check_resumable(args, backend)
    return backend


def _check_resumable(args: argparse.Namespace, backend: Backend) -> None:
    """``--resume`` continues only a file of the same run settings (one line, exit 2 if not)."""
    import torch

    from conformance.checks.registry import DEFAULT_CHECKS
    from conformance.engine import EngineSettings
    from conformance.store.results import load_for_resume, resume_mismatch
    from opdb.errors import InputError

    state = load_for_resume(args.output)
    if state is None:
        return
    checks = [c.strip() for c in (args.checks or ",".join(DEFAULT_CHECKS)).split(",")
              if c.strip()]
    now = {"backend": backend.name, "assumes": sorted(backend.assumes), "shapes": backend.shapes,
           "torch_version": torch.__version__, "seed": args.seed,
           "checks": checks, "ops": args.ops,
           "max_examples": args.max_examples or EngineSettings().max_examples}
    why = resume_mismatch(state.run, now)
    if why:
        raise InputError(f"--resume: {args.output} is another run's file: {why} (use "
                         f"--overwrite or another -o)")


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
            # no assertion rewriting: the items report through verdicts, not assert statements,
            # and rewriting hypothesis' and this project's modules in every xdist worker costs
            # seconds a start (docs/decisions.md#assert-plain)
            "--assert=plain",
            "--rootdir", os.getcwd()]
    for flag, value in (("--ops", args.ops), ("--checks", args.checks),
                        ("--max-examples", args.max_examples), ("--without", args.without),
                        ("--assume", args.assume),
                        ("--compile-backend", args.compile_backend),
                        ("--shapes", args.shapes),
                        ("--native-functions", args.native_functions),
                        ("--expected-failures", args.expected_failures),
                        ("--hints", args.hints), ("--tolerances", args.tolerances),
                        ("--corpus", args.corpus if args.corpus in (None, "off")
                         else str(Path(args.corpus).resolve())),
                        ("--shard", args.shard), ("--shard-durations", args.durations)):
        if value is not None:
            argv += [flag, str(value)]
    for flag in ("resume", "overwrite", "strict_expectations", "corpus_mix"):
        if getattr(args, flag):
            argv.append("--" + flag.replace("_", "-"))
    if workers > 0:
        argv += ["-n", str(workers), "--max-worker-restart", "1000000"]
    if args.pytest_args:
        import shlex

        argv += shlex.split(args.pytest_args)
    return argv


def run(args: argparse.Namespace) -> int:
    import pytest

    from conformance.pytest_plugin.progress import Progress, summarize
    from opdb.errors import InputError

    backend = _validate(args)
    workers = args.workers if args.workers is not None else min(os.cpu_count() or 1, 8)
    if workers > 0 and importlib.util.find_spec("xdist") is None:
        if args.workers:
            raise InputError("-n needs pytest-xdist (pip install pytest-xdist)")
        print("conformance run: pytest-xdist is not installed: running in this process, "
              "without crash isolation", file=sys.stderr)
        workers = 0
    done = 0
    if args.resume:
        from conformance.store.results import load_for_resume

        state = load_for_resume(args.output)  # also cuts a half-written last line
        done = len(state.done) if state else 0
        print(f"conformance run: resuming {args.output}: {done} verdicts on disk are kept"
              if state else f"conformance run: --resume: {args.output} does not exist yet; "
              "starting it", file=sys.stderr)
    progress = Progress(sys.stderr, already=done)
    sentinel = _start_sentinel(args) if workers == 0 else None
    try:
        with tempfile.TemporaryDirectory(prefix="conformance-") as empty:
            argv = pytest_argv(args, workers, empty)
            code = pytest.main(argv, plugins=[progress])
    finally:
        if sentinel is not None and sentinel.stdin is not None:
            sentinel.stdin.write("done\n")  # ended here, not by a kernel: nothing to settle
            sentinel.stdin.close()
            sentinel.wait()
    if code == pytest.ExitCode.NO_TESTS_COLLECTED and done:
        code = pytest.ExitCode.OK  # resumed a run that had finished: nothing left to do
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        raise InputError(f"--ops {args.ops!r} matched no overload" if args.ops
                         else "no overload was selected")
    if code == pytest.ExitCode.USAGE_ERROR:
        text = progress.captured.getvalue().strip().splitlines()
        raise InputError(text[-1] if text else "pytest rejected the options")
    if code == pytest.ExitCode.INTERRUPTED:
        from conformance.store.results import load_for_resume

        state = load_for_resume(args.output)
        kept = len(state.done) if state else 0
        import re

        # a session stopped on purpose says why in pytest's "!!! Interrupted: why !!!" line
        why = re.findall(r"Interrupted: (.+?) !*$", progress.captured.getvalue(), re.MULTILINE)
        why = [w for w in why if "KeyboardInterrupt" not in w]
        print(f"conformance run: {'stopped: ' + why[-1] if why else 'interrupted'}; the {kept} "
              f"verdicts reached are in {args.output}: add --resume to continue it",
              file=sys.stderr)
        return 130
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
    if args.strict_expectations and xpassed(args.output):
        print(f"conformance run: --strict-expectations: {len(xpassed(args.output))} expected "
              "failure(s) now pass; delete their entries", file=sys.stderr)
        return 1
    return 0


_FAULT_STREAM: Any = None


def _start_sentinel(args: argparse.Namespace) -> subprocess.Popen[str] | None:
    """``-n 0`` runs the backend in this process: if a kernel kills it, a small watcher says
    what was running (the in-flight marker), replays it to see who crashes, and records the
    verdict, so the run never dies silently and ``--resume`` goes on past it. faulthandler
    prints the Python stack of the death itself."""
    import faulthandler

    global _FAULT_STREAM
    # a duplicate of the real stderr: pytest's capturing points fd 2 at a temporary file
    # while an item runs, and a dying process would take the stack with it
    try:
        _FAULT_STREAM = os.fdopen(os.dup(2), "w")
        faulthandler.enable(file=_FAULT_STREAM, all_threads=False)
    except OSError:
        pass
    try:
        from conformance.store.expectations import expected_failures_path

        expected = args.expected_failures or expected_failures_path(args.backend)
        return subprocess.Popen([sys.executable, "-m", "conformance.pytest_plugin.crashes",
                                 str(Path(args.output).resolve()), os.getcwd(),
                                 str(Path(str(expected)).resolve())],
                                stdin=subprocess.PIPE, text=True)
    except OSError:
        return None


def xpassed(path: str) -> list[dict[str, Any]]:
    """Verdict records of items an expected-failure entry named that passed (xpass)."""
    from conformance.store.results import read_records

    return [r for r in read_records(path) if r.get("record") == "verdict"
            and r.get("verdict") == "pass" and r.get("expected")]


def _stale_expectations(args: argparse.Namespace) -> list[Any]:
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.store.expectations import expected_failures_path, load_for_backend

    path = args.expected_failures or expected_failures_path(args.backend)
    exp = load_for_backend(path)
    if not exp.entries:
        return []
    names = [ov.name for ov in opdb.load(args.native_functions).overloads]
    return exp.unmatched(f"{n}::{c}" for n in names for c in CHECKS)
