"""pytest plugin (entry point ``pytest11: conformance``). Inactive unless ``--backend`` is given.

With ``--backend NAME`` the session gains one test item per (overload, check), id
``add.Tensor::promotion``; ``-k``, ``-x``, ``--lf``, ``--junitxml`` and ``-n`` (pytest-xdist)
work on them as on any test. Verdict records go to ``--results FILE`` (JSONL), written by one
process only — the xdist controller, or the lone process — from the reports the items produce,
so the file is complete and valid with ``-n``. Workers also keep an about-to-run file per process;
when a worker dies (segfault, or the per-item watchdog firing on a hang) the controller turns
that file into a ``crash`` or ``timeout`` verdict for the item that was running.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from opdb.outcomes import DEVICE_LOST

if TYPE_CHECKING:
    from conformance.core.backends import Backend
    from conformance.core.verdicts import Verdict
    from conformance.engine.search import EngineSettings, Item
    from conformance.store.expectations import Expectations
    from conformance.store.results import ResultsWriter, ResumeState
    from opdb.opdata import Hints, Tolerances


#: A retry of an item on its recorded calls alone: ``(record, marker if its process died,
#: how the process ended)``, as :func:`conformance.crashes.retry_recorded` returns.
_Retry = Callable[[], "tuple[dict[str, Any] | None, dict[str, Any] | None, str]"]


_PROP = "conformance_verdict"  # user_properties key carrying the verdict record (JSON text)


_STATE = "conformance-state"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "operator conformance against CPU (opconform)")
    group.addoption("--backend", default=None, metavar="NAME",
                    help="backend under test: cpu, meta, cuda, mps, xpu, mlu, "
                         "privateuse1:MODULE. Without it the plugin does nothing.")
    group.addoption("--ops", default=None, metavar="REGEX",
                    help="overloads whose name, base name or family fully matches REGEX "
                         "(e.g. 'add|mul' selects add.Tensor, add_.Scalar, mul.out, ...)")
    group.addoption("--checks", default=None, metavar="LIST",
                    help="comma-separated checks (default: forward,promotion,broadcast)")
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
                    help="per-item watchdog: a hung item is recorded as 'timeout' and its "
                         "process ends (use -n so a worker is replaced) (default 120; 0 = off)")
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


class State:
    """Per-session state of an active plugin."""

    def __init__(self, config: pytest.Config) -> None:
        import opdb
        from conformance.checks.registry import CHECKS, DEFAULT_CHECKS
        from conformance.core.backends import parse_without, resolve
        from conformance.core.inflight import Inflight
        from conformance.engine.search import EngineSettings
        from conformance.store.expectations import expected_failures_path, load_expectations
        from opdb.errors import InputError
        from opdb.opdata import load_hints, load_tolerances

        opt = config.getoption
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        try:
            without = parse_without(opt("--without")) if opt("--without") else None
            self.backend: Backend = resolve(opt("--backend"), without=without)
            checks = [c.strip() for c in (opt("--checks") or ",".join(DEFAULT_CHECKS)).split(",")
                      if c.strip()]
            if not checks:
                raise InputError(f"--checks: no check named (known: {', '.join(CHECKS)})")
            unknown = [c for c in checks if c not in CHECKS]
            if unknown:
                raise InputError(f"--checks: unknown check {unknown[0]!r} (known: "
                                 f"{', '.join(CHECKS)})")
            self.checks = checks
            self.ops = opt("--ops")
            try:
                self.ops_re = re.compile(self.ops) if self.ops else None
            except re.error as exc:
                raise InputError(f"--ops: invalid regular expression {self.ops!r}: {exc}") \
                    from None
            from conformance.store.shards import load_durations, parse_shard

            self.shard: tuple[int, int] | None = None
            self.durations: dict[str, float] | None = None
            if opt("--shard"):
                self.shard = parse_shard(opt("--shard"))
                if opt("--shard-durations"):  # every worker deals the same partition
                    self.durations = load_durations(opt("--shard-durations"))
            self.resume: ResumeState | None = None
            # test ids already on disk (--resume): the controller reads them, workers are told
            self.skip_ids: frozenset[str] = frozenset()
            if not self.is_worker:
                self.resume = _check_results_path(config)
                self.skip_ids = frozenset(self.resume.done) if self.resume else frozenset()
            else:
                self.skip_ids = frozenset(getattr(config, "workerinput").get(  # noqa: B009
                    "conformance_done", ()))
            max_examples = opt("--max-examples")
            if max_examples is not None and max_examples < 1:
                raise InputError("--max-examples must be at least 1")
            # per-op data is validated against the op database the run uses
            self._db = opdb.load(opt("--native-functions"))
            from conformance.core import rundb

            rundb.use(self._db)  # checks' applies/grad_args ask the run's database
            self.hints: Hints = load_hints(opt("--hints"), db=self._db)
            self.tolerances: Tolerances = load_tolerances(opt("--tolerances"), db=self._db)
            xf = opt("--expected-failures") or expected_failures_path(self.backend.name)
            if opt("--expected-failures") and not Path(xf).exists():
                raise InputError("--expected-failures: file not found", file=str(xf))
            self.expectations: Expectations = load_expectations(xf)
            corpus = opt("--corpus")
            if corpus is not None and corpus != "off":
                from conformance.inputs.corpus import load as load_corpus

                load_corpus(corpus)  # a bad file is an InputError now, not in every item
            elif corpus is None and (self.is_worker
                                     or not getattr(config.option, "numprocesses", None)):
                from conformance.inputs.corpus import load as load_corpus

                load_corpus()  # the packaged one, in a process that runs items: set-up once,
                # not in whichever item comes first (an xdist controller runs none)
        except InputError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from None
        # Hypothesis's own caches (e.g. its constants cache) go under .conformance/ too, not
        # into a .hypothesis/ folder in whatever directory the user ran from.
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(str(Path(config.rootpath) / ".conformance" / "hypothesis-home"))
        db = opt("--hypothesis-db")
        if db is None:
            db = str(Path(config.rootpath) / ".conformance" / "hypothesis")
        elif db.lower() == "none":
            db = None
        self.settings: EngineSettings = EngineSettings(
            max_examples=max_examples or EngineSettings().max_examples, seed=opt("--conformance-seed"), database=db,
            corpus=opt("--corpus"), corpus_mix=bool(opt("--corpus-mix")),
            recorded_only=bool(opt("--recorded-retry")))
        self.retry_item: str | None = opt("--recorded-retry")
        self.timeout = float(opt("--conformance-timeout") or 0)
        if self.is_worker:
            workerinput = getattr(config, "workerinput")  # noqa: B009 - set by xdist
            self.run_id = workerinput.get("conformance_run_id", "local")
            self.worker = workerinput.get("workerid", "main")
        elif self.resume is not None and self.resume.run.get("run_id"):
            self.run_id = str(self.resume.run["run_id"])  # its in-flight folder, if it crashed
            self.worker = "main"
        else:
            self.run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
            self.worker = "main"
        self.inflight_dir = Path(config.rootpath) / ".conformance" / "inflight" / self.run_id
        self.inflight: Inflight = Inflight(self.inflight_dir / f"{self.worker}.json")
        self.writer: ResultsWriter | None = None
        self.written: set[str] = set(self.resume.done) if self.resume else set()
        self.xpassed: list[str] = []
        self.exit_status: dict[str, int | None] = {}  # xdist worker id -> how its process ended
        self.sigterm_before: Any = None  # the SIGTERM handler to put back (see _on_sigterm)

    # -- results (controller / lone process only) --------------------------------------------
    def open_results(self) -> None:
        from conformance.store.results import ResultsWriter, run_record

        path = self.config.getoption("--results")
        if not path or self.is_worker:
            return
        import sys

        record = run_record(backend=self.backend, seed=self.settings.seed,
                            checks=self.checks, ops=self.ops,
                            max_examples=self.settings.max_examples,
                            argv=list(getattr(self.config.invocation_params, "args", sys.argv)),
                            run_id=self.run_id)
        if self.resume is not None:
            from conformance.store.results import resume_mismatch
            from opdb.errors import InputError

            why = resume_mismatch(self.resume.run, record)
            if why:
                err = InputError(f"--resume: cannot continue this file: {why} (use "
                                 f"--overwrite or another results file)", file=str(path))
                raise pytest.UsageError(f"conformance: {err}")
            self.settle_orphans(Path(path))
            # one run record per file: the resumed run appends verdicts only
            self.writer = ResultsWriter(path, truncate=False)
            return
        self.writer = ResultsWriter(path)
        self.writer.write(record)

    def record(self, obj: dict[str, Any]) -> bool:
        """Write one verdict record, once per (overload, check); False if it was already."""
        key = f"{obj.get('overload')}::{obj.get('check')}"
        if key in self.written:
            return False
        self.written.add(key)
        if self.writer is not None:
            self.writer.write(obj)
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Controller / lone process: write the record the item produced, or a crash/timeout.

        Runs first so that a dead worker's report carries the verdict settled here (a crash the
        replay pins on CPU is a ``cpu_crashed`` skip) when the progress display counts it."""
        state = self
        if state.is_worker:
            return
        for key, value in report.user_properties:
            if key == _PROP:
                rec = json.loads(str(value))
                if (rec.get("verdict") == "pass" and rec.get("expected")
                        and report.nodeid not in state.xpassed):
                    state.xpassed.append(report.nodeid)
                state.record(rec)  # once: the teardown report carries the properties again
                return
        if report.when == "???" and report.failed:  # xdist: the worker died running this item
            worker = getattr(getattr(report, "node", None), "gateway", None)
            wid = getattr(worker, "id", None)
            marker = None
            if wid:
                from conformance.core.inflight import Inflight

                marker = Inflight.read(state.inflight_dir / f"{wid}.json")
            if not marker or marker.get("nodeid") != report.nodeid:
                overload, _, check = report.nodeid.partition("::")
                marker = {"overload": overload, "check": check, "nodeid": report.nodeid}
            if marker.get("state") == "interrupted":
                return  # stopped from outside: not a verdict; --resume runs it again
            if marker.get("state") == DEVICE_LOST and isinstance(marker.get("record"), dict):
                # the worker judged it and ended on purpose (its device was unusable)
                rec = dict(marker["record"])
                rec["message"] = f"{rec['message']}; the worker {wid} ended and was replaced"
                report.user_properties.append((_PROP, json.dumps(rec)))
                state.record(rec)
                return
            rec = _dead_record(state, marker, who=f"xdist worker {wid or '?'}",
                               code=state.exit_status.get(str(wid)), ended="worker ended")
            report.user_properties.append((_PROP, json.dumps(rec)))
            state.record(rec)

    def crash_record(self, marker: dict[str, Any], message: str) -> dict[str, Any]:
        """The record of a process that died in a backend call: a ``crash``, unless its call
        replayed alone in fresh processes kills only CPU (then ``skip``/``cpu_crashed``)."""
        rec = _lost_record(self, marker, "crash", message)
        if not self.config.getoption("--no-crash-replay") and marker.get("call"):
            # before blaming the backend: does its call kill a fresh process alone?
            from conformance.pytest_plugin.crashes import attribute, judge

            replayed = attribute(marker, device=self.backend.device, cwd=self.config.rootpath)
            rec["verdict"], rec["category"], tail = judge(replayed)
            msg, sep, running = rec["message"].partition("; it was running")
            rec["message"] = msg + tail + sep + running
            rec["replay"] = replayed
            # explained by the final message: the replay's "backend crashed (SIGABRT)" names
            # the signal even where the worker's own exit status was not known yet
            rec["expected"] = self.expectations.reason_for(
                f"{rec['overload']}::{rec['check']}", None, rec["message"])
            if rec["verdict"] != "crash":
                rec["repro"] = None
        return rec

    def retry_recorded(self, marker: dict[str, Any], rec: dict[str, Any],
                       retry: _Retry | None = None) -> dict[str, Any]:
        """CPU (the oracle) died or hung on a schema-drawn example of this item (``rec`` is
        its ``cpu_crashed``/``cpu_timeout`` skip) before its recorded calls were tried: search
        those alone in a fresh process (:func:`conformance.crashes.retry_recorded`), or by
        ``retry`` (a forked child of the intact process whose child died: :func:`_forked`). Its verdict
        replaces the skip when it checked an example (the message says what killed CPU first);
        a backend that dies on a recorded call is a crash as any other (replayed before it is
        blamed); otherwise the skip stays, saying what the retry found."""
        from conformance.checks.registry import CHECKS
        from conformance.core.signature import OpSignature
        from conformance.engine.search import Item, has_corpus
        from conformance.inputs.corpus import CORPUS
        from conformance.pytest_plugin.crashes import retry_recorded

        name, check = str(marker.get("overload")), str(marker.get("check"))
        if (marker.get("source") == CORPUS or not marker.get("call") or self.retry_item
                or self.config.getoption("--no-crash-replay") or name not in self._db
                or check not in CHECKS):
            return rec
        hints = self.hints.for_op(name)
        if not has_corpus(Item(OpSignature.of(self._db[name]), CHECKS[check]), self.settings,
                          hints):
            return rec
        what = "hung" if rec.get("category") == "cpu_timeout" else "crashed the process"
        first = f"CPU (the oracle) {what} on a schema-drawn example ({marker.get('call')})"
        if retry is not None:
            got, dead, outcome = retry()
        else:
            got, dead, outcome = retry_recorded(
                self._retry_options(name, check), f"{name}::{check}",
                timeout=self.timeout or 120.0, cwd=self.config.invocation_params.dir)
        took = float(rec.get("duration_s") or 0)
        if got is not None and (got.get("verdict") in ("pass", "fail", "unsupported", "crash",
                                                         "timeout")
                                or int(got.get("examples") or 0) > 0):
            got["message"] = f"{got['message']}; on recorded calls alone, after {first}"
            got["duration_s"] = round(took + float(got.get("duration_s") or 0), 3)
            return got
        if dead is not None and dead.get("side") not in (None, "cpu"):
            return self.crash_record(dead, f"the process retrying it on recorded calls alone "
                                           f"died ({outcome}), after {first}")
        if got is not None:
            found = f"{got.get('verdict')}/{got.get('category')}: {got.get('message')}"
        else:
            found = f"its process {outcome}" + (f" running {dead['call']} on cpu (the oracle)"
                                                  if dead and dead.get("call") else "")
        rec["message"] = f"{rec['message']}; retried on recorded calls alone: {found}"
        return rec

    def _retry_options(self, name: str, check: str) -> list[str]:
        """The plugin options of this run, for a retry of ``name::check`` in another process."""
        opt = self.config.getoption
        out = ["--backend", str(opt("--backend")), "--ops", re.escape(name), "--checks", check,
               "--conformance-seed", str(self.settings.seed),
               "--max-examples", str(self.settings.max_examples),
               "--conformance-timeout", str(self.timeout),
               "--hypothesis-db", self.settings.database or "none"]
        for flag in ("--without", "--native-functions", "--expected-failures", "--hints",
                     "--tolerances", "--corpus"):
            if opt(flag) is not None:
                out += [flag, str(opt(flag))]
        return out

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Stale expected failures (xpass): each with the entry to delete."""
        if self.is_worker or not self.xpassed:
            return
        strict = self.config.getoption("--strict-expectations")
        tr = terminalreporter
        tr.section("expected failures that now pass (xpass)", sep="-",
                   red=strict, yellow=not strict)
        for nodeid in self.xpassed:
            entry = next((e for e in self.expectations.entries if e.matches(nodeid)), None)
            where = f"{entry.file}:{entry.line} ({entry.id})" if entry else "?"
            tr.line(f"{nodeid}: delete the entry at {where}")
        if not strict:
            tr.line("(--strict-expectations makes these errors)")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: a worker went down. Reap its process now: xdist replaces a crashed
        worker but waits for the old process only when the session ends, so every crash or
        timeout used to leave a zombie behind for the rest of the run."""
        gateway = getattr(node, "gateway", None)
        popen = getattr(getattr(gateway, "_io", None), "popen", None)
        if popen is None:
            return
        if not error:
            return  # a worker that finished normally: xdist waits for it at the end
        import subprocess

        try:
            try:
                code = popen.wait(timeout=10)
            except subprocess.TimeoutExpired:  # its channel broke but it lives on: end it
                popen.kill()
                code = popen.wait(timeout=10)
        except Exception:  # noqa: BLE001 - never let reaping break the controller's loop
            return
        self.exit_status[str(getattr(gateway, "id", "?"))] = code

    def settle_orphans(self, results: Path) -> None:
        """``--resume`` of a run whose process died: an item its in-flight markers show running
        is replayed (CPU alone, backend alone); if a fresh process dies on it too, its verdict
        is recorded now instead of the resumed run dying on it again. (``conformance run -n 0``
        has usually done this already, when the run died.)"""
        if not self.inflight_dir.is_dir():
            return
        from conformance.pytest_plugin.crashes import settle_orphan

        capture = self.config.pluginmanager.getplugin("capturemanager")

        def say(text: str) -> None:
            import sys

            if capture is not None:
                with capture.global_and_fixture_disabled():
                    print(text, file=sys.stderr, flush=True)
            else:
                print(text, file=sys.stderr, flush=True)

        for marker in sorted(m for m in self.inflight_dir.glob("*.json")
                             if m.name != "orphans.json"):
            rec = settle_orphan(marker, results, cwd=self.config.rootpath, say=say,
                                expectations=self.expectations)
            if rec is not None:
                key = f"{rec['overload']}::{rec['check']}"
                self.written.add(key)
                self.skip_ids = self.skip_ids | {key}

    def cleanup(self) -> None:
        """A run that ended (completed, failed or interrupted) has no use for its in-flight
        markers; only a run whose process died keeps them (``--resume`` reads them)."""
        self.inflight.close()
        if self.is_worker:
            return
        import shutil

        shutil.rmtree(self.inflight_dir, ignore_errors=True)
        try:
            self.inflight_dir.parent.rmdir()  # .conformance/inflight, if no other run is there
        except OSError:
            pass

    # -- the op list --------------------------------------------------------------------------
    def db(self) -> Any:
        return self._db

    def selected(self) -> list[Any]:
        db = self.db()
        rx = self.ops_re
        out = []
        for ov in db.overloads:
            if rx is None or any(rx.fullmatch(s) for s in (ov.name, ov.base, ov.family)):
                out.append(ov)
        return out


