"""The value comparison's equal-values shortcut (docs/decisions.md#engine-speed): equal results
pass in one pass, before ``isclose``; anything else is compared as before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import opdb
from conformance.compare.terms import terms_magnitude
from conformance.compare.values import assert_values
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure
from opdb.opdata import load_hints, load_tolerances


def _ctx(name: str) -> SimpleNamespace:
    tol = load_tolerances()
    return SimpleNamespace(tolerance=lambda overload, dtype: (None, None),
                           scale_ulps=tol.scale_ulps, scale_kind=tol.scale_kind,
                           terms_scale=terms_magnitude,
                           nonfinite_unspecified=tol.nonfinite_unspecified,
                           hints=load_hints().for_op(name), comparisons={})


def _check(actual: torch.Tensor, expected: torch.Tensor) -> None:
    sig = OpSignature.of(opdb.load()["sum"])
    call = Call(sig=sig, values=(("self", expected.clone()),))
    assert_values(_ctx("sum"), call, "out", "sum(...)", actual, expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.complex64, torch.int64,
                                   torch.bool])
def test_equal_values_pass_without_isclose(dtype, monkeypatch):
    expected = torch.arange(6).reshape(2, 3).to(dtype)

    def no_isclose(*args, **kwargs):
        raise AssertionError("isclose ran on equal values")

    monkeypatch.setattr(torch, "isclose", no_isclose)
    _check(expected.clone(), expected)


def test_close_values_still_pass_and_far_ones_fail():
    expected = torch.tensor([1.0, 2.0, float("nan")])
    _check(torch.tensor([1.0 + 1e-7, 2.0, float("nan")]), expected)  # NaN: not torch.equal
    with pytest.raises(CheckFailure, match="values differ"):
        _check(torch.tensor([1.5, 2.0, float("nan")]), expected)
    with pytest.raises(CheckFailure, match="values differ"):
        _check(torch.tensor([1, 3]), torch.tensor([1, 2]))
