"""Mutation benchmark: how many injected kernel bugs the harness catches, against an OpInfo loop.

Each mutant of ``benchmarks/mutants.py`` replaces one kernel of the reference backend ``mlu``
(``kernels.install(overrides=...)``). For each mutant, in a worker process (two by default):

* **harness** — the engine runs every default check (``--checks``: those named, or ``all``) on exactly the
  mutated overload, as ``conformance run --backend mlu --ops NAME`` would, with the packaged
  expected failures applied; at the default depth and at 10x. The mutant is *caught* when some
  failure is reported that is not an expected failure and that the unmodified backend does not
  also report for that item (compared by failure fingerprint, see ``conformance.engine``).
* **OpInfo loop** — every torch OpInfo whose samples reach the mutated overload's base name (found
  by recording the aten calls of its CPU samples), every dtype of the twelve it supports, every
  sample: CPU against ``mlu`` with ``torch.testing.assert_close`` (function variant; the in-place /
  out= variant for in-place / out= overloads). Caught when a sample that agrees on the unmodified
  backend disagrees on the mutant.

The unmodified backend runs on the same overloads at both depths: its unexpected failures are
the harness's *false failures*. Output: one table row per mutant and the totals.

    python benchmarks/bench_mutants.py [--only NAME,...] [--workers 2] [--no-deep] [--no-opinfo]
        [--deep-all] [--json FILE] [--checks LIST|all] [--seed N]

``--no-deep`` skips the 10x runs; by default a mutant already caught at the default depth is not
rerun at 10x (counted caught there too; ``--deep-all`` reruns it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

DEFAULT_DEPTH = 10  # the engine's default max_examples
CHECKS_ENV = "OPCONFORM_BENCH_CHECKS"  # --checks, read by the worker processes
SEED_ENV = "OPCONFORM_BENCH_SEED"  # --seed, read by the worker processes
DEEP = 10  # the "10x" factor


# ----------------------------------------------------------------------------- harness side


def failure_key(category: str | None, message: str) -> str:
    """The engine's failure fingerprint (an engine without one: category and message head)."""
    try:
        from conformance.engine.fingerprints import failure_key as key
    except ImportError:  # an engine from before distinct failures
        return f"{category}: {message.split(' [')[0]}"
    return key(category, message)


def _setup() -> Any:
    import warnings

    warnings.filterwarnings("ignore")
    import kernels
    from conformance.core.backends import resolve

    kernels.install()
    return resolve("mlu", without=())


def harness_failures(backend: Any, overload: str, max_examples: int,
                     inflight: Any = None) -> dict[str, Any]:
    """Run the default checks on ``overload``; return the unexpected failure keys, per item, and
    the verdicts in brief."""
    import opdb
    from conformance.checks.registry import CHECKS, DEFAULT_CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from conformance.store.expectations import expected_failures_path, load_for_backend
    from opdb.opdata import load_hints, load_tolerances

    db = opdb.load()
    sig = OpSignature.of(db[overload])
    hints = load_hints().for_op(overload)
    tolerances = load_tolerances()
    expectations = load_for_backend(expected_failures_path("mlu"))
    keys: set[str] = set()
    verdicts = []
    chosen = os.environ.get(CHECKS_ENV, "")  # --checks, handed to the worker processes
    checks = list(CHECKS) if chosen == "all" else chosen.split(",") if chosen \
        else list(DEFAULT_CHECKS)
    seed = int(os.environ.get(SEED_ENV, "0"))  # --seed, handed to the worker processes
    for check in checks:
        item = Item(sig, CHECKS[check])
        v = run_check(item, backend, settings=EngineSettings(max_examples=max_examples, seed=seed,
                                                             database=None),
                      hints=hints, tolerance_fn=tolerances,
                      repro_fn=lambda call: snippet(call, backend), inflight=inflight,
                      expected=expectations.matcher(item.id))
        failures = list(getattr(v, "failures", ()) or ())
        if v.verdict == "fail" and not failures:  # an engine without distinct failures
            failures = [{"category": v.category, "message": v.message, "expected": v.expected}]
        for f in failures:
            f = f if isinstance(f, dict) else f.to_json()
            if not f.get("expected"):
                key = f.get("key") or failure_key(f["category"], f["message"])
                keys.add(f"{check}|{key}")
        verdicts.append({"check": check, "verdict": v.verdict, "category": v.category,
                         "expected": bool(v.expected), "message": v.message[:160],
                         "examples": v.examples, "failures": len(failures)})
    return {"keys": sorted(keys), "verdicts": verdicts}