def _check_results_path(config: pytest.Config) -> ResumeState | None:
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


def _state(config: pytest.Config) -> State | None:
    return getattr(config, "_conformance_state", None)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--backend", default=None):
        return
    state = State(config)
    config._conformance_state = state  # type: ignore[attr-defined]
    config.pluginmanager.register(state, _STATE)
    from conformance.pytest_plugin.inapplicable import NAME, NotApplicable

    config.pluginmanager.register(NotApplicable(state), NAME)
    state.open_results()
    _on_sigterm(state)


def _on_sigterm(state: State) -> None:
    """A run stopped from outside (``timeout``, a CI job's cancel, ``kill``) is interrupted, not
    crashed: the controller (or lone process) turns SIGTERM into Ctrl-C, so pytest finishes the
    session, the results stay whole and the in-flight markers are removed; a worker marks its
    item ``interrupted`` and ends, so neither the controller nor ``--resume`` replays it as a
    crash (``timeout`` signals the whole process group). ``--resume`` reruns those items."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return  # someone else's handler (an embedding tool): theirs to say

    def worker(signum: int, frame: Any) -> None:
        if state.inflight.item:
            state.inflight.mark("interrupted")
        os._exit(128 + signum)

    def controller(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    state.sigterm_before = signal.signal(signal.SIGTERM, worker if state.is_worker else controller)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = _state(config)
    if state is None:
        return
    if state.writer is not None:
        state.writer.close()
    _Watchdog.stop()
    state.cleanup()
    if state.sigterm_before is not None:
        import signal

        signal.signal(signal.SIGTERM, state.sigterm_before)
    from conformance.core import rundb

    rundb.use(None)  # a later in-process session (pytester, -n 0 reruns) loads its own


def _how_it_ended(code: int | None) -> str:
    """``, killed by SIGSEGV`` / ``, exit status 70`` for a worker's return code."""
    if code is None:
        return ""
    if code < 0:
        import signal

        try:
            return f", killed by {signal.Signals(-code).name}"
        except ValueError:
            return f", killed by signal {-code}"
    return f", exit status {code}"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist controller: one call per worker started
    state = _state(node.config)
    if state is not None:
        node.workerinput["conformance_run_id"] = state.run_id
        node.workerinput["conformance_done"] = sorted(state.skip_ids)


