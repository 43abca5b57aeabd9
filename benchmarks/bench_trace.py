"""Wall time of tracing a ResNet-50-sized model (``examples/resnet.py:make_resnet50``, ~25.6M
parameters, batch 8x3x224x224, forward and backward) on the meta device, against the anchor
``python -c "import torch"``, measured side by side (interleaved) in the same run.

Target: ``conformance trace examples/resnet.py:make_resnet50 --meta --backend meta`` takes at
most 10 s more than importing torch.

    python benchmarks/bench_trace.py [--repeat N] [--backend meta]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 10.0
MODEL = str(Path(__file__).resolve().parent.parent / "examples" / "resnet.py") + ":make_resnet50"


def wall(cmd: list[str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (default 3)")
    parser.add_argument("--backend", default="meta",
                        help="backend to classify for (default meta: nothing to bring up)")
    args = parser.parse_args(argv)

    commands = {
        "import torch (anchor)": [sys.executable, "-c", "import torch"],
        "trace resnet50 --meta": [sys.executable, "-m", "conformance", "trace", MODEL, "--meta",
                                  "--backend", args.backend, "--format", "json"],
    }
    for cmd in commands.values():  # warm the file cache; not timed
        wall(cmd, ok=(0, 1))
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            times[name].append(wall(cmd, ok=(0, 1)))  # 1: something missing, still traced

    base = statistics.median(times["import torch (anchor)"])
    print(f"{'command':<28} {'median s':>9} {'min s':>7} {'vs anchor':>10} {'ratio':>7}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<28} {med:9.3f} {min(ts):7.3f} {med - base:+10.3f} {med / base:7.2f}x")
    extra = statistics.median(times["trace resnet50 --meta"]) - base
    verdict = "meets" if extra <= TARGET_S else "MISSES"
    print(f"\ntracing ResNet-50 (~25.6M parameters) on meta costs {extra:+.2f} s over importing "
          f"torch; {verdict} the target (<= {TARGET_S:.0f} s more) "
          f"[{args.repeat} interleaved runs each]")
    return 0 if extra <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
