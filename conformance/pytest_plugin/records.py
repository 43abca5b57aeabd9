"""Verdict records the plugin makes itself, not the engine: the record of an item whose process
died or hung (:func:`dead_record`, :func:`lost_record`), the key that carries a record on a
report and the JSON-safe form of a record. The session, fork isolation and the watchdog share
them; this module imports none of them (the state comes in as an argument).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.core.inflight import ITEM_CEILING

if TYPE_CHECKING:
    from conformance.pytest_plugin.session import State


#: A retry of an item on its recorded calls alone: ``(record, marker if its process died,
#: how the process ended)``, as :func:`conformance.pytest_plugin.crashes.retry_recorded` returns.
Retry = Callable[[], "tuple[dict[str, Any] | None, dict[str, Any] | None, str]"]


VERDICT_PROP = "conformance_verdict"  # user_properties key carrying the verdict record (JSON text)



def call_overdue(marker: dict[str, Any], timeout: float, now: float | None = None) -> bool:
    """Whether the call in flight in ``marker`` (else its item, if no call has started) has run
    past ``timeout`` seconds (0: no timeout)."""
    started = marker.get("call_started") or marker.get("started")
    return bool(timeout and started and (time.time() if now is None else now) - started
                >= timeout)


def timeout_message(timeout: float, *, ceiling: bool) -> str:
    """What a ``timeout`` record says ran too long: one call, or (``ceiling``) the item."""
    if ceiling:
        return (f"ran past the item's {timeout * ITEM_CEILING:g}s ceiling ({ITEM_CEILING} x the "
                f"{timeout:g}s per-call timeout) while its calls still finished")
    return f"a call ran past the {timeout:g}s per-call timeout"


def json_safe(obj: dict[str, Any]) -> dict[str, Any]:
    from conformance.store.results import finite

    return finite(obj)


def how_it_ended(code: int | None) -> str:
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


def dead_record(state: State, marker: dict[str, Any], *, who: str, code: int | None,
                ended: str, hung: bool = False, retry: Retry | None = None) -> dict[str, Any]:
    """The record of an item whose process died (``who``: ``xdist worker gw0``, ...; ``code``
    its exit status) from its about-to-run ``marker``: a ``timeout`` if it was marked, if its
    call in flight ran past the per-call timeout or the item past its ceiling (the marker's
    ``timeout_of: item``) (``hung``: its parent saw it do so); the oracle's death, or its own
    call's hang, a ``skip`` (``cpu_crashed``/``cpu_timeout``) unless its recorded calls alone
    give a verdict (:meth:`State.retry_recorded`, in ``retry`` where given); else a ``crash``
    once the call is replayed alone in fresh processes (:meth:`State.crash_record`), unless the
    replay puts it down to the oracle (then as the oracle's death)."""
    ceiling = marker.get("timeout_of") == "item"
    hung = hung or ceiling or call_overdue(marker, state.timeout)
    if marker.get("state") == "timeout" or hung:
        rec = lost_record(state, marker, "timeout",
                          f"{timeout_message(state.timeout, ceiling=ceiling)}; {ended}")
        if marker.get("side") == "cpu" and not ceiling:  # the oracle's call hung: not a
            # verdict on the backend (an item past its ceiling is the item's, whoever ran last)
            rec["verdict"], rec["category"] = "skip", "cpu_timeout"
            rec = state.retry_recorded(marker, rec, retry)
        return rec
    if marker.get("side") == "cpu":  # the oracle died: not a verdict on the backend
        rec = lost_record(state, marker, "skip", f"CPU (the oracle) crashed the process ({who})")
        rec["category"] = "cpu_crashed"
        return state.retry_recorded(marker, rec, retry)
    rec = state.crash_record(marker, f"the process running it died ({who}{how_it_ended(code)})")
    if rec.get("category") == "cpu_crashed":  # the replay puts the death down to the oracle
        return state.retry_recorded(marker, rec, retry)
    return rec


def lost_record(state: State, marker: dict[str, Any] | None, verdict: str, message: str
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
