"""The timeout is per call (docs/decisions.md#per-call-timeout): a call on CPU or on the backend
that runs past it is a hang, pinned on the side that ran it; an item whose calls keep finishing
runs up to ITEM_CEILING timeouts, and past that is the item's timeout, never CPU's."""

from __future__ import annotations

import json
import threading
import time
import types
from pathlib import Path

import pytest

from conformance.core.inflight import ITEM_CEILING, Inflight
from conformance.pytest_plugin import watchdog as watchdog_module
from conformance.pytest_plugin.records import call_overdue, dead_record, timeout_message
from conformance.pytest_plugin.watchdog import Watchdog


def _state(inflight: Inflight, timeout: float = 120.0):
    return types.SimpleNamespace(
        inflight=inflight, timeout=timeout, backend=types.SimpleNamespace(name="xla"),
        settings=types.SimpleNamespace(seed=0),
        expectations=types.SimpleNamespace(reason_for=lambda *a: None),
        recorded=[], record=lambda rec: None,
        retry_recorded=lambda marker, rec, retry=None: rec)


class _Call:
    source = "hypothesis"

    def describe(self) -> str:
        return "eq.Scalar(float32[3], 2)"


def test_the_marker_says_when_its_call_started(tmp_path: Path) -> None:
    inflight = Inflight(tmp_path / "w.json")
    inflight.start("eq.Scalar::forward", "eq.Scalar", "forward")
    seen: list[int] = []
    inflight.on_call = lambda: seen.append(1)
    before = time.time()
    inflight.call(_Call(), lambda c: "repro", side="xla")  # type: ignore[arg-type]
    marker = Inflight.read(tmp_path / "w.json")
    assert marker is not None and before <= marker["call_started"] <= time.time()
    assert marker["side"] == "xla" and seen == [1]
    inflight.close()


def test_a_call_is_overdue_not_an_item() -> None:
    now = time.time()
    # an item 500 s old whose current call began 5 s ago is not hung
    assert not call_overdue({"started": now - 500, "call_started": now - 5}, 120, now)
    assert call_overdue({"started": now - 500, "call_started": now - 121}, 120, now)
    assert call_overdue({"started": now - 121}, 120, now)  # no call yet: the item's start
    assert not call_overdue({"started": now - 500}, 0, now)  # no timeout


def test_a_hang_is_pinned_on_the_side_whose_call_ran_the_whole_timeout() -> None:
    now = time.time()
    state = _state(Inflight(None))
    cpu = {"overload": "eq.Scalar", "check": "forward", "started": now - 300,
           "call_started": now - 130, "side": "cpu", "call": "eq.Scalar(...)"}
    rec = dead_record(state, cpu, who="xdist worker gw0", code=None, ended="worker ended")  # type: ignore[arg-type]
    assert (rec["verdict"], rec["category"]) == ("skip", "cpu_timeout")
    assert rec["message"].startswith("a call ran past the 120s per-call timeout")
    backend = {**cpu, "side": "xla"}
    rec = dead_record(state, backend, who="xdist worker gw0", code=None, ended="worker ended")  # type: ignore[arg-type]
    assert (rec["verdict"], rec["category"]) == ("timeout", None)
    # past the item's ceiling, CPU's call in flight: the item's timeout, not CPU's
    ceiling = {**cpu, "state": "timeout", "timeout_of": "item", "call_started": now - 1}
    rec = dead_record(state, ceiling, who="xdist worker gw0", code=None, ended="worker ended")  # type: ignore[arg-type]
    assert (rec["verdict"], rec["category"]) == ("timeout", None), rec
    assert f"ceiling ({ITEM_CEILING} x the 120s per-call timeout)" in rec["message"]
    assert timeout_message(2, ceiling=True).startswith(f"ran past the item's {2 * ITEM_CEILING}s")