class ConformanceFailure(Exception):
    """Raised by an item whose verdict is ``fail``: message and repro, no traceback."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        super().__init__(verdict.message)


class ConformanceItem(pytest.Item):
    """One (overload, check): runs the engine and reports its verdict."""

    def __init__(self, *, item: Item, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.item = item

    def runtest(self) -> None:
        from conformance.engine.search import run_check
        from conformance.repro.snippet import snippet

        state = _state(self.config)
        assert state is not None
        backend = state.backend
        test_id = self.item.id
        # a whole-item entry makes every failure expected; otherwise each distinct failure is
        # matched to the entries' category/message fingerprints by the engine
        expected = state.expectations.matcher(test_id)
        hints = state.hints.for_op(self.item.sig.name)

        def run(settings: EngineSettings = state.settings) -> Verdict:
            return run_check(self.item, backend, settings=settings, hints=hints,
                             tolerance_fn=state.tolerances,
                             repro_fn=lambda call: snippet(call, backend),
                             inflight=state.inflight, expected=expected)

        def recorded() -> Verdict:  # the item on its recorded calls alone (a retry)
            return run(dataclasses.replace(state.settings, recorded_only=True))

        state.inflight.start(self.nodeid, self.item.sig.name, self.item.check.name)
        if hints.cpu_crashes and self.item.check.forks and backend.fork_safe \
                and hasattr(os, "fork"):
            # a device the child left unusable dies with the child: nothing to end here
            try:
                rec = _forked(state, self.nodeid, run, recorded)
            finally:
                state.inflight.finish()
            from conformance.core.verdicts import Verdict

            verdict = Verdict.from_json(rec)
        else:
            watchdog = _Watchdog.arm(state, self, state.timeout) if state.timeout > 0 else None
            try:
                verdict = run()
                if verdict.category == DEVICE_LOST:
                    self._end_with_the_device(state, verdict)
            finally:
                if watchdog is not None:
                    watchdog.cancel()
                state.inflight.finish()
            rec = _json_safe(verdict.to_json())
        self.user_properties.append((_PROP, json.dumps(rec)))
        if verdict.verdict in ("fail", "crash", "timeout"):
            if verdict.expected and not isinstance(expected, str):  # a fingerprint entry matched
                pytest.xfail(verdict.expected)
            raise ConformanceFailure(verdict)
        if verdict.verdict in ("skip", "unsupported"):
            pytest.skip(f"{verdict.verdict} ({verdict.category}): {verdict.message}")

    def _end_with_the_device(self, state: State, verdict: Any) -> None:
        """The backend's device is unusable (a sticky error): nothing more may run in this
        process. An xdist worker leaves its verdict in its about-to-run marker and ends; the
        controller records it and xdist starts a fresh worker for the rest. A lone process
        records it and stops the session (``--resume`` continues in a fresh one)."""
        import sys

        if state.is_worker:
            state.inflight.item["record"] = _json_safe(verdict.to_json())
            state.inflight.mark(DEVICE_LOST)
            sys.stderr.write(f"\nconformance: {self.nodeid}: {verdict.message}; ending "
                             f"worker process {os.getpid()}\n")
            sys.stderr.flush()
            os._exit(71)
        self.session.shouldstop = (f"{self.nodeid} left {state.backend.device} unusable (a sticky "
                                   f"device error); the rest needs a fresh process: run again "
                                   f"with --resume, or with -n 1 or more, which replaces it")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        if isinstance(excinfo.value, ConformanceFailure):
            v = excinfo.value.verdict
            text = f"[{v.category}] {v.message}\nexamples checked: {v.examples}"
            if v.repro:
                text += "\n\nrepro:\n" + v.repro
            return text
        if isinstance(excinfo.value, pytest.xfail.Exception):
            # runtest's own pytest.xfail (a failure an entry expects): its reason is the whole
            # story; pytest's traceback repr parsed the source of every frame, ~0.3-1.5 s each
            return f"expected failure: {excinfo.value.msg}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # A domain that is not the node id's tail keeps pytest from showing dots as '::'.
        state = _state(self.config)
        return self.path, None, f"{self.name} [{state.backend.name if state else '?'}]"


def _json_safe(obj: dict[str, Any]) -> dict[str, Any]:
    from conformance.store.results import finite

    return finite(obj)


_WARMED: list[bool] = []


def _warm_for_fork(state: State) -> None:
    """Load, once in the parent, what each forked child would otherwise load for itself on its
    first example and lose with it (measured: ~0.6 CPU-s a child): the corpus of recorded calls
    and sympy, which torch imports on first use of its type-promotion helpers."""
    if _WARMED:
        return
    import sympy  # noqa: F401 - torch._prims_common imports it on first use

    from conformance.inputs.corpus import for_settings

    for_settings(state.settings.corpus)
    _WARMED.append(True)


def _forked(state: State, nodeid: str, run: Callable[[], Verdict],
            recorded: Callable[[], Verdict]) -> dict[str, Any]:
    """Run an item in a forked child and return its verdict record: one whose overload's CPU
    kernel is known to kill the process (``cpu_crashes`` in the hints) costs the child, not
    this test worker (~4 CPU-s for xdist to start and collect a new one). A child that dies,
    or runs past the timeout (then killed), gets the record the xdist controller makes of a
    dead worker, from the about-to-run marker the child wrote; when CPU (the oracle) killed
    it, the item's recorded calls alone are searched in another forked child (``recorded``:
    the same item on recorded calls only), this process being intact, instead of in a fresh
    pytest process (~6 CPU-s each: an all-checks run made 45 such retries)."""
    rec, code, hung = _fork_once(state, nodeid, run)
    if rec is not None:
        return rec
    from conformance.core.inflight import Inflight

    marker = Inflight.read(state.inflight.path) if state.inflight.path else None
    if not marker or marker.get("nodeid") != nodeid:
        overload, _, check = nodeid.partition("::")
        marker = {"overload": overload, "check": check, "nodeid": nodeid}
    where = f"xdist worker {state.worker}" if state.is_worker else "the test process"

    def retry() -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
        from conformance.pytest_plugin.crashes import exit_outcome

        state.inflight.start(nodeid, marker["overload"], marker["check"])
        try:
            got, code, hung = _fork_once(state, nodeid, recorded)
        finally:
            state.inflight.finish()
        dead = None
        if got is None and state.inflight.path:
            dead = Inflight.read(state.inflight.path)
            if not dead or dead.get("nodeid") != nodeid or not dead.get("call"):
                dead = None
        return got, dead, exit_outcome(None if hung else code)

    return _json_safe(_dead_record(state, marker, who=f"a forked child of {where}",
                                   code=code if code else None, ended="process ended",
                                   hung=hung, retry=retry))


def _fork_once(state: State, nodeid: str, run: Callable[[], Verdict]
               ) -> tuple[dict[str, Any] | None, int, bool]:
    """Run ``run`` in a forked child: ``(record, exit code, hung)``, the record ``None`` when
    the child died or hung (then killed). The child computes on one thread (OpenMP's pool does
    not survive a fork: a child's parallel region would hang)."""
    import gc
    import select
    import signal
    import sys

    _warm_for_fork(state)
    r, w = os.pipe()
    # the parent's objects stay out of the child's garbage collections (Hypothesis collects on
    # its first test in a process: 0.6 CPU-s over the whole inherited heap, every page copied)
    gc.freeze()
    pid = os.fork()
    if pid != 0:
        gc.unfreeze()
    if pid == 0:  # the child: run the item, hand back its record, never return into pytest
        code = 0
        try:
            os.close(r)
            import torch

            torch.set_num_threads(1)
            try:
                out: dict[str, Any] = {"record": _json_safe(run().to_json())}
            except Exception:  # noqa: BLE001 - a harness error: the parent raises it
                import traceback

                out = {"error": traceback.format_exc()}
            data = memoryview(json.dumps(out).encode())
            while data:
                data = data[os.write(w, data):]
        except BaseException:  # noqa: BLE001 - whatever happens, the child must not go on
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    chunks: list[bytes] = []
    hung = False
    deadline = time.monotonic() + state.timeout if state.timeout > 0 else None
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:  # past the per-item timeout: end the child, not this worker
                hung = True
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM made one): the child goes too
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(r)
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if not hung and chunks:
        out = json.loads(b"".join(chunks))
        if "error" in out:
            raise RuntimeError(f"{nodeid} raised in its forked child:\n{out['error']}")
        return dict(out["record"]), code, hung
    return None, code, hung


