"""Fork isolation: an item whose overload's CPU kernel is known to kill the process runs in a
forked child (:func:`forked`), so its death costs the child, not the test worker; a child that
dies or hangs leaves the record the xdist controller makes of a dead worker.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.core.inflight import ITEM_CEILING
from conformance.pytest_plugin.records import dead_record, json_safe

if TYPE_CHECKING:
    from conformance.core.verdicts import Verdict
    from conformance.pytest_plugin.session import State


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


def forked(state: State, nodeid: str, run: Callable[[], Verdict],
           recorded: Callable[[], Verdict]) -> dict[str, Any]:
    """Run an item in a forked child and return its verdict record: one whose overload's CPU
    kernel is known to kill the process (``cpu_crashes`` in the hints) costs the child, not
    this test worker (~4 CPU-s for xdist to start and collect a new one). A child that dies,
    or hangs (a call past the per-call timeout, or the item past its ceiling; then killed), gets the record the xdist controller makes of a
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


def _fork_once(state: State, nodeid: str, run: Callable[[], Verdict]
               ) -> tuple[dict[str, Any] | None, int, str | None]:
    """Run ``run`` in a forked child: ``(record, exit code, hung)``, the record ``None`` when
    the child died or hung (then killed; ``hung`` says whether a ``"call"`` ran past the
    per-call timeout or the ``"item"`` past its ceiling). The child computes on one thread
    (OpenMP's pool does not survive a fork: a child's parallel region would hang)."""
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
                out: dict[str, Any] = {"record": json_safe(run().to_json())}
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
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if not hung and chunks:
        out = json.loads(b"".join(chunks))
        if "error" in out:
            raise RuntimeError(f"{nodeid} raised in its forked child:\n{out['error']}")
        return dict(out["record"]), code, hung
    return None, code, hung

