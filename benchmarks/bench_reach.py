"""Reach (issue 10.5): how many overloads get at least one valid example, from a results file.

    conformance run --backend mlu --checks forward --ops '.*backward.*' -o backward.jsonl
    conformance run --backend mlu --checks autograd -o autograd.jsonl
    python benchmarks/bench_reach.py backward.jsonl autograd.jsonl

Two figures, each with every overload that misses listed with its reason:

* **backward ops driven directly**: of the explicit backward overloads (base name contains
  ``backward``) with a CPU kernel (the CPU dispatch key has a ``native`` or
  ``composite_explicit`` kernel; an autogen'd overload, e.g. ``cudnn_batch_norm_backward.out``,
  only where the overload it was generated from has one: its composite kernel calls that one),
  the share whose ``forward`` check ran at least one example CPU accepted (target >= 85%);
* **autograd**: of the differentiable overloads (``db.autograd``: ``formula`` or
  ``decomposition``) with a CPU kernel, the share whose ``autograd`` check ran at least one
  (target >= 90%); the same share counting CompositeImplicitAutograd overloads is printed too.

"Ran an example" is an outcome earned on the backend after CPU accepted the input: ``pass``,
``fail``, ``unsupported``, ``crash``, ``timeout``, or any verdict with ``examples > 0``. The
per-source counts (``Verdict.sources``) say how many got there through recorded calls alone
(``conformance.inputs.corpus``). ``--before OLD.jsonl`` prints the same figures of an older run (e.g.
``--corpus off``) beside.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Verdicts earned by running the backend on an input CPU accepted.
REACHED = ("pass", "fail", "unsupported", "crash", "timeout")
#: CPU statuses that count as "has a CPU kernel".
CPU_KERNEL = ("native", "composite_explicit")
TARGETS = {"backward": 0.85, "autograd": 0.90}


def _verdicts(paths: Iterable[str]) -> dict[tuple[str, str], Mapping[str, Any]]:
    from conformance.store.results import read_records

    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for path in paths:
        for rec in read_records(path):
            if rec.get("record") == "verdict":
                out[(rec["overload"], rec["check"])] = rec
    return out


def reached(rec: Mapping[str, Any] | None) -> bool:
    return rec is not None and (rec["verdict"] in REACHED or int(rec.get("examples") or 0) > 0)


def universes() -> dict[str, list[str]]:
    """``backward``, ``autograd`` and ``autograd+implicit``: the overloads each figure counts."""
    import opdb
    from opdb.dispatch import classify

    db = opdb.load()
    names = [o.name for o in db.overloads]
    cpu = {n: str(s.value if hasattr(s, "value") else s) for n, s in classify("CPU", names).items()}

    def kernel(n: str) -> bool:
        # an autogen'd overload (``cudnn_batch_norm_backward.out``) is CompositeExplicitAutograd
        # over the overload it was generated from: a CPU kernel only where that one has one
        ov = db[n]
        if ov.autogen and ov.autogen_from and ov.autogen_from in db:
            return cpu[n] in CPU_KERNEL and kernel(ov.autogen_from)
        return cpu[n] in CPU_KERNEL

    differentiable = [n for n in names if db.autograd(n) in ("formula", "decomposition")]
    return {
        "backward": [n for n in names if "backward" in db[n].base and kernel(n)],
        "backward-registered": [n for n in names if "backward" in db[n].base
                                and cpu[n] in CPU_KERNEL],
        "autograd": [n for n in differentiable if kernel(n)],
        "autograd+implicit": [n for n in differentiable
                              if kernel(n) or cpu[n] == "composite_implicit"],
    }


def figure(names: Sequence[str], check: str, verdicts: Mapping[tuple[str, str], Any]
           ) -> dict[str, Any]:
    got = [n for n in names if reached(verdicts.get((n, check)))]
    missing = {}
    for n in names:
        rec = verdicts.get((n, check))
        if reached(rec):
            continue
        if rec is None:
            missing[n] = "not in the results"
        else:
            missing[n] = f"{rec['verdict']}/{rec.get('category')}: {rec.get('message', '')}"
    via_corpus = [n for n in got if not (verdicts[(n, check)].get("sources") or {}).get(
        "hypothesis") and (verdicts[(n, check)].get("sources") or {}).get("corpus")]
    return {"total": len(names), "reached": len(got), "missing": missing,
            "corpus_only": len(via_corpus)}


def _line(label: str, f: Mapping[str, Any], target: float | None) -> str:
    share = f["reached"] / f["total"] if f["total"] else 0.0
    aim = f" (target >= {target:.0%})" if target is not None else ""
    return (f"{label}: {f['reached']} of {f['total']} = {share:.1%}{aim}; "
            f"{f['corpus_only']} only through recorded calls")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files (forward and autograd verdicts)")
    parser.add_argument("--before", nargs="*", default=None,
                        help="results files of an older run, printed beside")
    parser.add_argument("--sampled", action="store_true",
                        help="count only the overloads the results hold a verdict for (a run "
                             "of one --shard K/N: a sample), not the whole universe")
    parser.add_argument("--list", type=int, default=400, metavar="N",
                        help="list at most N missing overloads per figure (default 400)")
    args = parser.parse_args(argv)
    sets = universes()
    now = _verdicts(args.results)
    old = _verdicts(args.before) if args.before else None
    rows = (("backward ops, forward check", "backward", "forward", TARGETS["backward"]),
            ("differentiable, autograd check", "autograd", "autograd", TARGETS["autograd"]),
            ("differentiable incl. CompositeImplicitAutograd, autograd check",
             "autograd+implicit", "autograd", None))
    shells = sorted(set(sets["backward-registered"]) - set(sets["backward"]))
    print(f"({len(shells)} autogen'd backward overloads registered on CPU only as a composite over "
          f"an overload without a CPU kernel are not counted, e.g. {', '.join(shells[:3])})")
    for label, universe, check, target in rows:
        names = sets[universe]
        if args.sampled:
            names = [n for n in names if (n, check) in now]
        if not any((n, check) in now for n in names):
            print(f"{label}: no {check} verdicts in the results")
            continue
        f = figure(names, check, now)
        print(_line(label, f, target))
        if old is not None:
            print("  before: " + _line(label, figure(names, check, old), target))
        if universe == "autograd+implicit":
            continue
        reasons = Counter(r.split(":")[0] for r in f["missing"].values())
        print(f"  missing by reason: {dict(reasons.most_common())}")
        for n, why in list(f["missing"].items())[: args.list]:
            print(f"    {n}: {why[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