@pytest.fixture()
def dog(monkeypatch: pytest.MonkeyPatch):
    """A fresh watchdog whose firing is recorded instead of ending the process, faulthandler's
    deadlines recorded instead of set."""
    import faulthandler

    fired: list[tuple[float, bool]] = []
    t0 = time.monotonic()
    done = threading.Event()

    def fire(state, node, seconds, *, ceiling=False):
        fired.append((round(time.monotonic() - t0, 2), ceiling))
        dog_ = Watchdog._instance
        assert dog_ is not None
        dog_._armed = None  # the thread holds the lock: disarm in place
        done.set()

    faults: list[float] = []
    monkeypatch.setattr(faulthandler, "dump_traceback_later",
                        lambda timeout, **kw: faults.append(timeout))
    monkeypatch.setattr(Watchdog, "_instance", None)
    monkeypatch.setattr(Watchdog, "fire", staticmethod(fire))
    yield types.SimpleNamespace(fired=fired, faults=faults, done=done, t0=t0)
    if Watchdog._instance is not None:
        Watchdog._instance.disarm()


def test_calls_that_keep_finishing_are_no_hang(dog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seven calls of 0.3 s under a 0.6 s timeout (2.1 s in all): a per-item budget fired at
    0.6 s; per call, the watchdog fires only once the calls stop, 0.6 s after the last."""
    inflight = Inflight(None)
    watch = Watchdog.arm(_state(inflight, 0.6), types.SimpleNamespace(nodeid="x"), 0.6)  # type: ignore[arg-type]
    for _ in range(7):
        time.sleep(0.3)
        inflight.call(_Call(), lambda c: "", side="xla")  # type: ignore[arg-type]
    assert not dog.fired
    last = time.monotonic() - dog.t0
    assert dog.done.wait(5)
    (when, ceiling), = dog.fired
    assert not ceiling and last + 0.5 <= when <= last + 1.5, (last, when)
    # disarmed after its item, the watchdog no longer follows the marker's calls
    watch = Watchdog.arm(_state(inflight, 60), types.SimpleNamespace(nodeid="y"), 60)  # type: ignore[arg-type]
    assert inflight.on_call is not None
    watch.disarm()
    assert inflight.on_call is None


def test_an_item_past_its_ceiling_is_the_items_timeout(dog, monkeypatch) -> None:
    monkeypatch.setattr(watchdog_module, "ITEM_CEILING", 3)
    inflight = Inflight(None)
    Watchdog.arm(_state(inflight, 0.5), types.SimpleNamespace(nodeid="x"), 0.5)  # type: ignore[arg-type]
    deadline = time.monotonic() + 5
    while not dog.done.is_set() and time.monotonic() < deadline:
        time.sleep(0.1)  # calls keep finishing
        inflight.call(_Call(), lambda c: "", side="cpu")  # type: ignore[arg-type]
    (when, ceiling), = dog.fired
    assert ceiling and 1.4 <= when <= 2.5, when  # 3 x 0.5 s
    # faulthandler (for a kernel that holds the GIL) was moved along with the calls, not per call
    assert 2 <= len(dog.faults) <= 6, dog.faults


def test_faulthandler_never_fires_before_the_call_in_flight_ran_its_timeout(dog) -> None:
    """A call that starts just before faulthandler's deadline and spins holding the GIL (the
    watchdog's thread cannot run) still gets its whole timeout: the deadline moves at the call's
    start, on the calling thread, once per half grace period of calls rather than per call."""
    inflight = Inflight(None)
    watch = Watchdog.arm(_state(inflight, 10), types.SimpleNamespace(nodeid="x"), 10)  # type: ignore[arg-type]
    grace = Watchdog.grace(10)
    assert dog.faults == [10 + grace]
    for _ in range(50):  # calls in quick succession: the deadline already covers each
        inflight.call(_Call(), lambda c: "", side="xla")  # type: ignore[arg-type]
    assert len(dog.faults) == 1
    watch._fault_at = time.monotonic() + 1.0  # as if the last move were 10 s ago
    started = time.monotonic()
    inflight.call(_Call(), lambda c: "", side="xla")  # type: ignore[arg-type]
    assert dog.faults[-1] == 10 + grace and watch._fault_at >= started + 10 + grace / 2
    watch.disarm()


def test_items_in_quick_succession_leave_faulthandler_armed(dog) -> None:
    """Each re-arm of faulthandler joins its thread and starts another: items that follow one
    another keep the deadline their calls left (within the bounds a call's start keeps), and a
    process idle between items has it parked, half a grace before it would fire."""
    inflight = Inflight(None)
    grace = Watchdog.grace(0.2)  # 2 s
    for node in ("a", "b", "c", "d"):
        watch = Watchdog.arm(_state(inflight, 0.2), types.SimpleNamespace(nodeid=node), 0.2)  # type: ignore[arg-type]
        inflight.call(_Call(), lambda c: "", side="xla")  # type: ignore[arg-type]
        watch.cancel()
    assert dog.faults == [0.2 + grace]  # armed by the first item only; nothing fired
    deadline = time.monotonic() + 0.2 + grace
    while len(dog.faults) < 2 and time.monotonic() < deadline + 1:
        time.sleep(0.05)
    parked_at = time.monotonic()
    assert dog.faults[1:] == [Watchdog._PARKED] and parked_at <= deadline - grace / 4
    assert not dog.fired
    # an item after a long rest is armed afresh (a parked deadline is too far)
    watch = Watchdog.arm(_state(inflight, 0.2), types.SimpleNamespace(nodeid="e"), 0.2)  # type: ignore[arg-type]
    watch.cancel()
    assert dog.faults[2:] == [0.2 + grace]


def test_a_forked_item_is_overdue_by_its_childs_call(tmp_path: Path) -> None:
    from conformance.pytest_plugin.isolation import _due

    path = tmp_path / "w.json"
    state = types.SimpleNamespace(timeout=10.0, inflight=types.SimpleNamespace(path=path))
    start = time.time() - 30  # the item began 30 s ago
    path.write_text(json.dumps({"nodeid": "a::forward", "call_started": time.time() - 2}))
    due, why = _due(state, "a::forward", start)  # type: ignore[arg-type]
    assert why == "call" and due == pytest.approx(time.time() + 8, abs=1)
    path.write_text(json.dumps({"nodeid": "other::forward", "call_started": time.time()}))
    assert _due(state, "a::forward", start)[0] == pytest.approx(start + 10)  # type: ignore
    path.write_text(json.dumps({"nodeid": "a::forward", "call_started": start + 10 * 99}))
    assert _due(state, "a::forward", start) == (start + 10 * ITEM_CEILING, "item")  # type: ignore
    state.timeout = 0
    assert _due(state, "a::forward", start) is None  # type: ignore[arg-type]


def test_firing_records_whose_call_hung(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    def _exit(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", _exit)
    for ceiling, want in ((False, ("skip", "cpu_timeout")), (True, ("timeout", None))):
        inflight = Inflight(tmp_path / f"{ceiling}.json")
        inflight.start("eq.Scalar::forward", "eq.Scalar", "forward")
        inflight.call(_Call(), lambda c: "", side="cpu")  # type: ignore[arg-type]
        records: list[dict] = []
        state = _state(inflight, 2.0)
        state.record = records.append
        with pytest.raises(SystemExit):
            Watchdog.fire(state, types.SimpleNamespace(nodeid="eq.Scalar::forward"), 2.0,  # type: ignore[arg-type]
                          ceiling=ceiling)
        (rec,) = records
        assert (rec["verdict"], rec["category"]) == want, rec
        marker = Inflight.read(tmp_path / f"{ceiling}.json")
        assert marker is not None and marker["state"] == "timeout"
        assert (marker.get("timeout_of") == "item") is ceiling  # what the controller reads
        inflight.close()