def _inflight(marks: str) -> Any:
    """This worker's about-to-run file (the engine's), read back if the worker dies."""
    from conformance.core.inflight import Inflight

    return Inflight(Path(marks) / f"{os.getpid()}.json")


def _mark(marks: str, task: str | None) -> None:
    path = Path(marks) / f"{os.getpid()}.task"
    if task is None:
        path.unlink(missing_ok=True)
        path.with_suffix(".json").unlink(missing_ok=True)
    else:
        path.write_text(task)


def _baseline_task(overload: str, depths: list[int], marks: str) -> dict[str, Any]:
    backend = _setup()
    _mark(marks, f"baseline:{overload}")
    inflight = _inflight(marks)
    t0 = time.perf_counter()
    out: dict[str, Any] = {str(d): harness_failures(backend, overload, d, inflight)
                           for d in depths}
    _mark(marks, None)
    out["seconds"] = time.perf_counter() - t0
    return out


def _mutant_task(name: str, depths: list[int], baseline: dict[str, list[str]],
                 deep_all: bool, marks: str) -> dict[str, Any]:
    from mutants import MUTANTS

    import kernels

    backend = _setup()
    _mark(marks, f"mutant:{name}")
    inflight = _inflight(marks)
    m = next(m for m in MUTANTS if m.name == name)
    kernels.install(overrides={m.overload: m.kernel()})
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        for d in depths:
            if d != depths[0] and out[str(depths[0])]["caught"] and not deep_all:
                out[str(d)] = {**out[str(depths[0])], "inferred": True}
                continue
            r = harness_failures(backend, m.overload, d, inflight)
            new = sorted(set(r["keys"]) - set(baseline.get(str(d), [])))
            out[str(d)] = {"caught": bool(new), "new": new[:4], "verdicts": r["verdicts"]}
    finally:
        kernels.install()
    _mark(marks, None)
    out["seconds"] = time.perf_counter() - t0
    return out


# ----------------------------------------------------------------------------- OpInfo side


def _opinfo_calls(info: Any, dtypes: Iterable[Any], limit: int = 3) -> set[str]:
    """Base names of the aten overloads a few of ``info``'s CPU samples call."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class Rec(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.add(func._schema.name.split("::")[-1])
            return func(*args, **(kwargs or {}))

    for dtype in dtypes:
        try:
            samples = list(itertools.islice(info.sample_inputs("cpu", dtype), limit))
        except Exception:  # noqa: BLE001
            continue
        for s in samples:
            for fn in (info.op, info.inplace_variant):
                if fn is None:
                    continue
                try:
                    args = s.transform(lambda t: t.clone() if isinstance(t, torch.Tensor) else t)
                    with Rec():
                        fn(args.input, *args.args, **args.kwargs)
                except Exception:  # noqa: BLE001
                    pass
    return {n.rstrip("_") for n in seen}


def _twelve() -> set[Any]:
    import torch

    from opdb.dtypes import DTYPE_NAMES

    return {getattr(torch, n) for n in DTYPE_NAMES}


def opinfo_map() -> dict[str, list[str]]:
    """aten base name -> the OpInfo keys (``name|variant_test_name``) whose samples call it."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    twelve = _twelve()
    out: dict[str, list[str]] = {}
    probe = [torch.float32, torch.int64]
    for info in op_db:
        dts = [d for d in probe if d in set(info.supported_dtypes("cpu")) & twelve]
        calls = _opinfo_calls(info, dts)
        for b in calls:
            out.setdefault(b, []).append(f"{info.name}|{info.variant_test_name}")
    return out