class _Watchdog:
    """Ends the process if an item runs past the timeout, leaving a ``timeout`` verdict behind.

    A thread, not a signal: a backend hung in native code never returns to the interpreter's
    signal handler, but this thread still runs while the GIL is released. The marker goes to the
    about-to-run file (the xdist controller reads it when the worker dies) and, in a lone
    process, straight to the results file.

    One per process, armed for each item and disarmed after it: a ``threading.Timer`` and a
    ``faulthandler`` deadline started and cancelled per item cost 3.7 ms of wall time an item
    (thread start and join; measured, 1.2 ms even without the Timer), ~45 s of an all-checks
    run on two workers. Here arming notifies one waiting thread (microseconds), and faulthandler
    is re-armed rather than cancelled (its re-arm is cheap, its cancel waits for its thread).
    """

    _instance: _Watchdog | None = None
    #: where faulthandler's deadline is parked between items (it is cancelled at unconfigure)
    _PARKED = 7 * 24 * 3600.0

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._deadline: float | None = None
        self._armed: tuple[State, ConformanceItem, float] | None = None
        self._stderr: Any = None
        threading.Thread(target=self._loop, name="conformance-watchdog", daemon=True).start()

    @classmethod
    def arm(cls, state: State, node: ConformanceItem, seconds: float) -> _Watchdog:
        import faulthandler
        import sys

        if cls._instance is None:
            cls._instance = cls()
        dog = cls._instance
        with dog._cv:
            dog._armed = (state, node, seconds)
            dog._deadline = time.monotonic() + seconds
            dog._cv.notify()
        # A kernel spinning in C while holding the GIL starves the thread above; faulthandler's
        # watchdog is a C thread that needs no GIL: it dumps the stacks and _exit()s. The
        # controller then sees how long the item ran (the about-to-run file) and says timeout.
        grace = min(15.0, max(2.0, seconds / 4))
        dog._stderr = sys.stderr  # parked on the same file (a later one may have no fileno)
        faulthandler.dump_traceback_later(seconds + grace, exit=True, file=dog._stderr)
        return dog

    def cancel(self) -> None:
        import faulthandler

        self._disarm()
        faulthandler.dump_traceback_later(self._PARKED, exit=True, file=self._stderr)

    def _disarm(self) -> None:
        with self._cv:
            self._deadline = self._armed = None
            self._cv.notify()

    @classmethod
    def stop(cls) -> None:
        """At the end of the session: faulthandler's deadline goes (the thread only waits)."""
        import faulthandler

        if cls._instance is not None:
            cls._instance._disarm()
            faulthandler.cancel_dump_traceback_later()

    def _loop(self) -> None:
        with self._cv:
            while True:
                if self._deadline is None:
                    self._cv.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                assert self._armed is not None
                self.fire(*self._armed)

    @staticmethod
    def fire(state: State, node: ConformanceItem, seconds: float) -> None:
        state.inflight.mark("timeout")
        rec = _lost_record(state, state.inflight.item, "timeout",
                           f"ran past the {seconds:g}s per-item timeout; process ended")
        if state.inflight.item.get("side") == "cpu":
            rec["verdict"], rec["category"] = "skip", "cpu_timeout"
        state.record(rec)
        import sys

        sys.stderr.write(f"\nconformance: {node.nodeid} timed out after "
                         f"{seconds:g}s; ending process {os.getpid()}\n")
        sys.stderr.flush()
        os._exit(70)


