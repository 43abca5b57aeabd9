"""Every nn kernel on every one of the 12 dtypes: accepted exactly when CPU accepts it (with
CPU's exception type when refused), and then the same result dtype and values."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import kernels

kernels.install()

DEV = "mlu"
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
          torch.complex128]

# fmt: off
OPS: dict[str, Callable[[torch.Tensor], Any]] = {
 "relu": lambda x: torch.relu(x),
 "relu_": lambda x: torch.relu_(x.clone()),
 "threshold": lambda x: F.threshold(x, 0.5, 2),
 "threshold_backward": lambda x: torch.ops.aten.threshold_backward(x, x, 0),
 "gelu": lambda x: F.gelu(x),
 "gelu_backward": lambda x: torch.ops.aten.gelu_backward(x, x),
 "softmax": lambda x: torch._softmax(x, 0, False),
 "log_softmax": lambda x: torch._log_softmax(x, 0, False),
 "softmax_bwd": lambda x: torch._softmax_backward_data(x, x, 0, x.dtype),
 "silu": F.silu, "elu": F.elu, "hardtanh": F.hardtanh, "leaky_relu": F.leaky_relu, "hardswish": F.hardswish,
 "sigmoid_backward": lambda x: torch.ops.aten.sigmoid_backward(x, x),
 "tanh_backward": lambda x: torch.ops.aten.tanh_backward(x, x),
 "maxpool": lambda x: torch.ops.aten.max_pool2d_with_indices(x.reshape(1,1,2,3), [2,2], [1,1]),
 "avgpool": lambda x: torch.ops.aten.avg_pool2d(x.reshape(1,1,2,3), [2,2], [1,1]),
 "adaptive": lambda x: torch.ops.aten._adaptive_avg_pool2d(x.reshape(1,1,2,3), [1,2]),
 "conv": lambda x: torch.ops.aten.convolution(x.reshape(1,1,2,3), x.reshape(1,1,2,3)[:, :, :, :2], None, [1,1],[0,0],[1,1],False,[0,0],1),
 "layer_norm": lambda x: torch.native_layer_norm(x, [6], None, None, 1e-5),
 "batch_norm": lambda x: torch.native_batch_norm(x.reshape(2,3), None, None, None, None, True, 0.1, 1e-5),
 "mse": lambda x: torch.ops.aten.mse_loss(x, x.flip(0)),
 "dropout": lambda x: torch.native_dropout(x, 0.0, True),
 "dropout_bwd": lambda x: torch.ops.aten.native_dropout_backward(x, x != 0, 2.0),
 "group_norm": lambda x: torch.native_group_norm(x.reshape(1,2,3), None, None, 1, 2, 3, 1, 1e-5),
 "emb_bwd": lambda x: torch.ops.aten.embedding_dense_backward(x.reshape(3,2), torch.tensor([0,1,0]), 4, -1, False),
 "nll": lambda x: torch.ops.aten.nll_loss_forward(x.reshape(2,3), torch.tensor([0,2]), None, 1, -100),
 "smooth_l1": lambda x: torch.ops.aten.smooth_l1_loss(x, x.flip(0)),
 "huber": lambda x: torch.ops.aten.huber_loss(x, x.flip(0)),
 "bce": lambda x: torch.ops.aten.binary_cross_entropy(x.abs()/4, x.abs()/4),
 "glu": lambda x: torch.ops.aten.glu(x),
 "prelu": lambda x: torch.ops.aten._prelu_kernel(x, x),
 "logsigmoid": lambda x: torch.ops.aten.log_sigmoid_forward(x),
 "softplus": lambda x: torch.ops.aten.softplus(x),
 "mish": lambda x: torch.ops.aten.mish(x),
 "hardsigmoid": lambda x: torch.ops.aten.hardsigmoid(x),
 "hardtanh_u8pos": lambda x: torch.ops.aten.hardtanh(x, 0, 1),
 "up_nearest": lambda x: torch.ops.aten.upsample_nearest2d(x.reshape(1,1,2,3), [4,6]),
 "up_bilinear": lambda x: torch.ops.aten.upsample_bilinear2d(x.reshape(1,1,2,3), [4,6], False),
 "reflect": lambda x: torch.ops.aten.reflection_pad2d(x.reshape(1,1,2,3), [1,1,1,1]),
 "replicate": lambda x: torch.ops.aten.replication_pad2d(x.reshape(1,1,2,3), [1,1,1,1]),
 "reflect1d": lambda x: torch.ops.aten.reflection_pad1d(x.reshape(1,2,3), [1,1]),
 "maxpool3d": lambda x: torch.ops.aten.max_pool3d_with_indices(x.reshape(1,1,1,2,3), [1,2,2], [1,1,1]),
 "avgpool3d": lambda x: torch.ops.aten.avg_pool3d(x.reshape(1,1,1,2,3), [1,2,2], [1,1,1]),
 "adaptive3d": lambda x: torch.ops.aten._adaptive_avg_pool3d(x.reshape(1,1,1,2,3), [1,1,2]),
 "conv_t": lambda x: torch.ops.aten.convolution(x.reshape(1,1,2,3), x.reshape(1,1,2,3)[:, :, :, :2], None, [1,1],[0,0],[1,1],True,[0,0],1),
}
# fmt: on


def _run(fn: Callable[[torch.Tensor], Any], x: torch.Tensor) -> tuple[Any, type | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(x), None
    except Exception as exc:  # the exception type is what is compared
        return None, type(exc)


@pytest.mark.parametrize("name", sorted(OPS))
def test_dtype_support_matches_cpu(name: str) -> None:
    fn = OPS[name]
    problems = []
    for dtype in DTYPES:
        x = torch.tensor([-1.5, 0.0, 2.0, 0.5, -0.25, 3.0]).to(dtype)
        expected, cpu_err = _run(fn, x)
        got, dev_err = _run(fn, x.to(DEV))
        if cpu_err or dev_err:
            if cpu_err is not dev_err:
                problems.append(f"{dtype}: cpu raised {cpu_err}, mlu raised {dev_err}")
            continue
        exp = expected if isinstance(expected, tuple) else (expected,)
        res = got if isinstance(got, tuple) else (got,)
        for e, g in zip(exp, res, strict=True):
            if g.dtype != e.dtype:
                problems.append(f"{dtype}: result dtype {g.dtype}, CPU {e.dtype}")
                continue
            # uint8 bilinear: CPU interpolates in fixed point (documented in nn_resample)
            atol = 1 if name == "up_bilinear" and dtype == torch.uint8 else 1e-2
            try:
                torch.testing.assert_close(g.cpu(), e, equal_nan=True, atol=atol, rtol=1e-2)
            except AssertionError as exc:
                problems.append(f"{dtype}: {str(exc).splitlines()[0]}")
    assert not problems, f"{name}: " + "; ".join(problems)
