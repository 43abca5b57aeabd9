"""Recurrent layers (fused LSTM/GRU cells) and adaptive max pooling on ``mlu`` against CPU."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import kernels

kernels.install()

DEV = "mlu"
TOL = {"rtol": 1e-4, "atol": 1e-5}


def _check_module(module: nn.Module, x: torch.Tensor) -> None:
    """Outputs, and parameter gradients of a squared-sum loss, agree with CPU."""
    __tracebackhide__ = True
    dev = copy.deepcopy(module).to(DEV)
    a, b = module(x), dev(x.to(DEV))
    a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
    torch.testing.assert_close(b.detach().cpu(), a.detach(), **TOL)
    a.pow(2).sum().backward()
    b.pow(2).sum().backward()
    for (name, p), q in zip(module.named_parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, **TOL, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bias,bidirectional,layers", [(True, False, 2), (False, True, 1)])
def test_recurrent_layers(kind: str, bias: bool, bidirectional: bool, layers: int) -> None:
    torch.manual_seed(0)
    module = getattr(nn, kind)(4, 6, num_layers=layers, bias=bias, batch_first=True,
                               bidirectional=bidirectional)
    _check_module(module, torch.randn(2, 5, 4))


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_recurrent_cells(kind: str) -> None:
    torch.manual_seed(0)
    _check_module(getattr(nn, kind)(4, 6), torch.randn(3, 4))


@pytest.mark.parametrize("out", [(2, 3), (6, 9), (1, 1), (5, 7)])
def test_adaptive_max_pool2d(out: tuple) -> None:
    x = torch.randn(2, 3, 5, 7, generator=torch.Generator().manual_seed(1))
    x[0, 0, 1, 1] = float("nan")
    x[1, 1, :2, :2] = 2.0  # ties: the first one wins
    expected = F.adaptive_max_pool2d(x, out, return_indices=True)
    got = F.adaptive_max_pool2d(x.to(DEV), out, return_indices=True)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g.cpu(), e, equal_nan=True)
    xa, xb = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    g = torch.randn(expected[0].shape)
    F.adaptive_max_pool2d(xa, out).backward(g)
    F.adaptive_max_pool2d(xb, out).backward(g.to(DEV))
    torch.testing.assert_close(xb.grad.cpu(), xa.grad)


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_fused_cells_check_sizes_as_cuda(op: str) -> None:
    """The fused cells refuse a bias that is not 1-d of 4 (3) * hidden elements, as CUDA's
    checkSizes: lstm_cell with b_ih/b_hh of shape [4 * hidden, 1] (CPU's linear broadcasts it)
    computed on mlu, and the fused backward's [4 * hidden] bias gradient then failed autograd's
    shape check (the autograd run's lstm_cell(float32[4, 1], ..., b_ih=float32[4, 1]))."""
    gates = 4 if op == "lstm" else 3
    x, h = torch.randn(4, 1), torch.randn(4, 1)
    w = torch.randn(gates, 1)
    state = [h, h] if op == "lstm" else h
    cell = torch.lstm_cell if op == "lstm" else torch.gru_cell

    def run(bias_shape: tuple[int, ...]) -> torch.Tensor:
        b = torch.randn(bias_shape)
        dev = [t.to("mlu") for t in state] if op == "lstm" else state.to("mlu")  # type: ignore[union-attr]
        out = cell(x.to("mlu"), dev, w.to("mlu"), w.to("mlu"), b.to("mlu"), b.to("mlu"))
        return out[0] if op == "lstm" else out

    assert run((gates,)).shape == (4, 1)
    with pytest.raises(RuntimeError, match=f"Expected 1-dimensional tensor, but got "
                                           f"2-dimensional tensor for argument #3 'input_bias' "
                                           f"\\(while checking arguments for _thnn_fused_{op}_"):
        run((gates, 1))
    with pytest.raises(RuntimeError, match=f"to have {gates} elements; but got a tensor with "
                                           f"{gates + 1} elements"):
        run((gates + 1,))
