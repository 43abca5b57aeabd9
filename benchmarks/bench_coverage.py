"""Wall time of ``conformance coverage --backend cpu --format json`` against the anchor
``python -c "import torch"``, measured side by side (interleaved) in the same run.

Targets: the coverage command takes at most 0.15 s more than importing torch with the op
database's cache warm (``opdb.cache``; a private cache directory, warmed by the untimed first
run), at most 0.5 s more without it (``--cache off``: the YAML parsed every run).

    python benchmarks/bench_coverage.py [--repeat N] [--backend cpu] [--cache warm|off]

Run it as a user's machine runs it: with bytecode written (``env -u PYTHONDONTWRITEBYTECODE``).
The CPU columns (the child's user + system seconds) hold where other jobs share the cores and
the wall times do not; the verdict is on wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_S = {"warm": 0.15, "off": 0.5}


def wall(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command (default 7)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--cache", choices=tuple(TARGET_S), default="warm",
                        help="the op database's on-disk cache: warm (default) or off")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as folder:
        env = {**os.environ, "OPCONFORM_CACHE_DIR": folder if args.cache == "warm" else "off"}
        return _bench(args, env)


def _bench(args: argparse.Namespace, env: dict[str, str]) -> int:
    target = TARGET_S[args.cache]

    anchor = "import torch (anchor)"
    commands = {
        anchor: [sys.executable, "-c", "import torch"],
        f"coverage --backend {args.backend} --format json": [
            sys.executable, "-m", "conformance", "coverage", "--backend", args.backend,
            "--format", "json",
        ],
        "ops --format json": [sys.executable, "-m", "conformance", "ops", "--format", "json"],
    }
    for cmd in commands.values():  # warm the file cache (and the op database's); not timed
        wall(cmd, env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            times[name].append(wall(cmd, env))

    def med(name: str, i: int) -> float:
        return statistics.median(t[i] for t in times[name])

    print(f"{'command':<42} {'median s':>9} {'min s':>7} {'vs anchor':>10} {'cpu s':>7} "
          f"{'vs anchor':>10}")
    for name, ts in times.items():
        print(f"{name:<42} {med(name, 0):9.3f} {min(t[0] for t in ts):7.3f} "
              f"{med(name, 0) - med(anchor, 0):+10.3f} {med(name, 1):7.3f} "
              f"{med(name, 1) - med(anchor, 1):+10.3f}")
    cov_name = f"coverage --backend {args.backend} --format json"
    extra = med(cov_name, 0) - med(anchor, 0)
    verdict = "meets" if extra <= target else "MISSES"
    print(f"\ncoverage costs {extra:+.3f} s over importing torch (cache {args.cache}); {verdict} "
          f"the target (<= {target:.2f} s more) [{args.repeat} interleaved runs each; CPU "
          f"{med(cov_name, 1) - med(anchor, 1):+.3f} s]")
    return 0 if extra <= target else 1


if __name__ == "__main__":
    sys.exit(main())
