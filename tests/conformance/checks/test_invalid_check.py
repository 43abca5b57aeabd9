"""The ``invalid`` check: which arguments get a validity rule, a backend answering a call CPU
refuses fails ``error_accepts`` (out-of-range index, mismatched shapes, negative size), an
emptied argument is compared, and the reference backend passes."""

from __future__ import annotations

import pytest
import torch
from test_injected_bugs import _run

from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.invalid import mutate, sites
from opdb.opdata import load_hints


def _sig(name: str) -> OpSignature:
    import opdb

    return OpSignature.of(opdb.load()[name])


def _kinds(name: str) -> set[tuple[str, str]]:
    return {(s.kind, s.name) for s in sites(_sig(name), load_hints().for_op(name))}


def test_sites_come_from_the_schema_and_the_hints():
    assert {("dim", "dim"), ("index", "index"), ("dtype", "index"), ("empty", "index")} \
        <= _kinds("index_select")
    assert {("shape", "mat2"), ("empty", "mat2")} <= _kinds("mm")
    assert ("size", "size") in _kinds("view")
    assert ("count", "n") in _kinds("randperm")
    assert ("empty", "mask") in _kinds("masked_select")
    assert not _kinds("add.Tensor")


def test_an_emptied_index_takes_its_source_along():
    sig, hints = _sig("index_add"), load_hints().for_op("index_add")
    call = Call(sig, (("self", torch.ones(3, 2)), ("dim", 0), ("index", torch.tensor([0, 2])),
                      ("source", torch.ones(2, 2))))
    site = next(s for s in sites(sig, hints) if s.kind == "empty" and s.name == "index")
    empty = dict(mutate(call, site, hints, False, 0).values)
    assert empty["index"].shape == (0,) and empty["source"].shape == (0, 2)
    assert empty["self"].shape == (3, 2)


def test_an_out_of_range_index_is_past_every_size():
    sig, hints = _sig("index_select"), load_hints().for_op("index_select")
    call = Call(sig, (("self", torch.ones(3, 5)), ("dim", 0), ("index", torch.tensor([0, 1]))))
    site = next(s for s in sites(sig, hints) if s.kind == "index")
    for low, want in ((False, 5), (True, -6)):
        bad = mutate(call, site, hints, low, 1)
        assert dict(bad.values)["index"].tolist() == [0, want] and bad.base is call
        assert "out of range" in bad.mutation


def _override(overload, kernel):
    import kernels

    kernels.install(overrides={overload: kernel})


def _wrapping_index_select(self, dim, index):  # positions taken modulo the size: no check
    n = self.size(dim) or 1
    return torch.index_select(self.cpu(), dim, index.cpu() % n).to(self.device)


def _truncating_mm(self, mat2):  # inner sizes not compared: the shorter one wins
    a, b = self.cpu(), mat2.cpu()
    k = min(a.shape[1], b.shape[0])
    return (a[:, :k] @ b[:k]).to(self.device)


def _negative_as_zero_zeros(size, *, dtype=None, layout=None, device=None, pin_memory=None):
    return torch.zeros([max(int(s), 0) for s in size], dtype=dtype).to("mlu")


@pytest.mark.parametrize(("overload", "kernel"), [("index_select", _wrapping_index_select),
                                                  ("mm", _truncating_mm),
                                                  ("zeros", _negative_as_zero_zeros)])
def test_missing_validation_fails_error_accepts(reference, overload, kernel):
    _override(overload, kernel)
    v = _run(reference, overload, "invalid", max_examples=10)
    assert v.verdict == "fail", v.message
    found = {f.category: f.message for f in v.failures}
    assert "error_accepts" in found, v.message
    assert v.repro


@pytest.mark.parametrize("overload", ["index_select.out", "mm", "zeros", "view", "narrow",
                                      "gather", "index_add", "masked_fill.Scalar"])
def test_reference_backend_passes(reference, overload):
    v = _run(reference, overload, "invalid", max_examples=10)
    assert v.verdict == "pass", f"{v.message}\n{v.repro}"
    assert v.examples > 0
