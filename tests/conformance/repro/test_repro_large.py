"""A repro of a call with a tensor too large to write literally is still valid Python."""

from __future__ import annotations

import torch

from conformance.repro.common import tensor_literal


def test_a_large_tensor_is_written_as_zeros_that_compile_inside_a_call() -> None:
    text = tensor_literal(torch.ones(4, 1025))
    assert text == "torch.zeros((4, 1025), dtype=torch.float32)"
    compile(f"f({text}.to('cpu'),\n  1)", "<repro>", "eval")
