"""Build the corpus of recorded CPU calls (:mod:`conformance.inputs.corpus`).

    python -m conformance.corpus_tools build                       # the packaged file, from a checkout
    python -m conformance.corpus_tools build -o calls.jsonl.gz --models examples/resnet.py --no-opinfo
    python -m conformance.corpus_tools show --match 'convolution_backward'

Sources, each run on CPU under :class:`conformance.trace.recorder.Recorder` (both levels: what the code
called above Autograd, and what reached the kernels, so backward ops called by the autograd engine
are recorded under the overload actually called):

* **models**: each target's training step (forward, backward, one optimizer step), as
  ``conformance trace`` loads it (``examples/resnet.py``, ``examples/bert.py``,
  ``examples/lstm_lm.py`` by default);
* **OpInfo samples** (when ``torch.testing._internal`` is importable: ``expecttest``, a test
  extra): every OpInfo of ``op_db``, its first samples for each dtype it declares on CPU, and
  their backward (``torch.autograd.grad`` of the outputs) where it ``supports_autograd``
  (``--samples-backward`` of them for its first backward dtype: later samples reach the 2-d and
  3-d forms' backward ops);
* **derived** (last): each backward op a ``derivatives.yaml`` formula calls that no source above
  reached, through the forwards whose formulas call it, run and backpropagated on CPU with
  their recorded (else drawn) inputs (:mod:`conformance.corpus_tools.derive`).

``--base FILE`` starts from an existing corpus's records instead of an empty one (e.g.
``--base calls.jsonl.gz --models --no-opinfo`` re-derives only).

Each call is kept as a spec (shapes, dtypes, strides, value ranges, scalar arguments), deduplicated
per overload, at most ``--per-dtype`` per (overload, tensor dtypes) while recording and ``--cap``
per overload in the file (chosen round-robin over origins and dtypes, smallest first). Tensors with
more than ``--max-numel`` elements in all are not kept.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.corpus_tools.collector import CAP, MAX_NUMEL, PER_DTYPE, Collector
from conformance.corpus_tools.derive import record_derived
from conformance.inputs.corpus import FORMAT, packaged_path
from opdb.errors import InputError

DEFAULT_MODELS = ("examples/resnet.py", "examples/bert.py", "examples/lstm_lm.py")


#: Samples per (OpInfo, dtype) recorded.
SAMPLES_PER_DTYPE = 4


#: Samples of an OpInfo's first backward dtype recorded with their backward: a sample generator
#: goes through its ranks in order (interpolate's first samples are all 1-d), and the backward
#: ops of the 2-d and 3-d forms are reached only further on.
SAMPLES_BACKWARD = 16


#: Dtypes of the backward samples (those the autograd check differentiates).
BACKWARD_DTYPES = ("float32", "float64", "complex64", "complex128")


def record_models(targets: Sequence[str], collector: Collector, log: Callable[[str], None]
                  ) -> None:
    """Each target's training step, recorded."""
    from conformance.trace import census
    from conformance.trace.recorder import Recorder

    for target in targets:
        maker, where = census.load_target(target)
        wl = census.build(maker, where)
        with Recorder(max_examples=0, on_call=collector) as rec, \
                collector.recording(f"model:{Path(where.split(':')[0]).stem}"):
            census.run_workload(wl, train=True, optimizer_device="cpu", recorder=rec)
        log(f"  model {target}: {len(collector.calls)} overloads so far")


def _opinfo_db() -> list[Any]:
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except Exception as exc:  # noqa: BLE001 - an optional source
        raise InputError(f"OpInfo samples need torch.testing._internal ({exc}); install the "
                         f"test extras or pass --no-opinfo") from None
    return list(op_db)


def _samples(op: Any, dtype: Any, *, requires_grad: bool, n: int) -> list[Any]:
    out = []
    for sample in op.sample_inputs("cpu", dtype, requires_grad=requires_grad):
        out.append(sample)
        if len(out) >= n:
            break
    return out


def _differentiable(out: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and t.requires_grad
            and (t.is_floating_point() or t.is_complex())]


def _grad_inputs(sample: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    leaves = tree_flatten((sample.input, sample.args, sample.kwargs))[0]
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf]


