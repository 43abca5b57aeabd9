"""Command-line options of the plugin (``pytest_addoption``) and their validation: each check
raises :class:`opdb.errors.InputError` with the option's name, which the session turns into a
usage error. Imports nothing of the plugin's own modules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conformance.store.results import ResumeState


def pytest_addoption(parser: pytest.Parser) -> None:
    from conformance.checks import DEFAULT_CHECKS  # names only: no check (no torch) imported
    from conformance.core.backends import BACKEND_NAMES  # torch is imported by resolve() only
    from conformance.core.inflight import ITEM_CEILING  # torch-free

    group = parser.getgroup("conformance", "operator conformance against CPU (opconform)")
    group.addoption("--backend", default=None, metavar="NAME",
                    help=f"backend under test: {', '.join(BACKEND_NAMES)}. Without it the "
                         "plugin does nothing.")
    group.addoption("--ops", default=None, metavar="REGEX",
                    help="overloads whose name, base name or family fully matches REGEX "
                         "(e.g. 'add|mul' selects add.Tensor, add_.Scalar, mul.out, ...)")
    group.addoption("--checks", default=None, metavar="LIST",
                    help=f"comma-separated checks (default: {','.join(DEFAULT_CHECKS)})")
    group.addoption("--max-examples", type=int, default=None, metavar="K",
                    help="Hypothesis examples per (overload, check) (default 10; promotion x3)")
    group.addoption("--conformance-seed", type=int, default=0, metavar="S",
                    help="seed: the same seed gives the same verdicts (default 0)")
    group.addoption("--results", default=None, metavar="FILE",
                    help="write verdict records to FILE (JSONL, docs/ARCHITECTURE.md)")
    group.addoption("--native-functions", default=None, metavar="PATH",
                    help="native_functions.yaml to read (default: the copy packaged with torch)")
    group.addoption("--without", default=None, metavar="LIST",
                    help="reference backend only: comma-separated overloads to leave out")
    group.addoption("--assume", default=None, metavar="LIST",
                    help="properties the backend has on purpose, honoured by the value "
                         "comparison: ftz, tf32, half_accumulation "
                         "(opdb/data/backend_properties.yaml)")
    group.addoption("--compile-backend", default=None, metavar="NAME",
                    help="the compile check's torch.compile backend (default aot_eager: "
                         "functionalization without codegen, any device; inductor where the "
                         "device has a codegen)")
    group.addoption("--shapes", default=None, choices=("fixed", "free"),
                    help="how shapes are drawn: fixed (each size from a small menu, so a backend that "
                         "compiles per shape reuses its graphs; shrinking budgeted) or free "
                         "(default: fixed where the backend compiles per shape: xla)")
    group.addoption("--expected-failures", default=None, metavar="FILE",
                    help="expected failures YAML (default: "
                         "conformance/data/expected_failures/<backend>.yaml)")
    group.addoption("--hints", default=None, metavar="FILE",
                    help="input hints YAML (default: opdb/data/hints.yaml); names are "
                         "checked against the op database")
    group.addoption("--tolerances", default=None, metavar="FILE",
                    help="tolerances YAML (default: opdb/data/tolerances.yaml); names are "
                         "checked against the op database")
    group.addoption("--corpus", default=None, metavar="FILE|off",
                    help="recorded CPU calls mixed into the inputs (default: the packaged "
                         "corpus, conformance/data/corpus/; 'off': schema strategies only)")
    group.addoption("--corpus-mix", action="store_true", default=False,
                    help="also mix recorded calls into items the schema strategies can feed "
                         "(one example in four)")
    group.addoption("--conformance-timeout", type=float, default=120.0, metavar="SECONDS",
                    help="per-call watchdog: a call on CPU or the backend (a lazy result's "
                         "read-back, hence its compilation, included) running past SECONDS "
                         "is a hang: its item is recorded as 'timeout' ('cpu_timeout' when "
                         "CPU's call hung) and its process ends (use -n so a worker is "
                         f"replaced); an item may run {ITEM_CEILING} x SECONDS in all "
                         "(default 120; 0 = off)")
    group.addoption("--shard", default=None, metavar="K/N",
                    help="run only shard K of N (0-based; items dealt in a stable order, "
                         "balanced by --shard-durations when given, else round-robin)")
    group.addoption("--shard-durations", default=None, metavar="RESULTS",
                    help="a previous results file: balance --shard by its items' durations")
    group.addoption("--resume", action="store_true", default=False,
                    help="continue the --results file of an interrupted run: keep its "
                         "verdicts, run only the items it lacks")
    group.addoption("--overwrite", action="store_true", default=False,
                    help="replace an existing --results file (without it, or --resume, an "
                         "existing file is refused)")
    group.addoption("--no-crash-replay", action="store_true", default=False,
                    help="record a dead worker's item as a crash without first replaying its "
                         "call in fresh processes (CPU alone, backend alone) to see who crashes")
    group.addoption("--recorded-retry", default=None, metavar="OVERLOAD::CHECK",
                    help="run only this item, on its recorded calls alone (what the controller "
                         "runs in a fresh process when a schema-drawn example killed CPU)")
    group.addoption("--strict-expectations", action="store_true", default=False,
                    help="an expected failure whose item now passes (xpass) fails the item")
    group.addoption("--hypothesis-db", default=None, metavar="DIR",
                    help="Hypothesis example database (default .conformance/hypothesis under "
                         "the rootdir; 'none' for no database)")


def check_results_path(config: pytest.Config) -> ResumeState | None:
    """Never overwrite a results file silently: continue it (``--resume``), replace it
    (``--overwrite``) or refuse. Returns what a resumed file already holds."""
    from conformance.store.results import load_for_resume
    from opdb.errors import InputError

    path = config.getoption("--results")
    resume, overwrite = config.getoption("--resume"), config.getoption("--overwrite")
    if resume and overwrite:
        raise InputError("--resume and --overwrite exclude each other")
    if not path:
        if resume:
            raise InputError("--resume needs the results file to continue (--results FILE)")
        return None
    target = Path(path)
    if target.is_dir():
        raise InputError("is a directory, not a results file", file=str(path))
    if resume:
        return load_for_resume(target)
    if not overwrite and target.exists() and target.stat().st_size > 0:
        raise InputError("exists (from an earlier run): continue it with --resume or replace "
                         "it with --overwrite", file=str(path))
    return None


def selected_checks(value: str | None, known: Mapping[str, Any], default: Iterable[str]
                    ) -> list[str]:
    """``--checks``: the checks named (``default`` when none is given); each must be in
    ``known``."""
    from opdb.errors import InputError

    checks = [c.strip() for c in (value or ",".join(default)).split(",") if c.strip()]
    if not checks:
        raise InputError(f"--checks: no check named (known: {', '.join(known)})")
    unknown = [c for c in checks if c not in known]
    if unknown:
        raise InputError(f"--checks: unknown check {unknown[0]!r} (known: "
                         f"{', '.join(known)})")
    return checks


def ops_pattern(ops: str | None) -> re.Pattern[str] | None:
    """``--ops``: the compiled regular expression, ``None`` for every overload."""
    from opdb.errors import InputError

    try:
        return re.compile(ops) if ops else None
    except re.error as exc:
        raise InputError(f"--ops: invalid regular expression {ops!r}: {exc}") from None


def max_examples(value: int | None) -> int | None:
    """``--max-examples``: at least 1 when given."""
    from opdb.errors import InputError

    if value is not None and value < 1:
        raise InputError("--max-examples must be at least 1")
    return value


def hypothesis_database(config: pytest.Config) -> str | None:
    """``--hypothesis-db``: the folder of Hypothesis's example database, ``None`` for none."""
    db = config.getoption("--hypothesis-db")
    if db is None:
        db = str(Path(config.rootpath) / ".conformance" / "hypothesis")
    elif db.lower() == "none":
        db = None
    return db
