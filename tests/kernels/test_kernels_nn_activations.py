"""Activations and their backward overloads on ``mlu`` against CPU (kernels/nn_activations.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import kernels

kernels.install()

DEV = "mlu"

# values on both sides of every kink (0, +-3, the hardtanh bounds, softplus's threshold)
_X = torch.tensor([-25.0, -4.0, -3.0, -2.5, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 3.5, 25.0])

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "elu": lambda t: F.elu(t, 0.7),
    "selu": F.selu,
    "celu": lambda t: F.celu(t, 1.3),
    "hardtanh": lambda t: F.hardtanh(t, -0.5, 1.0),
    "relu6": F.relu6,
    "leaky_relu": lambda t: F.leaky_relu(t, 0.05),
    "silu": F.silu,
    "softplus": lambda t: F.softplus(t, 2.0, 10.0),
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "mish": F.mish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "logsigmoid": F.logsigmoid,
    "glu": lambda t: F.glu(t.reshape(7, 2), 1),
    "prelu": lambda t: F.prelu(t.reshape(2, 7),
                               torch.full((1,), 0.3, dtype=t.dtype, device=t.device)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_backward(name: str, dtype: torch.dtype) -> None:
    fn = CASES[name]
    x_cpu = _X.to(dtype).clone().requires_grad_()
    x_dev = _X.to(dtype).to(DEV).requires_grad_()
    y_cpu, y_dev = fn(x_cpu), fn(x_dev)
    assert y_dev.device.type == DEV
    torch.testing.assert_close(y_dev.detach().cpu(), y_cpu.detach())
    g = torch.linspace(-1, 2, y_cpu.numel(), dtype=dtype).reshape(y_cpu.shape)
    y_cpu.backward(g)
    y_dev.backward(g.to(DEV))
    torch.testing.assert_close(x_dev.grad.cpu(), x_cpu.grad)


@pytest.mark.parametrize("name", ["elu", "hardtanh", "leaky_relu", "silu", "hardsigmoid",
                                  "hardswish", "mish"])
def test_inplace_and_out(name: str) -> None:
    x = _X.clone()
    y = x.to(DEV)
    expected = getattr(torch.ops.aten, name)(x)
    assert getattr(torch.ops.aten, name + "_")(y) is y
    torch.testing.assert_close(y.cpu(), expected)
    out = torch.empty(0, device=DEV)
    assert getattr(torch.ops.aten, name).out(x.to(DEV), out=out) is out
    torch.testing.assert_close(out.cpu(), expected)


def test_half_precision_computes_in_float32() -> None:
    for dtype in (torch.float16, torch.bfloat16):
        x = _X.to(dtype)
        torch.testing.assert_close(F.silu(x.to(DEV)).cpu(), F.silu(x))
        torch.testing.assert_close(F.hardswish(x.to(DEV)).cpu(), F.hardswish(x))


def test_integer_input_is_refused_like_cpu() -> None:
    with pytest.raises(RuntimeError, match="not implemented for"):
        F.silu(torch.arange(3).to(DEV))


def test_mish_backward_float32_where_its_terms_cancel() -> None:
    """At x = -1.3054 the two terms of mish' (0.237 and -0.262) cancel: the float32 result is
    the double derivative rounded once (float32 evaluation was 2.5e-6 relative off)."""
    g = torch.tensor([402.3360595703125, 1.0, -3.0])
    x = torch.tensor([-1.3054195642471313, -1.19, -1.25])
    exact = torch.ops.aten.mish_backward(g.double(), x.double()).float()
    got = torch.ops.aten.mish_backward(g.to(DEV), x.to(DEV)).cpu()
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, exact, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tanh_backward_near_one_rounds_once_as_cpu(dtype: torch.dtype) -> None:
    """1 - y * y cancels near |y| = 1: CPU's fused multiply-add rounds once (issue 26: float32
    y = 0.98833, grad 3.64e17 was 1.3e-6 off relative, past float32's rtol). Bitwise equal."""
    g = torch.Generator().manual_seed(0)
    n = 4099  # past the vectorized loop's width, with a scalar tail
    y = (1 - torch.rand(n, generator=g, dtype=torch.float64) ** 3 * 0.05).to(dtype)
    y = y * torch.where(torch.rand(n, generator=g) < 0.5, -1, 1).to(dtype)
    y[:3] = torch.tensor([float("inf"), 1e30, 0.1], dtype=dtype)
    grad = torch.randn(n, generator=g, dtype=dtype) * 1e17
    want = torch.ops.aten.tanh_backward(grad, y)
    got = torch.ops.aten.tanh_backward(grad.to("mlu"), y.to("mlu")).cpu()
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
