"""The session's test items: one :class:`ConformanceItem` per (overload, check), id
``add.Tensor::promotion``, collected by :func:`collect` in place of the files' tests. An item runs
the engine in this process under the watchdog, or in a forked child when its CPU kernel is known
to kill the process, and reports its verdict record on the report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.forkserver import ForkServer
from conformance.pytest_plugin.isolation import direct, forked, served, warm_for_fork
from conformance.pytest_plugin.records import VERDICT_PROP, json_safe
from conformance.pytest_plugin.session import state_of
from conformance.pytest_plugin.watchdog import Watchdog
from opdb.outcomes import DEVICE_LOST

if TYPE_CHECKING:
    from conformance.core.verdicts import Verdict
    from conformance.engine import Item
    from conformance.pytest_plugin.session import State


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

    def verdict(self, state: State, expected: Any, recorded_only: bool = False) -> Verdict:
        """Run the engine on this item (on its recorded calls alone where ``recorded_only``: a
        retry after CPU killed a child); ``expected`` is its expected-failure matcher."""
        from conformance.engine import run_check
        from conformance.repro.snippet import snippet

        settings = state.settings
        if recorded_only:
            settings = dataclasses.replace(settings, recorded_only=True)
        backend = state.backend
        return run_check(self.item, backend, settings=settings,
                         hints=state.hints.for_op(self.item.sig.name),
                         tolerance_fn=state.tolerances,
                         # picklable: the marker keeps the call and renders its repro only
                         # after a death (conformance.core.callcodec)
                         repro_fn=functools.partial(snippet, backend=backend),
                         inflight=state.inflight, expected=expected)

    def runtest(self) -> None:
        state = state_of(self.config)
        assert state is not None
        backend = state.backend
        # a whole-item entry makes every failure expected; otherwise each distinct failure is
        # matched to the entries' category/message fingerprints by the engine
        expected = state.expectations.matcher(self.item.id)
        hints = state.hints.for_op(self.item.sig.name)
        if not state.fork_server_decided:
            start_fork_server(state, self.session)

        def run() -> Verdict:
            return self.verdict(state, expected)

        state.inflight.start(self.nodeid, self.item.sig.name, self.item.check.name)
        launch = None
        if hints.cpu_crashes and backend.fork_safe and hasattr(os, "fork"):
            # an item that backpropagates forks from the server (forked before any backward)
            if self.item.check.forks:
                launch = direct(state, run, lambda: self.verdict(state, expected, recorded_only=True))
            elif state.fork_server is not None:
                launch = served(state.fork_server, self.nodeid)
        if launch is not None:
            # a device the child left unusable dies with the child: nothing to end here
            try:
                rec = forked(state, self.nodeid, launch)
            finally:
                state.inflight.finish()
            from conformance.core.verdicts import Verdict

            verdict = Verdict.from_json(rec)
        else:
            watchdog = Watchdog.arm(state, self, state.timeout) if state.timeout > 0 else None
            try:
                verdict = run()
                if verdict.category == DEVICE_LOST:
                    self._end_with_the_device(state, verdict)
            finally:
                if watchdog is not None:
                    watchdog.cancel()
                state.inflight.finish()
            rec = json_safe(verdict.to_json())
        self.user_properties.append((VERDICT_PROP, json.dumps(rec)))
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
            state.inflight.item["record"] = json_safe(verdict.to_json())
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
        state = state_of(self.config)
        return self.path, None, f"{self.name} [{state.backend.name if state else '?'}]"


def collect(state: State, session: pytest.Session, config: pytest.Config,
            items: list[pytest.Item]) -> None:
    """The run's items in place of ``items``: every selected (overload, check) of this shard
    that ``--resume`` has not done, ``xfail``-marked where an entry expects the whole item to
    fail; then a warning for each expected failure that names no overload/check."""
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import Item
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


def start_fork_server(state: State, session: pytest.Session) -> None:
    """At this process's first item, before any backward: fork the server that forks the items
    which backpropagate and must be isolated (:mod:`.forkserver`), where this session has one
    (an autograd item of a ``cpu_crashes`` overload) and the backend may be forked."""
    state.fork_server_decided = True
    if not (state.backend.fork_safe and hasattr(os, "fork")):
        return
    nodes = {node.nodeid: node for node in session.items
             if isinstance(node, ConformanceItem) and not node.item.check.forks
             and state.hints.for_op(node.item.sig.name).cpu_crashes}
    if not nodes:
        return

    def runner(nodeid: str, recorded_only: bool) -> Verdict:
        node = nodes[nodeid]
        state.inflight.reopen()  # the server's copy of the marker predates this item
        state.inflight.start(nodeid, node.item.sig.name, node.item.check.name)
        return node.verdict(state, state.expectations.matcher(node.item.id), recorded_only)

    warm_for_fork(state)
    state.fork_server = ForkServer.start(runner)
