"""The ``distribution`` check: the KS bound's false-alarm rate holds on samples of one
distribution (discrete and continuous), a sample one rounding away is the same distribution,
injected samplers of each wrong kind fail ``distribution``, and the reference backend passes."""

from __future__ import annotations

import math

import pytest
import torch
from test_injected_bugs import _run

from conformance.compare.distribution import columns, distances, ks_bound
from conformance.inputs.edges import with_edges
from opdb.opdata import ArgHint, OpHints


def test_bound_is_not_crossed_by_samples_of_one_distribution():
    gen = torch.Generator().manual_seed(0)
    bound = ks_bound(256, 2048, 64)
    for draw in (lambda n: torch.bernoulli(torch.full((n, 64), 0.3), generator=gen),
                 lambda n: torch.randint(0, 3, (n, 64), generator=gen).double(),
                 lambda n: torch.randn(n, 64, generator=gen)):
        for _ in range(20):
            d = distances(draw(256), draw(2048), 0.0, 0.0)
            assert float(d.max()) <= bound


def test_bound_shrinks_with_samples_and_grows_with_tests():
    assert ks_bound(256, 2048, 1) < ks_bound(256, 2048, 100) < ks_bound(64, 2048, 100)
    assert ks_bound(256, 2048, 50) == pytest.approx(0.28, abs=0.01)


def test_one_rounding_away_is_the_same_distribution_and_a_shift_is_not():
    x = torch.rand(2048, 4, dtype=torch.float64).float()
    y = torch.rand(256, 4, dtype=torch.float64).float()
    rounded = columns([t for t in (y * (1 + 1e-7))])
    assert float(distances(rounded, columns(list(x)), 1.3e-6, 1e-5).max()) < 0.2
    assert float(distances(columns(list(y + 0.5)), columns(list(x)), 1.3e-6, 1e-5).max()) > 0.4


def test_complex_parts_and_nan_are_columns_of_their_own():
    c = columns([torch.tensor([1 + 2j, math.nan])])
    assert c.shape == (1, 4) and c[0, 2] == math.inf


def test_edges_put_bounded_arguments_on_their_bounds():
    import opdb
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature

    sig = OpSignature.of(opdb.load()["bernoulli.Tensor"])
    hints = OpHints(args={"p": ArgHint(min=0, max=1)})
    call = Call(sig, (("self", torch.zeros(30)), ("p", torch.full((30,), 0.5))))
    p = dict(with_edges(call, hints, 3).values)["p"]
    assert {0.0, 1.0, 0.5} == set(p.tolist())
    assert dict(with_edges(call, hints, 3).values)["self"].eq(0).all()


def _override(overload, make):
    import kernels
    from kernels.registry import kernel

    kernels.install(overrides={overload: make(kernel(overload))})


def _ignores_p(ref):  # every element drawn with probability 0.5, whatever p says
    def bad(self, p=0.5, *, generator=None):
        return ref(self, 0.5, generator=generator)
    return bad


def _never_last(ref):  # the last category of positive weight is never drawn
    def bad(self, num_samples, replacement=False, *, generator=None):
        w = self.cpu().clone()
        last = (w > 0).int().cumsum(-1).argmax(-1, keepdim=True)
        if int((w > 0).sum()) > num_samples:
            w.scatter_(-1, last, 0.0)
        return ref(w.to(self.device), num_samples, replacement, generator=generator)
    return bad


def _constant(ref):  # the midpoint of the range, every time
    def bad(self, from_=0.0, to=1.0, *, generator=None, **kw):
        lo = kw.pop("from", from_)
        return self.fill_((lo + to) / 2)
    return bad


@pytest.mark.parametrize(("overload", "make"), [("bernoulli_.float", _ignores_p),
                                                ("multinomial", _never_last),
                                                ("uniform_", _constant)])
def test_wrong_samplers_fail_distribution(reference, overload, make):
    _override(overload, make)
    v = _run(reference, overload, "distribution", max_examples=10)
    assert v.verdict == "fail", v.message
    assert "distribution" in {v.category} | {f.category for f in v.failures}, v.message
    assert v.repro


@pytest.mark.parametrize("overload", ["bernoulli_.float", "multinomial", "uniform_",
                                      "normal_", "randperm", "native_dropout"])
def test_reference_samplers_pass(reference, overload):
    v = _run(reference, overload, "distribution", max_examples=10)
    assert v.verdict == "pass", f"{v.message}\n{v.repro}"
    assert v.examples > 0


def test_deterministic_ops_do_not_apply():
    import opdb
    from conformance.checks.distribution import distribution_applies
    from conformance.core.signature import OpSignature

    assert distribution_applies(OpSignature.of(opdb.load()["add.Tensor"]))
    assert distribution_applies(OpSignature.of(opdb.load()["bernoulli.p"])) is None
