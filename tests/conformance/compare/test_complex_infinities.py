"""Complex infinities agree whatever their other part (C99 Annex G), and nothing else does."""

from __future__ import annotations

import torch

from conformance.compare.values import complex_infinities_agree

inf, nan = float("inf"), float("nan")


def test_two_complex_infinities_agree() -> None:
    expected = torch.tensor([complex(inf, -inf), complex(-inf, nan), complex(-9e185, -inf)])
    actual = torch.tensor([complex(nan, -inf), complex(-inf, inf), complex(nan, -inf)])
    torch.testing.assert_close(complex_infinities_agree(actual, expected), expected,
                               rtol=0, atol=0, equal_nan=True)


def test_an_infinity_against_nan_or_a_finite_value_still_differs() -> None:
    expected = torch.tensor([complex(nan, nan), complex(1.0, 2.0), complex(inf, 0.0)])
    actual = torch.tensor([complex(inf, inf), complex(inf, 2.0), complex(1.0, 0.0)])
    assert complex_infinities_agree(actual, expected) is actual


def test_real_tensors_are_left_alone() -> None:
    actual, expected = torch.tensor([inf, nan]), torch.tensor([-inf, 1.0])
    assert complex_infinities_agree(actual, expected) is actual
