"""The ops each decomposed overload reaches in a compiled graph, traced on drawn calls: the data
of the static twin of the ``compile`` check (:mod:`opdb.decompositions`, docs/compile.md).

For each overload a compiled call decomposes (:func:`opdb.decompositions.decomposed`), calls are
drawn as the ``forward`` check draws them (recorded calls first, then the schema strategy) until
one traces (:func:`opdb.decompositions.trace`: fake tensors, nothing computes): a call CPU would
refuse fails its trace too and the next is drawn. An overload no drawn call traced within
:data:`TRIES` is kept with ``calls`` None and the last error (counted and shown, never taken as
needing nothing). Tracing every overload takes minutes, so the result is cached by torch version
and table (:func:`traced`).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from opdb.decompositions import (
    Decomposition,
    cache_key,
    decomposed,
    load_table,
    read_cache,
    trace,
    write_cache,
)

#: Drawn calls tried per overload before it is left untraced: most trace on the first (a
#: recorded call, or a drawn one CPU accepts); more rarely help (docs/decisions.md).
TRIES = 4

#: Seconds one overload's trace may take before its worker is ended (a trace that hangs).
TRACE_TIMEOUT = 120.0

#: Where the traced table is cached (relative to the working directory, beside the run state).
CACHE_DIR = ".conformance/decompositions"


def _strategy(sig: Any, hints: Any) -> Any:
    """Recorded calls of ``sig``, else its schema strategy (``forward`` mode); ``None``."""
    from conformance.core.signature import NoStrategy
    from conformance.inputs.corpus import corpus_calls
    from conformance.inputs.strategies import calls

    got = corpus_calls(sig, hints, mode="forward")
    if got is not None:
        return got
    try:
        return calls(sig, hints, mode="forward")
    except NoStrategy:
        return None


def trace_one(name: str, source: str, *, db: Any, hints: Any, table: Mapping[Any, Any],
              tries: int = TRIES, device: str = "cpu") -> Decomposition:
    """``name``'s decomposition traced on the first of ``tries`` drawn calls that traces on
    fake tensors of ``device`` (the backend's: a composite branches on the device); where none
    traces there (a device whose fake/meta support the op lacks), on CPU's, saying so."""
    from conformance.core.signature import OpSignature

    sig = OpSignature.of(db[name])
    problem = sig.untestable()
    strategy = None if problem else _strategy(sig, hints.for_op(name))
    if strategy is None:
        return Decomposition(name, source, None, problem or "no strategy draws its arguments")
    found = _first_traced(sig, strategy, table, tries, device)
    if found.calls is None and device != "cpu":
        on_cpu = _first_traced(sig, strategy, table, tries, "cpu")
        if on_cpu.calls is not None:
            return replace(on_cpu, reason=f"traced on cpu's branch: on {device}, {found.reason}")
    return replace(found, overload=name, source=source)


def _first_traced(sig: Any, strategy: Any, table: Mapping[Any, Any], tries: int,
                  device: str) -> Decomposition:
    """The decomposition of the first of ``tries`` drawn calls that traces on ``device``
    (``overload`` and ``source`` filled by the caller)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    name = sig.name
    got: list[tuple[tuple[str, ...], str]] = []
    last: list[str] = []

    def traces(call: Any) -> bool:
        args, kwargs = call.split("cpu")
        try:
            got.append((trace(sig.packet, args, kwargs, table, device), call.describe()))
        except Exception as exc:  # noqa: BLE001 - an input the op refuses: draw another
            last[:] = [f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"]
            return False
        return True

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            find(strategy, traces, settings=settings(
                max_examples=tries, phases=[Phase.generate], database=None, derandomize=True,
                suppress_health_check=list(HealthCheck), deadline=None))
    except (NoSuchExample, Unsatisfiable):
        pass
    except Exception as exc:  # noqa: BLE001 - a strategy that cannot draw here
        last[:] = [f"drawing: {type(exc).__name__}: {exc}"]
    if got:
        return Decomposition(name, "", got[0][0], example=got[0][1][:200], device=device)
    reason = last[0] if last else f"no call drawn in {tries} tries"
    return Decomposition(name, "", None, f"not traced: {reason}"[:300], device=device)


def trace_all(db: Any, table_name: str, *, names: Iterable[str] | None = None,
              hints: Any = None, tries: int = TRIES,
              progress: Callable[[int, int, str], None] | None = None, device: str = "cpu"
              ) -> dict[str, Decomposition]:
    """Every decomposed overload of ``db`` (or of ``names``) under the table ``table_name``,
    traced (:func:`trace_one`) on ``device`` in forked workers (:func:`run_isolated`)."""
    from opdb.opdata import load_hints

    hints = hints if hints is not None else load_hints(db=db)
    table = load_table(table_name)
    todo = decomposed(names if names is not None else (ov.name for ov in db.overloads), table)
    return run_isolated(todo, progress, lambda name, source: trace_one(
        name, source, db=db, hints=hints, table=table, tries=tries, device=device))


def run_isolated(todo: Mapping[str, str], progress: Callable[[int, int, str], None] | None,
              one: Callable[[str, str], Decomposition]) -> dict[str, Decomposition]:
    """``one`` over ``todo`` in a forked worker, restarted after the overload it died or hung
    on: a drawn call can kill the process in a kernel or a trace (the whole table died at
    the hundredth overload in one process), and that overload is kept, untraced, saying so."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    out: dict[str, Decomposition] = {}
    while len(out) < len(todo):
        rest = [(n, s) for n, s in todo.items() if n not in out]
        recv, send = ctx.Pipe(duplex=False)
        worker = ctx.Process(target=_work, args=(send, rest, one), daemon=True)
        worker.start()
        send.close()
        current = None
        while True:
            if not recv.poll(TRACE_TIMEOUT):
                worker.kill()
                why = f"the trace took over {TRACE_TIMEOUT:.0f} s"
                break
            try:
                kind, value = recv.recv()
            except EOFError:
                why = "the trace killed the process"
                break
            if kind == "start":
                current = value
                if progress is not None:
                    progress(len(out), len(todo), value)
            else:
                out[value["overload"]] = Decomposition.from_json(value)
                current = None
        worker.join()
        recv.close()
        if current is not None:
            out[current] = Decomposition(current, todo[current], None,
                                         f"not traced: {why} (exit {worker.exitcode})")
    return {n: out[n] for n in todo}


def _work(send: Any, items: list[tuple[str, str]],
          one: Callable[[str, str], Decomposition]) -> None:
    """The worker of :func:`run_isolated`: says which overload it starts, then its result."""
    # fake-tensor propagation logs every refused draw with its traceback at ERROR: a drawn call
    # the op refuses is expected here (the next one is drawn), and the reason is kept
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    for name, source in items:
        send.send(("start", name))
        send.send(("done", one(name, source).as_json()))
    send.close()


def traced(db: Any, table_name: str, *, cache_dir: str | None = CACHE_DIR,
           log: Callable[[str], None] | None = None, device: str = "cpu"
           ) -> dict[str, Decomposition]:
    """:func:`trace_all` over the whole op database on ``device``, read from the cache when it
    holds this torch's, table's and device's (``cache_dir`` None: no cache)."""
    import os

    import torch

    key = cache_key(table_name, torch.__version__, device)
    path = os.path.join(cache_dir, f"{key}.json") if cache_dir else None
    if path is not None:
        cached = read_cache(path, key)
        if cached is not None:
            return cached
    start = time.monotonic()

    def progress(i: int, n: int, name: str) -> None:
        if log is not None and i % 100 == 0:
            log(f"tracing decompositions ({table_name}): {i}/{n} ({name}), "
                f"{time.monotonic() - start:.0f} s")

    out = trace_all(db, table_name, progress=progress, device=device)
    if log is not None:
        log(f"traced {len(out)} decompositions ({table_name}) in "
            f"{time.monotonic() - start:.0f} s" + (f"; cached in {path}" if path else ""))
    if path is not None:
        write_cache(path, key, out)
    return out