def _dead_record(state: State, marker: dict[str, Any], *, who: str, code: int | None,
                 ended: str, hung: bool = False, retry: _Retry | None = None) -> dict[str, Any]:
    """The record of an item whose process died (``who``: ``xdist worker gw0``, ...; ``code``
    its exit status) from its about-to-run ``marker``: a ``timeout`` if it was marked or ran
    past the timeout (``hung``: its parent saw it do so); the oracle's death or hang a
    ``skip`` (``cpu_crashed``/``cpu_timeout``) unless its recorded calls alone give a verdict
    (:meth:`State.retry_recorded`, in ``retry`` where given); else a ``crash`` once the call
    is replayed alone in fresh processes (:meth:`State.crash_record`)."""
    started = marker.get("started")
    hung = hung or bool(state.timeout and started and time.time() - started >= state.timeout)
    if marker.get("state") == "timeout" or hung:
        rec = _lost_record(state, marker, "timeout",
                           f"ran past the {state.timeout:g}s per-item timeout; {ended}")
        if marker.get("side") == "cpu":  # the oracle hung: not a verdict on the backend
            rec["verdict"], rec["category"] = "skip", "cpu_timeout"
            rec = state.retry_recorded(marker, rec, retry)
        return rec
    if marker.get("side") == "cpu":  # the oracle died: not a verdict on the backend
        rec = _lost_record(state, marker, "skip", f"CPU (the oracle) crashed the process ({who})")
        rec["category"] = "cpu_crashed"
        return state.retry_recorded(marker, rec, retry)
    return state.crash_record(marker, f"the process running it died ({who}{_how_it_ended(code)})")


