"""The NumPy maths of ``kernels.nn`` against torch's CPU kernels (no device involved)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kernels import nn

RTOL, ATOL = 1e-5, 1e-5


def close(actual: np.ndarray, expected: torch.Tensor, **kw: float) -> None:
    __tracebackhide__ = True
    torch.testing.assert_close(torch.from_numpy(np.asarray(actual)), expected.detach(), **kw)


def rand(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype)


CONV_CASES = [
    # (N, C, H, W, O, k, stride, padding, dilation, groups)
    (2, 3, 7, 6, 4, (3, 3), (1, 1), (0, 0), (1, 1), 1),
    (2, 4, 8, 9, 6, (3, 2), (2, 1), (1, 1), (1, 1), 2),
    (1, 4, 9, 9, 4, (3, 3), (2, 3), (2, 1), (2, 2), 4),
    (3, 2, 5, 5, 3, (1, 1), (1, 1), (0, 0), (1, 1), 1),
    (2, 6, 10, 7, 6, (2, 3), (3, 2), (1, 0), (1, 2), 3),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
def test_conv2d_forward_backward(case: tuple) -> None:
    n, c, h, w, o, k, s, p, d, g = case
    x = rand(n, c, h, w, seed=1).requires_grad_()
    wt = rand(o, c // g, *k, seed=2).requires_grad_()
    b = rand(o, seed=3).requires_grad_()
    y = F.conv2d(x, wt, b, s, p, d, g)
    go = rand(*y.shape, seed=4)
    y.backward(go)
    close(
        nn.conv_forward(x.detach().numpy(), wt.detach().numpy(), b.detach().numpy(), s, p, d, g), y
    )
    gi, gw, gb = nn.conv_backward(
        go.numpy(), x.detach().numpy(), wt.detach().numpy(), s, p, d, g, (True, True, True)
    )
    close(gi, x.grad)
    close(gw, wt.grad)
    close(gb, b.grad)


def test_conv1d_and_conv3d() -> None:
    x1, w1 = rand(2, 3, 11, seed=1), rand(4, 3, 3, seed=2)
    close(
        nn.conv_forward(x1.numpy(), w1.numpy(), None, [2], [1], [2], 1),
        F.conv1d(x1, w1, None, 2, 1, 2),
    )
    x3, w3 = rand(1, 2, 5, 6, 4, seed=1), rand(2, 1, 2, 3, 2, seed=2)
    close(
        nn.conv_forward(x3.numpy(), w3.numpy(), None, [1, 2, 1], [1, 0, 1], [1, 1, 2], 2),
        F.conv3d(x3, w3, None, (1, 2, 1), (1, 0, 1), (1, 1, 2), 2),
    )


@pytest.mark.parametrize(
    "s,p,op,d,g",
    [
        ((1, 1), (0, 0), (0, 0), (1, 1), 1),
        ((2, 3), (1, 2), (1, 2), (1, 1), 2),
        ((2, 2), (1, 0), (0, 1), (2, 1), 1),
        # output_padding below the dilation at stride 1: whole windows past the last input row
        # (the input gradient came back a row too long)
        ((1, 1), (0, 1), (1, 0), (2, 1), 1),
    ],
)
def test_conv_transpose2d(s: tuple, p: tuple, op: tuple, d: tuple, g: int) -> None:
    x = rand(2, 4, 5, 6, seed=1).requires_grad_()
    wt = rand(4, 6 // g, 3, 2, seed=2).requires_grad_()
    b = rand(6, seed=3).requires_grad_()
    y = F.conv_transpose2d(x, wt, b, s, p, op, g, d)
    go = rand(*y.shape, seed=4)
    y.backward(go)
    xn, wn = x.detach().numpy(), wt.detach().numpy()
    close(nn.conv_transpose_forward(xn, wn, b.detach().numpy(), s, p, op, d, g), y)
    gi, gw, gb = nn.conv_transpose_backward(go.numpy(), xn, wn, s, p, op, d, g, (True, True, True))
    close(gi, x.grad)
    close(gw, wt.grad)
    close(gb, b.grad)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(training: bool, affine: bool) -> None:
    x = rand(4, 3, 5, 2, seed=1).requires_grad_()
    w = rand(3, seed=2).requires_grad_() if affine else None
    b = rand(3, seed=3).requires_grad_() if affine else None
    rm, rv = rand(3, seed=5), rand(3, seed=6).abs() + 0.5
    rm_np, rv_np = rm.numpy().copy(), rv.numpy().copy()
    y, sm, si = torch.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
    go = rand(*y.shape, seed=4)
    args = (None if w is None else w.detach().numpy(), None if b is None else b.detach().numpy())
    out, sm_np, si_np = nn.batch_norm(x.detach().numpy(), *args, rm_np, rv_np, training, 0.1, 1e-5)
    close(out, y)
    close(sm_np, sm)
    close(si_np, si)
    close(rm_np, rm)
    close(rv_np, rv)
    grads = torch.ops.aten.native_batch_norm_backward(
        go, x, w, rm, rv, sm, si, training, 1e-5, [True, affine, affine]
    )
    mine = nn.batch_norm_backward(
        go.numpy(),
        x.detach().numpy(),
        args[0],
        rm.numpy(),
        rv.numpy(),
        sm.numpy(),
        si.numpy(),
        training,
        1e-5,
        (True, affine, affine),
    )
    for a, e in zip(mine, grads, strict=True):
        if e is None:
            assert a is None
        else:
            close(a, e)


def test_layer_norm() -> None:
    x = rand(3, 4, 5, seed=1).requires_grad_()
    w, b = rand(4, 5, seed=2).requires_grad_(), rand(4, 5, seed=3).requires_grad_()
    y, mean, rstd = torch.native_layer_norm(x, [4, 5], w, b, 1e-5)
    ym, mm, rm = nn.layer_norm(
        x.detach().numpy(), [4, 5], w.detach().numpy(), b.detach().numpy(), 1e-5
    )
    close(ym, y)
    close(mm, mean)
    close(rm, rstd)
    go = rand(*y.shape, seed=4)
    ex = torch.ops.aten.native_layer_norm_backward(
        go, x, [4, 5], mean, rstd, w, b, [True, True, True]
    )
    got = nn.layer_norm_backward(
        go.numpy(),
        x.detach().numpy(),
        [4, 5],
        mm,
        rm,
        w.detach().numpy(),
        b.detach().numpy(),
        (True,) * 3,
    )
    for a, e in zip(got, ex, strict=True):
        close(a, e)


POOL_CASES = [
    # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 3), (3, 2), (1, 1), (1, 1), True),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d(case: tuple) -> None:
    k, s, p, d, ceil = case
    x = rand(2, 3, 9, 8, seed=1)
    x[0, 0, 1, 1] = float("nan")
    x = x.requires_grad_()
    y, idx = torch.ops.aten.max_pool2d_with_indices(x, k, s, p, d, ceil)
    ym, im = nn.max_pool2d_with_indices(x.detach().numpy(), k, s, p, d, ceil)
    close(ym, y, equal_nan=True)
    close(im, idx)
    go = rand(*y.shape, seed=2)
    ex = torch.ops.aten.max_pool2d_with_indices_backward(go, x, k, s, p, d, ceil, idx)
    close(
        nn.max_pool2d_with_indices_backward(go.numpy(), x.detach().numpy(), k, s, p, d, ceil, im),
        ex,
    )


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d_special_values(case: tuple) -> None:
    k, s, p, d, ceil = case
    x = rand(1, 2, 9, 8, seed=3)
    x[0, 0, :4, :4] = float("-inf")
    x[0, 1, 2:5, 2:5] = float("nan")
    x[0, 1, 6:, 6:] = 1.0  # ties: the first one wins
    y, idx = torch.ops.aten.max_pool2d_with_indices(x, k, s, p, d, ceil)
    ym, im = nn.max_pool2d_with_indices(x.numpy(), k, s, p, d, ceil)
    close(ym, y, equal_nan=True)
    close(im, idx)
    xi = (x.nan_to_num(0, 5, -7) * 3).to(torch.int32)
    yi, ii = torch.ops.aten.max_pool2d_with_indices(xi, k, s, p, d, ceil)
    ymi, imi = nn.max_pool2d_with_indices(xi.numpy(), k, s, p, d, ceil)
    close(ymi, yi)
    close(imi, ii)


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 3])
def test_avg_pool2d(case: tuple, include_pad: bool, divisor: int | None) -> None:
    k, s, p, _, ceil = case
    x = rand(2, 3, 9, 8, seed=1).requires_grad_()
    y = F.avg_pool2d(x, k, s, p, ceil, include_pad, divisor)
    close(nn.avg_pool2d(x.detach().numpy(), k, s, p, ceil, include_pad, divisor), y)
    go = rand(*y.shape, seed=2)
    (gx,) = torch.autograd.grad(y, x, go)
    close(
        nn.avg_pool2d_backward(go.numpy(), x.detach().numpy(), k, s, p, ceil, include_pad, divisor),
        gx,
    )


@pytest.mark.parametrize("out", [(1, 1), (3, 2), (4, 7), (5, 5)])
def test_adaptive_avg_pool2d(out: tuple) -> None:
    x = rand(2, 3, 7, 5, seed=1).requires_grad_()
    y = F.adaptive_avg_pool2d(x, out)
    close(nn.adaptive_avg_pool2d(x.detach().numpy(), out), y)
    go = rand(*y.shape, seed=2)
    (gx,) = torch.autograd.grad(y, x, go)
    close(nn.adaptive_avg_pool2d_backward(go.numpy(), x.detach().numpy()), gx)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(dim: int) -> None:
    x = rand(3, 4, 5, seed=1)
    go = rand(3, 4, 5, seed=2)
    y, ly = torch._softmax(x, dim, False), torch._log_softmax(x, dim, False)
    close(nn.softmax(x.numpy(), dim), y)
    close(nn.log_softmax(x.numpy(), dim), ly)
    close(
        nn.softmax_backward(go.numpy(), y.numpy(), dim),
        torch._softmax_backward_data(go, y, dim, x.dtype),
    )
    close(
        nn.log_softmax_backward(go.numpy(), ly.numpy(), dim),
        torch._log_softmax_backward_data(go, ly, dim, x.dtype),
    )


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 4, 3, 2)])
def test_nll_loss(reduction: int, weighted: bool, shape: tuple) -> None:
    x = rand(*shape, seed=1).log_softmax(1 if len(shape) > 1 else 0)
    tshape = (shape[0], *shape[2:]) if len(shape) > 1 else ()
    t = torch.randint(0, 4, tshape, generator=torch.Generator().manual_seed(3))
    if t.ndim:
        t.view(-1)[0] = -100
    w = rand(4, seed=5).abs() if weighted else None
    fwd = torch.ops.aten.nll_loss2d_forward if len(shape) == 4 else torch.ops.aten.nll_loss_forward
    bwd = (
        torch.ops.aten.nll_loss2d_backward if len(shape) == 4 else torch.ops.aten.nll_loss_backward
    )
    out, tw = fwd(x, t, w, reduction, -100)
    wn = None if w is None else w.numpy()
    om, twm = nn.nll_loss_forward(x.numpy(), t.numpy(), wn, reduction, -100)
    close(om, out)
    if reduction:
        close(twm, tw)
    go = rand(*out.shape, seed=7)
    ex = bwd(go, x, t, w, reduction, -100, tw)
    close(nn.nll_loss_backward(go.numpy(), x.numpy(), t.numpy(), wn, reduction, -100, twm), ex)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_skips_ignored_rows_whatever_their_scores(reduction: int) -> None:
    """An ignored row's loss and gradient are 0 even where its score (or upstream gradient) is
    inf or NaN: ATen skips the row, a 0 weight times inf would be NaN."""
    x = torch.tensor([[float("inf"), float("nan")], [-1.0, -0.25], [-2.0, -0.5]],
                     dtype=torch.float64)  # row 0 is ignored (its target is ignore_index 0)
    t = torch.tensor([0, 1, 1])
    out, tw = torch.ops.aten.nll_loss_forward(x, t, None, reduction, 0)
    om, twm = nn.nll_loss_forward(x.numpy(), t.numpy(), None, reduction, 0)
    close(om, out)
    go = torch.tensor([float("inf"), 1.0, 2.0] if reduction == 0 else 3.0, dtype=torch.float64)
    ex = torch.ops.aten.nll_loss_backward(go, x, t, None, reduction, 0, tw)
    close(nn.nll_loss_backward(go.numpy(), x.numpy(), t.numpy(), None, reduction, 0, twm), ex)


def test_nll_loss_target_out_of_bounds() -> None:
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        nn.nll_loss_forward(np.zeros((2, 3)), np.array([0, 7]), None, 1, -100)


@pytest.mark.parametrize("padding_idx,freq", [(-1, False), (2, False), (-1, True), (0, True)])
def test_embedding_dense_backward(padding_idx: int, freq: bool) -> None:
    idx = torch.tensor([[0, 2, 2], [5, 0, 2]])
    go = rand(2, 3, 4, seed=1)
    ex = torch.ops.aten.embedding_dense_backward(go, idx, 7, padding_idx, freq)
    close(nn.embedding_dense_backward(go.numpy(), idx.numpy(), 7, padding_idx, freq), ex)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gelu(approximate: str, dtype: torch.dtype) -> None:
    x = rand(50, seed=1, dtype=dtype) * 3
    go = rand(50, seed=2, dtype=dtype)
    close(nn.gelu(x.numpy(), approximate), F.gelu(x, approximate=approximate))
    close(
        nn.gelu_backward(go.numpy(), x.numpy(), approximate),
        torch.ops.aten.gelu_backward(go, x, approximate=approximate),
    )


def test_threshold_backward() -> None:
    x = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    go = torch.tensor([1.0, 2.0, 3.0, 4.0])
    close(
        nn.threshold_backward(go.numpy(), x.numpy(), 0.0),
        torch.ops.aten.threshold_backward(go, x, 0.0),
    )


def test_native_dropout_rate_and_scale() -> None:
    x = np.ones((200, 500), dtype=np.float32)
    out, mask = nn.native_dropout(x, 0.3, True, np.random.default_rng(0))
    assert mask.dtype == np.bool_
    assert abs(1 - mask.mean() - 0.3) < 0.01
    np.testing.assert_allclose(out[mask], 1 / 0.7, rtol=1e-6)
    assert (out[~mask] == 0).all()
    g = nn.native_dropout_backward(np.full_like(x, 2.0), mask, 1 / 0.7)
    np.testing.assert_allclose(g, np.where(mask, 2 / 0.7, 0), rtol=1e-6)
    same, ones = nn.native_dropout(x, 0.3, False, np.random.default_rng(0))
    assert ones.all() and (same == x).all()


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_shift_edge_cases(dim: int) -> None:
    """The global-max shift falls back to per-slice maxima exactly where CPU's result needs it:
    far-apart rows (underflow), +-inf, NaN, all -inf rows, empty tensors."""
    rng = np.random.default_rng(0)
    cases = [rng.standard_normal((16, 20)).astype(np.float32) * s for s in (1, 10, 60)]
    x = rng.standard_normal((4, 50)).astype(np.float32)
    x[1] -= 200
    cases.append(x)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    x[0] = -np.inf
    x[1, 2] = np.inf
    x[2, 1] = np.nan
    cases += [x, np.zeros((0, 3), np.float32), np.zeros((3, 0), np.float32)]
    with np.errstate(all="ignore"):
        for c in cases:
            t = torch.from_numpy(c)
            close(nn.softmax(c, dim), torch.softmax(t, dim), equal_nan=True)
            close(nn.log_softmax(c, dim), torch.log_softmax(t, dim), equal_nan=True)
