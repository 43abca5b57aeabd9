"""The session's state (:class:`State`, one per process of an active plugin): the run's options
resolved, the results file (written by the controller or the lone process only), ``--resume``,
expected failures, and what to record when an item's process died: the crash replay, the retry
on recorded calls, the orphans a dead run left.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.core.inflight import ITEM_CEILING
from conformance.pytest_plugin.options import (
    check_results_path,
    hypothesis_database,
    max_examples,
    ops_pattern,
    selected_checks,
)
from conformance.pytest_plugin.records import VERDICT_PROP, Retry, dead_record, lost_record
from opdb.outcomes import DEVICE_LOST

if TYPE_CHECKING:
    from conformance.core.backends import Backend
    from conformance.engine import EngineSettings
    from conformance.pytest_plugin.forkserver import ForkServer
    from conformance.store.expectations import Expectations
    from conformance.store.results import ResultsWriter, ResumeState
    from opdb.opdata import Hints, Tolerances


class State:
    """Per-session state of an active plugin."""

    def __init__(self, config: pytest.Config) -> None:
        from opdb.errors import InputError

        opt = config.getoption
        self.config = config
        self.is_worker = hasattr(config, "workerinput")
        try:
            self._select(config)
            self._load_done(config)
            examples = max_examples(opt("--max-examples"))
            self._load_op_data(config)
        except InputError as exc:
            raise pytest.UsageError(f"conformance: {exc}") from None
        self._configure_hypothesis(config, examples)
        self.retry_item: str | None = opt("--recorded-retry")
        self.timeout = float(opt("--conformance-timeout") or 0)
        self._name_the_run(config)
        self.writer: ResultsWriter | None = None
        self.written: set[str] = set(self.resume.done) if self.resume else set()
        self.xpassed: list[str] = []
        self.exit_status: dict[str, int | None] = {}  # xdist worker id -> how its process ended
        self.sigterm_before: Any = None  # the SIGTERM handler to put back (see hooks._on_sigterm)
        #: torch's intra-op thread count to put back at unconfigure (see hooks.one_intra_op_thread)
        self.torch_threads_before: int | None = None
        #: the collector's thresholds to put back (see hooks.fewer_full_collections)
        self.gc_thresholds_before: tuple[int, int, int] | None = None
        #: the process that forks isolated items which backpropagate (items.fork_server), and
        #: whether this process has decided on one (at its first item, before any backward)
        self.fork_server: ForkServer | None = None
        self.fork_server_decided = False

    # -- set-up, in this order (the first InputError is the one the user sees) -------------------
    def _select(self, config: pytest.Config) -> None:
        """What the run tests: the backend (``--backend``, ``--without``), ``--checks``,
        ``--ops`` and this process's ``--shard``."""
        from conformance.checks.registry import CHECKS, DEFAULT_CHECKS
        from conformance.core.backends import parse_without, resolve
        from opdb.errors import InputError
        from opdb.properties import parse_assumes

        opt = config.getoption
        without = parse_without(opt("--without")) if opt("--without") else None
        self.backend: Backend = resolve(opt("--backend"), without=without,
                                        assumes=parse_assumes(opt("--assume")),
                                        compile_backend=opt("--compile-backend"),
                                        shapes=opt("--shapes"))
        self.checks = selected_checks(opt("--checks"), CHECKS, DEFAULT_CHECKS)
        if "compile" in self.checks:  # after bring-up: a vendor module registers its codegen
            from conformance.core.compiled import missing_codegen

            problem = missing_codegen(self.backend.compile_backend, self.backend.device)
            if problem is not None:
                raise InputError(f"--compile-backend {self.backend.compile_backend}: {problem}")
        self.ops = opt("--ops")
        self.ops_re = ops_pattern(self.ops)
        from conformance.store.shards import load_durations, parse_shard

        self.shard: tuple[int, int] | None = None
        self.durations: dict[str, float] | None = None
        if opt("--shard"):
            self.shard = parse_shard(opt("--shard"))
            if opt("--shard-durations"):  # every worker deals the same partition
                self.durations = load_durations(opt("--shard-durations"))

    def _load_done(self, config: pytest.Config) -> None:
        """What ``--resume`` finds done: the results file's verdicts (controller) or their test
        ids (worker)."""
        self.resume: ResumeState | None = None
        # test ids already on disk (--resume): the controller reads them, workers are told
        self.skip_ids: frozenset[str] = frozenset()
        if not self.is_worker:
            self.resume = check_results_path(config)
            self.skip_ids = frozenset(self.resume.done) if self.resume else frozenset()
        else:
            self.skip_ids = frozenset(getattr(config, "workerinput").get(  # noqa: B009
                "conformance_done", ()))

    def _load_op_data(self, config: pytest.Config) -> None:
        """The op database of the run and the per-op data checked against it (hints,
        tolerances, expected failures), then the corpus of recorded calls."""
        import opdb
        from conformance.store.expectations import expected_failures_path, load_for_backend
        from opdb.errors import InputError
        from opdb.opdata import load_hints, load_tolerances

        opt = config.getoption
        # per-op data is validated against the op database the run uses
        self._db = opdb.load(opt("--native-functions"))
        from conformance.core import rundb

        rundb.use(self._db)  # checks' applies/grad_args ask the run's database
        self.hints: Hints = load_hints(opt("--hints"), db=self._db)
        self.tolerances: Tolerances = load_tolerances(opt("--tolerances"), db=self._db)
        xf = opt("--expected-failures") or expected_failures_path(self.backend.name)
        if opt("--expected-failures") and not Path(xf).exists():
            raise InputError("--expected-failures: file not found", file=str(xf))
        self.expectations: Expectations = load_for_backend(xf)
        self._load_corpus(config)

    def _load_corpus(self, config: pytest.Config) -> None:
        corpus = config.getoption("--corpus")
        if corpus is not None and corpus != "off":
            from conformance.inputs.corpus import load as load_corpus

            load_corpus(corpus)  # a bad file is an InputError now, not in every item
        elif corpus is None and (self.is_worker
                                 or not getattr(config.option, "numprocesses", None)):
            from conformance.inputs.corpus import load as load_corpus

            load_corpus()  # the packaged one, in a process that runs items: set-up once,
            # not in whichever item comes first (an xdist controller runs none)

    def _configure_hypothesis(self, config: pytest.Config, examples: int | None) -> None:
        """Hypothesis's folders and the engine's settings (examples, seed, database, corpus)."""
        from conformance.engine import EngineSettings

        opt = config.getoption
        # Hypothesis's own caches (e.g. its constants cache) go under .conformance/ too, not
        # into a .hypothesis/ folder in whatever directory the user ran from.
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(str(Path(config.rootpath) / ".conformance" / "hypothesis-home"))
        db = hypothesis_database(config)
        self.settings: EngineSettings = EngineSettings(
            max_examples=examples or EngineSettings().max_examples,
            seed=opt("--conformance-seed"), database=db,
            corpus=opt("--corpus"), corpus_mix=bool(opt("--corpus-mix")),
            recorded_only=bool(opt("--recorded-retry")))

    def _name_the_run(self, config: pytest.Config) -> None:
        """The run's id (a worker is told it; a resumed run keeps its file's), this process's
        name in it and its about-to-run marker."""
        from conformance.core.inflight import Inflight

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
                            run_id=self.run_id, probed=self.undeclared_properties())
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

    def undeclared_properties(self) -> dict[str, str]:
        """What the device shows of the declarable properties without declaring them (one probe
        call each, :mod:`conformance.core.probes`), said on stderr with the flag to declare
        them; a declared property the probe does not see is said too (it is still honoured)."""
        import sys

        from conformance.core.probes import probe

        shown = probe(self.backend)
        for name, evidence in shown.items():
            if name not in self.backend.assumes:
                sys.stderr.write(f"conformance: backend {self.backend.name!r} seems to have "
                                 f"the property {name!r} ({evidence}); if it does so on "
                                 f"purpose, declare it: --assume {name}\n")
        for name in sorted(self.backend.assumes - set(shown)):
            sys.stderr.write(f"conformance: backend {self.backend.name!r} declares {name!r}, "
                             f"which its probe did not show; the comparison honours it\n")
        return {k: v for k, v in shown.items() if k not in self.backend.assumes}

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
            if key == VERDICT_PROP:
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
                report.user_properties.append((VERDICT_PROP, json.dumps(rec)))
                state.record(rec)
                return
            rec = dead_record(state, marker, who=f"xdist worker {wid or '?'}",
                              code=state.exit_status.get(str(wid)), ended="worker ended")
            report.user_properties.append((VERDICT_PROP, json.dumps(rec)))
            state.record(rec)

    def crash_record(self, marker: dict[str, Any], message: str) -> dict[str, Any]:
        """The record of a process that died in a backend call: a ``crash``, unless its call
        replayed alone in fresh processes kills CPU (then ``skip``/``cpu_crashed``) or is an
        ATen composite reading host memory on a backend whose memory is not
        (``unsupported``/``host_composite``); the top frames of the backend's crash are kept
        (``frames``, ``frames_by``)."""
        rec = lost_record(self, marker, "crash", message)
        if not self.config.getoption("--no-crash-replay") and marker.get("call"):
            # before blaming the backend: does its call kill a fresh process alone?
            from conformance.pytest_plugin.crashes import (
                HOST_COMPOSITE_VERDICT,
                attribute,
                host_composite,
                judge,
            )

            replayed, where = attribute(marker, device=self.backend.device,
                                        cwd=self.config.rootpath)
            rec["verdict"], rec["category"], tail = judge(
                replayed, composite=host_composite(rec["overload"],
                                                   host_memory=self.backend.host_memory),
                cpu_crashes=self.hints.for_op(rec["overload"]).cpu_crashes)
            msg, sep, running = rec["message"].partition("; it was running")
            rec["message"] = msg + tail + sep + running
            rec["replay"] = replayed
            rec.update(where)  # the top frames of the backend's crash
            if rec["verdict"] == HOST_COMPOSITE_VERDICT:
                rec["missing_op"] = rec["overload"]  # the kernel the backend needs
            # explained by the final message: the replay's "backend crashed (SIGABRT)" names
            # the signal even where the worker's own exit status was not known yet
            rec["expected"] = self.expectations.reason_for(
                f"{rec['overload']}::{rec['check']}", None, rec["message"])
            if rec["verdict"] not in ("crash", HOST_COMPOSITE_VERDICT):
                rec["repro"] = None
        return rec

    def retry_recorded(self, marker: dict[str, Any], rec: dict[str, Any],
                       retry: Retry | None = None) -> dict[str, Any]:
        """CPU (the oracle) died or hung on a schema-drawn example of this item (``rec`` is
        its ``cpu_crashed``/``cpu_timeout`` skip) before its recorded calls were tried: search
        those alone in a fresh process (:func:`conformance.pytest_plugin.crashes.retry_recorded`),
        or by ``retry`` (a forked child of the intact process whose child died:
        :func:`conformance.pytest_plugin.isolation.forked`). Its verdict replaces the skip when
        it checked an example (the message says what killed CPU first); a backend that dies on a
        recorded call is a crash as any other (replayed before it is blamed); otherwise the skip
        stays, saying what the retry found."""
        from conformance.checks.registry import CHECKS
        from conformance.core.signature import OpSignature
        from conformance.engine import Item, has_corpus
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
                # its own watchdog ends a hung call; this bounds the item as a whole
                timeout=(self.timeout or 120.0) * ITEM_CEILING,
                cwd=self.config.invocation_params.dir)
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
        for flag in ("--without", "--assume", "--compile-backend", "--shapes",
                     "--native-functions",
                     "--expected-failures",
                     "--hints", "--tolerances", "--corpus"):
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
        if self.fork_server is not None:
            self.fork_server.close()
            self.fork_server = None
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


def attach(config: pytest.Config, state: State) -> None:
    """Make ``state`` the session's (what :func:`state_of` returns)."""
    config._conformance_state = state  # type: ignore[attr-defined]


def state_of(config: pytest.Config) -> State | None:
    """The session's state; ``None`` when the plugin is inactive (no ``--backend``)."""
    return getattr(config, "_conformance_state", None)
