"""Crash attribution: who killed the process, the backend or CPU (the oracle)?

A process that dies while the backend runs a call is not always the backend's fault: an earlier
oracle call (out-of-range indices, say) can corrupt memory and abort later. Before a ``crash``
verdict is given, the call the in-flight marker recorded is replayed from its repro snippet in
two fresh interpreters, one running only the CPU side, one only the backend side, and the verdict
follows who crashes alone:

* the backend side crashes alone, CPU's does not -> ``crash`` (the backend's), or, for an op
  whose ATen composite reads host memory (``opdb/data/host_composites.yaml``) on a backend whose
  memory is not (``Backend.host_memory`` false), ``unsupported`` / ``host_composite``: the
  backend needs its own kernel for it;
* the CPU side crashes alone, whether the backend's does too or not -> ``skip`` /
  ``cpu_crashed``: the oracle's call kills a process, so there is no answer to hold the backend
  to (when both die, the message says so);
* neither crashes alone -> ``crash`` that says so: the death depended on what ran before it in
  that process, so the attribution is open.

Beside the two replays the backend's side runs once more to see where it dies
(:mod:`conformance.pytest_plugin.backtraces`: gdb's native frames where gdb is there, else
faulthandler's Python stack); when its replay crashed, the record keeps the top ``frames`` and
what gave them (``frames_by``), by which the report groups crashes.

Also :func:`settle_orphan` and the ``-n 0`` sentinel (:func:`main`): a run without worker
processes dies with the backend; a small watcher process then says what was running, replays
it, and writes the verdict, so a ``--resume`` does not run the killing item again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.pytest_plugin import backtraces
from opdb.outcomes import HOST_COMPOSITE

if TYPE_CHECKING:
    from conformance.store.expectations import Expectations
    from opdb.hostmemory import HostComposite


#: Seconds a replay may take (one interpreter start, the backend's import, one call).
REPLAY_TIMEOUT = 90.0


def exit_outcome(returncode: int | None) -> str:
    if returncode is None:
        return "timeout"
    if returncode == 0:
        return "ok"
    if returncode < 0:
        try:
            return f"crashed ({signal.Signals(-returncode).name})"
        except ValueError:
            return f"crashed (signal {-returncode})"
    if returncode == 1:
        return "ok"  # a Python exception is an answer (show() catches the op's own), not a death
    return f"crashed (exit status {returncode})"


def one_side(repro: str, side: str) -> str:
    """The repro snippet made to run only ``show(side)``."""
    body = [line for line in repro.splitlines() if not line.startswith("show(")]
    return "\n".join([*body, f"show({side!r})", ""])


def replay(repro: str, side: str, *, timeout: float = REPLAY_TIMEOUT,
           cwd: str | os.PathLike[str] | None = None) -> str:
    """Run one side of ``repro`` in a fresh interpreter: ``ok``, ``crashed (SIGSEGV)``, ...."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
           "PYTHONFAULTHANDLER": ""}
    proc = subprocess.Popen([sys.executable, "-c", one_side(repro, side)], cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return exit_outcome(proc.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout"


#: The verdict of a crash that ``opdb/data/host_composites.yaml`` explains (its category's
#: line in ``opdb/outcomes.py`` says why ``unsupported``).
HOST_COMPOSITE_VERDICT = "unsupported"


def host_composite(overload: str, *, host_memory: bool) -> HostComposite | None:
    """The entry of ``overload`` among the ATen composites that read host memory, on a backend
    whose memory is not host memory; else ``None`` (and if the data cannot be read: a crash
    is then judged as any other)."""
    if host_memory:
        return None
    from opdb.errors import InputError
    from opdb.hostmemory import load_host_composites

    try:
        return load_host_composites().get(overload)
    except InputError:
        return None


def attribute(marker: Mapping[str, Any], *, device: str, timeout: float = REPLAY_TIMEOUT,
              cwd: str | os.PathLike[str] | None = None
              ) -> tuple[dict[str, str] | None, dict[str, Any]]:
    """Replay the marker's call, CPU alone and backend alone, side by side, and, beside them,
    the backend's side once more to see where it dies (:func:`backtraces.capture`: gdb, else
    faulthandler; alongside, so a crash costs the slowest of the runs, not their sum).

    Returns ``({"cpu": outcome, "backend": outcome}, {"frames": [...], "frames_by": "gdb"})``
    — the frames only when the backend's call crashed in the replay and frames came — or
    ``(None, {})`` when there is nothing to replay (no call was running, or it has no repro).
    """
    repro = marker.get("repro")
    if not repro or not marker.get("call"):
        return None, {}
    with ThreadPoolExecutor(3) as pool:
        cpu = pool.submit(replay, repro, "cpu", timeout=timeout, cwd=cwd)
        backend = pool.submit(replay, repro, device, timeout=timeout, cwd=cwd)
        where = pool.submit(backtraces.capture, one_side(repro, device), cwd=cwd)
        replayed = {"cpu": cpu.result(), "backend": backend.result()}
        got = where.result()
    if got is None or not replayed["backend"].startswith("crashed"):
        return replayed, {}
    return replayed, {"frames": list(got.frames), "frames_by": got.by}


def judge(replayed: Mapping[str, str] | None, *, composite: HostComposite | None = None,
          cpu_crashes: bool = False) -> tuple[str, str | None, str]:
    """(verdict, category, message tail) for a process that died in a backend call.
    ``composite``: the overload's entry among the ATen composites that read host memory, when
    the backend's memory is not host memory (:func:`host_composite`). ``cpu_crashes``: the
    hints say CPU (the oracle) kills or corrupts its process on some drawn inputs of the
    overload; a death neither call repeats alone is then put down to an earlier oracle call
    (``_fft_c2r.out``: CPU's plan with a bad last_dim_size corrupts the heap silently, and the
    next backend call aborts), not to the backend."""
    if replayed is None:
        return "crash", None, ""
    cpu, backend = replayed["cpu"], replayed["backend"]
    said = f"replayed alone in fresh processes: backend {backend}, CPU {cpu}"
    if backend.startswith("crashed") and cpu.startswith("crashed"):
        return ("skip", "cpu_crashed", f"; {said}: both calls kill a process alone, the "
                                       f"oracle's too, so the death is not attributed to the "
                                       f"backend")
    if backend.startswith("crashed"):
        if composite is not None:
            return (HOST_COMPOSITE_VERDICT, HOST_COMPOSITE,
                    f"; {said}: ATen's composite for {composite.name} reads host memory and "
                    f"the backend's memory is not host memory: the backend needs its own "
                    f"kernel for {composite.name} ({composite.reason})")
        return "crash", None, f"; {said}"
    if cpu.startswith("crashed"):
        return ("skip", "cpu_crashed", f"; {said}: the oracle's call kills a process, so the "
                                       f"death is not attributed to the backend")
    if cpu_crashes:
        return ("skip", "cpu_crashed", f"; {said}: neither call kills a process alone, and CPU "
                                       f"(the oracle) kills or corrupts its process on some "
                                       f"drawn inputs of this op (hints: cpu_crashes), so the "
                                       f"death is not attributed to the backend")
    return ("crash", None, f"; {said}: neither call kills a process alone, the death depended "
                           f"on what ran before it in that process")


#: Seconds a recorded-calls retry may take beyond the bound it is given (its item's ceiling:
#: the retry's own watchdog ends a hung call) (an interpreter start, the backend's import, the
#: op database).
RETRY_GRACE = 90.0


def retry_recorded(options: list[str], item: str, *, timeout: float,
                   cwd: str | os.PathLike[str] | None = None
                   ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """Run one (overload, check) on its recorded calls alone (:mod:`conformance.inputs.corpus`) in a
    fresh process: what the controller does when a schema-drawn example killed CPU (the
    oracle) before the item's recorded calls were tried.

    ``options`` are the plugin options of the run (backend, seed, hints, corpus, ...); ``item``
    is ``overload::check``. Returns ``(record, marker, outcome)``: the verdict record the retry
    wrote (``None`` if its process died), the about-to-run marker it left when it died (what
    it was running, on which side), and how the process ended (``ok``, ``crashed (SIGSEGV)``,
    ``timeout``).
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="conformance-retry-") as tmp:
        results = Path(tmp) / "retry.jsonl"
        argv = [sys.executable, "-m", "pytest", tmp, "-p", "conformance", *options,
                "--recorded-retry", item, "--results", str(results), "--rootdir", tmp,
                "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:xdist",
                "--noconftest", "-o", "addopts=", "-q"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            outcome = exit_outcome(proc.wait(timeout=timeout + RETRY_GRACE))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            outcome = "timeout"
        record = None
        try:
            for line in results.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                if rec.get("record") == "verdict" \
                        and f"{rec.get('overload')}::{rec.get('check')}" == item:
                    record = rec
        except (OSError, ValueError):
            pass
        marker = None
        for path in (Path(tmp) / ".conformance" / "inflight").glob("*/main.json"):
            try:
                got = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # empty: nothing was running
            if isinstance(got, dict) and got.get("state") in ("running", "timeout"):
                marker = got
        return record, marker, outcome


def settle_orphan(marker_path: Path, results: Path, *, cwd: str | os.PathLike[str] | None = None,
                  say: Any = None, expectations: Expectations | None = None
                  ) -> dict[str, Any] | None:
    """A process died running the item in ``marker_path``: replay it and, if a fresh process
    dies on it too, append its verdict to ``results`` (else ``--resume`` reruns it). Its
    ``expected`` is the reason of the entry of ``expectations`` that explains the verdict's
    message (a crash has no category: the message, with the replay's ``crashed (SIGABRT)``)."""
    from conformance.core.inflight import Inflight

    marker = Inflight.read(marker_path)  # the repro rendered from its kept call, if any
    if not isinstance(marker, dict) or marker.get("state") not in ("running", "timeout"):
        return None
    item = f"{marker.get('overload')}::{marker.get('check')}"
    call = marker.get("call")
    side = marker.get("side")
    if say:  # first, before anything slow: what was running when it died
        say(f"conformance run: the process died while running {item}"
            + (f": {call} on {side}" if call else ""))
    from conformance.store.results import ResultsWriter, load_for_resume

    state = load_for_resume(results) if results.exists() else None
    if state is None or item in state.done:
        return None
    run = state.run
    started = marker.get("started")
    # an outside kill (OOM killer, CI timeout) looks the same as a crash: an item is pinned
    # only on evidence: a fresh process dies on its call, or the run died on it twice
    seen = _seen(marker_path)
    twice = item in seen
    replayed: dict[str, str] | None = None
    if marker.get("state") == "timeout":
        tail = ("; it ran past its ceiling" if marker.get("timeout_of") == "item"
                else "; a call ran past the per-call timeout")
        verdict, category = "timeout", None
    elif side == "cpu":
        verdict, category, tail = "skip", "cpu_crashed", "; CPU (the oracle) was running"
        if not twice:
            _not_recorded(marker_path, seen, item, say, "the oracle's call was running")
            return None
        tail += " (the run died on this item twice)"
    else:
        replayed, where = attribute(marker, device=str(run.get("device")), cwd=cwd)
        verdict, category, tail = judge(replayed, composite=host_composite(
            str(marker.get("overload")), host_memory=run.get("host_memory") is not False))
        if replayed and verdict == "crash" and not replayed["backend"].startswith("crashed"):
            if not twice:
                _not_recorded(marker_path, seen, item, say, "replayed alone, neither side crashes")
                return None
            tail += " (the run died on this item twice)"
    rec: dict[str, Any] = {
        "record": "verdict", "overload": marker.get("overload"), "check": marker.get("check"),
        "backend": run.get("backend"), "verdict": verdict, "category": category,
        "message": f"the process running it died{tail}"
                   + (f"; it was running {call} on {side}" if call else ""),
        "examples": 0, "duration_s": round(time.time() - started, 3) if started else 0.0,
        "seed": run.get("seed"), "torch_version": run.get("torch_version"),
        "missing_op": marker.get("overload") if category == HOST_COMPOSITE else None,
        "repro": marker.get("repro") if verdict in ("crash", HOST_COMPOSITE_VERDICT) else None,
        "expected": None, "dtypes": {}}
    if replayed is not None:
        rec["replay"] = replayed
        rec.update(where)
    if expectations is not None:
        rec["expected"] = expectations.reason_for(item, None, rec["message"])
    writer = ResultsWriter(results, truncate=False)
    writer.write(rec)
    writer.close()
    _clear(marker_path)
    if say:
        say(f"conformance run: recorded {item} as {verdict}"
            + (f" ({category})" if category else "") + f" in {results}; continue with --resume")
    return rec


def _seen(marker_path: Path) -> list[str]:
    try:
        data = json.loads((marker_path.parent / "orphans.json").read_text(encoding="utf-8"))
        return [str(x) for x in data] if isinstance(data, list) else []
    except (OSError, ValueError):
        return []


def _not_recorded(marker_path: Path, seen: list[str], item: str, say: Any, why: str) -> None:
    """First death on ``item`` without evidence against it: remember it, let --resume rerun it."""
    try:
        (marker_path.parent / "orphans.json").write_text(json.dumps([*seen, item]))
    except OSError:
        pass
    if say:
        say(f"conformance run: {why}; not recorded: --resume runs {item} again (a second "
            f"death on it is recorded)")
    _clear(marker_path)


def _clear(marker_path: Path) -> None:
    try:
        marker_path.write_text("")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.pytest_plugin.crashes RESULTS ROOTDIR [EXPECTED_FAILURES]``: wait for the
    parent's stdin pipe to close; if it closed without ``done``, the parent died: settle what it
    was running (its verdict explained by the run's expected-failures file, when given)."""
    args = argv if argv is not None else sys.argv[1:]
    results, rootdir = args[:2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    data = sys.stdin.read()
    if data.strip().endswith("done"):
        return 0
    try:
        run = json.loads(Path(results).read_text(encoding="utf-8").split("\n", 1)[0])
        run_id = run["run_id"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    marker = Path(rootdir) / ".conformance" / "inflight" / str(run_id) / "main.json"

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    expectations = None
    if len(args) > 2:
        from conformance.store.expectations import load_for_backend

        try:
            expectations = load_for_backend(args[2])
        except Exception as exc:  # noqa: BLE001 - the run read it already; never lose the verdict
            say(f"conformance run: expected failures not read ({exc})")
    settle_orphan(marker, Path(results), cwd=rootdir, say=say, expectations=expectations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
