"""The corpus of recorded CPU calls: recording, the file, materializing, and the engine using it
(a backward op whose inputs the schema cannot relate gets valid ones; the source is recorded)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import opdb
from conformance.checks.registry import CHECKS
from conformance.core.call import AutogradCall
from conformance.core.signature import OpSignature
from conformance.core.verdicts import Verdict
from conformance.corpus_tools.build import write
from conformance.corpus_tools.collector import Collector, encode
from conformance.engine import EngineSettings, Item, run_check
from conformance.inputs import corpus
from conformance.inputs.corpus import Corpus, Spec, Tagged, TensorArg, decode
from conformance.repro.snippet import snippet
from conformance.trace.recorder import Recorder
from opdb.errors import InputError
from opdb.opdata import load_hints, load_tolerances

HINTS = load_hints()
TOL = load_tolerances()


def _record(fn) -> Collector:
    collector = Collector()
    with Recorder(max_examples=0, on_call=collector) as rec, collector.recording("test:fn"):
        fn(rec)
    return collector


def _pool_and_embed(rec: Recorder) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 6, 6, requires_grad=True)
    w = torch.randn(10, 4, requires_grad=True)
    idx = torch.tensor([[1, 7, 3], [9, 0, 2]])
    loss = F.max_pool2d(x, 2).sum() + F.embedding(idx, w, padding_idx=0).sum()
    with rec.phase("backward"):
        loss.backward()


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory) -> str:
    """A corpus recorded here from one forward+backward (max_pool2d, embedding)."""
    import kernels

    # the reference backend first: autograd's engine sizes its device queues at its first
    # backward, and a device that comes up later cannot run backward in this process
    kernels.install(without=())
    collector = _record(_pool_and_embed)
    path = tmp_path_factory.mktemp("corpus") / "calls.jsonl.gz"
    write(collector.select(), path, {"record": "corpus", "format": corpus.FORMAT})
    return str(path)


def _sig(name: str) -> OpSignature:
    return OpSignature.of(opdb.load()[name])


# -- recording and the file -------------------------------------------------------------------


def test_recording_keeps_specs_with_value_ranges_under_the_overload_called(small_corpus):
    c = Corpus.read(small_corpus)
    # the backward ops the autograd engine called are recorded as what reached the kernels
    assert "max_pool2d_with_indices_backward" in c
    assert "embedding_dense_backward" in c
    spec = c.for_overload("embedding_dense_backward")[0]
    indices = dict(spec.args)["indices"]
    assert isinstance(indices, TensorArg) and indices.dtype == "int64"
    assert indices.shape == (2, 3) and indices.range == (0, 9)
    assert dict(spec.args)["num_weights"] == 10 and dict(spec.args)["padding_idx"] == 0
    assert spec.origin == "test:fn"
    # the recorder's own range computations are not recorded as calls
    assert "aminmax" not in c and "min" not in c and "isfinite" not in c


def test_encode_decode_round_trip():
    t = torch.arange(12.0).reshape(3, 4).t()[1:]  # non-contiguous, with an offset
    enc = encode([t, None, 2.5, float("nan"), complex(1, float("inf")), torch.float16,
                  torch.device("cpu"), torch.channels_last])
    json.dumps(enc, allow_nan=False)  # strict JSON
    arg, none, x, nan, z, dt, dev, mf = decode(enc)
    assert isinstance(arg, TensorArg)
    assert (arg.shape, arg.stride, arg.offset) == ((3, 3), (1, 4), 1)
    assert arg.range == (1.0, 11.0)
    assert none is None and x == 2.5 and nan != nan and z.imag == float("inf")
    assert dt == Tagged("dtype", "float16") and dev == Tagged("device", "cpu")
    assert mf == Tagged("memory_format", "channels_last")


def test_sparse_or_odd_arguments_are_not_recorded():
    collector = _record(lambda rec: torch.eye(3).to_sparse().coalesce())
    assert collector.unencodable > 0  # calls on the sparse tensor
    for records in (g.values() for groups in collector.calls.values() for g in groups.values()):
        for r in records:
            Spec(r["overload"], tuple((n, decode(v)) for n, v in r["args"]), r["origin"])


def test_backward_calls_keep_integer_values(small_corpus):
    c = Corpus.read(small_corpus)
    spec = dict(c.for_overload("max_pool2d_with_indices_backward")[0].args)
    assert spec["indices"].values is not None and len(spec["indices"].values) == 2 * 3 * 3 * 3
    sig = _sig("max_pool2d_with_indices_backward")
    call = _draw(corpus.corpus_calls(sig, HINTS.for_op(sig.name), mode="forward", corpus=c))
    assert dict(call.values)["indices"].flatten().tolist() == list(spec["indices"].values)
    # a forward call's integer arguments keep a range only
    assert dict(c.for_overload("embedding")[0].args)["indices"].values is None


def test_cap_and_dedup_per_overload():
    def many(rec: Recorder) -> None:
        for n in range(1, 30):
            torch.ones(n).neg()
            torch.ones(n).neg()  # the same spec twice is kept once
    collector = _record(many)
    assert sum(len(g) for g in collector.calls["neg"].values()) == collector.per_dtype
    assert len([r for r in collector.select(cap=2) if r["overload"] == "neg"]) == 2


def test_bad_corpus_file_is_a_file_line_input_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record": "corpus", "format": 1}\n{"overload": "neg"}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not a corpus record"):
        Corpus.read(bad)
    with pytest.raises(InputError, match="not found"):
        Corpus.read(tmp_path / "nope.jsonl.gz")
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(InputError, match="cannot read"):
        Corpus.read(broken)


def test_cli_bad_option_is_one_line_exit_2():
    proc = subprocess.run([sys.executable, "-m", "conformance.corpus_tools", "build", "--cap", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("python -m conformance.corpus_tools build: error: --cap must be 1 "
                                   "or more, not 0")


def test_show_prints_specs(small_corpus):
    proc = subprocess.run([sys.executable, "-m", "conformance.corpus_tools", "show", small_corpus,
                           "--match", "embedding_dense_backward"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "indices=int64[2, 3] in [0, 9]" in proc.stdout


def test_packaged_corpus_loads_and_holds_backward_ops():
    c = corpus.load()
    if not c.specs:
        pytest.skip("no packaged corpus in this checkout (python -m conformance.corpus_tools build)")
    assert c.header["format"] == corpus.FORMAT
    for name in ("convolution_backward", "native_batch_norm_backward",
                 "embedding_dense_backward", "max_pool2d_with_indices_backward",
                 "_adaptive_avg_pool2d_backward"):
        assert name in c, name
    assert max(len(v) for v in c.specs.values()) <= c.header["cap"]


# -- materializing ----------------------------------------------------------------------------


def _draw(strategy):
    from hypothesis import find

    return find(strategy, lambda _: True)


def test_materialize_keeps_shape_dtype_strides_and_index_ranges(small_corpus):
    c = Corpus.read(small_corpus)
    sig = _sig("max_pool2d_with_indices_backward")
    call = _draw(corpus.corpus_calls(sig, HINTS.for_op(sig.name), mode="forward", corpus=c))
    assert call.source == corpus.CORPUS
    values = dict(call.values)
    spec = dict(c.for_overload(sig.name)[0].args)
    for name in ("grad_output", "self", "indices"):
        assert tuple(values[name].shape) == spec[name].shape
        assert str(values[name].dtype) == f"torch.{spec[name].dtype}"
    lo, hi = spec["indices"].range
    assert lo <= int(values["indices"].min()) and int(values["indices"].max()) <= hi
    call.run("cpu")  # a call CPU accepts


def test_materialize_non_contiguous_spec():
    spec = Spec("neg", (("self", TensorArg("float32", (3, 2), (1, 3), 1, (0.0, 1.0))),), "t")
    c = Corpus(specs={"neg": (spec,)}, header={})
    call = _draw(corpus.corpus_calls(_sig("neg"), HINTS.for_op("neg"), mode="forward", corpus=c))
    t = dict(call.values)["self"]
    assert t.stride() == (1, 3) and t.storage_offset() == 1
    assert 0.0 <= float(t.min()) and float(t.max()) <= 1.0


def test_variants_borrow_their_functional_siblings_specs(small_corpus):
    c = Corpus.read(small_corpus)
    borrowed = c.for_overload("max_pool2d_with_indices_backward.grad_input")
    assert borrowed and all(s.overload == "max_pool2d_with_indices_backward.grad_input"
                            for s in borrowed)
    sig = _sig("max_pool2d_with_indices_backward.grad_input")
    call = _draw(corpus.corpus_calls(sig, HINTS.for_op(sig.name), mode="forward", corpus=c))
    assert "grad_input" in dict(call.values)
    call.run("cpu")


@pytest.mark.parametrize("dtype", ["float64", "complex128", "bfloat16"])
def test_a_borrowed_call_gives_its_out_the_recorded_dtype(dtype):
    """An out= variant borrowing its functional sibling's recorded call (which has no out)
    gets an empty out at the dtype the call was recorded at: a float32 one (torch's default)
    made CPU refuse every float64, complex or bfloat16 recording ("Expected out tensor to have
    dtype double": convolution_backward.out was never judged in forward)."""
    spec = Spec("neg", (("self", TensorArg(dtype, (3,), (1,), 0, (-1.0, 1.0))),), "t")
    c = Corpus(specs={"neg": (spec,)}, header={})
    sig = _sig("neg.out")
    call = _draw(corpus.corpus_calls(sig, HINTS.for_op(sig.name), mode="forward", corpus=c))
    out = dict(call.values)["out"]
    assert str(out.dtype) == f"torch.{dtype}" and out.numel() == 0
    call.run("cpu")  # a call CPU accepts


def test_specs_that_do_not_fit_the_schema_are_not_used():
    spec = Spec("neg", (("self", TensorArg("float32", (2,), (1,))), ("bogus", 1)), "t")
    c = Corpus(specs={"neg": (spec,)}, header={})
    assert corpus.usable_specs(_sig("neg"), HINTS.for_op("neg"), "forward", c) == ()
    assert corpus.usable_specs(_sig("neg"), HINTS.for_op("neg"), "promotion", c) == ()


# -- dtypes sweeps ----------------------------------------------------------------------------


def test_fit_range_keeps_recorded_values_where_they_fit_the_dtype():
    assert corpus.fit_range((-8.5, 3.6), "float16") == (-8.5, 3.6)
    assert corpus.fit_range((-1e6, 1e6), "float16") == (-65504.0, 65504.0)
    assert corpus.fit_range((-8.5, 3.6), "int8") == (-8.0, 3.0)
    assert corpus.fit_range((-8.5, 3.6), "uint8") == (0.0, 3.0)
    assert corpus.fit_range((0.26, 0.26), "int16") == (0.0, 1.0)  # no whole number inside
    assert corpus.fit_range((-8.5, 3.6), "bool") == (0.0, 1.0)
    assert corpus.fit_range((-9.0, -1.0), "uint8") is None  # nothing fits: the small profile
    assert corpus.fit_range(None, "int32") is None


def _sweep(name: str, c: Corpus):
    import warnings

    from hypothesis.errors import HypothesisWarning

    sig = _sig(name)
    with warnings.catch_warnings():  # find() prints the sweep it found: 12 calls' tensors
        warnings.filterwarnings("ignore", "Generating overly large repr", HypothesisWarning)
        return _draw(corpus.corpus_calls(sig, HINTS.for_op(name), mode="dtypes", corpus=c))


def test_dtypes_sweep_retypes_free_tensors_and_keeps_hinted_ones():
    """index_select recorded at int64: self follows each dtype; index, int64 too, keeps it (the
    hints pin its dtypes) and its recorded range."""
    from opdb.dtypes import DTYPE_NAMES

    spec = Spec("index_select", (("self", TensorArg("int64", (4, 3), (3, 1), 0, (-300.0, 7.0))),
                                 ("dim", 0),
                                 ("index", TensorArg("int64", (2,), (1,), 0, (1.0, 3.0)))),
                "t")
    c = Corpus(specs={"index_select": (spec,)}, header={})
    sweep = _sweep("index_select", c)
    assert [d for d, _ in sweep.calls] == list(DTYPE_NAMES)
    for dtype, call in sweep.calls:
        values = dict(call.values)
        assert str(values["self"].dtype) == f"torch.{dtype}", dtype
        assert tuple(values["self"].shape) == (4, 3) and values["dim"] == 0
        assert values["index"].dtype == torch.int64
        assert 1 <= int(values["index"].min()) and int(values["index"].max()) <= 3
        assert call.source == corpus.CORPUS
        if dtype == "uint8":  # [-300, 7] fitted to uint8: [0, 7]
            assert 0 <= int(values["self"].min()) and int(values["self"].max()) <= 7
        if dtype != "int64":
            assert any("recorded at int64" in n for n in call.notes)
        call.run("cpu")  # index_select computes every dtype


def test_dtypes_sweep_keeps_exact_indices_and_other_dtypes(small_corpus):
    """max_pool2d_with_indices_backward recorded at float32: grad_output and self follow the
    dtype, the indices the forward computed stay int64 with their values."""
    c = Corpus.read(small_corpus)
    spec = dict(c.for_overload("max_pool2d_with_indices_backward")[0].args)
    sweep = _sweep("max_pool2d_with_indices_backward", c)
    for dtype, call in sweep.calls:
        values = dict(call.values)
        for name in ("grad_output", "self"):
            assert str(values[name].dtype) == f"torch.{dtype}"
        assert values["indices"].dtype == torch.int64
        assert values["indices"].flatten().tolist() == list(spec["indices"].values)
    # a spec whose every tensor is fixed sweeps nothing: not usable for the dtypes mode
    fixed = Spec("index_select", (("self", TensorArg("int64", (2,), (1,), 0, (0.0, 1.0),
                                                     values=(0, 1))),
                                  ("dim", 0), ("index", TensorArg("int64", (1,), (1,)))), "t")
    only = Corpus(specs={"index_select": (fixed,)}, header={})
    assert corpus.usable_specs(_sig("index_select"), HINTS.for_op("index_select"), "dtypes",
                               only) == ()


def test_dtype_variants_of_one_structure_are_one_spec():
    specs = tuple(Spec("neg", (("self", TensorArg(d, (3,), (1,), 0, (-1.0, 1.0))),), "t")
                  for d in ("float32", "float64", "int64"))
    c = Corpus(specs={"neg": specs}, header={})
    assert len(corpus.usable_specs(_sig("neg"), HINTS.for_op("neg"), "forward", c)) == 3
    assert len(corpus.usable_specs(_sig("neg"), HINTS.for_op("neg"), "dtypes", c)) == 1


def test_dtypes_check_sweeps_recorded_calls_where_the_schema_finds_none(reference, small_corpus):
    """The dtypes check of a backward op the schema strategies cannot feed: skipped without
    the corpus, swept on its recorded call with it; CPU's max_pool2d backward has floating
    kernels only, and the verdict says so per dtype."""
    from opdb import outcomes
    from opdb.dtypes import DTYPE_NAMES

    off = _run(reference, "max_pool2d_with_indices_backward", "dtypes", corpus.OFF, k=10)
    assert (off.verdict, off.category) == ("skip", "no_valid_inputs")
    on = _run(reference, "max_pool2d_with_indices_backward", "dtypes", small_corpus, k=10)
    assert on.verdict == "pass", on.message
    assert on.sources.get(corpus.CORPUS, 0) >= 4 and not on.sources.get(corpus.HYPOTHESIS)
    floating = {"float16", "bfloat16", "float32", "float64"}
    assert on.dtype_support == {d: outcomes.DTYPE_OK if d in floating
                                else outcomes.DTYPE_CPU_REJECTS for d in DTYPE_NAMES}


def test_dtypes_sweeps_are_not_mixed_into_schema_sweeps(small_corpus):
    """--corpus-mix mixes recorded calls into forward and autograd only: the dtypes check
    draws recorded sweeps where its schema sweeps find no valid input (corpus.MIXED_MODES)."""
    c = Corpus.read(small_corpus)
    sig = _sig("max_pool2d_with_indices_backward")
    schema = object()
    assert corpus.with_corpus(schema, sig, HINTS.for_op(sig.name), mode="dtypes",
                              corpus=c) is schema
    assert corpus.with_corpus(schema, sig, HINTS.for_op(sig.name), mode="forward",
                              corpus=c) is not schema


# -- the engine -------------------------------------------------------------------------------


def _run(backend, name: str, check: str, corpus_path: str, k: int = 6) -> Verdict:
    sig = _sig(name)
    return run_check(Item(sig, CHECKS[check]), backend,
                     settings=EngineSettings(max_examples=k, seed=0, database=None,
                                             corpus=corpus_path),
                     hints=HINTS.for_op(name), tolerance_fn=TOL,
                     repro_fn=lambda call: snippet(call, backend))


def test_backward_op_gets_valid_inputs_from_the_corpus(reference, small_corpus):
    off = _run(reference, "max_pool2d_with_indices_backward", "forward", corpus.OFF)
    assert (off.verdict, off.category) == ("skip", "no_valid_inputs")
    on = _run(reference, "max_pool2d_with_indices_backward", "forward", small_corpus)
    assert on.verdict == "pass", on.message
    assert on.sources.get(corpus.CORPUS, 0) >= 1
    back = Verdict.from_json(json.loads(json.dumps(on.to_json())))
    assert back.sources == on.sources


def test_failure_records_the_source_that_found_it(reference, small_corpus):
    import kernels
    from kernels.registry import kernel

    ref = kernel("max_pool2d_with_indices_backward")

    def doubled(*args, **kwargs):  # a backward that scales the gradient
        return ref(*args, **kwargs) * 2

    # (embedding_dense_backward's schema-drawn indices can crash CPU itself: not this test)
    kernels.install(overrides={"max_pool2d_with_indices_backward": doubled})
    v = _run(reference, "max_pool2d_with_indices_backward", "forward", small_corpus)
    assert v.verdict == "fail" and v.category == "value", v.message
    assert v.failures[0].source == corpus.CORPUS
    assert "max_pool2d_with_indices_backward" in (v.repro or "")
    back = Verdict.from_json(json.loads(json.dumps(v.to_json())))
    assert back.failures[0].source == corpus.CORPUS


def test_autograd_check_draws_corpus_calls(reference, small_corpus):
    # corpus only (no schema strategy mixed in): the calls are AutogradCalls and pass
    sig = _sig("max_pool2d_with_indices")
    c = Corpus.read(small_corpus)
    call = _draw(corpus.corpus_calls(sig, HINTS.for_op(sig.name), mode="autograd", corpus=c))
    assert isinstance(call, AutogradCall)
    v = _run(reference, "max_pool2d_with_indices", "autograd", small_corpus)
    assert v.verdict == "pass", v.message


def test_corpus_off_and_plain_jsonl(tmp_path, small_corpus):
    plain = tmp_path / "calls.jsonl"
    with gzip.open(small_corpus, "rt") as fh:
        plain.write_text(fh.read())
    assert len(Corpus.read(plain)) == len(Corpus.read(small_corpus))
    assert corpus.for_settings(corpus.OFF) is None


# -- benchmarks/bench_reach.py ----------------------------------------------------------------


def test_bench_reach_counts_reached_items_and_lists_misses(tmp_path):
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent.parent.parent / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        import bench_reach
    finally:
        sys.path.remove(str(bench))
    base = {"record": "verdict", "check": "forward", "category": None, "message": "",
            "examples": 0}
    verdicts = {
        ("a_backward", "forward"): dict(base, overload="a_backward", verdict="pass", examples=3,
                                        sources={"corpus": 3}),
        ("b_backward", "forward"): dict(base, overload="b_backward", verdict="unsupported"),
        ("c_backward", "forward"): dict(base, overload="c_backward", verdict="skip",
                                        category="no_valid_inputs", message="CPU rejected"),
    }
    f = bench_reach.figure(["a_backward", "b_backward", "c_backward", "d_backward"], "forward",
                           verdicts)
    assert (f["total"], f["reached"], f["corpus_only"]) == (4, 2, 1)
    assert f["missing"] == {"c_backward": "skip/no_valid_inputs: CPU rejected",
                            "d_backward": "not in the results"}
    sets = bench_reach.universes()
    assert "convolution_backward" in sets["backward"]
    assert "_adaptive_avg_pool2d_backward" in sets["backward"]
    assert "tanh" in sets["autograd"] and "linear" in sets["autograd+implicit"]
    assert "linear" not in sets["autograd"]
    assert 150 <= len(sets["backward"]) <= 300
    # an autogen'd out= over an overload CPU has no kernel for does not count; one over a CPU
    # kernel does
    assert "cudnn_batch_norm_backward.out" in sets["backward-registered"]
    assert "cudnn_batch_norm_backward.out" not in sets["backward"]
    assert "native_batch_norm_backward.out" in sets["backward"]


def test_the_packaged_corpus_is_read_once_however_it_is_asked_for() -> None:
    """The plugin's set-up asks ``load()``, every item's search ``load(None)``: one read."""
    from conformance.inputs import corpus

    assert corpus.load() is corpus.load(None)
