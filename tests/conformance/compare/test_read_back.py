"""A result whose read-back is not the tensor it reports is a failure of that result, not an
error of the harness."""

from __future__ import annotations

import pytest
import torch
from compare_calls import make_call, make_context

from conformance.compare.outputs import compare_outputs
from conformance.core.call import Call
from conformance.core.verdicts import CheckFailure


class _Misread(torch.Tensor):
    """A result whose values copy to CPU in another shape than it reports (torch_xla 2.9: a
    diagonal of a [3, 3, 1] clone under autograd reports [1, 2] and reads back as [3, 0])."""

    def cpu(self, *args, **kwargs):  # type: ignore[override]
        return torch.zeros(3, 0, dtype=self.dtype)


class _ComputedOnRead(torch.Tensor):
    """A result whose metadata changes when reading computes it (torch_xla 2.9: the base of a
    view that ``set_()`` emptied reports [1, 3, 3] until it is read, then [0, 3, 3])."""

    def cpu(self, *args, **kwargs):  # type: ignore[override]
        self.data = torch.zeros(0, 3, dtype=self.dtype)
        return torch.zeros(0, 3, dtype=self.dtype)


@pytest.mark.parametrize(("misread", "name", "args", "reported", "read"), [
    (_Misread, "diagonal", {"self": torch.arange(9.0).reshape(3, 3, 1), "offset": 1, "dim1": 0,
                            "dim2": 1}, "float32[1, 2]", "float32[3, 0]"),
    (_ComputedOnRead, "neg", {"self": torch.ones(1, 3)}, "float32[1, 3]", "float32[0, 3]"),
])
def test_a_result_read_back_in_another_shape_fails_as_device(misread, name, args, reported, read):
    call = make_call(name, **args)
    ctx = make_context(call)
    expected = call.run("cpu")
    with pytest.raises(CheckFailure) as raised:
        compare_outputs(ctx, call, expected, expected.clone().as_subclass(misread),
                        values=True)
    assert raised.value.category == "device"
    assert f"reports {reported}, but copying it to CPU gave {read}" in raised.value.message
    compare_outputs(ctx, call, expected, expected.clone(), values=True)  # a true read-back passes


class _UnreadableCall(Call):
    """What torch_xla 2.9 leaves of an in-place call whose graph failed to lower (the autograd
    check's ``masked_scatter_`` of a 0-dim float32): the device tensors it wrote report no
    shape ("Check failed: data()->tensor_data"), so describing them raises."""

    def describe(self) -> str:
        raise RuntimeError("Check failed: data()->tensor_data")


def test_a_refused_call_on_unreadable_device_tensors_is_described_by_its_marker(monkeypatch):
    marker = make_call("neg_", self=torch.tensor(1.5))
    ctx = make_context(marker)

    def refuse(self: Call, device: str) -> None:
        raise RuntimeError("Error while lowering: aten::neg_")

    monkeypatch.setattr(Call, "run", refuse)
    with pytest.raises(CheckFailure) as raised:
        ctx.run_backend(_UnreadableCall(sig=marker.sig, values=marker.values), marker=marker)
    assert raised.value.category == "error_raises"
    assert raised.value.message.endswith("but CPU returned a result [neg_(float32[])]")
