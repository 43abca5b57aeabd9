"""Forward/backward parity of the nn kernels on ``mlu`` against CPU, through the dispatcher.

Each case runs the same ``torch.nn.functional`` call on CPU and on ``mlu`` (inputs copied), then
back-propagates the same random output gradient and compares the results and every input gradient
with ``torch.testing.assert_close``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import kernels

kernels.install()

DEV = "mlu"


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rand(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(shape, generator=_gen(seed), dtype=dtype)


def _to(x: Any, device: str, grad: bool) -> Any:
    if isinstance(x, torch.Tensor):
        y = x.detach().to(device)
        if grad and x.is_floating_point():
            y.requires_grad_()
        return y
    return x


def parity(fn: Callable[..., Any], *inputs: Any, grad: bool = True, frozen: tuple[int, ...] = (),
           **tol: float) -> None:
    """``fn(*inputs)`` on CPU and mlu agree, and so do the input gradients.

    Inputs whose positions are in ``frozen`` never require grad.
    """
    __tracebackhide__ = True
    cpu_in = [_to(x, "cpu", grad and i not in frozen) for i, x in enumerate(inputs)]
    dev_in = [_to(x, DEV, grad and i not in frozen) for i, x in enumerate(inputs)]
    cpu_out, dev_out = fn(*cpu_in), fn(*dev_in)
    if isinstance(cpu_out, tuple):
        for c, d in zip(cpu_out, dev_out, strict=True):
            assert d.device.type == DEV
            torch.testing.assert_close(d.cpu(), c, equal_nan=True, **tol)
        cpu_out, dev_out = cpu_out[0], dev_out[0]
    else:
        assert dev_out.device.type == DEV
        torch.testing.assert_close(dev_out.cpu(), cpu_out, equal_nan=True, **tol)
    if not grad:
        return
    g = torch.randn(cpu_out.shape, generator=_gen(99), dtype=cpu_out.dtype)
    cpu_out.backward(g)
    dev_out.backward(g.to(DEV))
    for c, d in zip(cpu_in, dev_in, strict=True):
        if isinstance(c, torch.Tensor) and c.requires_grad:
            assert d.grad is not None, "no gradient reached the mlu input"
            torch.testing.assert_close(d.grad.cpu(), c.grad, **tol)


CONV_CASES = [
    # (N, C, H, W, O, k, stride, padding, dilation, groups)
    (2, 3, 7, 6, 4, (3, 3), 1, 0, 1, 1),
    (2, 4, 8, 9, 6, (3, 2), (2, 1), 1, 1, 2),
    (1, 4, 9, 9, 4, (3, 3), (2, 3), (2, 1), 2, 4),
    (3, 2, 5, 5, 3, (1, 1), 1, 0, 1, 1),
    (2, 6, 10, 7, 6, (2, 3), (3, 2), (1, 0), (1, 2), 3),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(case: tuple, bias: bool) -> None:
    n, c, h, w, o, k, s, p, d, g = case
    b = rand(o, seed=3) if bias else None
    parity(lambda x, wt, bb: F.conv2d(x, wt, bb, s, p, d, g),
           rand(n, c, h, w, seed=1), rand(o, c // g, *k, seed=2), b, atol=1e-4, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_conv1d_and_padding_same() -> None:
    parity(lambda x, wt: F.conv1d(x, wt, None, 2, 1, 2), rand(2, 3, 11), rand(4, 3, 3, seed=1),
           atol=1e-4, rtol=1e-4)
    parity(lambda x, wt: F.conv2d(x, wt, padding="same"), rand(1, 2, 6, 5), rand(3, 2, 2, 3, seed=1),
           atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("s,p,op,d,g", [(1, 0, 0, 1, 1), ((2, 3), (1, 2), (1, 2), 1, 2),
                                        (2, (1, 0), (0, 1), (2, 1), 1)])
def test_conv_transpose2d(s: Any, p: Any, op: Any, d: Any, g: int) -> None:
    parity(lambda x, wt, b: F.conv_transpose2d(x, wt, b, s, p, op, g, d),
           rand(2, 4, 5, 6, seed=1), rand(4, 6 // g, 3, 2, seed=2), rand(6, seed=3),
           atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 3)])
def test_batch_norm(training: bool, affine: bool, shape: tuple) -> None:
    rm, rv = rand(3, seed=5), rand(3, seed=6).abs() + 0.5
    stats = {"cpu": (rm.clone(), rv.clone()), DEV: (rm.to(DEV), rv.to(DEV))}

    def fn(x: torch.Tensor, w: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor:
        m, v = stats[x.device.type]
        return F.batch_norm(x, m, v, w, b, training, 0.1, 1e-5)

    w, b = (rand(3, seed=2), rand(3, seed=3)) if affine else (None, None)
    parity(fn, rand(*shape, seed=1), w, b, atol=1e-4, rtol=1e-4)
    for c, d in zip(stats["cpu"], stats[DEV], strict=True):
        torch.testing.assert_close(d.cpu(), c)


def test_batch_norm_without_running_stats() -> None:
    parity(lambda x: F.batch_norm(x, None, None, training=True), rand(4, 3, 2, 2), atol=1e-4,
           rtol=1e-4)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine: bool) -> None:
    w, b = (rand(4, 5, seed=2), rand(4, 5, seed=3)) if affine else (None, None)
    parity(lambda x, ww, bb: F.layer_norm(x, (4, 5), ww, bb), rand(3, 4, 5, seed=1), w, b,
           atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_layer_norm_of_constant_rows_is_zero_as_cpus(dtype: torch.dtype) -> None:
    # CPU's Welford moments give a row of one value that value as its mean and 0 variance; a
    # rounded running sum (an expanded, stride-0 row) left deviations eps=1e-12 blew up
    base = (torch.arange(24, dtype=torch.float64).reshape(2, 12, 1) * 0.37 - 3.1).to(dtype)
    for device in ("cpu", "mlu"):
        out, mean, rstd = torch.ops.aten.native_layer_norm(
            base.to(device).expand(2, 12, 32), [32], None, None, 1e-12)
        assert out.cpu().abs().max().item() == 0.0, device
        torch.testing.assert_close(mean.cpu(), base)


POOL_CASES = [
    # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), None, 0, 1, False),
    ((3, 3), 2, 1, 1, True),
    ((3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 3), (3, 2), 1, 1, True),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_max_pool2d(case: tuple) -> None:
    k, s, p, d, ceil = case
    x = rand(2, 3, 9, 8, seed=1)
    parity(lambda t: F.max_pool2d(t, k, s, p, d, ceil, return_indices=True), x)


def test_max_pool_backward_of_a_window_in_the_padding() -> None:
    # length 1, padding 1, dilation 2, kernel 2: the only window covers positions -1 and 1, both
    # padding; ATen's forward gives it -inf and index 1 (past the plane), and its backward adds
    # at plane start + index: plane 0's gradient into plane 1, plane 1's past the buffer (an
    # out-of-bounds write on CPU, not run here). mlu: the same addressing, without the overflow
    x = torch.tensor([[2.19], [-3.68]], dtype=torch.float64, device=DEV, requires_grad=True)
    out, idx = torch.ops.aten.max_pool1d_with_indices(x, [2], [1], [1], [2], False)
    assert idx.cpu().tolist() == [[1], [1]] and out.isneginf().all()
    (grad,) = torch.autograd.grad(out, x, torch.tensor([[1.5], [-0.25]], dtype=torch.float64,
                                                       device=DEV))
    assert grad.cpu().tolist() == [[0.0], [1.5]]
    # in range (a longer input): unchanged, and as CPU
    parity(lambda t: torch.ops.aten.max_pool1d_with_indices(t, [2], [1], [1], [2], False),
           rand(2, 3, seed=1))


def test_max_pool2d_unbatched_and_nan() -> None:
    x = rand(3, 6, 6, seed=1)
    x[0, 1, 1] = float("nan")
    parity(lambda t: F.max_pool2d(t, 2, return_indices=True), x, grad=False)


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("divisor", [None, 3])
def test_avg_pool2d(case: tuple, include_pad: bool, divisor: int | None) -> None:
    k, s, p, _, ceil = case
    parity(lambda t: F.avg_pool2d(t, k, s, p, ceil, include_pad, divisor), rand(2, 3, 9, 8))


@pytest.mark.parametrize("out", [(3, 2), (4, 7), (5, 5), (2, 1)])
def test_adaptive_avg_pool2d(out: tuple) -> None:
    parity(lambda t: F.adaptive_avg_pool2d(t, out), rand(2, 3, 7, 5))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim: int) -> None:
    parity(lambda t: F.softmax(t, dim), rand(3, 4, 5))
    parity(lambda t: F.log_softmax(t, dim), rand(3, 4, 5))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(reduction: str, weighted: bool) -> None:
    t = torch.tensor([0, 3, 1, -100, 2])
    w = rand(4, seed=5).abs() if weighted else None
    parity(lambda x, tt, ww: F.cross_entropy(x, tt, ww, reduction=reduction),
           rand(5, 4, seed=1), t, w, frozen=(2,))


def test_cross_entropy_spatial_and_unbatched() -> None:
    t = torch.randint(0, 4, (2, 3, 2), generator=_gen(3))
    parity(lambda x, tt: F.cross_entropy(x, tt), rand(2, 4, 3, 2, seed=1), t)
    parity(lambda x, tt: F.cross_entropy(x, tt), rand(4, seed=1), torch.tensor(2))


def test_nll_loss_target_out_of_bounds_error() -> None:
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.nll_loss(torch.zeros(2, 3, device=DEV), torch.tensor([0, 7], device=DEV))


@pytest.mark.parametrize("padding_idx,freq", [(None, False), (2, False), (None, True)])
def test_embedding(padding_idx: int | None, freq: bool) -> None:
    idx = torch.tensor([[0, 2, 2], [5, 0, 2]])
    parity(lambda w, i: F.embedding(i, w, padding_idx, scale_grad_by_freq=freq),
           rand(7, 4, seed=1), idx)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    parity(lambda t: F.gelu(t, approximate=approximate), rand(40, seed=1) * 3)


def test_relu_threshold() -> None:
    x = torch.tensor([-1.0, 0.0, 0.5, 2.0, float("nan")])
    parity(F.relu, x)
    parity(lambda t: F.threshold(t, 0.4, -2.0), x)
    y = x.to(DEV)
    assert F.relu_(y) is y
    torch.testing.assert_close(y.cpu(), F.relu(x), equal_nan=True)


def test_dropout_train_rate_and_scale() -> None:
    torch.mlu.manual_seed(0)
    x = torch.ones(200, 500, device=DEV, requires_grad=True)
    y = F.dropout(x, 0.3, training=True)
    yc = y.detach().cpu()
    kept = yc != 0
    assert abs(1 - kept.float().mean().item() - 0.3) < 0.01
    torch.testing.assert_close(yc[kept], torch.full_like(yc[kept], 1 / 0.7))
    y.backward(torch.full((200, 500), 2.0, device=DEV))
    torch.testing.assert_close(x.grad.cpu(), kept.float() * (2 / 0.7))
    z = F.dropout(x, 0.3, training=False)
    torch.testing.assert_close(z.detach().cpu(), x.detach().cpu())


def test_native_dropout_train_none_means_training() -> None:
    torch.mlu.manual_seed(0)
    out, mask = torch.native_dropout(torch.ones(1000).to(DEV), 0.5, None)
    assert mask.dtype == torch.bool and 300 < int(mask.cpu().sum()) < 700
    out, mask = torch.native_dropout(torch.ones(0).to(DEV), 0.5, True)
    assert out.shape == (0,) and mask.dtype == torch.float32


def test_dropout_is_seeded() -> None:
    x = torch.ones(1000, device=DEV)
    torch.mlu.manual_seed(5)
    a = F.dropout(x, 0.5).cpu()
    torch.mlu.manual_seed(5)
    b = F.dropout(x, 0.5).cpu()
    assert torch.equal(a, b)


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention(causal: bool) -> None:
    parity(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
           rand(2, 3, 5, 4, seed=1), rand(2, 3, 5, 4, seed=2), rand(2, 3, 5, 4, seed=3),
           atol=1e-5, rtol=1e-4)


def test_out_variants() -> None:
    x = rand(2, 3, 6, 6)
    out = torch.empty(0, device=DEV)
    res = torch.ops.aten._softmax.out(x.to(DEV), 1, False, out=out)
    assert res is out
    torch.testing.assert_close(out.cpu(), torch._softmax(x, 1, False))
    o, i = torch.empty(0, device=DEV), torch.empty(0, dtype=torch.long, device=DEV)
    torch.ops.aten.max_pool2d_with_indices.out(x.to(DEV), [2, 2], [2, 2], out=o, indices=i)
    eo, ei = torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
    torch.testing.assert_close(o.cpu(), eo)
    torch.testing.assert_close(i.cpu(), ei)
    # structured out= overloads want the result dtype exactly, as on CPU
    for device in ("cpu", DEV):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
            torch.ops.aten.avg_pool2d.out(x.to(device), [2, 2],
                                          out=torch.empty(0, dtype=torch.long).to(device))
    # TensorIterator ones (threshold_backward) take any dtype the result casts to safely
    g, t = rand(5), rand(5, seed=1)
    wide = torch.empty(0, dtype=torch.float64).to(DEV)
    torch.ops.aten.threshold_backward.grad_input(g.to(DEV), t.to(DEV), 0.0, grad_input=wide)
    torch.testing.assert_close(wide.cpu(), torch.ops.aten.threshold_backward(g, t, 0.0).double())
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.ops.aten.threshold_backward.grad_input(
            g.to(DEV), t.to(DEV), 0.0, grad_input=torch.empty(0, dtype=torch.long).to(DEV))


DTYPE_CASES: dict[str, Callable[[torch.Tensor], Any]] = {
    "conv2d": lambda x: F.conv2d(x, torch.ones(2, 3, 2, 2, dtype=x.dtype, device=x.device), None,
                                 1, 1),
    "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
    "layer_norm": lambda x: F.layer_norm(x, (5,)),
    "group_norm": lambda x: F.group_norm(x, 3),
    "max_pool2d": lambda x: F.max_pool2d(x, 2, return_indices=True),
    "avg_pool2d": lambda x: F.avg_pool2d(x, 2, ceil_mode=True),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
    "softmax": lambda x: F.softmax(x, 1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "gelu": F.gelu,
    "relu": F.relu,
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(DTYPE_CASES))
def test_dtypes_forward(name: str, dtype: torch.dtype) -> None:
    """Other float dtypes: same result dtype, and values as CPU's within a few units of the last
    place (ours compute in float32 and round once; some CPU half kernels round intermediates, so
    outputs near zero after a cancellation differ by more than rtol alone allows)."""
    x = rand(2, 3, 4, 5, seed=1).to(dtype)
    try:
        expected = DTYPE_CASES[name](x)
    except RuntimeError as exc:
        with pytest.raises(RuntimeError):
            DTYPE_CASES[name](x.to(DEV))
        pytest.skip(f"CPU refuses {name} for {dtype}: {exc}")
    got = DTYPE_CASES[name](x.to(DEV))
    pairs = zip(got, expected, strict=True) if isinstance(expected, tuple) else [(got, expected)]
    for g, e in pairs:
        assert g.dtype == e.dtype
        atol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype)
        torch.testing.assert_close(g.cpu(), e, atol=atol, rtol=None if atol is None else 2e-2)


def test_left_out_overload_fails_like_a_missing_kernel() -> None:
    """``kernels.install(without=...)``: the backward of adaptive pooling is really missing."""
    x = rand(2, 3, 7, 5).to(DEV).requires_grad_()
    kernels.install(without=["_adaptive_avg_pool2d_backward"])
    try:
        y = F.adaptive_avg_pool2d(x, (3, 2))  # the forward is still there
        with pytest.raises(NotImplementedError,
                           match="Could not run 'aten::_adaptive_avg_pool2d_backward'.*'mlu'"):
            y.backward(torch.ones(y.shape).to(DEV))
    finally:
        kernels.install()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_renormalizes_in_place(norm_type: float) -> None:
    w = rand(10, 3, seed=1) * 3
    idx = torch.tensor([[1, 2, 9], [2, 0, 1]])
    wc, wd = w.clone(), w.to(DEV)
    out_c = F.embedding(idx, wc, max_norm=1.0, norm_type=norm_type)
    out_d = F.embedding(idx.to(DEV), wd, max_norm=1.0, norm_type=norm_type)
    torch.testing.assert_close(out_d.cpu(), out_c)
    torch.testing.assert_close(wd.cpu(), wc)  # the weight rows were rescaled in place


def test_cross_entropy_label_smoothing_and_probability_targets() -> None:
    p = torch.softmax(rand(4, 5, seed=3), 1)
    t = torch.tensor([0, 2, 4, 1])
    parity(lambda x, tt: F.cross_entropy(x, tt, label_smoothing=0.1), rand(4, 5, seed=1), t)
    parity(lambda x, pp: F.cross_entropy(x, pp, label_smoothing=0.2), rand(4, 5, seed=1), p,
           frozen=(1,))
