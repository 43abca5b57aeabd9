"""Fork isolation: an item whose overload's CPU kernel is known to kill the process runs in a
forked child (:func:`forked`), so its death costs the child, not the test worker; a child that
dies or hangs leaves the record the xdist controller makes of a dead worker. The child is forked
from this process (:func:`direct`) or, for an item that backpropagates, by the fork server
(:func:`served`, :mod:`.forkserver`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.core.inflight import ITEM_CEILING
from conformance.pytest_plugin.forkserver import run_child
from conformance.pytest_plugin.records import dead_record, json_safe

if TYPE_CHECKING:
    from conformance.core.verdicts import Verdict
    from conformance.pytest_plugin.forkserver import ForkServer
    from conformance.pytest_plugin.session import State


_WARMED: list[bool] = []


def warm_for_fork(state: State) -> None:
    """Load, once in the parent (this process, or the fork server before it starts), what each
    forked child would otherwise load for itself on its first example and lose with it
    (measured: ~0.6 CPU-s a child): the corpus of recorded calls and sympy, which torch imports
    on first use of its type-promotion helpers."""
    if _WARMED:
        return
    import sympy  # noqa: F401 - torch._prims_common imports it on first use

    from conformance.inputs.corpus import for_settings

    for_settings(state.settings.corpus)
    _WARMED.append(True)


def forked(state: State, nodeid: str, launch: Launch) -> dict[str, Any]:
    """Run an item in a child ``launch`` starts (:func:`direct` or :func:`served`) and return its
    verdict record: one whose overload's CPU kernel is known to kill the process
    (``cpu_crashes`` in the hints) costs the child, not this test worker (~4 CPU-s for xdist to
    start and collect a new one). A child that dies, or hangs (a call past the per-call timeout,
    or the item past its ceiling; then killed), gets the record the xdist controller makes of a
    dead worker, from the about-to-run marker the child wrote; when CPU (the oracle) killed
    it, the item's recorded calls alone are searched in another child, this process being
    intact, instead of in a fresh pytest process (~6 CPU-s each: an all-checks run made 45 such
    retries)."""
    rec, code, hung = _fork_once(state, nodeid, launch, False)
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
            got, code, hung = _fork_once(state, nodeid, launch, True)
        finally:
            state.inflight.finish()
        dead = None
        if got is None and state.inflight.path:
            dead = Inflight.read(state.inflight.path)
            if not dead or dead.get("nodeid") != nodeid or not dead.get("call"):
                dead = None
        return got, dead, exit_outcome(None if hung else code)

    lost = {**marker, "timeout_of": "item"} if hung == "item" else marker
    return json_safe(dead_record(state, lost, who=f"a forked child of {where}",
                                 code=code if code else None, ended="process ended",
                                 hung=hung is not None, retry=retry))


def _due(state: State, nodeid: str, start: float) -> tuple[float, str] | None:
    """When the forked child running ``nodeid`` (since ``start``, wall time) is overdue, and why:
    its call in flight (the marker it writes, ``call_started``) past the per-call timeout
    (``"call"``), or the item past its ceiling (``"item"``); ``None`` with no timeout."""
    if state.timeout <= 0:
        return None
    from conformance.core.inflight import Inflight

    marker = Inflight.read(state.inflight.path, render=False) if state.inflight.path else None
    last = marker.get("call_started") if marker and marker.get("nodeid") == nodeid else None
    call_due = float(last or start) + state.timeout
    ceiling = start + state.timeout * ITEM_CEILING
    return (call_due, "call") if call_due < ceiling else (ceiling, "item")


#: Starts a child that runs the item (its recorded calls alone where the flag says) and writes
#: its record to the descriptor: ``(pid, reap)``, ``reap()`` waiting for the child's exit code.
Launch = Callable[[bool, int], tuple[int, Callable[[], int]]]


def direct(state: State, run: Callable[[], Verdict], recorded: Callable[[], Verdict]) -> Launch:
    """Children forked from this process (warmed for them first), running ``run`` (or
    ``recorded``)."""
    import gc

    def launch(recorded_only: bool, out_fd: int) -> tuple[int, Callable[[], int]]:
        warm_for_fork(state)
        # the parent's objects stay out of the child's garbage collections (Hypothesis collects
        # on its first test in a process: 0.6 CPU-s over the whole inherited heap, every page
        # copied)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            run_child(recorded if recorded_only else run, out_fd)
        gc.unfreeze()
        return pid, lambda: os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    return launch


def served(server: ForkServer, nodeid: str) -> Launch:
    """Children forked by ``server`` (:mod:`.forkserver`, warmed before it started), running the
    item ``nodeid``."""
    def launch(recorded_only: bool, out_fd: int) -> tuple[int, Callable[[], int]]:
        return server.spawn(nodeid, recorded_only, out_fd), server.reap

    return launch


def _fork_once(state: State, nodeid: str, launch: Launch, recorded_only: bool
               ) -> tuple[dict[str, Any] | None, int, str | None]:
    """Run the item in a child ``launch`` starts: ``(record, exit code, hung)``, the record
    ``None`` when the child died or hung (then killed; ``hung`` says whether a ``"call"`` ran
    past the per-call timeout or the ``"item"`` past its ceiling)."""
    import select
    import signal

    r, w = os.pipe()
    try:
        pid, reap = launch(recorded_only, w)
    finally:
        os.close(w)
    chunks: list[bytes] = []
    hung: str | None = None
    start = time.time()
    try:
        while True:
            due = _due(state, nodeid, start)
            wait = None if due is None else max(0.0, due[0] - time.time())
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                due = _due(state, nodeid, start)  # the child's calls may have moved it
                if due is not None and time.time() < due[0]:
                    continue
                # a call past the per-call timeout, or the item past its ceiling: end the
                # child, not this worker
                hung = due[1] if due is not None else "call"
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
        code = reap()
    if not hung and chunks:
        out = json.loads(b"".join(chunks))
        if "error" in out:
            raise RuntimeError(f"{nodeid} raised in its forked child:\n{out['error']}")
        return dict(out["record"]), code, hung
    return None, code, hung

