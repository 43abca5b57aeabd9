"""The plugin's module-level hooks, re-exported by the package (the ``pytest11`` entry point):
set-up and tear-down of the session's state, SIGTERM, the collection of the run's items, the
report header and the xdist workers' inputs. The hooks of a running session are methods of the
objects registered here (:class:`State`, :class:`NotApplicable`).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from conformance.pytest_plugin.inapplicable import NAME, NotApplicable
from conformance.pytest_plugin.items import collect
from conformance.pytest_plugin.session import State, attach, state_of
from conformance.pytest_plugin.watchdog import Watchdog

_STATE = "conformance-state"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--backend", default=None):
        return
    state = State(config)
    state.torch_threads_before = one_intra_op_thread()
    state.gc_thresholds_before = fewer_full_collections()
    attach(config, state)
    config.pluginmanager.register(state, _STATE)
    config.pluginmanager.register(NotApplicable(state), NAME)
    state.open_results()
    _on_sigterm(state)


def one_intra_op_thread() -> int | None:
    """Run the session's torch calls on one intra-op thread (returns the count before, for
    :func:`pytest_unconfigure`; ``None`` where it was one already). The run's parallelism is its
    worker processes (``-n``, up to the CPU count), so a worker's pool threads only oversubscribe
    the cores: on a loaded 2-core machine CPU's ``isclose`` of a 100,000-element float32 tensor
    cost 90 ms of CPU time on two threads (their spin-waits), 0.6 ms on one, and such calls were
    12% of a forward run (docs/decisions.md#engine-speed). Forked items ran on one thread
    already (:mod:`conformance.pytest_plugin.isolation`)."""
    import torch

    before = torch.get_num_threads()
    if before == 1:
        return None
    torch.set_num_threads(1)
    return before


#: The cyclic collector's third threshold during a session: a full collection after this many
#: collections of the middle generation, not Python's 10. Items make many short-lived cycles
#: (exceptions holding their frames, Hypothesis' records) and the heap they live beside is
#: large (torch, the operator database, the collected items: ~450,000 tracked objects), so a
#: full pass cost ~0.2 s and the passes were 6% of a 1/40 shard's CPU time; at 100 they were
#: 2.5% and its largest process 8% larger (docs/decisions.md#engine-speed). The younger
#: generations still collect as often as before, so short-lived cycles are freed as soon.
FULL_COLLECTION_EVERY = 100


def fewer_full_collections() -> tuple[int, int, int] | None:
    """Set the collector's third threshold to :data:`FULL_COLLECTION_EVERY` (returns the
    thresholds before, for :func:`pytest_unconfigure`; ``None`` where it was that already)."""
    import gc

    before = gc.get_threshold()
    if before[2] == FULL_COLLECTION_EVERY:
        return None
    gc.set_threshold(before[0], before[1], FULL_COLLECTION_EVERY)
    return before


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
    state = state_of(config)
    if state is None:
        return
    if state.writer is not None:
        state.writer.close()
    Watchdog.stop()
    state.cleanup()
    if state.torch_threads_before is not None:
        import torch

        torch.set_num_threads(state.torch_threads_before)
    if state.gc_thresholds_before is not None:
        import gc

        gc.set_threshold(*state.gc_thresholds_before)
    if state.sigterm_before is not None:
        import signal

        signal.signal(signal.SIGTERM, state.sigterm_before)
    from conformance.core import rundb

    rundb.use(None)  # a later in-process session (pytester, -n 0 reruns) loads its own


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist controller: one call per worker started
    state = state_of(node.config)
    if state is not None:
        node.workerinput["conformance_run_id"] = state.run_id
        node.workerinput["conformance_done"] = sorted(state.skip_ids)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    state = state_of(config)
    if state is None:
        return
    collect(state, session, config, items)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = state_of(config)
    if state is None:
        return None
    b = state.backend
    return [f"conformance: backend={b.name} device={b.device} dispatch_key={b.dispatch_key} "
            f"checks={','.join(state.checks)} max_examples={state.settings.max_examples} "
            f"seed={state.settings.seed} results={config.getoption('--results')}"]
