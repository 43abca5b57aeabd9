"""Group norm, pointwise losses, upsampling and padding on ``mlu`` against CPU."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import kernels

kernels.install()

DEV = "mlu"


def rand(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def parity(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor, grad: tuple[int, ...] = (0,),
           **tol: Any) -> None:
    """Values and the gradients of the inputs at positions ``grad`` agree with CPU."""
    __tracebackhide__ = True
    cpu = [x.clone().requires_grad_(i in grad) for i, x in enumerate(inputs)]
    dev = [x.to(DEV).requires_grad_(i in grad) for i, x in enumerate(inputs)]
    yc, yd = fn(*cpu), fn(*dev)
    assert yd.device.type == DEV
    torch.testing.assert_close(yd.detach().cpu(), yc.detach(), **tol)
    g = rand(*yc.shape, seed=42, dtype=yc.dtype)
    yc.backward(g)
    yd.backward(g.to(DEV))
    for i in grad:
        torch.testing.assert_close(dev[i].grad.cpu(), cpu[i].grad, **tol)


@pytest.mark.parametrize("groups,affine", [(1, True), (2, False), (4, True)])
def test_group_norm(groups: int, affine: bool) -> None:
    w, b = rand(4, seed=2), rand(4, seed=3)
    if affine:
        parity(lambda x, ww, bb: F.group_norm(x, groups, ww, bb), rand(3, 4, 5, 2, seed=1), w, b,
               grad=(0, 1, 2), atol=1e-5, rtol=1e-4)
    else:
        parity(lambda x: F.group_norm(x, groups), rand(3, 4, 5, 2, seed=1), atol=1e-5, rtol=1e-4)


LOSSES = {
    "mse": lambda x, t, r: F.mse_loss(x, t, reduction=r),
    "smooth_l1": lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
    "smooth_l1_beta0": lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
    "huber": lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.7),
    "bce": lambda x, t, r: F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(t), reduction=r),
    "bce_weighted": lambda x, t, r: F.binary_cross_entropy(
        torch.sigmoid(x), torch.sigmoid(t), weight=torch.ones_like(x) * 0.5, reduction=r),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses(name: str, reduction: str) -> None:
    parity(lambda x, t: LOSSES[name](x, t, reduction), rand(4, 5, seed=1), rand(4, 5, seed=2),
           grad=(0, 1) if name.startswith(("mse", "smooth", "huber")) else (0,))


def test_bce_refuses_values_outside_0_1() -> None:
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(torch.full((2,), 1.5).to(DEV), torch.ones(2).to(DEV))


@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (5, 7)}, {"scale_factor": 1.7},
                                {"size": (2, 3)}])
def test_upsample_nearest(kw: dict) -> None:
    parity(lambda x: F.interpolate(x, mode="nearest", **kw), rand(2, 3, 4, 5, seed=1))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (5, 7)}, {"scale_factor": 0.6},
                                {"size": (1, 1)}])
def test_upsample_bilinear(kw: dict, align: bool) -> None:
    parity(lambda x: F.interpolate(x, mode="bilinear", align_corners=align, **kw),
           rand(2, 3, 4, 5, seed=1))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pad", [((2, 3, 6), (2, 1)), ((2, 3, 5, 6), (1, 2, 3, 0)),
                                       ((3, 5, 6), (2, 2, 1, 1)),
                                       ((1, 2, 4, 5, 6), (1, 1, 2, 0, 0, 3))])
def test_pad(mode: str, shape: tuple, pad: tuple) -> None:
    parity(lambda x: F.pad(x, pad, mode=mode), rand(*shape, seed=1))


POOL3D = [((2, 2, 2), None, 0, 1, False), ((3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1), True)]


@pytest.mark.parametrize("case", POOL3D, ids=str)
def test_max_pool3d(case: tuple) -> None:
    k, s, p, d, ceil = case
    parity(lambda x: F.max_pool3d(x, k, s, p, d, ceil_mode=ceil), rand(2, 2, 6, 7, 5, seed=1))
    x = rand(2, 6, 7, 5, seed=2)  # unbatched, indices too
    expected = F.max_pool3d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    got = F.max_pool3d(x.to(DEV), k, s, p, d, ceil_mode=ceil, return_indices=True)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("case", POOL3D, ids=str)
@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool3d(case: tuple, include_pad: bool) -> None:
    k, s, p, _, ceil = case
    parity(lambda x: F.avg_pool3d(x, k, s, p, ceil, include_pad), rand(2, 2, 6, 7, 5, seed=1))


@pytest.mark.parametrize("divisor", [None, 2, -3])
def test_avg_pool3d_int64_extremes(divisor: int | None) -> None:
    """Window sums at and past INT64_MIN: C's division truncates toward zero (no sign flip from
    abs(INT64_MIN), which wraps), and a sum that wraps is divided as the wrapped value."""
    big, low = 2**63 - 1, -(2**63)
    x = torch.tensor([low, 1, big, 1, -7, 2, low + 1, 0, 5, -5, big, -9], dtype=torch.int64)
    x = x.reshape(1, 1, 1, 3, 4)
    for k in ([1, 1, 1], [1, 1, 2], [1, 3, 1]):
        expected = torch.ops.aten.avg_pool3d(x, k, [1, 1, 1], [0, 0, 0], False, False, divisor)
        got = torch.ops.aten.avg_pool3d(x.to(DEV), k, [1, 1, 1], [0, 0, 0], False, False, divisor)
        assert torch.equal(got.cpu(), expected), (k, got.cpu(), expected)


@pytest.mark.parametrize("out", [(1, 1, 1), (2, 3, 4), (6, 7, 5)])
def test_adaptive_avg_pool3d(out: tuple) -> None:
    parity(lambda x: F.adaptive_avg_pool3d(x, out), rand(2, 2, 6, 7, 5, seed=1))


@pytest.mark.parametrize("op", ["nearest", "bilinear", "bilinear_align", "reflect", "replicate",
                                "adaptive"])
def test_non_finite_values_stay_in_their_windows(op: str) -> None:
    """inf/nan inputs and gradients reach exactly the outputs/inputs CPU's kernels send them to
    (an interpolation-matrix product would smear inf * 0 = nan over whole rows)."""
    fns: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "nearest": lambda t: F.interpolate(t, scale_factor=2, mode="nearest"),
        "bilinear": lambda t: F.interpolate(t, size=(7, 3), mode="bilinear"),
        "bilinear_align": lambda t: F.interpolate(t, scale_factor=2, mode="bilinear",
                                                  align_corners=True),
        "reflect": lambda t: F.pad(t, (1, 2, 2, 1), mode="reflect"),
        "replicate": lambda t: F.pad(t, (1, 2, 2, 1), mode="replicate"),
        "adaptive": lambda t: F.adaptive_avg_pool2d(t, (3, 2)),
    }
    x = rand(2, 3, 4, 5, seed=1)
    x[0, 0, 1, 1] = float("inf")
    x[1, 1, 2, 2] = float("nan")
    xa, xb = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    ya, yb = fns[op](xa), fns[op](xb)
    torch.testing.assert_close(yb.detach().cpu(), ya.detach(), equal_nan=True)
    g = rand(*ya.shape, seed=2)
    g[0, 0, 0, 0] = float("inf")
    ya.backward(g)
    yb.backward(g.to(DEV))
    torch.testing.assert_close(xb.grad.cpu(), xa.grad, equal_nan=True)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_integer_loss_backward_and_threshold_follow_cpp_arithmetic(reduction: int) -> None:
    """CPU accepts integer tensors in these kernels: scalars are cast to the element type
    (wraparound, truncation) and the arithmetic is C++'s (int promotion, truncating division)."""
    aten = torch.ops.aten
    u = torch.tensor([3, 0, 200], dtype=torch.uint8)
    v = torch.tensor([1, 5, 100], dtype=torch.uint8)
    w = torch.tensor([2, 1, 7], dtype=torch.uint8)
    i8 = torch.tensor([3, -4, 100], dtype=torch.int8)
    calls = [
        (aten.mse_loss_backward, (w, u, v, reduction)),
        (aten.smooth_l1_loss_backward, (w, u, v, reduction, 0.0)),
        (aten.smooth_l1_loss_backward, (w, u, v, reduction, 2.0)),
        (aten.smooth_l1_loss_backward, (i8, i8.flip(0), i8, reduction, 3.0)),
        (aten.threshold, (u, -1, 1)),
        (aten.threshold_backward, (u, v, -1)),
    ]
    for op, args in calls:
        expected = op(*args)
        got = op(*(a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args))
        torch.testing.assert_close(got.cpu(), expected, msg=lambda m, o=op: f"{o}: {m}")
