"""opdb.dtypes: the one home of the twelve dtypes (names, order, categories, tolerances)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from opdb import dtypes


def test_twelve_names_are_torch_dtypes_in_order():
    assert len(dtypes.DTYPE_NAMES) == 12
    assert dtypes.torch_dtypes() == tuple(getattr(torch, n) for n in dtypes.DTYPE_NAMES)
    assert dtypes.DTYPES == dict(zip(dtypes.DTYPE_NAMES, dtypes.torch_dtypes(), strict=True))
    assert [dtypes.dtype_name(d) for d in dtypes.torch_dtypes()] == list(dtypes.DTYPE_NAMES)


def test_categories_partition_the_twelve():
    groups = (dtypes.BOOL, dtypes.INTEGRAL, dtypes.FLOATING, dtypes.COMPLEX)
    assert sorted(n for g in groups for n in g) == sorted(dtypes.DTYPE_NAMES)
    for name in dtypes.DTYPE_NAMES:
        d = dtypes.torch_dtype(name)
        cat = dtypes.category(name)
        assert (cat == "floating") == d.is_floating_point
        assert (cat == "complex") == d.is_complex
        assert (cat == "integral") == (not d.is_floating_point and not d.is_complex
                                       and d is not torch.bool)
    assert set(dtypes.LOW_PRECISION) <= set(dtypes.FLOATING)


@pytest.mark.parametrize("name", dtypes.DTYPE_NAMES)
def test_default_tolerance_is_what_assert_close_uses(name):
    d = dtypes.torch_dtype(name)
    rtol, atol = dtypes.default_tolerance(name)
    assert dtypes.default_tolerance(d) == (rtol, atol)
    assert (rtol == atol == 0) == (not (d.is_floating_point or d.is_complex))
    if rtol:
        # assert_close's own message states the tolerance it applied by default
        a = torch.zeros((), dtype=torch.float64).to(d)
        with pytest.raises(AssertionError, match=rf"up to {atol:g} allowed"):
            torch.testing.assert_close(a + 1, a)


def test_low_precision_tolerances_are_looser():
    f = dtypes.default_tolerance
    assert f("bfloat16")[0] > f("float16")[0] > f("float32")[0] >= f("float64")[0]


def test_c_spellings_cover_the_twelve():
    assert set(dtypes.SCALAR_TYPE_NAMES) == set(dtypes.DTYPE_NAMES)
    assert set(dtypes.CPP_TYPE_NAMES) == set(dtypes.DTYPE_NAMES)
    # the spelling CPU's own "not implemented for 'X'" messages use
    with pytest.raises(RuntimeError, match=f"'{dtypes.SCALAR_TYPE_NAMES['bool']}'"):
        torch.zeros(2, dtype=torch.bool).cumsum(0, dtype=torch.bool).lgamma()


def test_importing_the_names_does_not_import_torch():
    code = "import sys, opdb.dtypes as d; d.category('int8'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
