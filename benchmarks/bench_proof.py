"""Backends that are right but are not CPU: full default runs, and every fail by category and cause.

The proof (issue 25, item 8): a backend whose answers are as right as CPU's but computed
otherwise must get no fail that is the harness's own — every fail must be a real difference of
that backend. The backends are ``benchmarks/proof_backends`` (float64 then rounded, inputs in
another layout, subnormals flushed and declared), each a boxed CPU fallback; and the reference
backend ``mlu`` with its expected-failures file emptied (every one of its fails counted).

    python benchmarks/bench_proof.py [--backends wide,reorder,ftz,mlu] [-n 2] [--dir DIR]
    python benchmarks/bench_proof.py --summarize DIR   # only summarize DIR/<backend>/<backend>.jsonl

Each run is its own ``conformance run`` process (one PrivateUse1 backend per process) in
``DIR/<backend>/``, run one after the other, with an empty expected-failures file. Anchor: the
count of fails that are the harness's own, target 0 (classified by hand in docs/decisions.md,
"proof backends").
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
BACKENDS = {
    "wide": "privateuse1:proof_backends.wide",
    "reorder": "privateuse1:proof_backends.reorder",
    "ftz": "privateuse1:proof_backends.ftz",
    "mlu": "mlu",
}


def _run(short: str, folder: Path, workers: int) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    empty = folder / "empty.yaml"
    empty.write_text("")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH), env.get("PYTHONPATH")]))
    cmd = ["conformance", "run", "--backend", BACKENDS[short], "-n", str(workers),
           "--expected-failures", str(empty), "-o", str(folder / f"{short}.jsonl"), "--overwrite"]
    start = time.monotonic()
    with open(folder / "run.log", "w") as log:
        subprocess.run(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return time.monotonic() - start


def _verdicts(path: Path) -> list[dict[str, object]]:
    out = []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("record") == "verdict":
                out.append(rec)
    return out


def _causes(path: Path) -> list[dict[str, str]]:
    text = subprocess.run(["conformance", "report", "--table", "causes", "--format", "csv",
                           "-o", "-", str(path)], capture_output=True, text=True,
                          check=True).stdout
    csv.field_size_limit(sys.maxsize)  # a cause lists every overload it fails in
    return list(csv.DictReader(io.StringIO(text)))


def _explained(short: str, fails: list[dict[str, object]]) -> collections.Counter[str]:
    """How many fails each file explains: ``opdb/data/cpu_quirks.yaml`` (CPU and ATen, every
    backend), the backend's own expected-failures file (``mlu`` only), or neither."""
    from conformance.store.expectations import (
        CPU_QUIRKS,
        expected_failures_path,
        load_expectations,
    )

    quirks = load_expectations(CPU_QUIRKS)
    own = load_expectations(expected_failures_path(short)) if short == "mlu" else None
    found: collections.Counter[str] = collections.Counter()
    for v in fails:
        test_id = f"{v['overload']}::{v['check']}"
        args = (test_id, v["category"] and str(v["category"]), str(v["message"] or ""))
        if quirks.for_failure(*args) is not None:
            found["cpu_quirks"] += 1
        elif own is not None and own.for_failure(*args) is not None:
            found[f"{short}.yaml"] += 1
        else:
            found["neither"] += 1
    return found


def summarize(short: str, path: Path) -> None:
    verdicts = _verdicts(path)
    counts = collections.Counter(str(v["verdict"]) for v in verdicts)
    fails = [v for v in verdicts if v["verdict"] == "fail"]
    crashes = [v for v in verdicts if v["verdict"] == "crash"]
    by_cat = collections.Counter(str(v["category"]) for v in fails)
    passes = collections.Counter(str(v["category"]) for v in verdicts
                                 if v["verdict"] == "pass" and v["category"])
    print(f"== {short}: {len(verdicts)} verdicts, {dict(sorted(counts.items()))}")
    print(f"   fails by category: {dict(by_cat.most_common())}")
    print(f"   passes with a note: {dict(passes.most_common())}")
    print(f"   fails explained by: {dict(_explained(short, fails + crashes).most_common())}")
    for row in _causes(path):
        print(f"   {row['failures']:>3}  {row['checks']:<12} {row['key'][:100]}  "
              f"[{row['overload_names'][:80]}]")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("-n", type=int, default=2, help="workers per run (default 2)")
    ap.add_argument("--dir", default="proof-runs", help="folder of the runs (default proof-runs)")
    ap.add_argument("--summarize", metavar="DIR", help="only summarize the runs in DIR")
    args = ap.parse_args(argv)
    shorts = [s for s in args.backends.split(",") if s]
    unknown = [s for s in shorts if s not in BACKENDS]
    if unknown:
        print(f"bench_proof: error: unknown backends {unknown}; one of {list(BACKENDS)}",
              file=sys.stderr)
        return 2
    root = Path(args.summarize or args.dir).resolve()
    for short in shorts:
        folder = root / short
        if not args.summarize:
            took = _run(short, folder, args.n)
            print(f"{short}: ran in {took / 60:.1f} min")
        results = folder / f"{short}.jsonl"
        if results.exists():
            summarize(short, results)
        else:
            print(f"== {short}: no results ({results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