def _run_opinfo(keys: list[str], variant: str, device: str) -> list[bool | None]:
    """Per (OpInfo, dtype, sample): True agree, False disagree, None CPU rejected / skipped."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    twelve = _twelve()
    by_key = {f"{o.name}|{o.variant_test_name}": o for o in op_db}
    results: list[bool | None] = []

    def to(x: Any, dev: str) -> Any:
        return torch.utils._pytree.tree_map(
            lambda t: t.to(dev) if isinstance(t, torch.Tensor) else t, x)

    for key in keys:
        info = by_key[key]
        fn = info.inplace_variant if variant == "inplace" else info.op
        if fn is None or (variant == "out" and not info.supports_out):
            continue
        for dtype in sorted(set(info.supported_dtypes("cpu")) & twelve, key=str):
            try:
                samples = list(info.sample_inputs("cpu", dtype))
            except Exception:  # noqa: BLE001
                continue
            for sample in samples:
                def call(s: Any, dev: str, out_like: Any = None, fn: Any = fn) -> Any:
                    kw = dict(s.kwargs)
                    if variant == "out":
                        kw["out"] = to(out_like, dev)
                    res = fn(s.input, *s.args, **kw)
                    return (res, kw.get("out"), s.input) if variant != "function" else res
                try:
                    cpu_s = sample.transform(lambda t: t.clone() if isinstance(t, torch.Tensor)
                                             else t)
                    out_like = None
                    if variant == "out":
                        ref = fn(cpu_s.input, *cpu_s.args, **cpu_s.kwargs)
                        if not isinstance(ref, torch.Tensor):
                            results.append(None)
                            continue
                        out_like = torch.empty(0, dtype=ref.dtype)
                        cpu_s = sample.transform(lambda t: t.clone()
                                                 if isinstance(t, torch.Tensor) else t)
                    expected = call(cpu_s, "cpu", out_like)
                except Exception:  # noqa: BLE001
                    results.append(None)
                    continue
                try:
                    dev_s = sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor)
                                             else t)
                    actual = call(dev_s, device, out_like)
                    torch.testing.assert_close(to(actual, "cpu"), expected, equal_nan=True,
                                               check_device=False)
                    results.append(True)
                except Exception:  # noqa: BLE001
                    results.append(False)
    return results


def _variant(overload: str) -> str:
    import opdb

    kind = opdb.load()[overload].kind
    return {"inplace": "inplace", "out": "out"}.get(kind, "function")


_OPINFO_BASE: dict[tuple[str, str], list[bool | None]] = {}  # per worker process


def _opinfo_map_task(bases: list[str], marks: str) -> dict[str, list[str]]:
    """The OpInfo map, cached in .conformance/ per torch version (recording takes a minute)."""
    import torch

    _setup()
    cache = Path(".conformance") / f"bench-mutants-opinfo-map-{torch.__version__}.json"
    if cache.exists():
        known = json.loads(cache.read_text())
    else:
        _mark(marks, "opinfo-map")
        known = opinfo_map()
        _mark(marks, None)
        cache.parent.mkdir(exist_ok=True)
        cache.write_text(json.dumps(known, indent=0, sort_keys=True))
    return {b: _closest(b, known.get(b, [])) for b in bases}


#: OpInfos per mutated overload in the loop: those named after it first, then the others that
#: reach it, in op_db order (``_to_copy`` is reached by 44; running them all costs minutes).
MAX_OPINFOS = 6


def _closest(base: str, keys: list[str]) -> list[str]:
    named = [k for k in keys if k.split("|")[0].split(".")[-1].rstrip("_") == base]
    return (named + [k for k in keys if k not in named])[:MAX_OPINFOS]


def _opinfo_task(name: str, keys: list[str], marks: str) -> dict[str, Any]:
    """One mutant through the OpInfo loop (the unmodified backend's answers cached per worker)."""
    from mutants import MUTANTS

    import kernels

    backend = _setup()
    m = next(m for m in MUTANTS if m.name == name)
    base = m.overload.split(".")[0].rstrip("_")
    variant = _variant(m.overload)
    ck = (base, variant)
    if ck not in _OPINFO_BASE:
        _mark(marks, f"opinfo:{name}")
        kernels.install()
        _OPINFO_BASE[ck] = _run_opinfo(keys, variant, backend.device)
    _mark(marks, f"opinfo:{name}")
    kernels.install(overrides={m.overload: m.kernel()})
    try:
        mut = _run_opinfo(keys, variant, backend.device)
    finally:
        kernels.install()
    _mark(marks, None)
    base_r = _OPINFO_BASE[ck]
    caught = any(b is True and x is False for b, x in zip(base_r, mut, strict=False))
    return {"caught": caught, "opinfos": len(keys), "samples": len(mut), "variant": variant,
            "false": sum(b is False for b in base_r)}


class Tasks:
    """Tasks on a pool of spawned workers that survives a worker killed by a crashing kernel.

    Each task marks itself in ``marks``; when the pool breaks, the tasks that were running are
    rerun once (the crash may have been the other worker's), and a task that kills its worker
    twice gets ``{"crash": side}`` as its result (``side``: what the engine's about-to-run file
    says was running, ``cpu`` or the device)."""

    def __init__(self, workers: int, marks: str) -> None:
        self.workers, self.marks = max(1, workers), marks
        self.crashes: dict[str, int] = {}

    def run(self, tasks: dict[str, tuple[Any, tuple[Any, ...]]]) -> dict[str, Any]:
        from concurrent.futures.process import BrokenProcessPool

        ctx = __import__("multiprocessing").get_context("spawn")
        results: dict[str, Any] = {}
        pending = dict(tasks)
        while pending:
            broken = False
            with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
                futs = {tid: pool.submit(fn, *args, self.marks) for tid, (fn, args) in
                        pending.items()}
                for tid, fut in futs.items():
                    try:
                        results[tid] = fut.result()
                        pending.pop(tid)
                    except BrokenProcessPool:
                        broken = True
                        break
            if broken:
                for marker in Path(self.marks).glob("*.task"):
                    tid = marker.read_text()
                    side = (json.loads((marker.with_suffix(".json")).read_text() or "{}")
                            .get("side") if marker.with_suffix(".json").exists() else None)
                    marker.unlink()
                    self.crashes[tid] = self.crashes.get(tid, 0) + 1
                    if tid in pending and self.crashes[tid] >= 2:
                        results[tid] = {"crash": side or "?"}
                        pending.pop(tid)
        return results


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated mutant names")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-deep", action="store_true", help="skip the 10x-depth runs")
    parser.add_argument("--deep-all", action="store_true",
                        help="rerun at 10x even mutants caught at the default depth")
    parser.add_argument("--no-opinfo", action="store_true", help="skip the OpInfo loop")
    parser.add_argument("--json", default=None, help="also write the results as JSON")
    parser.add_argument("--checks", default=None,
                        help="comma-separated checks, or 'all' (default: the default checks)")
    parser.add_argument("--seed", type=int, default=0,
                        help="the engine's seed (default 0, the CLI's): a change to what is "
                             "drawn is judged over several, not by one seed's luck")
    args = parser.parse_args(argv)
    if args.checks:
        os.environ[CHECKS_ENV] = args.checks
    os.environ[SEED_ENV] = str(args.seed)

    from mutants import MUTANTS

    chosen = list(MUTANTS)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {m.name for m in MUTANTS})
        if unknown:
            print(f"bench_mutants: error: unknown mutant(s): {', '.join(unknown)}",
                  file=sys.stderr)
            return 2
        chosen = [m for m in MUTANTS if m.name in wanted]
    depths = [DEFAULT_DEPTH] if args.no_deep else [DEFAULT_DEPTH, DEFAULT_DEPTH * DEEP]
    overloads = sorted({m.overload for m in chosen})
    t0 = time.perf_counter()
    import tempfile

    marks = tempfile.mkdtemp(prefix="bench-mutants-")
    runner = Tasks(args.workers, marks)
    first: dict[str, tuple[Any, tuple[Any, ...]]] = {
        f"baseline:{o}": (_baseline_task, (o, depths)) for o in overloads}
    bases = sorted({m.overload.split(".")[0].rstrip("_") for m in chosen})
    if not args.no_opinfo:
        first["opinfo-map"] = (_opinfo_map_task, (bases,))
    done = runner.run(first)
    empty = {"keys": [], "verdicts": []}
    baseline = {o: done[f"baseline:{o}"] if "crash" not in done[f"baseline:{o}"]
                else {**{str(d): empty for d in depths}, "crash": done[f"baseline:{o}"]}
                for o in overloads}
    mapping = done.get("opinfo-map") or {}
    if "crash" in mapping:
        mapping = {}
    t_base = time.perf_counter() - t0
    second: dict[str, tuple[Any, tuple[Any, ...]]] = {
        f"mutant:{m.name}": (_mutant_task, (m.name, depths,
                                            {str(d): baseline[m.overload][str(d)]["keys"]
                                             for d in depths}, args.deep_all))
        for m in chosen}
    if not args.no_opinfo:
        for m in chosen:
            second[f"opinfo:{m.name}"] = (_opinfo_task, (
                m.name, mapping.get(m.overload.split(".")[0].rstrip("_"), [])))
    done = runner.run(second)
    results = {}
    for m in chosen:
        r = done[f"mutant:{m.name}"]
        if "crash" in r:  # the process died running it: the harness reports a crash verdict
            caught = r["crash"] != "cpu"
            r = {str(d): {"caught": caught, "crash": r["crash"]} for d in depths}
        results[m.name] = r
    opinfo = {}
    if not args.no_opinfo:
        for m in chosen:
            r = done[f"opinfo:{m.name}"]
            opinfo[m.name] = r if "crash" not in r else {"caught": True, "crash": True,
                                                         "opinfos": -1, "false": 0}
    wall = time.perf_counter() - t0

    # -- report ---------------------------------------------------------------------------
    d0, d1 = str(depths[0]), str(depths[-1])
    print(f"{'mutant':28} {'class':10} {'overload':34} {'harness':>8} {'10x':>5} {'OpInfo':>7}"
          f"  needs")
    caught = {"default": 0, "deep": 0, "opinfo": 0}
    missed = []
    for m in chosen:
        r = results[m.name]
        c0 = r[d0]["caught"]
        c1 = r[d1]["caught"] if len(depths) > 1 else None
        oi = opinfo.get(m.name, {}).get("caught") if opinfo else None
        caught["default"] += c0
        caught["deep"] += bool(c1)
        caught["opinfo"] += bool(oi)
        if not c0:
            missed.append(m)

        def yn(x: bool | None) -> str:
            return "-" if x is None else ("yes" if x else "no")

        print(f"{m.name:28} {m.cls:10} {m.overload:34} {yn(c0):>8} {yn(c1):>5} {yn(oi):>7}"
              f"  {m.needs or ''}")
    n = len(chosen)
    false_failures = {d: sorted({f"{o}::{k}" for o in overloads for k in baseline[o][d]["keys"]})
                      for d in map(str, depths)}
    print()
    print(f"caught at default depth ({DEFAULT_DEPTH} examples): {caught['default']}/{n} "
          f"({100 * caught['default'] / n:.0f}%)")
    if len(depths) > 1:
        print(f"caught at 10x depth ({DEFAULT_DEPTH * DEEP} examples): {caught['deep']}/{n} "
              f"({100 * caught['deep'] / n:.0f}%)")
    if opinfo:
        print(f"caught by the OpInfo loop: {caught['opinfo']}/{n} "
              f"({100 * caught['opinfo'] / n:.0f}%); mutants no OpInfo reaches: "
              f"{sum(1 for v in opinfo.values() if not v['opinfos'])}")
    for d, ff in false_failures.items():
        print(f"false failures of the unmodified backend at depth {d}: {len(ff)} "
              f"(distinct unexpected failures over {len(overloads)} overloads)"
              + ("".join(f"\n    {x}" for x in ff[:20])))
    if opinfo:
        print(f"OpInfo loop disagreements on the unmodified backend (sample count, summed over "
              f"mutants): {sum(v['false'] for v in opinfo.values())}")
    print(f"wall {wall:.0f}s (baseline {t_base:.0f}s), {args.workers} workers")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"mutants": {m.name: {"class": m.cls, "overload": m.overload, "bug": m.bug,
                                  "needs": m.needs, "harness": results[m.name],
                                  "opinfo": opinfo.get(m.name)} for m in chosen},
             "baseline": baseline, "false_failures": false_failures,
             "caught": caught, "total": n, "wall_s": wall}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
