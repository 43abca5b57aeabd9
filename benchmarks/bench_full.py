"""A full ``conformance run``: wall time, peak memory per worker, time per check, slowest overloads.

Anchor: the same run with the default checks (``DEFAULT_CHECKS``), measured side by side in this
script, one after the other, with the same workers and seed. The measured run adds the checks named
by ``--checks`` (default: every check in the table). Targets (issue 11.8): all checks on 2 cores in
≤ 15 minutes and ≤ 2 GiB per worker.

    python benchmarks/bench_full.py [--ops REGEX] [--checks LIST] [-n 2] [--no-anchor] [--keep DIR]
    python benchmarks/bench_full.py --results FILE   # only summarize a results file

Each run starts in an empty working directory of its own, so with an empty example database
(``.conformance/``), as from a fresh clone: neither run replays what the other found.

Peak memory is each process's high-water mark (``VmHWM`` in ``/proc``), polled once a second over
the ``conformance run`` process and its pytest-xdist workers (Linux; elsewhere the largest child's
``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            kids.append(int(entry))
    return kids


def _hwm_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakWatcher(threading.Thread):
    """Polls the peak RSS of ``root`` and every descendant; ``peaks[pid]`` in KiB."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        if not os.path.isdir("/proc"):
            return
        while not self.stop.wait(1.0):
            todo = [self.root]
            while todo:
                pid = todo.pop()
                self.peaks[pid] = max(self.peaks.get(pid, 0), _hwm_kib(pid))
                todo += _children(pid)


def run_once(label: str, args: argparse.Namespace, checks: str | None, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "conformance", "run", "--backend", args.backend, "-o", str(out),
           "--overwrite", "-n", str(args.workers), "--seed", str(args.seed)]
    if checks:
        cmd += ["--checks", checks]
    if args.ops:
        cmd += ["--ops", args.ops]
    print(f"[{label}] {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    # each run in a directory of its own: its example database (.conformance/ under the working
    # directory) starts empty, as in a fresh clone, and one run does not warm the other's
    home = out.parent / f"{out.stem}-cwd"
    home.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=home)
    watch = PeakWatcher(proc.pid)
    watch.start()
    code = proc.wait()
    watch.stop.set()
    watch.join()
    wall = time.perf_counter() - t0
    peaks = sorted(watch.peaks.values(), reverse=True)
    if not peaks:  # no /proc: the largest waited-for descendant
        peaks = [resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]
    return {"label": label, "exit": code, "wall_s": wall, "peak_kib": peaks,
            **summarize(out)}


def summarize(path: Path) -> dict[str, Any]:
    from conformance.store.results import read_records

    recs = [r for r in read_records(path) if r.get("record") == "verdict"]
    by_check: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    seconds: collections.Counter[str] = collections.Counter()
    per_op: collections.Counter[str] = collections.Counter()
    examples = 0
    for r in recs:
        by_check[r["check"]][r["verdict"]] += 1
        seconds[r["check"]] += r["duration_s"]
        per_op[r["overload"]] += r["duration_s"]
        examples += r["examples"]
    return {"verdicts": len(recs), "examples": examples,
            "by_check": {k: dict(v) for k, v in sorted(by_check.items())},
            "check_s": dict(seconds), "slowest": per_op.most_common(10)}


def show(res: dict[str, Any]) -> None:
    print(f"\n== {res.get('label', 'results')}")
    if "wall_s" in res:
        peaks = res["peak_kib"]
        print(f"wall {res['wall_s'] / 60:.1f} min (exit {res['exit']}); peak RSS: largest process "
              f"{peaks[0] / 2**20:.2f} GiB, then "
              f"{', '.join(f'{p / 2**20:.2f}' for p in peaks[1:4]) or '-'} GiB")
    print(f"{res['verdicts']} verdicts, {res['examples']} checked examples")
    total = sum(res["check_s"].values()) or 1.0
    for check, counts in res["by_check"].items():
        secs = res["check_s"].get(check, 0.0)
        tally = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"  {check:<14} {secs:8.0f} s ({100 * secs / total:4.1f}%)  {tally}")
    print("ten slowest overloads (seconds over all checks):")
    for name, secs in res["slowest"]:
        print(f"  {secs:7.1f}  {name}")


def main() -> int:
    from conformance.checks.registry import CHECKS, DEFAULT_CHECKS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="mlu")
    p.add_argument("--ops", default=None, metavar="REGEX")
    p.add_argument("--checks", default=",".join(CHECKS), metavar="LIST",
                   help="checks of the measured run (default: all)")
    p.add_argument("-n", "--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-anchor", action="store_true", help="skip the default-checks run")
    p.add_argument("--results", metavar="FILE", help="only summarize this results file")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--keep", metavar="DIR",
                   help="keep the runs' results files (anchor.jsonl, measured.jsonl) in DIR")
    args = p.parse_args()
    if args.results:
        show(summarize(Path(args.results)))
        return 0
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-full-") as tmp:
        if not args.no_anchor:
            runs.append(run_once(f"anchor: default checks ({','.join(DEFAULT_CHECKS)})", args,
                                 None, Path(tmp) / "anchor.jsonl"))
        runs.append(run_once(f"measured: {args.checks}", args, args.checks,
                             Path(tmp) / "measured.jsonl"))
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            for name in ("anchor.jsonl", "measured.jsonl"):
                if (Path(tmp) / name).exists():
                    shutil.copy(Path(tmp) / name, Path(args.keep) / name)
    for res in runs:
        show(res)
    if len(runs) == 2:
        print(f"\nwall ratio measured/anchor: {runs[1]['wall_s'] / runs[0]['wall_s']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
