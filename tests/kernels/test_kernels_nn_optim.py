"""``_foreach_*`` kernels of ``mlu`` (kernels/optim.py) against CPU: fast path and slow path."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import kernels

kernels.install()

DEV = "mlu"
aten = torch.ops.aten
SHAPES = [(3, 4), (5,), (2, 2, 2)]


def tensors(seed: int, dtype: torch.dtype = torch.float32, positive: bool = False
            ) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = [torch.randn(s, generator=g).to(dtype) for s in SHAPES]
    if not positive:
        return out
    return [t.abs() + (0.5 if dtype.is_floating_point else 1) for t in out]


def on(device: str, lists: list[Any]) -> list[Any]:
    return [[t.to(device) for t in x] if isinstance(x, list) and x and isinstance(x[0], torch.Tensor)
            else x for x in lists]


def check(name: str, *args: Any, **kwargs: Any) -> None:
    """Run overload ``name`` on CPU and mlu copies; compare results and the mutated ``self``."""
    __tracebackhide__ = True
    base, _, overload = name.partition(".")
    op = getattr(getattr(aten, base), overload or "default")
    cpu_args, dev_args = on("cpu", [list(a) if isinstance(a, list) else a for a in args]), on(
        DEV, list(args))
    cpu_res, dev_res = op(*cpu_args, **kwargs), op(*dev_args, **kwargs)
    if base.endswith("_"):
        assert dev_res is None or dev_res == []
        for c, d in zip(cpu_args[0], dev_args[0], strict=True):
            assert d.device.type == DEV
            torch.testing.assert_close(d.cpu(), c)
    else:
        for c, d in zip(cpu_res, dev_res, strict=True):
            assert d.device.type == DEV
            torch.testing.assert_close(d.cpu(), c)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_binary(op: str, inplace: bool, dtype: torch.dtype) -> None:
    name = f"_foreach_{op}{'_' if inplace else ''}"
    a, b = tensors(1, dtype), tensors(2, dtype, positive=True)
    if dtype == torch.int64 and inplace and op == "div":
        # CPU refuses in-place true division of integers; so must mlu, with the same message
        for device in ("cpu", DEV):
            x, y = on(device, [a, b])
            with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
                aten._foreach_div_.Scalar(x, 2)
            with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
                aten._foreach_div_.List(x, y)
        return
    check(f"{name}.Scalar", a, 0.5 if dtype.is_floating_point else 3)
    check(f"{name}.ScalarList", a, [0.5, -2, 3.0] if dtype.is_floating_point else [1, -2, 3])
    kw = {"alpha": 0.25 if dtype.is_floating_point else 2} if op in ("add", "sub") else {}
    check(f"{name}.List", a, b, **kw)
    if op in ("add", "mul", "div"):
        check(f"{name}.Tensor", a, torch.tensor(2.0 if dtype.is_floating_point else 2), **kw)


def test_mixed_dtypes_take_the_slow_path() -> None:
    a = [torch.randn(3), torch.randn(2, dtype=torch.float64)]
    check("_foreach_add_.List", a, [torch.randn(3), torch.randn(2, dtype=torch.float64)],
          alpha=-0.5)
    check("_foreach_mul.Scalar", [torch.arange(4), torch.arange(3)], 1.5)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("inplace", [False, True])
def test_pointwise(op: str, inplace: bool) -> None:
    name = f"_foreach_{op}{'_' if inplace else ''}"
    a, b, c = tensors(1), tensors(2), tensors(3, positive=True)
    check(f"{name}.Scalar", a, b, c, value=-0.3)
    check(f"{name}.ScalarList", a, b, c, [0.1, -2.0, 3])
    check(f"{name}.Tensor", a, b, c, torch.tensor([0.1, -2.0, 3.0]))


@pytest.mark.parametrize("inplace", [False, True])
def test_lerp(inplace: bool) -> None:
    name = f"_foreach_lerp{'_' if inplace else ''}"
    a, b = tensors(1), tensors(2)
    check(f"{name}.Scalar", a, b, 0.1)
    check(f"{name}.Scalar", a, b, 0.9)
    check(f"{name}.ScalarList", a, b, [0.1, 0.7, -0.2])
    check(f"{name}.List", a, b, tensors(3))


@pytest.mark.parametrize("op", ["sqrt", "neg", "abs", "exp", "reciprocal"])
@pytest.mark.parametrize("inplace", [False, True])
def test_unary(op: str, inplace: bool) -> None:
    check(f"_foreach_{op}{'_' if inplace else ''}", tensors(1, positive=op == "sqrt"))


def test_zero_() -> None:
    check("_foreach_zero_", tensors(1))


def test_inplace_writes_through_views() -> None:
    base = torch.randn(4, 4).to(DEV)
    view = base[1:3]
    torch._foreach_mul_([view], 0.0)
    assert base.cpu()[1:3].abs().sum().item() == 0


def test_errors() -> None:
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
        torch._foreach_add([], 1.0)
    with pytest.raises(RuntimeError):
        torch._foreach_add([torch.ones(2).to(DEV)], [torch.ones(2).to(DEV)] * 2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch._foreach_div_([torch.arange(3).to(DEV)], 2)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-2}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("SGD", {"lr": 0.1}),
    ("Adam", {"lr": 1e-2, "weight_decay": 1e-2}),
    ("AdamW", {"lr": 1e-2, "weight_decay": 1e-2}),
    ("AdamW", {"lr": 1e-2, "amsgrad": True, "maximize": True}),
])
def test_fused_optimizers_match_cpu(name: str, kwargs: dict) -> None:
    """``fused=True`` (allowed for PrivateUse1) runs ``_fused_*_`` on mlu; CPU has fused kernels
    too. Three steps from the same state must agree."""
    params = {dev: [p.clone().to(dev).requires_grad_() for p in tensors(1)] for dev in ("cpu", DEV)}
    opts = {dev: getattr(torch.optim, name)(ps, fused=True, **kwargs) for dev, ps in params.items()}
    for step in range(3):
        for dev, ps in params.items():
            for p, g in zip(ps, tensors(10 + step), strict=True):
                p.grad = g.to(dev)
            opts[dev].step()
    for c, d in zip(params["cpu"], params[DEV], strict=True):
        torch.testing.assert_close(d.detach().cpu(), c.detach())


def test_fused_step_skipped_on_found_inf() -> None:
    p = torch.ones(3).to(DEV)
    before = p.cpu()
    torch.ops.aten._fused_sgd_([p], [torch.ones(3).to(DEV)], [], weight_decay=0.0, momentum=0.0,
                               lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                               is_first_step=True, found_inf=torch.ones(()).to(DEV))
    torch.testing.assert_close(p.cpu(), before)


def test_fused_adamw_grad_scale_matches_cpu() -> None:
    out = {}
    for dev in ("cpu", DEV):
        ps, gs = [t.to(dev) for t in tensors(1)], [t.to(dev) for t in tensors(2)]
        ms, vs = [t.to(dev) for t in tensors(3)], [t.abs().to(dev) for t in tensors(4)]
        steps = [torch.tensor(2.0).to(dev) for _ in ps]
        torch.ops.aten._fused_adamw_(ps, gs, ms, vs, [], steps, lr=1e-2, beta1=0.9, beta2=0.99,
                                     weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False,
                                     grad_scale=torch.tensor(4.0).to(dev))
        out[dev] = ps + gs + ms + vs
    for c, d in zip(out["cpu"], out[DEV], strict=True):
        torch.testing.assert_close(d.cpu(), c)