def _lost_record(state: State, marker: dict[str, Any] | None, verdict: str, message: str
                 ) -> dict[str, Any]:
    import torch

    from conformance.core.verdicts import Verdict

    marker = marker or {}
    started = marker.get("started")
    call = marker.get("call")
    if call:
        side = marker.get("side")
        where = " on cpu (the oracle)" if side == "cpu" else (f" on {side}" if side else "")
        message += f"; it was running {call}{where}"
    rec = Verdict(
        overload=marker.get("overload", "?"), check=marker.get("check", "?"),
        backend=state.backend.name, verdict=verdict, category=None, message=message,
        examples=0, duration_s=round(time.time() - started, 3) if started else 0.0,
        seed=state.settings.seed, torch_version=torch.__version__, repro=marker.get("repro"),
        expected=state.expectations.reason_for(f"{marker.get('overload')}::{marker.get('check')}",
                                               None, message),
    )
    return rec.to_json()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    state = _state(config)
    if state is None:
        return
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine.search import Item
    from conformance.store.shards import assign

    pairs = [(ov, check) for ov in state.selected() for check in state.checks
             if state.retry_item in (None, f"{ov.name}::{check}")]
    ids = [f"{ov.name}::{check}" for ov, check in pairs]
    shard_of = assign(ids, state.shard[1], state.durations) if state.shard else None
    new: list[pytest.Item] = []
    sigs: dict[str, OpSignature] = {}  # one per overload, built only for the items kept
    for index, (ov, check) in enumerate(pairs):
        # the partition is dealt over every selected item, before --resume takes out the done
        # ones, so a resumed shard is the same shard
        if shard_of is not None and state.shard and shard_of[index] != state.shard[0]:
            continue
        if ids[index] in state.skip_ids:
            continue
        sig = sigs.get(ov.name) or sigs.setdefault(ov.name, OpSignature.of(ov))
        item = Item(sig, CHECKS[check])
        node = ConformanceItem.from_parent(session, name=item.id, nodeid=item.id, item=item)
        whole = state.expectations.for_item(item.id)  # fingerprint entries: see runtest
        if whole:
            node.add_marker(pytest.mark.xfail(reason=whole.reason,
                                              strict=state.config.getoption(
                                                  "--strict-expectations")))
        new.append(node)
    # A --backend session is a conformance run: tests collected from files (e.g. the project's
    # testpaths) are deselected rather than mixed in.
    others = [i for i in items if not isinstance(i, ConformanceItem)]
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = new
    universe = [f"{ov.name}::{c}" for ov in state.db().overloads for c in CHECKS]
    for exp in state.expectations.unmatched(universe):
        warnings.warn(pytest.PytestWarning(
            f"{exp.file}:{exp.line}: expected failure {exp.id!r} matches no overload/check"),
            stacklevel=1)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = _state(config)
    if state is None:
        return None
    b = state.backend
    return [f"conformance: backend={b.name} device={b.device} dispatch_key={b.dispatch_key} "
            f"checks={','.join(state.checks)} max_examples={state.settings.max_examples} "
            f"seed={state.settings.seed} results={config.getoption('--results')}"]
