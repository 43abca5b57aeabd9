"""Backward ops' calls derived from the forwards whose derivatives formulas call them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import opdb
from conformance.corpus_tools.build import build, read_records, write
from conformance.corpus_tools.collector import Collector
from conformance.corpus_tools.derive import backward_targets, forwards_of, record_derived
from conformance.inputs import corpus
from conformance.inputs.corpus import Corpus
from conformance.trace.recorder import Recorder


def test_forwards_of_reads_the_formulas():
    db = opdb.load()
    f = forwards_of(db)
    assert "max_pool2d_with_indices" in f["max_pool2d_with_indices_backward"]
    assert "avg_pool3d" in f["avg_pool3d_backward"]
    assert "_softmax" in f["_softmax_backward_data"]
    targets = backward_targets(db, ["avg_pool3d_backward"])
    assert "avg_pool3d_backward" not in targets and "max_pool3d_with_indices_backward" in targets
    assert all("backward" in db[t].base for t in targets)


def _forward_only() -> Collector:
    """A collector that saw avg_pool3d's and max_pool3d's forwards only (no backward)."""
    collector = Collector()
    x = torch.randn(1, 2, 4, 4, 4)
    with Recorder(top=False, max_examples=0, on_call=collector), \
            collector.recording("test:forward"):
        F.avg_pool3d(x, 2)
        F.max_pool3d(x, 2, return_indices=True)
    assert "avg_pool3d" in collector.calls and "avg_pool3d_backward" not in collector.calls
    return collector


def test_a_backward_op_is_reached_through_its_forwards_recorded_calls():
    collector = _forward_only()
    got = record_derived(collector, lambda _: None,
                         match="^(avg_pool3d_backward|max_pool3d_with_indices_backward)$")
    assert got == {"avg_pool3d_backward": "avg_pool3d",
                   "max_pool3d_with_indices_backward": "max_pool3d_with_indices"}
    [rec] = [r for g in collector.calls["max_pool3d_with_indices_backward"].values()
             for r in g.values()][:1]
    args = dict(rec["args"])
    assert rec["origin"] == "derived:max_pool3d_with_indices"
    assert args["grad_output"]["shape"] == [1, 2, 2, 2, 2]
    assert args["self"]["shape"] == [1, 2, 4, 4, 4]
    # indices come from the forward: kept exactly, each inside its 2x2x2 window of 64
    values = args["indices"]["values"]
    assert len(values) == 8 * 2 and all(0 <= v < 64 for v in values)


def test_unreachable_backward_is_reported_not_invented():
    # no recorded forward and a forward whose schema draws are never valid inputs within 2
    # tries: the answer says so instead of recording something
    collector = Collector()
    got = record_derived(collector, lambda _: None, tries=2, match="^reflection_pad3d_backward$")
    assert list(got) == ["reflection_pad3d_backward"]
    assert (got["reflection_pad3d_backward"] is None) == \
        ("reflection_pad3d_backward" not in collector.calls)


def test_build_on_a_base_derives_and_keeps_its_records(tmp_path):
    base = tmp_path / "base.jsonl.gz"
    write(_forward_only().select(), base, {"record": "corpus", "format": corpus.FORMAT,
                                           "opinfo": True, "opinfos_recorded": 7})
    out = tmp_path / "out.jsonl.gz"
    header = build(models=[], opinfo=False, output=out, base=base, log=lambda _: None,
                   derived_match="^(avg_pool3d_backward|max_pool3d_with_indices_backward)$")
    c = Corpus.read(out)
    assert "avg_pool3d" in c and "avg_pool3d_backward" in c
    assert header["derived"] and header["derived_reached"] >= 2
    assert header["opinfos_recorded"] == 7  # the base's facts carried over
    records, h = read_records(out)
    assert h["derived_seconds"] is not None and len(records) == len(c)


@pytest.mark.slow  # imports torch's OpInfo database (~20 s)
def test_opinfo_backward_samples_reach_the_higher_rank_forms():
    pytest.importorskip("expecttest")
    from conformance.corpus_tools.build import record_opinfo

    def recorded(samples_backward: int) -> set[str]:
        collector = Collector()
        record_opinfo(collector, lambda _: None, match=r"^nn\.functional\.interpolate\.nearest$",
                      samples_per_dtype=1, samples_backward=samples_backward)
        return set(collector.calls)

    # interpolate's samples go through the ranks in order: the first is 1-d
    few, more = recorded(1), recorded(16)
    assert "upsample_nearest1d_backward" in few and "upsample_nearest2d_backward" not in few
    assert {"upsample_nearest2d_backward", "upsample_nearest3d_backward"} <= more


def test_an_attempt_cpu_refuses_records_nothing():
    """The recorder notes a call before its kernel runs: the calls of an attempt that raised
    (a schema-drawn input CPU refuses) are dropped, so the corpus keeps only calls CPU
    answered (reflection_pad3d wants a 4-d or 5-d input; the draws that are not raise)."""
    from conformance.corpus_tools.derive import derive
    from opdb.opdata import load_hints

    db = opdb.load()
    collector = Collector()
    derive(collector, ["reflection_pad3d_backward"], db=db, hints=load_hints(db=db), tries=20)
    ranks = [len(dict(r["args"])["self"]["shape"]) for g in
             collector.calls.get("reflection_pad3d", {}).values() for r in g.values()]
    assert all(r in (4, 5) for r in ranks), ranks
    assert ("reflection_pad3d_backward" in collector.calls) == bool(ranks)
