"""A repro of a call with a tensor too large to write literally still holds its exact values
(compressed bytes), and is valid Python inside a call."""

from __future__ import annotations

import pytest
import torch

from conformance.repro.common import tensor_literal

LARGE = {
    "float32 matrix": lambda: torch.randn(4, 1025),
    "complex128 vector of 2**16 + 1": lambda: torch.randn(2**16 + 1, dtype=torch.complex128),
    "bfloat16": lambda: torch.randn(5000).bfloat16(),
    "bool": lambda: torch.rand(5000) > 0.5,
    "transposed view": lambda: torch.randn(3000, 2).t(),
    "nan and inf kept": lambda: torch.tensor([float("nan"), float("-inf")] * 2500),
}


@pytest.mark.parametrize("make", LARGE.values(), ids=LARGE.keys())
def test_a_large_tensor_is_written_exactly(make) -> None:
    t = make()
    text = tensor_literal(t)
    assert text.startswith("torch.frombuffer(")
    back = eval(text)  # noqa: S307 - the repro's own text, as a user runs it
    assert back.dtype == t.dtype and back.shape == t.shape
    assert torch.equal(back.view(torch.uint8) if t.dtype != torch.bool else back,
                       t.contiguous().view(torch.uint8) if t.dtype != torch.bool else t)
    compile(f"f({text}.to('cpu'),\n  1)", "<repro>", "eval")


def test_beyond_the_byte_limit_zeros_of_the_shape_still_compile() -> None:
    text = tensor_literal(torch.ones(2**17 + 1, dtype=torch.complex128))
    assert text == "torch.zeros((131073,), dtype=torch.complex128)"
    compile(f"f({text}.to('cpu'),\n  1)", "<repro>", "eval")
