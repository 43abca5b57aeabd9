"""Derive recorded calls of backward ops from the forward ops whose formulas call them.

A backward op that neither the models nor the OpInfo samples reached still has a forward that
reaches it: ``derivatives.yaml`` says which forward's formula calls which backward op
(:attr:`opdb.model.Derivative.backward_ops`: ``upsample_nearest2d.vec`` ->
``upsample_nearest2d_backward``). For each such backward op without a recorded call, this runs
those forwards on CPU under the dispatch recorder with drawn inputs — the forward's own recorded
specs first, else its schema strategy (``autograd`` mode) — and backpropagates a drawn upstream
gradient through every differentiable output, as the ``autograd`` check does; the autograd
engine's call of the backward op is recorded like any other (its integer arguments exactly: the
``indices`` a forward computed; an attempt that raised keeps none of its calls: the recorder
notes a call before its kernel runs). Hypothesis searches (``find``) until the backward op was called
or ``tries`` examples of every forward are spent. Data-driven: no table of backward ops; it
works for any backward op a derivatives formula names. Drawn inputs may crash a CPU kernel, so
the search runs in a worker process that a crash or a hang costs one backward op, not the build.

Done once, when the corpus is built (``python -m conformance.corpus_tools build``; ``--no-derived``
leaves it out), not in each run: a run then pays nothing for it.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: Examples drawn per forward op before it is given up on.
TRIES = 30


#: Forward ops tried per backward op (those with recorded calls first).
FORWARDS = 4


def forwards_of(db: Any) -> dict[str, list[str]]:
    """Backward overload -> the forward overloads whose derivatives formula calls it."""
    out: dict[str, list[str]] = {}
    for name, d in db.derivatives.items():
        if name != d.entry:  # an in-place overload using its functional sibling's formulas
            continue
        for op in d.backward_ops:
            out.setdefault(op, []).append(name)
    return {k: sorted(v) for k, v in out.items()}


def backward_targets(db: Any, recorded: Iterable[str]) -> list[str]:
    """Backward overloads (base name has ``backward``) a formula calls and nothing recorded."""
    have = set(recorded)
    return sorted(n for n in forwards_of(db) if "backward" in db[n].base and n not in have)


def _in_memory_corpus(collector: Any, names: Sequence[str]) -> Any:
    """The collector's records of ``names`` as a :class:`~conformance.inputs.corpus.Corpus`."""
    from conformance.inputs.corpus import Corpus, Spec, decode

    specs: dict[str, list[Spec]] = {}
    for name in names:
        for recs in collector.calls.get(name, {}).values():
            for rec in recs.values():
                specs.setdefault(name, []).append(Spec(
                    overload=name, args=tuple((n, decode(v)) for n, v in rec["args"]),
                    origin=rec["origin"]))
    return Corpus(specs={k: tuple(sorted(v, key=lambda s: s.size)) for k, v in specs.items()},
                  header={})


def _strategy(sig: Any, hints: Any, recorded: Any) -> Any:
    """The forward's recorded calls, else its schema strategy (``autograd`` mode); ``None``."""
    from conformance.core.signature import NoStrategy
    from conformance.inputs.corpus import corpus_calls
    from conformance.inputs.strategies import calls

    got = corpus_calls(sig, hints, mode="autograd", corpus=recorded)
    if got is not None:
        return got
    try:
        return calls(sig, hints, mode="autograd")
    except NoStrategy:
        return None


def run_forward_backward(call: Any, recorder: Any) -> None:
    """``call`` on CPU with its differentiable inputs as leaves, then the gradients of its
    differentiable outputs for a drawn upstream gradient (the calls made are recorded by
    ``recorder``, whose phase says ``backward`` for the second half): the autograd check's CPU
    half (:func:`~conformance.compare.gradients.cpu_forward`), run plainly; CPU's refusals
    raise."""
    from conformance.compare.gradients import cpu_forward, grad_leaves
    from conformance.trace.recorder import BACKWARD

    picked = grad_leaves(call)
    if not picked:
        return
    cpu = cpu_forward(call, picked, lambda c: c.run("cpu"))
    if not cpu.outs:
        return
    with recorder.phase(BACKWARD):
        cpu.grads()


