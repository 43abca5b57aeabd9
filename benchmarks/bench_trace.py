"""Wall time of tracing a ResNet-50-sized model (``examples/resnet.py:make_resnet50``, ~25.6M
parameters, batch 8x3x224x224, forward and backward) on the meta device, against the anchor
``python -c "import torch"``, measured side by side (interleaved) in the same run.

Target: ``conformance trace examples/resnet.py:make_resnet50 --meta --backend meta`` takes at
most 10 s more than importing torch.

    python benchmarks/bench_trace.py [--repeat N] [--backend meta]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 10.0
MODEL = str(Path(__file__).resolve().parent.parent / "examples" / "resnet.py") + ":make_resnet50"


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wall(cmd: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; CPU time is what a shared machine cannot steal."""
    cpu0, start = _child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took, cpu = time.perf_counter() - start, _child_cpu() - cpu0
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return took, cpu


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
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            took, cpu = wall(cmd, ok=(0, 1))  # 1: something missing, still traced
            times[name].append(took)
            cpus[name].append(cpu)

    base = statistics.median(times["import torch (anchor)"])
    cbase = statistics.median(cpus["import torch (anchor)"])
    print(f"{'command':<24} {'wall s':>7} {'min s':>7} {'vs anchor':>10} {'ratio':>6} "
          f"{'cpu s':>7} {'vs anchor':>10}")
    for name, ts in times.items():
        med, cmed = statistics.median(ts), statistics.median(cpus[name])
        print(f"{name:<24} {med:7.3f} {min(ts):7.3f} {med - base:+10.3f} {med / base:5.2f}x "
              f"{cmed:7.3f} {cmed - cbase:+10.3f}")
    extra = statistics.median(times["trace resnet50 --meta"]) - base
    cextra = statistics.median(cpus["trace resnet50 --meta"]) - cbase
    verdict = "meets" if extra <= TARGET_S else "MISSES"
    print(f"\ntracing ResNet-50 (~25.6M parameters) on meta costs {extra:+.2f} s wall "
          f"({cextra:+.2f} s CPU) over importing torch; {verdict} the target "
          f"(<= {TARGET_S:.0f} s more) [{args.repeat} interleaved runs each]")
    return 0 if extra <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