def record_opinfo(collector: Collector, log: Callable[[str], None], *,
                  samples_per_dtype: int = SAMPLES_PER_DTYPE,
                  samples_backward: int = SAMPLES_BACKWARD, match: str | None = None,
                  deadline: float | None = None) -> tuple[int, int]:
    """Every OpInfo's first samples per declared CPU dtype, and their backward, recorded at the
    level of the kernels (the top level's Python dispatcher would cost several times more per
    call). Stops at ``deadline`` (a ``time.perf_counter()`` value). Returns (OpInfos recorded,
    OpInfos selected)."""
    import re

    import torch

    from conformance.trace.recorder import BACKWARD, Recorder
    from opdb.dtypes import DTYPE_NAMES, torch_dtype

    ops = _opinfo_db()
    pattern = re.compile(match) if match else None
    selected = [op for op in ops if pattern is None or pattern.search(_label(op))]
    done = 0
    t0 = time.perf_counter()
    for op in selected:
        if deadline is not None and time.perf_counter() > deadline:
            log(f"  opinfo: time limit reached after {done} of {len(selected)} OpInfos")
            break
        label = _label(op)
        try:
            declared = op.supported_dtypes("cpu")
        except Exception:  # noqa: BLE001
            continue
        dtypes = [n for n in DTYPE_NAMES if torch_dtype(n) in declared]
        backward = set()
        if op.supports_autograd:
            try:
                bdeclared = op.supported_backward_dtypes("cpu")
            except Exception:  # noqa: BLE001
                bdeclared = set()
            backward = {n for n in BACKWARD_DTYPES if torch_dtype(n) in bdeclared}
        origin = f"opinfo:{label}"
        first_backward = next((n for n in BACKWARD_DTYPES if n in backward), None)
        for name in dtypes:
            for grad in (False, True) if name in backward else (False,):
                n = samples_backward if grad and name == first_backward else samples_per_dtype
                torch.manual_seed(0)
                try:
                    samples = _samples(op, torch_dtype(name), requires_grad=grad,
                                       n=max(n, samples_per_dtype))
                except Exception:  # noqa: BLE001 - a sample generator that fails: skipped
                    continue
                for sample in samples:
                    _run_sample(op, sample, collector, origin, grad=grad,
                                recorder=Recorder, backward=BACKWARD)
        done += 1
        if done % 50 == 0:
            log(f"  opinfo: {done} of {len(selected)} OpInfos, {len(collector.calls)} overloads, "
                f"{time.perf_counter() - t0:.0f} s")
    return done, len(selected)


def _label(op: Any) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def _run_sample(op: Any, sample: Any, collector: Collector, origin: str, *, grad: bool,
                recorder: Any, backward: str) -> None:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with recorder(top=False, max_examples=0, on_call=collector) as rec, \
                    collector.recording(origin):
                out = op(sample.input, *sample.args, **sample.kwargs)
                if grad:
                    outs = _differentiable(out)
                    leaves = _grad_inputs(sample)
                    if outs and leaves:
                        gen = torch.Generator().manual_seed(0)
                        ups = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in outs]
                        with rec.phase(backward):
                            torch.autograd.grad(outs, leaves, ups, allow_unused=True)
        except Exception:  # noqa: BLE001 - a sample CPU refuses records what ran before it
            pass


def read_records(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The raw records and header of a corpus file (:class:`conformance.inputs.corpus.Corpus` checks
    it first: a bad file is an InputError)."""
    from conformance.inputs.corpus import Corpus

    Corpus.read(path)
    opener: Any = gzip.open if str(path).endswith(".gz") else open
    records, header = [], {}
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                if rec.get("record") == "corpus":
                    header = rec
                else:
                    records.append(rec)
    return records, header


def write(records: Sequence[Mapping[str, Any]], path: Path, header: Mapping[str, Any]) -> None:
    """Gzip'd JSONL, deterministic bytes for the same records (no timestamp in the gzip)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(header, sort_keys=True)]
    lines += [json.dumps(r, sort_keys=True, allow_nan=False) for r in records]
    data = ("\n".join(lines) + "\n").encode()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                filename="") as fh:
        fh.write(data)
    tmp.replace(path)


def build(*, models: Sequence[str], opinfo: bool, output: Path, cap: int = CAP,
          per_dtype: int = PER_DTYPE, samples_per_dtype: int = SAMPLES_PER_DTYPE,
          samples_backward: int = SAMPLES_BACKWARD,
          max_numel: int = MAX_NUMEL, match: str | None = None,
          time_limit: float | None = None, derived: bool = True,
          derived_match: str | None = None,
          base: Path | None = None, log: Callable[[str], None] = print
          ) -> dict[str, Any]:
    """Record every source and write the corpus; returns the header written."""
    import torch

    t0 = time.perf_counter()
    collector = Collector(per_dtype=per_dtype, max_numel=max_numel)
    base_header: Mapping[str, Any] = {}
    if base is not None:
        records, base_header = read_records(base)
        collector.seed(records)
        log(f"  base {base}: {len(records)} specs of {len(collector.calls)} overloads")
    if models:
        record_models(models, collector, log)
    opinfos = (0, 0)
    if opinfo:
        deadline = t0 + time_limit if time_limit else None
        opinfos = record_opinfo(collector, log, samples_per_dtype=samples_per_dtype,
                                samples_backward=samples_backward, match=match,
                                deadline=deadline)
    derived_s = None
    if derived:
        t1 = time.perf_counter()
        reached = record_derived(collector, log, match=derived_match)
        derived_s = round(time.perf_counter() - t1, 1)
        derived_n = sum(1 for v in reached.values() if v)
    records = collector.select(cap)
    if base is not None and not opinfo:  # re-deriving on a base: its OpInfo facts stay true
        opinfos = (base_header.get("opinfos_recorded", 0), base_header.get("opinfos_selected", 0))
        opinfo = bool(base_header.get("opinfo", False))
        match = base_header.get("opinfo_match", match)
        models = [*dict.fromkeys([*base_header.get("models", []), *models])]
    header = {
        **({"base": {k: v for k, v in base_header.items() if k != "record"}} if base else {}),
        "record": "corpus", "format": FORMAT, "torch_version": torch.__version__,
        "models": list(models), "opinfo": opinfo, "opinfo_match": match,
        "opinfos_recorded": opinfos[0], "opinfos_selected": opinfos[1],
        "cap": cap, "per_dtype": per_dtype,
        "samples_per_dtype": samples_per_dtype, "samples_backward": samples_backward,
        "max_numel": max_numel,
        "derived": derived, "derived_reached": derived_n if derived else 0,
        "derived_seconds": derived_s,
        "overloads": len({r["overload"] for r in records}), "specs": len(records),
        "created": _dt.date.today().isoformat(),
    }
    write(records, output, header)
    log(f"{len(records)} specs of {header['overloads']} overloads ({collector.seen} calls seen, "
        f"{collector.unencodable} not describable) -> {output} "
        f"({output.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - t0:.0f} s")
    return header


