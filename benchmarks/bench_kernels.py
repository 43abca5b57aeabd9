"""Speed of the ``mlu`` reference kernels against torch's CPU kernels, measured side by side.

For each case the same call runs on CPU tensors (the anchor) and on ``mlu`` tensors, interleaved
(cpu, mlu, cpu, mlu, ...) after warm-up, and the ratio of the medians ``mlu / cpu`` is compared
with the target: at most 3x per op, at most 5x for a whole CNN training step (forward, backward,
SGD-momentum step).

    python benchmarks/bench_kernels.py [--repeat N] [--threads T] [--only NAME,NAME]

Both sides get the same thread budget (``--threads``, default 2): torch's intra-op pool and
the BLAS under NumPy (through the ``*_NUM_THREADS`` variables, set before NumPy loads).
On a machine whose cores are busy with other work (the script warns when the load average
exceeds the core count), spinning thread pools make 2-thread timings erratic -- torch's CPU
anchor most of all -- and the "min ratio" column or ``--threads 1`` gives the stable picture.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

OP_TARGET = 3.0
STEP_TARGET = 5.0


@dataclass(frozen=True)
class Case:
    name: str
    target: float
    build: Callable[[str], Callable[[], object]]  # device -> a call to time


def _cases() -> list[Case]:
    import torch
    import torch.nn.functional as F
    from torch import nn

    def rand(*shape: int, seed: int = 0) -> torch.Tensor:
        return torch.randn(shape, generator=torch.Generator().manual_seed(seed))

    def unary(fn: Callable[..., torch.Tensor], *shapes: tuple[int, ...]
              ) -> Callable[[str], Callable[[], object]]:
        def build(device: str) -> Callable[[], object]:
            args = [rand(*s, seed=i).to(device) for i, s in enumerate(shapes)]
            return lambda: fn(*args)
        return build

    def batch_norm(device: str) -> Callable[[], object]:
        x = rand(8, 64, 56, 56).to(device)
        w, b = torch.ones(64).to(device), torch.zeros(64).to(device)
        rm, rv = torch.zeros(64).to(device), torch.ones(64).to(device)
        return lambda: F.batch_norm(x, rm, rv, w, b, training=True)

    def layer_norm(device: str) -> Callable[[], object]:
        x = rand(8, 128, 512).to(device)
        w, b = torch.ones(512).to(device), torch.zeros(512).to(device)
        return lambda: F.layer_norm(x, (512,), w, b)

    def train_step(device: str) -> Callable[[], object]:
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
        ).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = rand(16, 3, 32, 32).to(device)
        y = torch.randint(0, 10, (16,), generator=torch.Generator().manual_seed(1)).to(device)

        def step() -> object:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        return step

    conv_w = (64, 64, 3, 3)
    return [
        Case("add (1024x1024)", OP_TARGET, unary(torch.add, (1024, 1024), (1024, 1024))),
        Case("mul (1024x1024)", OP_TARGET, unary(torch.mul, (1024, 1024), (1024, 1024))),
        Case("exp (1024x1024)", OP_TARGET, unary(torch.exp, (1024, 1024))),
        Case("sum dim=1 (1024x1024)", OP_TARGET, unary(lambda t: t.sum(1), (1024, 1024))),
        Case("mm (512x512 @ 512x512)", OP_TARGET, unary(torch.mm, (512, 512), (512, 512))),
        Case("conv2d 3x3 64ch 56x56 b8", OP_TARGET,
             unary(lambda x, w: F.conv2d(x, w, padding=1), (8, 64, 56, 56), conv_w)),
        Case("max_pool2d 3x3 s2 (8x64x56x56)", OP_TARGET,
             unary(lambda x: F.max_pool2d(x, 3, 2, 1), (8, 64, 56, 56))),
        Case("batch_norm train (8x64x56x56)", OP_TARGET, batch_norm),
        Case("softmax dim=-1 (1024x1024)", OP_TARGET,
             unary(lambda t: F.softmax(t, -1), (1024, 1024))),
        Case("layer_norm (8x128x512)", OP_TARGET, layer_norm),
        Case("CNN training step (b16 3x32x32)", STEP_TARGET, train_step),
    ]


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per side (default 15)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs per side (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="threads for torch and BLAS")
    parser.add_argument("--only", default="", help="comma list of case-name prefixes to run")
    args = parser.parse_args(argv)

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import torch

    import kernels

    torch.set_num_threads(args.threads)
    kernels.install()
    wanted = [p.strip() for p in args.only.split(",") if p.strip()]
    cases = [c for c in _cases() if not wanted or any(c.name.startswith(p) for p in wanted)]

    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeat} "
          f"interleaved runs after {args.warmup} warm-up runs; ratio = mlu / cpu "
          "(verdict on the medians; 'min ratio' = ratio of the fastest runs)")
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > cores:
        print(f"warning: load average {load:.1f} on {cores} cores -- other processes compete for "
              "the CPU; multi-threaded timings (torch's pool, BLAS) are inflated and noisy")
    print(f"{'case':<34} {'cpu ms':>9} {'mlu ms':>9} {'ratio':>7} {'min ratio':>9} {'target':>7}"
          "  verdict")
    misses = 0
    for case in cases:
        try:
            fns = {dev: case.build(dev) for dev in ("cpu", "mlu")}
            for _ in range(args.warmup):
                for fn in fns.values():
                    fn()
            times: dict[str, list[float]] = {"cpu": [], "mlu": []}
            for _ in range(args.repeat):
                for dev, fn in fns.items():
                    times[dev].append(_time(fn))
        except NotImplementedError as exc:  # a kernel the backend lacks: honest MISS
            misses += 1
            first = str(exc).splitlines()[0][:60]
            print(f"{case.name:<34} {'':>9} {'':>9} {'':>7} {'':>9} {case.target:6.1f}x  "
                  f"MISS ({first})")
            continue
        cpu, mlu = statistics.median(times["cpu"]), statistics.median(times["mlu"])
        ratio = mlu / cpu
        ok = ratio <= case.target
        misses += not ok
        best = min(times["mlu"]) / min(times["cpu"])
        print(f"{case.name:<34} {cpu * 1e3:9.3f} {mlu * 1e3:9.3f} {ratio:6.2f}x {best:8.2f}x "
              f"{case.target:6.1f}x  {'PASS' if ok else 'MISS'}")
    print(f"\n{len(cases) - misses} of {len(cases)} cases within target")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
