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