def show(path: str | None, match: str | None) -> int:
    import re

    from conformance.inputs.corpus import Corpus, load

    corpus = Corpus.read(path) if path else load()
    pattern = re.compile(match) if match else None
    print(f"{corpus.path}: {len(corpus)} specs of {len(corpus.specs)} overloads "
          f"({json.dumps({k: v for k, v in corpus.header.items() if k != 'record'})})")
    for name, specs in corpus.specs.items():
        if pattern is not None and not pattern.fullmatch(name):
            continue
        print(f"{name}: {len(specs)}")
        for s in specs:
            args = ", ".join(f"{n}={_brief(a)}" for n, a in s.args)
            print(f"  ({args})  [{s.origin}]")
    return 0


def _brief(a: Any) -> str:
    from conformance.inputs.corpus import TensorArg

    if isinstance(a, TensorArg):
        text = f"{a.dtype}{list(a.shape)}"
        if a.range is not None:
            text += f" in [{a.range[0]:g}, {a.range[1]:g}]"
        return text
    if isinstance(a, tuple):
        return "[" + ", ".join(_brief(x) for x in a) + "]"
    return repr(a)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.corpus_tools",
                                     description="Build or show the corpus of recorded CPU calls.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="record the sources and write the corpus")
    b.add_argument("-o", "--output", type=Path, default=None,
                   help="output file (default: the packaged conformance/data/corpus/ file)")
    b.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS),
                   help="conformance trace targets whose training step is recorded")
    b.add_argument("--no-opinfo", dest="opinfo", action="store_false",
                   help="do not record torch's OpInfo samples")
    b.add_argument("--no-derived", dest="derived", action="store_false",
                   help="do not derive backward ops' calls from their forwards")
    b.add_argument("--derived-match", default=None, metavar="REGEX",
                   help="derive only the backward ops whose name matches this regex")
    b.add_argument("--base", type=Path, default=None, metavar="FILE",
                   help="start from this corpus file's records (e.g. to re-derive only)")
    b.add_argument("--match", default=None, help="only OpInfos whose name matches this regex")
    b.add_argument("--cap", type=int, default=CAP, help="specs per overload in the file")
    b.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop recording OpInfos after this long (the header says how many)")
    b.add_argument("--per-dtype", type=int, default=PER_DTYPE,
                   help="distinct specs per (overload, tensor dtypes) while recording")
    b.add_argument("--samples-backward", type=int, default=SAMPLES_BACKWARD,
                   help="samples of each OpInfo's first backward dtype (float32) recorded "
                        "with their backward")
    b.add_argument("--samples", type=int, default=SAMPLES_PER_DTYPE,
                   help="samples per (OpInfo, dtype)")
    b.add_argument("--max-numel", type=int, default=MAX_NUMEL,
                   help="most tensor elements of a kept call")
    s = sub.add_parser("show", help="print the corpus (or a part of it)")
    s.add_argument("path", nargs="?", default=None, help="a corpus file (default: the packaged one)")
    s.add_argument("--match", default=None, help="overloads fully matching this regex")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "show":
            return show(args.path, args.match)
        for name, value in (("--cap", args.cap), ("--per-dtype", args.per_dtype),
                            ("--samples", args.samples), ("--max-numel", args.max_numel),
                            ("--samples-backward", args.samples_backward)):
            if value < 1:
                raise InputError(f"{name} must be 1 or more, not {value}")
        build(models=args.models, opinfo=args.opinfo, output=args.output or packaged_path(),
              cap=args.cap, per_dtype=args.per_dtype, samples_per_dtype=args.samples,
              samples_backward=args.samples_backward,
              max_numel=args.max_numel, match=args.match, time_limit=args.time_limit,
              derived=args.derived, derived_match=args.derived_match, base=args.base, log=lambda m: print(m, file=sys.stderr))
    except InputError as exc:
        print(f"python -m conformance.corpus_tools {args.cmd}: error: {exc}", file=sys.stderr)
        return 2
    return 0