def derive(collector: Any, targets: Sequence[str], *, db: Any, hints: Any, tries: int = TRIES,
           forwards: int = FORWARDS, on_start: Callable[[str], None] | None = None,
           on_done: Callable[[str, str | None], None] | None = None) -> dict[str, str | None]:
    """The search itself, in this process: ``targets`` one by one (``on_start`` before each,
    ``on_done`` after, with the forward that reached it or ``None``)."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    from conformance.core.signature import OpSignature
    from conformance.trace.recorder import Recorder

    by_backward = forwards_of(db)
    result: dict[str, str | None] = {}
    for target in targets:
        if on_start is not None:
            on_start(target)
        result[target] = None
        candidates = [f for f in by_backward.get(target, ()) if f in db]
        candidates.sort(key=lambda f: (f not in collector.calls, f))
        for fwd in candidates[:forwards] if target not in collector.calls else ():
            try:
                sig = OpSignature.of(db[fwd])
            except Exception:  # noqa: BLE001 - a schema the strategies cannot model
                continue
            strategy = _strategy(sig, hints.for_op(fwd), _in_memory_corpus(collector, [fwd]))
            if strategy is None:
                continue

            def reaches(call: Any, target: str = target, fwd: str = fwd) -> bool:
                before = _keys(collector)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        with Recorder(top=False, max_examples=0, on_call=collector) as rec, \
                                collector.recording(f"derived:{fwd}"):
                            run_forward_backward(call, rec)
                    except Exception:  # noqa: BLE001 - an input CPU refuses: draw another
                        # the recorder noted its calls before their kernels ran: none of
                        # this attempt's is a call CPU answered for sure
                        _drop_since(collector, before)
                        return False
                return target in collector.calls

            try:
                find(strategy, reaches, settings=settings(
                    max_examples=tries, phases=[Phase.generate], database=None,
                    suppress_health_check=list(HealthCheck), deadline=None))
            except (NoSuchExample, Unsatisfiable):
                continue
            except Exception:  # noqa: BLE001 - a strategy that cannot draw here
                continue
            result[target] = fwd
            break
        if target in collector.calls and result[target] is None:
            result[target] = "(recorded meanwhile)"
        if on_done is not None:
            on_done(target, result[target])
    return result


#: Seconds a worker may spend on one backward op before it is ended (a kernel that hangs).
TARGET_TIMEOUT = 180.0


def record_derived(collector: Any, log: Callable[[str], None], *, db: Any = None,
                   tries: int = TRIES, forwards: int = FORWARDS, match: str | None = None,
                   native_functions: str | None = None,
                   target_timeout: float = TARGET_TIMEOUT) -> dict[str, str | None]:
    """Record calls of every backward op a formula names that ``collector`` has none of, by
    running the forwards that reach it (see the module), and merge them into ``collector``.

    Drawn inputs can crash a CPU kernel (out-of-range indices), so the search runs in a worker
    process (``python -m conformance.corpus_tools.derive``) that reports each backward op's new
    records as it finishes it; when the worker dies or hangs, the op it was on is marked
    (``crashed``/``timed out``) and a fresh worker goes on with the next. Returns backward op ->
    the forward that reached it, else ``None``."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    from conformance.core.rundb import current

    db = db if db is not None else current()
    pattern = re.compile(match) if match else None
    targets = [t for t in backward_targets(db, collector.calls)
               if pattern is None or pattern.search(t)]
    result: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="corpus-derive-") as tmp:
        work = Path(tmp)
        seed = [rec for name in sorted(collector.calls) for g in collector.calls[name].values()
                for rec in g.values()]
        (work / "seed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in seed),
                                         encoding="utf-8")
        todo = list(targets)
        restarts = 0
        while todo:
            (work / "job.json").write_text(json.dumps({
                "targets": todo, "tries": tries, "forwards": forwards,
                "per_dtype": collector.per_dtype, "max_numel": collector.max_numel,
                "native_functions": native_functions}), encoding="utf-8")
            out = work / f"out{restarts}.jsonl"
            proc = subprocess.Popen([sys.executable, "-m", "conformance.corpus_tools.derive", str(work),
                                     str(out)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            current_target, since = None, time.perf_counter()
            seen_lines = 0
            code: int | str | None = None
            while True:
                code = proc.poll()
                lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
                complete = [ln for ln in lines if ln.endswith("}")]
                for line in complete[seen_lines:]:
                    msg = json.loads(line)
                    if "start" in msg:
                        current_target, since = msg["start"], time.perf_counter()
                        continue
                    collector.seed(msg["records"])
                    result[msg["done"]] = msg["forward"]
                    todo.remove(msg["done"])
                    current_target = None
                seen_lines = len(complete)
                if code is not None:
                    break
                if current_target is not None and \
                        time.perf_counter() - since > target_timeout:
                    proc.kill()
                    proc.wait()
                    code = "timeout"
                    break
                time.sleep(0.2)
            if current_target is not None:  # the worker died (or hung) on this one
                why = "timed out" if code == "timeout" else f"crashed (exit {code})"
                notes[current_target] = why
                result[current_target] = None
                todo.remove(current_target)
                log(f"  derived: the worker {why} on {current_target}; going on")
            elif todo:  # ended without a word on the rest: do not loop forever
                for t in todo:
                    result[t], notes[t] = None, f"worker ended (exit {code})"
                log(f"  derived: the worker ended (exit {code}) before {len(todo)} backward ops")
                break
            restarts += 1
    reached = sum(1 for v in result.values() if v)
    log(f"  derived: {reached} of {len(targets)} backward ops without recorded calls reached "
        f"through their forwards in {time.perf_counter() - t0:.0f} s"
        + (f" ({len(notes)} ended their worker: {', '.join(sorted(notes))})" if notes else ""))
    return result


def _worker(argv: Sequence[str]) -> int:
    """``python -m conformance.corpus_tools.derive WORKDIR OUT``: derive ``WORKDIR/job.json``'s
    targets from ``WORKDIR/seed.jsonl``'s records, one JSON line per step to ``OUT``."""
    from pathlib import Path

    import opdb
    from conformance.core import rundb
    from conformance.corpus_tools.collector import Collector
    from opdb.opdata import load_hints

    work, out_path = Path(argv[0]), Path(argv[1])
    job = json.loads((work / "job.json").read_text(encoding="utf-8"))
    db = opdb.load(job["native_functions"])
    rundb.use(db)
    collector = Collector(per_dtype=job["per_dtype"], max_numel=job["max_numel"])
    with open(work / "seed.jsonl", encoding="utf-8") as fh:
        collector.seed([json.loads(line) for line in fh if line.strip()])
    before: set[tuple[str, str]] = set()
    with open(out_path, "a", encoding="utf-8") as out:

        def emit(msg: Mapping[str, Any]) -> None:
            out.write(json.dumps(msg) + "\n")
            out.flush()

        def on_start(target: str) -> None:
            before.clear()
            before.update(_keys(collector))
            emit({"start": target})

        def on_done(target: str, forward: str | None) -> None:
            new = [rec for key, rec in _records(collector) if key not in before]
            emit({"done": target, "forward": forward, "records": new})

        derive(collector, job["targets"], db=db, hints=load_hints(db=db), tries=job["tries"],
               forwards=job["forwards"], on_start=on_start, on_done=on_done)
    return 0


def _records(collector: Any) -> Iterable[tuple[tuple[str, str], Mapping[str, Any]]]:
    for name, groups in collector.calls.items():
        for recs in groups.values():
            for key, rec in recs.items():
                yield (name, key), rec


def _keys(collector: Any) -> set[tuple[str, str]]:
    return {k for k, _ in _records(collector)}


def _drop_since(collector: Any, before: set[tuple[str, str]]) -> None:
    """Forget the records ``collector`` gained since its keys were ``before``."""
    for name in list(collector.calls):
        groups = collector.calls[name]
        for dtypes in list(groups):
            recs = groups[dtypes]
            for key in [k for k in recs if (name, k) not in before]:
                del recs[key]
            if not recs:
                del groups[dtypes]
        if not groups:
            del collector.calls[name]


def summary(result: Mapping[str, str | None]) -> list[str]:
    """One line per backward op: the forward that reached it, or that none did."""
    return [f"{k}: {v or 'not reached'}" for k, v in sorted(result.items())]


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
