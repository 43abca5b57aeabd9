"""Adversarial values: structure drawn by Hypothesis, bulk from a seeded generator, specials mixed
in with a deliberate probability, everything shrinking toward tame values."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

from conformance.core.fills import fill, float_specials, int_specials
from conformance.inputs.values import python_scalars, scalar_values, tensor_values
from opdb.dtypes import DTYPE_NAMES, FLOATING, INTEGRAL

FAST = settings(max_examples=200, deadline=None, database=None, derandomize=True)


def _collect(strategy, n=200):
    seen = []

    @settings(FAST, max_examples=n)
    @given(strategy)
    def run(x):
        seen.append(x)

    run()
    return seen


def test_fill_is_a_function_of_its_choices():
    a = fill("float32", (3, 4), profile="wide", seed=7, specials=[(5, 16)])
    b = fill("float32", (3, 4), profile="wide", seed=7, specials=[(5, 16)])
    assert torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
    assert a.reshape(-1)[5].item() == float_specials("float32")[16]
    assert not torch.equal(a, fill("float32", (3, 4), profile="wide", seed=8))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_every_dtype_gets_its_shape_and_dtype(name):
    for t in _collect(tensor_values(name, (2, 3)), n=20):
        assert t.dtype == getattr(torch, name) and t.shape == (2, 3)


@pytest.mark.parametrize("name", FLOATING)
def test_floats_reach_the_edges(name):
    """NaN, ±inf, -0.0, finfo extremes, subnormals and ties all turn up in a few hundred draws."""
    vals = torch.cat([t.double().reshape(-1) for t in _collect(tensor_values(name, (4,)))])
    fi = torch.finfo(getattr(torch, name))
    assert vals.isnan().any() and (vals == math.inf).any() and (vals == -math.inf).any()
    assert ((vals == 0) & vals.signbit()).any(), "-0.0"
    assert (vals.abs() == fi.max).any()
    assert ((vals != 0) & (vals.abs() < fi.tiny)).any(), "subnormals"
    assert (vals.abs() > 1e4).any() or name == "float16" and (vals.abs() > 1e3).any()
    assert ((vals - vals.floor()) == 0.5).any(), "ties"
    tame = vals[vals.isfinite() & (vals.abs() <= 8)]
    assert tame.numel() > vals.numel() / 2, "most values stay tame"


@pytest.mark.parametrize("name", INTEGRAL)
def test_integers_reach_the_extremes(name):
    vals = torch.cat([t.reshape(-1).long() for t in _collect(tensor_values(name, (4,)))])
    info = torch.iinfo(getattr(torch, name))
    assert (vals == info.min).any() and (vals == info.max).any()
    if info.min < 0:
        assert (vals == -1).any()


def test_bounds_hold_for_every_element_specials_included():
    for t in _collect(tensor_values("int64", (6,), bounds=(0, 1))):
        assert bool(((t >= 0) & (t <= 1)).all())
    for t in _collect(tensor_values("float32", (6,), bounds=(-2, 12))):
        assert bool(((t >= -2) & (t <= 12)).all())


def test_extremes_false_keeps_the_minimum_and_infinities_out():
    ints = torch.cat([t.reshape(-1) for t in _collect(tensor_values("int64", (4,),
                                                                    extremes=False))])
    assert not (ints == torch.iinfo(torch.int64).min).any()
    floats = torch.cat([t.reshape(-1) for t in _collect(tensor_values("float32", (4,),
                                                                      extremes=False))])
    assert not floats.isinf().any()
    assert torch.iinfo(torch.int64).min not in int_specials("int64", extremes=False)


def test_not_adversarial_is_tame():
    vals = torch.cat([t.reshape(-1) for t in _collect(tensor_values("float64", (4,),
                                                                    adversarial=False))])
    assert bool(((vals.abs() <= 8) & vals.isfinite()).all())


def test_shrinks_toward_tame_values():
    """A failure that needs one NaN shrinks to one NaN among small values (seed 0)."""
    t = find(tensor_values("float32", (3,)), lambda t: bool(t.isnan().any()),
             settings=settings(database=None, max_examples=300, derandomize=True))
    assert int(t.isnan().sum()) == 1
    rest = t[~t.isnan()]
    assert bool((rest.abs() <= 8).all()), t
    # and a failure needing a huge value shrinks to the small profile plus one special
    t = find(tensor_values("float32", (3,)), lambda t: bool((t.abs() > 1e30).any()),
             settings=settings(database=None, max_examples=300, derandomize=True))
    assert int((t.abs() > 1e30).sum()) == 1


def test_scalars_mix_small_and_special():
    ints = _collect(scalar_values("int32"))
    assert {-1, 0}.issubset(set(ints)) and 2**31 - 1 in ints and any(v < -3 for v in ints)
    assert 2**31 in ints or -(2**31) - 1 in ints, "one past the range"
    floats = _collect(scalar_values("float16"))
    assert any(isinstance(v, float) and math.isnan(v) for v in floats)
    assert any(isinstance(v, float) and math.isinf(v) for v in floats)
    assert sum(1 for v in floats if isinstance(v, int | float) and abs(v) <= 3) > len(floats) / 2
    bounded = _collect(scalar_values("float32", bounds=(-10, 10)))
    assert all(-10 <= v <= 10 for v in bounded)


def test_promotion_scalars_are_drawn_per_kind():
    assert set(_collect(python_scalars("bool"))) == {True, False}
    ints = set(_collect(python_scalars("int8")))
    assert {2, -1, 256, 2**63 - 1}.issubset(ints)
    floats = _collect(python_scalars("float64"))
    assert all(isinstance(v, float) for v in floats) and any(math.isnan(v) for v in floats)
    assert all(isinstance(v, complex) for v in _collect(python_scalars("complex64")))


def test_promotion_scalars_keep_a_hints_bounds():
    # a polynomial degree hinted [-2, 12]: 2**63 - 1 took ATen's recurrence (and the reference
    # backend's) as many steps as it allowed, 30 s for one item
    ints = set(_collect(python_scalars("int64", bounds=(-2, 12))))
    assert ints and all(-2 <= v <= 12 for v in ints) and 5 in ints
    floats = _collect(python_scalars("float32", bounds=(-2, 12)))
    assert floats and all(-2 <= v <= 12 for v in floats)  # NaN and inf are out of range
    assert all(-2 <= v.real <= 12 and -2 <= v.imag <= 12
               for v in _collect(python_scalars("complex64", bounds=(-2, 12))))
    # no value of the kind fits: the kind's whole table, not an empty strategy
    assert 2 in set(_collect(python_scalars("int64", bounds=(1e-5, 0.1))))


@FAST
@given(st.data())
def test_tensors_of_size_zero(data):
    t = data.draw(tensor_values("float32", (0, 3)))
    assert t.shape == (0, 3)


def test_every_dtype_fills_with_ml_dtypes_imported():
    """ml_dtypes registers a NumPy ``bfloat16`` (the reference backend imports it): fills of
    every dtype still come out as torch tensors of that dtype."""
    import ml_dtypes  # noqa: F401

    from opdb.dtypes import DTYPE_NAMES, torch_dtype

    for name in DTYPE_NAMES:
        for profile in ("small", "wide"):
            t = fill(name, (2, 3), profile=profile, seed=3, specials=[(1, 1)])
            assert t.dtype == torch_dtype(name) and t.shape == (2, 3)
