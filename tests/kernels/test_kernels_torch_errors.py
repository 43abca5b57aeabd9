"""NumPy's refusals of an argument reach the caller as RuntimeError, as ATen's checks raise."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def test_numpy_refusals_are_runtime_errors_and_other_value_errors_stay() -> None:
    import kernels
    from kernels.registry import kernel

    kernels.install()

    ref = kernel("mul.Tensor")

    def broadcasts_in_numpy(self, other):
        if self.dim() == 1 and isinstance(other, torch.Tensor) and other.dim() == 1 \
                and self.shape != other.shape:
            np.broadcast_shapes(tuple(self.shape), tuple(other.shape))
        return ref(self, other)

    def own_value_error(self, other):
        raise ValueError("mul: an argument the kernel refuses on purpose")

    try:
        kernels.install(overrides={"mul.Tensor": broadcasts_in_numpy})
        with pytest.raises(RuntimeError, match="shape mismatch"):
            torch.ops.aten.mul.Tensor(torch.ones(2, device="mlu"), torch.ones(3, device="mlu"))
        kernels.install(overrides={"mul.Tensor": own_value_error})
        with pytest.raises(ValueError, match="on purpose"):
            torch.ops.aten.mul.Tensor(torch.ones(2, device="mlu"), torch.ones(2, device="mlu"))
    finally:
        kernels.install()
    with pytest.raises(RuntimeError, match="negative dimensions"):
        torch.nonzero_static(torch.ones(3, device="mlu"), size=-2)
