"""The per-item watchdog (:class:`Watchdog`): a hung item is recorded as ``timeout`` (or, when
CPU hung, ``cpu_timeout``) and its process ends.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from conformance.pytest_plugin.records import lost_record

if TYPE_CHECKING:
    from conformance.pytest_plugin.items import ConformanceItem
    from conformance.pytest_plugin.session import State


class Watchdog:
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

    _instance: Watchdog | None = None
    #: where faulthandler's deadline is parked between items (it is cancelled at unconfigure)
    _PARKED = 7 * 24 * 3600.0

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._deadline: float | None = None
        self._armed: tuple[State, ConformanceItem, float] | None = None
        self._stderr: Any = None
        threading.Thread(target=self._loop, name="conformance-watchdog", daemon=True).start()

    @classmethod
    def arm(cls, state: State, node: ConformanceItem, seconds: float) -> Watchdog:
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

        self.disarm()
        faulthandler.dump_traceback_later(self._PARKED, exit=True, file=self._stderr)

    def disarm(self) -> None:
        """No deadline: the thread waits for the next item (faulthandler's is left as it is)."""
        with self._cv:
            self._deadline = self._armed = None
            self._cv.notify()

    @classmethod
    def stop(cls) -> None:
        """At the end of the session: faulthandler's deadline goes (the thread only waits)."""
        import faulthandler

        if cls._instance is not None:
            cls._instance.disarm()
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
        rec = lost_record(state, state.inflight.item, "timeout",
                          f"ran past the {seconds:g}s per-item timeout; process ended")
        if state.inflight.item.get("side") == "cpu":
            rec["verdict"], rec["category"] = "skip", "cpu_timeout"
        state.record(rec)
        import sys

        sys.stderr.write(f"\nconformance: {node.nodeid} timed out after "
                         f"{seconds:g}s; ending process {os.getpid()}\n")
        sys.stderr.flush()
        os._exit(70)

