"""Checked examples per second: ``conformance run`` against a loop over torch's OpInfo samples.

Anchor: the OpInfo loop — for each OpInfo of the chosen ops, every dtype CPU supports among the
twelve, every ``sample_inputs`` sample: run on CPU and on the backend, compare with
``torch.testing.assert_close`` (the same comparison the engine's ``forward`` check makes).
Both sides run in this process, on the same ops, one after the other; the ratio is printed.

    python benchmarks/bench_run.py [--backend mlu] [--ops REGEX] [--max-examples K]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_OPS = ("add|sub|mul|div|abs|neg|exp|sigmoid|tanh|sum|mean|amax|maximum|minimum|where|"
               "clamp|pow|sqrt|relu|softmax")


def conformance_side(backend: str, ops: str, max_examples: int) -> dict[str, float]:
    """Run the engine (pytest plugin, in this process, no workers) on the forward check."""
    import pytest

    from conformance.progress import Progress
    from conformance.results import read_records

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.jsonl"
        argv = [tmp, "-p", "conformance", "--backend", backend, "--ops", ops, "--checks",
                "forward", "--max-examples", str(max_examples), "--results", str(out),
                "--hypothesis-db", "none", "-p", "no:cacheprovider", "--noconftest", "-q",
                "-p", "no:benchmark", "--rootdir", tmp]
        t0, c0 = time.perf_counter(), time.process_time()
        pytest.main(argv, plugins=[Progress(open(os.devnull, "w"), tty=False)])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        recs = [r for r in read_records(out) if r.get("record") == "verdict"]
    examples = sum(r["examples"] for r in recs)
    engine_s = sum(r["duration_s"] for r in recs)
    overloads = len({r["overload"] for r in recs})
    bases = sorted({r["overload"].split(".")[0].rstrip("_") for r in recs
                    if r["verdict"] in ("pass", "fail")})
    return {"examples": examples, "wall_s": wall, "cpu_s": cpu, "engine_s": engine_s,
            "overloads": overloads, "bases": bases}


def opinfo_side(device: str, bases: list[str]) -> dict[str, float]:
    """The anchor: torch's OpInfo samples, CPU against ``device``, same comparison."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from opdb.dtypes import torch_dtypes

    twelve = set(torch_dtypes())
    infos = [o for o in op_db if o.name in bases and not o.variant_test_name]
    examples = errors = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for info in infos:
        for dtype in sorted(set(info.supported_dtypes("cpu")) & twelve, key=str):
            for sample in info.sample_inputs("cpu", dtype):
                try:
                    expected = info(sample.input, *sample.args, **sample.kwargs)
                except Exception:  # noqa: BLE001
                    continue
                moved = sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor)
                                         else t)
                examples += 1
                try:
                    actual = info(moved.input, *moved.args, **moved.kwargs)
                    torch.testing.assert_close(
                        torch.utils._pytree.tree_map(
                            lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, actual),
                        expected, equal_nan=True, check_device=False)
                except Exception:  # noqa: BLE001
                    errors += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"examples": examples, "wall_s": wall, "cpu_s": cpu, "opinfos": len(infos),
            "mismatches": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="mlu")
    parser.add_argument("--ops", default=DEFAULT_OPS)
    parser.add_argument("--max-examples", type=int, default=10)
    args = parser.parse_args()
    re.compile(args.ops)

    from conformance.backends import resolve

    backend = resolve(args.backend)
    conf = conformance_side(args.backend, args.ops, args.max_examples)
    t0 = time.perf_counter()
    import torch.testing._internal.common_methods_invocations  # noqa: F401

    import_s = time.perf_counter() - t0
    anchor = opinfo_side(backend.device, conf["bases"])

    c_rate = conf["examples"] / conf["wall_s"]
    c_engine_rate = conf["examples"] / max(conf["engine_s"], 1e-9)
    a_rate = anchor["examples"] / anchor["wall_s"]
    print(f"backend {args.backend}; ops {args.ops!r}; forward check, max_examples "
          f"{args.max_examples}")
    print(f"{'':34}{'examples':>10}{'seconds':>10}{'examples/s':>12}")
    print(f"{'conformance run (whole pytest)':34}{conf['examples']:>10}{conf['wall_s']:>10.2f}"
          f"{c_rate:>12.1f}   ({conf['overloads']} overloads)")
    print(f"{'conformance engine time only':34}{conf['examples']:>10}{conf['engine_s']:>10.2f}"
          f"{c_engine_rate:>12.1f}")
    print(f"{'anchor: OpInfo sample loop':34}{anchor['examples']:>10}{anchor['wall_s']:>10.2f}"
          f"{a_rate:>12.1f}   ({anchor['opinfos']} OpInfos, {anchor['mismatches']} mismatches; "
          f"op_db import {import_s:.1f}s not counted)")
    print(f"ratio conformance/OpInfo-loop: {c_rate / a_rate:.2f} (whole run), "
          f"{c_engine_rate / a_rate:.2f} (engine only)")
    # on a shared machine wall time follows the load; CPU time of this process is steadier
    c_cpu_rate = conf["examples"] / conf["cpu_s"]
    a_cpu_rate = anchor["examples"] / anchor["cpu_s"]
    print(f"per CPU second (process time): conformance {c_cpu_rate:.1f}/s, OpInfo loop "
          f"{a_cpu_rate:.1f}/s, ratio {c_cpu_rate / a_cpu_rate:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
