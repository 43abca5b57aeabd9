"""A result whose read-back is not the tensor it reports is a failure of that result, not an
error of the harness."""

from __future__ import annotations

import pytest
import torch
from compare_calls import make_call, make_context

from conformance.compare.outputs import compare_outputs
from conformance.core.verdicts import CheckFailure


class _Misread(torch.Tensor):
    """A result whose values copy to CPU in another shape than it reports (torch_xla 2.9: a
    diagonal of a [3, 3, 1] clone under autograd reports [1, 2] and reads back as [3, 0])."""

    def cpu(self, *args, **kwargs):  # type: ignore[override]
        return torch.zeros(3, 0, dtype=self.dtype)


def test_a_result_read_back_in_another_shape_fails_as_device():
    x = torch.arange(9.0).reshape(3, 3, 1)
    call = make_call("diagonal", self=x, offset=1, dim1=0, dim2=1)
    ctx = make_context(call)
    expected = call.run("cpu")
    with pytest.raises(CheckFailure) as raised:
        compare_outputs(ctx, call, expected, expected.clone().as_subclass(_Misread),
                        values=True)
    assert raised.value.category == "device"
    assert "reports float32[1, 2], but copying it to CPU gave float32[3, 0]" \
        in raised.value.message
    compare_outputs(ctx, call, expected, expected.clone(), values=True)  # a true read-back passes
