"""The watchdog (:class:`Watchdog`): a call that hangs is recorded as ``timeout`` (or, when it
was CPU's call, ``cpu_timeout``) and its process ends; so is an item past its ceiling.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from conformance.core.inflight import ITEM_CEILING
from conformance.pytest_plugin.records import lost_record, timeout_message

if TYPE_CHECKING:
    from conformance.pytest_plugin.items import ConformanceItem
    from conformance.pytest_plugin.session import State


class Watchdog:
    """Ends the process when a call runs past the timeout (or its item past
    :data:`~conformance.core.inflight.ITEM_CEILING` timeouts), leaving a ``timeout``
    verdict behind.

    The timeout is per call: every call the engine records in the about-to-run marker
    (:meth:`conformance.core.inflight.Inflight.call`, before each CPU and backend call) moves the
    deadline to ``now + timeout``, so the call in flight when it fires has itself run the whole
    timeout, and the side it ran on is the one that hung (``cpu_timeout`` only when CPU's own
    call did). A per-item budget fired in whatever call ran when an item's many quick calls
    added up (an item of a backend compiling a graph per new shape: 630 of them for
    ``eq.Scalar`` on torch_xla), and pinned it on CPU whenever CPU's call was the one in
    flight. Moving the deadline is one float assignment (:meth:`progress`), no notify: the
    thread finds the later deadline when it wakes.

    A thread, not a signal: a backend hung in native code never returns to the interpreter's
    signal handler, but this thread still runs while the GIL is released. The marker goes to the
    about-to-run file (the xdist controller reads it when the worker dies) and, in a lone
    process, straight to the results file. A kernel spinning in C while holding the GIL starves
    the thread: faulthandler's watchdog, a C thread that needs no GIL, then dumps the stacks and
    ``_exit()``s, and the controller sees from the marker's ``call_started`` that the call hung.
    Its deadline moves at a call's start, on the calling thread (:meth:`progress`), whenever it
    would otherwise fall before that call has run its timeout plus half the grace: moved by this
    thread instead, a call that began just before the thread's next wake-up and spun holding the
    GIL was killed by faulthandler after as little as half the grace, and recorded as a crash.
    The move costs a comparison per call and one re-arm per half grace period of calls.

    One per process, armed for each item and disarmed after it: a ``threading.Timer`` and a
    ``faulthandler`` deadline started and cancelled per item cost 3.7 ms of wall time an item
    (thread start and join; measured, 1.2 ms even without the Timer), ~45 s of an all-checks
    run on two workers. Here arming notifies one waiting thread (microseconds), and
    faulthandler's deadline is left as the last call set it when an item ends: each re-arm of
    it joins faulthandler's thread and starts another (0.3-0.7 ms on a loaded machine; twice
    an item, ~10 s of a ten-check run on two workers). The next item re-arms it only where it
    falls outside what :meth:`progress` keeps (at least ``timeout + grace/2`` ahead, at most
    ``timeout + grace``), and this thread parks it far ahead once the process has idled
    between items until half a grace before it (a worker waiting for work is not killed).
    """

    _instance: Watchdog | None = None
    #: where faulthandler's deadline is parked between items (it is cancelled at unconfigure)
    _PARKED = 7 * 24 * 3600.0

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._armed: tuple[State, ConformanceItem, float] | None = None
        self._progress = 0.0  # monotonic time the call in flight started (or the item)
        self._ceiling = 0.0  # monotonic time the item may not run past
        self._fault_at = math.inf  # monotonic time faulthandler's deadline is set for (none)
        self._seconds = 0.0  # the armed item's per-call timeout
        self._grace = 0.0  # and its grace (read before every call: worked out once per item)
        self._stderr: Any = None
        threading.Thread(target=self._loop, name="conformance-watchdog", daemon=True).start()

    @staticmethod
    def grace(seconds: float) -> float:
        """How far past the watchdog's own deadline faulthandler's is set."""
        return min(15.0, max(2.0, seconds / 4))

    @classmethod
    def arm(cls, state: State, node: ConformanceItem, seconds: float) -> Watchdog:
        import faulthandler
        import sys

        if cls._instance is None:
            cls._instance = cls()
        dog = cls._instance
        with dog._cv:
            now = time.monotonic()
            dog._armed = (state, node, seconds)
            dog._progress = now
            dog._ceiling = now + seconds * ITEM_CEILING
            dog._seconds = seconds
            grace = dog._grace = cls.grace(seconds)
            # the deadline the last item's calls left is kept where it lies within progress's
            # bounds (an item that starts is a call that starts); faulthandler writes to the
            # file it was given, so a new sys.stderr re-arms it too (parked on it as well: a
            # later one may have no fileno)
            if sys.stderr is not dog._stderr or not \
                    now + seconds + grace / 2 <= dog._fault_at <= now + seconds + grace:
                dog._stderr = sys.stderr
                dog._fault_at = now + seconds + grace
                faulthandler.dump_traceback_later(seconds + grace, exit=True, file=dog._stderr)
            state.inflight.on_call = dog.progress
            dog._cv.notify()
        return dog

    def progress(self) -> None:
        """A call starts: the deadline is the timeout from now, and faulthandler's no earlier
        than half the grace after it (re-armed here, before the call can hold the GIL)."""
        now = time.monotonic()
        self._progress = now
        grace = self._grace
        if self._fault_at < now + self._seconds + grace / 2:
            import faulthandler

            self._fault_at = now + self._seconds + grace
            faulthandler.dump_traceback_later(self._seconds + grace, exit=True,
                                              file=self._stderr)

    def cancel(self) -> None:
        """The item is over: no deadline (faulthandler's is left to the next item, or parked
        by the thread if none comes before it nears: see the class's notes)."""
        self.disarm()

    def disarm(self) -> None:
        """No deadline: the thread waits for the next item (faulthandler's is left as it is)."""
        with self._cv:
            if self._armed is not None:
                self._armed[0].inflight.on_call = None
            self._armed = None
            self._cv.notify()

    @classmethod
    def stop(cls) -> None:
        """At the end of the session: faulthandler's deadline goes (the thread only waits)."""
        import faulthandler

        dog = cls._instance
        if dog is not None:
            dog.disarm()
            with dog._cv:
                dog._fault_at = math.inf  # nothing for the thread to park
                faulthandler.cancel_dump_traceback_later()

    def _loop(self) -> None:
        with self._cv:
            while True:
                if self._armed is None:
                    self._idle()
                    continue
                state, node, seconds = self._armed
                now = time.monotonic()
                due = min(self._progress + seconds, self._ceiling)
                if now >= due:
                    self.fire(state, node, seconds, ceiling=due == self._ceiling)
                self._cv.wait(max(0.0, due - now))

    def _idle(self) -> None:
        """Between items: wait for the next one, parking faulthandler's deadline once it is
        half a grace away (it was set for calls that have ended)."""
        left = self._fault_at - self._grace / 2 - time.monotonic()
        if left > self._PARKED / 2:  # parked already, or none set
            self._cv.wait()
        elif left > 0:
            self._cv.wait(left)
        else:
            import faulthandler

            self._fault_at = time.monotonic() + self._PARKED
            faulthandler.dump_traceback_later(self._PARKED, exit=True, file=self._stderr)

    @staticmethod
    def fire(state: State, node: ConformanceItem, seconds: float, *,
             ceiling: bool = False) -> None:
        if ceiling:
            state.inflight.item["timeout_of"] = "item"  # the controller reads it (dead_record)
        state.inflight.mark("timeout")
        what = timeout_message(seconds, ceiling=ceiling)
        rec = lost_record(state, state.inflight.item, "timeout", f"{what}; process ended")
        if state.inflight.item.get("side") == "cpu" and not ceiling:  # CPU's own call hung
            rec["verdict"], rec["category"] = "skip", "cpu_timeout"
        state.record(rec)
        import sys

        sys.stderr.write(f"\nconformance: {node.nodeid}: {what}; ending process "
                         f"{os.getpid()}\n")
        sys.stderr.flush()
        os._exit(70)
