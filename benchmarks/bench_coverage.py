"""Wall time of ``conformance coverage --backend cpu --format json`` against the anchor
``python -c "import torch"``, measured side by side (interleaved) in the same run.

Target: the coverage command takes at most 0.5 s more than importing torch.

    python benchmarks/bench_coverage.py [--repeat N] [--backend cpu]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET_S = 0.5


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args(argv)

    anchor = [sys.executable, "-c", "import torch"]
    commands = {
        "import torch (anchor)": anchor,
        f"coverage --backend {args.backend} --format json": [
            sys.executable, "-m", "conformance", "coverage", "--backend", args.backend,
            "--format", "json",
        ],
        "ops --format json": [sys.executable, "-m", "conformance", "ops", "--format", "json"],
    }
    for cmd in commands.values():  # warm the file cache; not timed
        wall(cmd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            times[name].append(wall(cmd))

    base = statistics.median(times["import torch (anchor)"])
    print(f"{'command':<42} {'median s':>9} {'min s':>7} {'vs anchor':>10}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<42} {med:9.3f} {min(ts):7.3f} {med - base:+10.3f}")
    cov_name = f"coverage --backend {args.backend} --format json"
    extra = statistics.median(times[cov_name]) - base
    verdict = "meets" if extra <= TARGET_S else "MISSES"
    print(f"\ncoverage costs {extra:+.3f} s over importing torch; {verdict} the target "
          f"(<= {TARGET_S:.1f} s more) [{args.repeat} interleaved runs each]")
    return 0 if extra <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
