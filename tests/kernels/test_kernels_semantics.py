"""The mlu reference backend against CPU: values, result dtypes, promotion, out=, in-place and
errors of the pointwise, reduction, linear-algebra and indexing kernels, over the 12 dtypes."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import kernels
from kernels import elementwise

kernels.install()

DTYPES = (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def sample(dtype: torch.dtype, shape: tuple[int, ...] = (2, 3), seed: int = 0,
           positive: bool = False) -> torch.Tensor:
    """Deterministic CPU values that exercise signs, zeros and fractions for ``dtype``."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0 if not positive else 1, 9, shape, generator=g, dtype=dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        lo = 1 if positive else -7
        return torch.randint(lo, 8, shape, generator=g, dtype=dtype)
    x = torch.randn(shape, generator=g, dtype=torch.float64 if not dtype.is_complex else dtype)
    if positive:
        x = x.abs() + 0.25
    return x.to(dtype)


def category_int(dtype: torch.dtype) -> bool:
    return dtype != torch.bool and not (dtype.is_floating_point or dtype.is_complex)


def to_mlu(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to("mlu")
    if isinstance(x, (list, tuple)):
        return type(x)(to_mlu(v) for v in x)
    return x


def to_cpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def run(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, BaseException | None]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - comparing what CPU and mlu raise
        return None, exc


def compare(fn: Callable[..., Any], *args: Any, label: str = "", mlu_args: tuple[Any, ...] | None
            = None, atol: float | None = None, rtol: float | None = None) -> str | None:
    """None when mlu agrees with CPU (same error type, or same dtype/shape/values); else why."""
    expected, e_exc = run(fn, args)
    got, g_exc = run(fn, mlu_args if mlu_args is not None else to_mlu(args))
    if e_exc is not None or g_exc is not None:
        if e_exc is None:
            return f"{label}: mlu raised {type(g_exc).__name__}: {g_exc} but CPU returned"
        if g_exc is None:
            return f"{label}: CPU raised {type(e_exc).__name__}: {e_exc} but mlu returned"
        if not isinstance(g_exc, type(e_exc)) and not isinstance(e_exc, type(g_exc)):
            return (f"{label}: CPU raised {type(e_exc).__name__}({e_exc}) but mlu raised "
                    f"{type(g_exc).__name__}({g_exc})")
        return None
    try:
        exp_list = expected if isinstance(expected, (tuple, list)) else (expected,)
        got_list = got if isinstance(got, (tuple, list)) else (got,)
        for e, g in zip(exp_list, got_list, strict=True):
            if isinstance(e, torch.Tensor):
                assert g.device.type == "mlu", f"result on {g.device}"
                kw = {} if atol is None else {"atol": atol, "rtol": rtol}
                torch.testing.assert_close(g.cpu(), e, equal_nan=True, **kw)
            else:
                assert e == g or (isinstance(e, float) and math.isnan(e) and math.isnan(g)), (
                    f"{g!r} != {e!r}")
    except AssertionError as exc:
        return f"{label}: {exc}".replace("\n", " ")
    return None


def check_all(failures: list[str | None]) -> None:
    bad = [f for f in failures if f]
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:25])


# --------------------------------------------------------------------------------------------
# Pointwise tables, every dtype
# --------------------------------------------------------------------------------------------

UNARY_NAMES = sorted(set(elementwise.UNARY) - {"_conj_physical", "special_ndtri"}) + [
    "ceil", "floor", "trunc", "round", "frac", "abs", "neg", "sign", "sgn", "angle",
    "logit", "nan_to_num", "isnan", "isinf", "isposinf", "isneginf", "signbit", "logical_not",
    "bitwise_not",
]


def _op(name: str) -> Callable[..., Any]:
    fn = getattr(torch, name, None) or getattr(torch.special, name.removeprefix("special_"))
    return fn


@pytest.mark.parametrize("name", UNARY_NAMES)
def test_unary_every_dtype(name: str) -> None:
    fn = _op(name)
    failures = []
    for dtype in DTYPES:
        positive = name in ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma",
                            "acosh", "special_ndtri")
        x = sample(dtype, positive=positive)
        if name in ("erfinv", "atanh", "asin", "acos", "logit") and dtype.is_floating_point:
            x = (x.double() / 4).to(dtype)
        failures.append(compare(fn, x, label=f"{name}({dtype})", **low_tol(dtype)))
    check_all(failures)


def low_tol(dtype: torch.dtype) -> dict[str, float]:
    """One float16/bfloat16 ulp: transcendental functions may round differently than CPU's."""
    if dtype == torch.float16:
        return {"atol": 1e-3, "rtol": 2e-3}
    if dtype == torch.bfloat16:
        return {"atol": 1e-2, "rtol": 1.6e-2}
    return {}


@pytest.mark.parametrize("name", ["exp", "sqrt", "abs", "neg", "sigmoid", "floor", "bitwise_not",
                                  "logical_not", "isnan", "round"])
def test_unary_out_and_inplace(name: str) -> None:
    fn = getattr(torch, name)
    failures = []
    for dtype in DTYPES:
        x = sample(dtype, positive=name == "sqrt")
        for out_dtype in (dtype, torch.float32, torch.int64, torch.bool):
            out = torch.empty(0, dtype=out_dtype)
            failures.append(compare(lambda a, o: fn(a, out=o), x, out,
                                    label=f"{name}({dtype}, out={out_dtype})"))
        inplace = getattr(torch.Tensor, name + "_", None)
        if inplace is not None:
            failures.append(compare(lambda a, f=inplace: f(a.clone()), x, label=f"{name}_({dtype})"))
    check_all(failures)


BINARY_NAMES = sorted(elementwise.BINARY) + [
    "add", "sub", "mul", "div", "remainder", "fmod", "floor_divide", "pow", "xlogy",
    "heaviside", "bitwise_left_shift", "bitwise_right_shift",
]


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_binary_every_dtype_pair_category(name: str) -> None:
    fn = _op(name)
    failures = []
    for dtype in DTYPES:
        a = sample(dtype, seed=1)
        b = sample(dtype, seed=2, positive=name in ("remainder", "fmod", "floor_divide", "div",
                                                      "igamma", "igammac", "bitwise_left_shift",
                                                      "bitwise_right_shift"))
        if name in ("igamma", "igammac") and dtype.is_floating_point:
            a = a.abs()
        if name == "pow" and category_int(dtype):
            b = b.abs()
        failures.append(compare(fn, a, b, label=f"{name}({dtype}, {dtype})"))
    # mixed categories: promotion decided by torch
    for da, db in ((torch.int32, torch.float32), (torch.bool, torch.int8), (torch.uint8,
                   torch.int8), (torch.float16, torch.bfloat16), (torch.float32, torch.float64),
                   (torch.int64, torch.float16), (torch.float32, torch.complex64)):
        a, b = sample(da, seed=3), sample(db, seed=4, positive=True)
        failures.append(compare(fn, a, b, label=f"{name}({da}, {db})"))
    check_all(failures)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "eq", "lt",
                                  "bitwise_and", "remainder", "pow", "atan2"])
def test_binary_promotion_with_scalars_and_0dim(name: str) -> None:
    """Python scalars (wrapped numbers), 0-dim tensors on mlu, 0-dim CPU tensors next to mlu."""
    fn = getattr(torch, name)
    failures = []
    for dtype in (torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16,
                  torch.bfloat16, torch.float32, torch.float64, torch.complex64):
        t = sample(dtype, seed=5, positive=True)
        for scalar in (2, 2.5, True, 1 + 1j):
            if scalar == 1 + 1j and dtype in (torch.float16, torch.bfloat16):
                continue  # complex32 (ComplexHalf) is not one of the backend's dtypes
            failures.append(compare(fn, t, scalar, label=f"{name}({dtype}, {scalar!r})"))
            failures.append(compare(fn, scalar, t, label=f"{name}({scalar!r}, {dtype})")
                            if name not in ("bitwise_and",) else None)
        for zdtype in (torch.int64, torch.float64, torch.float32, torch.bool, torch.complex128):
            if zdtype.is_complex and dtype == torch.float16:
                continue  # promotes to complex32, not one of the backend's dtypes
            z = sample(zdtype, shape=(), seed=6, positive=True)
            failures.append(compare(fn, t, z, label=f"{name}({dtype}, 0-dim {zdtype})"))
            failures.append(compare(fn, t, z, mlu_args=(t.to("mlu"), z),
                                    label=f"{name}({dtype} mlu, 0-dim {zdtype} cpu)"))
    check_all(failures)


def test_cpu_tensor_with_dims_next_to_mlu_is_refused() -> None:
    a = torch.ones(3, device="mlu")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.add(a, torch.ones(3))


@pytest.mark.parametrize("name", ["add", "mul", "div", "atan2", "eq", "maximum", "remainder"])
def test_binary_out_dtype_check_and_resize(name: str) -> None:
    fn = getattr(torch, name)
    failures = []
    for da, db in ((torch.int64, torch.int64), (torch.int32, torch.float32),
                   (torch.float32, torch.float32), (torch.bool, torch.bool)):
        a, b = sample(da, seed=7), sample(db, seed=8, positive=True)
        for out_dtype in (torch.bool, torch.int64, torch.float16, torch.float32,
                          torch.complex64):
            for out_shape in ((2, 3), (0,), (5,)):
                out = torch.zeros(out_shape, dtype=out_dtype)
                failures.append(compare(lambda x, y, o: (fn(x, y, out=o), o), a, b, out,
                                        label=f"{name}({da},{db}, out={out_dtype}{out_shape})"))
    check_all(failures)


def test_out_returns_the_out_object_and_warns_on_resize() -> None:
    a = torch.ones(2, 3, device="mlu")
    out = torch.empty(4, device="mlu")
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        r = torch.add(a, a, out=out)
    assert r is out
    assert out.shape == (2, 3)
    torch.testing.assert_close(out.cpu(), torch.full((2, 3), 2.0))


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_", "clamp_", "pow_",
                                  "remainder_", "bitwise_and_", "lerp_"])
def test_inplace_mutates_self_and_refuses_wider_result(name: str) -> None:
    failures = []
    for dtype in (torch.int64, torch.int32, torch.float32, torch.float16, torch.bool):
        for other in (sample(dtype, seed=9, positive=True), 2, 1.5,
                      sample(torch.float64, seed=9, positive=True)):
            def call(s: torch.Tensor, o: Any) -> Any:
                s = s.clone()
                meth = getattr(s, name)
                if name == "clamp_":
                    r = meth(min=o if not isinstance(o, torch.Tensor) else o.to(s.dtype))
                elif name == "lerp_":
                    r = meth(o if isinstance(o, torch.Tensor) else s, 0.3)
                else:
                    r = meth(o)
                assert r is s
                return s
            failures.append(compare(call, sample(dtype, seed=10), other,
                                    label=f"{name}({dtype}, {other if not isinstance(other, torch.Tensor) else other.dtype})"))
    check_all(failures)


def test_inplace_shape_mismatch_is_refused() -> None:
    a = torch.ones(2, device="mlu")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        a.add_(torch.ones(3, 2, device="mlu"))


def test_div_rounding_modes_and_integer_division() -> None:
    failures = []
    for dtype in (torch.int8, torch.int32, torch.int64, torch.uint8, torch.float32,
                  torch.float64, torch.float16, torch.bfloat16):
        a = torch.tensor([-7, -6, -1, 0, 1, 5, 7, 9], dtype=dtype if dtype != torch.uint8
                         else torch.int16).to(dtype)
        b = torch.tensor([2, -4, 3, -3, -2, 2, -3, 4], dtype=torch.int16).to(dtype) if (
            dtype != torch.uint8) else torch.tensor([2, 4, 3, 3, 2, 2, 3, 4], dtype=dtype)
        for mode in (None, "trunc", "floor"):
            failures.append(compare(lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), a, b,
                                    label=f"div({dtype}, {mode})"))
        for fn in (torch.remainder, torch.fmod, torch.floor_divide):
            failures.append(compare(fn, a, b, label=f"{fn.__name__}({dtype})"))
            failures.append(compare(fn, a, 3, label=f"{fn.__name__}({dtype}, 3)"))
            failures.append(compare(fn, a, -2.5, label=f"{fn.__name__}({dtype}, -2.5)"))
        zero = torch.zeros_like(b)
        for fn in (torch.remainder, torch.fmod, torch.floor_divide):
            failures.append(compare(fn, a, zero, label=f"{fn.__name__}({dtype}, zero)"))
        failures.append(compare(lambda x, y: torch.div(x, y, rounding_mode="trunc"), a, zero,
                                label=f"div trunc ({dtype}, zero)"))
    failures.append(compare(lambda x, y: torch.div(x, y, rounding_mode="bad"),
                            torch.ones(2), torch.ones(2), label="div bad mode"))
    check_all(failures)


NAN = float("nan")


def test_nan_propagation_max_min_clamp() -> None:
    x = torch.tensor([1.0, NAN, -2.0, 3.0, float("inf"), -float("inf")])
    y = torch.tensor([NAN, 0.5, -3.0, 4.0, 1.0, NAN])
    failures = []
    for dtype in FLOATS:
        a, b = x.to(dtype), y.to(dtype)
        for fn in (torch.maximum, torch.minimum, torch.fmax, torch.fmin):
            failures.append(compare(fn, a, b, label=f"{fn.__name__}({dtype})"))
        failures.append(compare(lambda t: torch.clamp(t, -1.0, 2.0), a, label="clamp"))
        failures.append(compare(lambda t: torch.clamp(t, NAN, 2.0), a, label="clamp(nan)"))
        failures.append(compare(lambda t, lo: torch.clamp(t, min=lo), a, b, label="clamp T"))
        failures.append(compare(lambda t: torch.clamp(t, 3.0, 1.0), a, label="clamp min>max"))
        for fn in (torch.max, torch.min, torch.amax, torch.amin, torch.argmax, torch.argmin):
            failures.append(compare(fn, a, label=f"{fn.__name__}({dtype})"))
            failures.append(compare(lambda t, f=fn: f(t.reshape(2, 3), 1), a,
                                    label=f"{fn.__name__}(dim, {dtype})"))
    failures.append(compare(lambda t: torch.clamp(t), x, label="clamp(None, None)"))
    failures.append(compare(lambda t: torch.clamp(t, 0.5), torch.arange(4), label="clamp int/f"))
    check_all(failures)


def test_where_and_ternaries() -> None:
    failures = []
    c = torch.tensor([[True, False, True], [False, False, True]])
    for da, db in ((torch.float32, torch.float32), (torch.int32, torch.float64),
                   (torch.bool, torch.int8), (torch.float16, torch.float32)):
        a, b = sample(da, seed=11), sample(db, seed=12)
        failures.append(compare(torch.where, c, a, b, label=f"where({da},{db})"))
        failures.append(compare(lambda cc, x: torch.where(cc, x, 2.5), c, a, label="where s"))
        failures.append(compare(lambda cc, x, y: torch.where(cc, x, y, out=torch.empty(
            0, dtype=torch.float64)), c, a, b, label="where out") if False else None)
    failures.append(compare(torch.where, c.float(), c, c, label="where float cond"))
    for dtype in FLOATS + (torch.int64,):
        s, t1, t2 = sample(dtype, seed=1), sample(dtype, seed=2), sample(dtype, seed=3,
                                                                         positive=True)
        failures.append(compare(lambda a, b, c_: torch.addcmul(a, b, c_, value=2), s, t1, t2,
                                label=f"addcmul {dtype}"))
        failures.append(compare(lambda a, b, c_: torch.addcdiv(a, b, c_, value=0.5), s, t1, t2,
                                label=f"addcdiv {dtype}"))
        failures.append(compare(lambda a, b: torch.lerp(a, b, 0.3), s, t1,
                                label=f"lerp {dtype}", **low_tol(dtype)))
        failures.append(compare(lambda a, b, w: torch.lerp(a, b, w), s, t1, t2,
                                label=f"lerp T {dtype}"))
    check_all(failures)


# --------------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------------

REDUCTIONS: dict[str, Callable[..., Any]] = {
    "sum": torch.sum,
    "sum_dim": lambda t: torch.sum(t, 1),
    "sum_dims_keep": lambda t: torch.sum(t, (0, 2), keepdim=True),
    "sum_dtype": lambda t: torch.sum(t, 1, dtype=torch.float64),
    "nansum": lambda t: torch.nansum(t, 0),
    "mean": torch.mean,
    "mean_dim": lambda t: torch.mean(t, -1, keepdim=True),
    "prod": torch.prod,
    "prod_dim": lambda t: torch.prod(t, 2),
    "amax": lambda t: torch.amax(t, (1, 2)),
    "amin": lambda t: torch.amin(t, 0),
    "max": torch.max,
    "max_dim": lambda t: torch.max(t, 1),
    "min_dim_keep": lambda t: torch.min(t, 2, keepdim=True),
    "argmax": torch.argmax,
    "argmax_dim": lambda t: torch.argmax(t, 1),
    "argmin_keep": lambda t: torch.argmin(t, 0, keepdim=True),
    "var": torch.var,
    "var_dim": lambda t: torch.var(t, 1, correction=0),
    "std_dim": lambda t: torch.std(t, (0, 1), keepdim=True),
    "var_mean": lambda t: torch.var_mean(t, 2),
    "std_mean": lambda t: torch.std_mean(t, 0, correction=2),
    "norm": lambda t: torch.linalg.vector_norm(t),
    "norm1": lambda t: torch.linalg.vector_norm(t, 1, dim=1),
    "norm_inf": lambda t: torch.linalg.vector_norm(t, float("inf"), dim=(0, 2)),
    "norm3": lambda t: torch.linalg.vector_norm(t, 3, dim=-1, keepdim=True),
    "tnorm": lambda t: torch.norm(t, dim=1),
    "any": torch.any,
    "any_dim": lambda t: torch.any(t, 1),
    "all": torch.all,
    "all_dims": lambda t: torch.all(t, (0, 1)),
    "cumsum": lambda t: torch.cumsum(t, 1),
    "cumsum_dtype": lambda t: torch.cumsum(t, 0, dtype=torch.float32),
    "cumprod": lambda t: torch.cumprod(t, 2),
    "logsumexp": lambda t: torch.logsumexp(t, 1),
    "logsumexp_keep": lambda t: torch.logsumexp(t, (0, 2), keepdim=True),
    "count_nonzero": lambda t: torch.count_nonzero(t, 1),
    "aminmax": lambda t: torch.aminmax(t, dim=1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_every_dtype(name: str) -> None:
    fn = REDUCTIONS[name]
    failures = []
    for dtype in DTYPES:
        x = sample(dtype, shape=(2, 3, 4), seed=13)
        failures.append(compare(fn, x, label=f"{name}({dtype})", atol=1e-2 if dtype in (
            torch.float16, torch.bfloat16) else None, rtol=1e-2 if dtype in (
            torch.float16, torch.bfloat16) else None))
    check_all(failures)


def test_reduction_edge_cases() -> None:
    failures = []
    empty = torch.empty(0, 3)
    for fn in (torch.sum, torch.mean, torch.prod, torch.max, torch.argmax, torch.amax,
               lambda t: torch.sum(t, 0), lambda t: torch.amax(t, 0), lambda t: torch.max(t, 1),
               lambda t: torch.var(t, 0), lambda t: torch.logsumexp(t, 0)):
        failures.append(compare(fn, empty, label="empty reduction"))
    zero_dim = torch.tensor(3.5)
    for fn in (torch.sum, lambda t: torch.sum(t, 0), lambda t: torch.max(t, 0),
               lambda t: torch.argmax(t, 0), lambda t: torch.cumsum(t, 0), torch.var,
               lambda t: torch.sum(t, 1)):
        failures.append(compare(fn, zero_dim, label="0-dim reduction"))
    x = sample(torch.float32, shape=(3, 4))
    failures.append(compare(lambda t: torch.sum(t, (0, 0)), x, label="dup dims"))
    failures.append(compare(lambda t: torch.mean(t, 0, dtype=torch.int64), x, label="mean int"))
    failures.append(compare(lambda t, o: torch.sum(t, 1, out=o), x, torch.empty(0),
                            label="sum out"))
    failures.append(compare(lambda t, o: torch.amax(t, 1, out=o), x,
                            torch.empty(0, dtype=torch.float64), label="amax out dtype"))
    failures.append(compare(lambda t: torch.var(t, 0, correction=5), x, label="var N<corr"))
    check_all(failures)


# --------------------------------------------------------------------------------------------
# Linear algebra
# --------------------------------------------------------------------------------------------


def test_matrix_products_every_dtype() -> None:
    failures = []
    for dtype in DTYPES:
        a, b = sample(dtype, (3, 4), 1), sample(dtype, (4, 5), 2)
        c = sample(dtype, (5,), 3)
        tol = {"atol": 5e-2, "rtol": 5e-2} if dtype in (torch.float16, torch.bfloat16) else {}
        failures.append(compare(torch.mm, a, b, label=f"mm {dtype}", **tol))
        failures.append(compare(lambda x, y, z: torch.addmm(z, x, y, beta=0.5, alpha=2), a, b, c,
                                label=f"addmm {dtype}", **tol))
        failures.append(compare(torch.bmm, sample(dtype, (2, 3, 4), 4),
                                sample(dtype, (2, 4, 2), 5), label=f"bmm {dtype}", **tol))
        failures.append(compare(lambda s, x, y: torch.baddbmm(s, x, y, alpha=0.5),
                                sample(dtype, (2, 3, 2), 6), sample(dtype, (2, 3, 4), 4),
                                sample(dtype, (2, 4, 2), 5), label=f"baddbmm {dtype}", **tol))
        failures.append(compare(torch.dot, sample(dtype, (4,), 7), sample(dtype, (4,), 8),
                                label=f"dot {dtype}", **tol))
        failures.append(compare(torch.mv, a, sample(dtype, (4,), 9), label=f"mv {dtype}", **tol))
        failures.append(compare(torch.matmul, sample(dtype, (2, 1, 3, 4), 1),
                                sample(dtype, (3, 4, 2), 2), label=f"matmul {dtype}", **tol))
    a = sample(torch.float32, (3, 4))
    failures.append(compare(torch.mm, a, a, label="mm shapes"))
    failures.append(compare(torch.mm, a, a.double().t(), label="mm dtypes"))
    failures.append(compare(lambda x, o: torch.mm(x, x.t(), out=o), a, torch.empty(1, 1),
                            label="mm out"))
    failures.append(compare(lambda x, n: torch.addmm(n, x, x.t(), beta=0), a,
                            torch.full((3,), NAN), label="addmm beta=0 ignores nan"))
    failures.append(compare(torch.dot, torch.ones(3), torch.ones(4), label="dot sizes"))
    failures.append(compare(torch.bmm, a, a, label="bmm 2d"))
    check_all(failures)


# --------------------------------------------------------------------------------------------
# Indexing, joining, sorting
# --------------------------------------------------------------------------------------------


def test_indexing_family() -> None:
    failures = []
    x = sample(torch.float32, (4, 5), 1)
    idx = torch.tensor([3, 0, 3])
    mask = x > 0
    cases: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
        "index": (lambda t, i: t[i], (x, idx)),
        "index2": (lambda t, i: t[i, 1:3], (x, idx)),
        "index_mask": (lambda t, m: t[m], (x, mask)),
        "index_two": (lambda t, i: t[i, i], (x, idx)),
        "index_none_gap": (lambda t, i: t[:, i], (x, idx)),
        "index_oob": (lambda t: t[torch.tensor([7])], (x,)),
        "index_put": (lambda t, i: t.index_put((i,), torch.tensor(9.0)), (x, idx)),
        "index_put_acc": (lambda t, i: t.index_put((i,), torch.ones(3, 5), accumulate=True),
                          (x, idx)),
        "setitem": (lambda t, m: t.clone().__setitem__(m, 0.0) or t, (x, mask)),
        "index_select": (lambda t, i: torch.index_select(t, 1, i), (x, idx)),
        "gather": (lambda t: torch.gather(t, 1, torch.tensor([[0, 4], [1, 1], [2, 0], [3, 3]])),
                   (x,)),
        "gather_small": (lambda t: torch.gather(t, 0, torch.tensor([[0, 3, 1]])), (x,)),
        "scatter": (lambda t: torch.scatter(t, 1, torch.tensor([[0, 4], [1, 1], [2, 0], [3, 3]]),
                                            torch.ones(4, 2)), (x,)),
        "scatter_value": (lambda t: torch.scatter(t, 0, torch.tensor([[0, 3]]), 7.0), (x,)),
        "scatter_add": (lambda t: torch.scatter_add(t, 1, torch.tensor([[0, 0], [1, 1], [2, 2],
                                                                         [3, 3]]),
                                                    torch.ones(4, 2)), (x,)),
        "scatter_reduce": (lambda t: torch.scatter_reduce(
            t, 1, torch.tensor([[0, 0], [1, 1], [2, 0], [3, 3]]), torch.ones(4, 2), "amax",
            include_self=False), (x,)),
        "scatter_mean": (lambda t: torch.scatter_reduce(
            t, 1, torch.tensor([[0, 0], [1, 1], [2, 0], [3, 3]]), torch.ones(4, 2), "mean"),
                         (x,)),
        "index_add": (lambda t, i, s: torch.index_add(t, 0, i, s, alpha=2),
                      (x, idx, torch.ones(3, 5))),
        "index_copy": (lambda t, i, s: torch.index_copy(t, 0, i, s),
                       (x, torch.tensor([1, 0]), torch.ones(2, 5))),
        "index_fill": (lambda t, i: torch.index_fill(t, 1, i, -1.0), (x, idx)),
        "masked_fill": (lambda t, m: torch.masked_fill(t, m, 0.5), (x, mask)),
        "masked_fill_bcast": (lambda t: torch.masked_fill(t, torch.tensor([True, False, True,
                                                                           False, True]), 2.0),
                              (x,)),
        "masked_fill_float_mask": (lambda t, m: torch.masked_fill(t, m.float(), 0.5), (x, mask)),
        "masked_select": (torch.masked_select, (x, mask)),
        "masked_scatter": (lambda t, m: torch.masked_scatter(t, m, torch.arange(20.0).reshape(
            4, 5)), (x, mask)),
        "nonzero": (torch.nonzero, (mask,)),
        "take": (lambda t: torch.take(t, torch.tensor([[0, 19], [7, 3]])), (x,)),
        "put": (lambda t: t.clone().put_(torch.tensor([1, 6]), torch.tensor([9.0, 8.0])), (x,)),
        "cat": (lambda t: torch.cat([t, t[:2]], 0), (x,)),
        "cat_promote": (lambda t: torch.cat([t, t.double(), t.int()], 1), (x,)),
        "cat_bad": (lambda t: torch.cat([t, t[:, :2]], 0), (x,)),
        "cat_empty_legacy": (lambda t: torch.cat([t, torch.empty(0)], 0), (x,)),
        "stack": (lambda t: torch.stack([t, t], 1), (x,)),
        "flip": (lambda t: torch.flip(t, (0, 1)), (x,)),
        "roll": (lambda t: torch.roll(t, (1, -2), (0, 1)), (x,)),
        "roll_flat": (lambda t: torch.roll(t, 3), (x,)),
        "repeat": (lambda t: t.repeat(2, 1, 3), (x,)),
        "tril": (lambda t: torch.tril(t, -1), (x,)),
        "triu": (lambda t: torch.triu(t, 2), (x,)),
        "sort": (lambda t: torch.sort(t, 1), (x,)),
        "sort_desc_stable": (lambda t: torch.sort(t.round(), 0, descending=True, stable=True),
                             (x,)),
        "argsort": (lambda t: torch.argsort(t, 1, descending=True), (x,)),
        "topk": (lambda t: torch.topk(t, 2, 1), (x,)),
        "topk_small": (lambda t: torch.topk(t, 3, 0, largest=False), (x,)),
        "kthvalue": (lambda t: torch.kthvalue(t, 2, 1), (x,)),
        "unique": (lambda t: torch.unique(t.round(), return_inverse=True, return_counts=True),
                   (x,)),
        "searchsorted": (lambda t: torch.searchsorted(torch.tensor([-1.0, 0.0, 1.0]), t), (x,)),
        "bucketize": (lambda t: torch.bucketize(t, torch.tensor([-1.0, 0.0, 1.0]), right=True),
                      (x,)),
        "isin": (lambda t: torch.isin(t.round(), torch.tensor([0.0, 1.0])), (x,)),
        "clone": (lambda t: t.t().clone(), (x,)),
        "contiguous": (lambda t: t.t().contiguous(), (x,)),
    }
    for name, (fn, args) in cases.items():
        failures.append(compare(fn, *args, label=name))
    # sort with NaN, descending, and ties
    y = torch.tensor([[3.0, NAN, 1.0, 3.0, -1.0]])
    for desc in (False, True):
        failures.append(compare(lambda t, d=desc: torch.sort(t, 1, descending=d, stable=True), y,
                                label=f"sort nan desc={desc}"))
    check_all(failures)


def test_indexing_every_dtype() -> None:
    failures = []
    for dtype in DTYPES:
        x = sample(dtype, (3, 4), 2)
        failures.append(compare(lambda t: t[torch.tensor([2, 0])], x, label=f"index {dtype}"))
        failures.append(compare(lambda t: torch.cat([t, t]), x, label=f"cat {dtype}"))
        failures.append(compare(lambda t: t.flip(0), x, label=f"flip {dtype}"))
        failures.append(compare(lambda t: torch.masked_fill(t, t != t.flatten()[0], 1), x,
                                label=f"masked_fill {dtype}"))
        failures.append(compare(lambda t: torch.gather(t, 1, torch.tensor([[0], [3], [1]])), x,
                                label=f"gather {dtype}"))
        failures.append(compare(lambda t: torch.where(t != t.flatten()[0], t, t.flatten()[1]),
                                x, label=f"where {dtype}"))
        if not dtype.is_complex:
            failures.append(compare(lambda t: torch.sort(t, 1, stable=True), x,
                                    label=f"sort {dtype}"))
    check_all(failures)


def test_creation_factories() -> None:
    failures = []
    for dtype in DTYPES:
        for fn in (lambda d: torch.zeros(2, 3, dtype=d), lambda d: torch.ones(4, dtype=d),
                   lambda d: torch.full((2,), 1, dtype=d), lambda d: torch.eye(3, 2, dtype=d),
                   lambda d: torch.zeros(2, dtype=d).fill_(1).zero_()):
            failures.append(compare(lambda dev, f=fn, d=dtype: f(d).to(dev) if dev == "cpu" else
                                    _on_mlu(f, d), "cpu", mlu_args=("mlu",),
                                    label=f"factory {dtype}"))
    for args in ((5,), (1, 7, 2), (0.5, 3.0, 0.75), (10, 0, -3), (1, 5, 0)):
        for dtype in (None, torch.int32, torch.float64):
            failures.append(compare(lambda dev, a=args, d=dtype: torch.arange(*a, dtype=d,
                                                                             device=dev), "cpu",
                                    mlu_args=("mlu",), label=f"arange{args} {dtype}"))
    for args in ((0, 1, 5), (-2.0, 3.0, 7), (0, 10, 1), (3, 3, 4)):
        failures.append(compare(lambda dev, a=args: torch.linspace(*a, device=dev), "cpu",
                                mlu_args=("mlu",), label=f"linspace{args}"))
    failures.append(compare(lambda dev: torch.logspace(0, 2, 5, device=dev), "cpu",
                            mlu_args=("mlu",), label="logspace"))
    check_all(failures)


def _on_mlu(f: Callable[..., Any], d: torch.dtype) -> torch.Tensor:
    with torch.device("mlu"):
        return f(d)


EXTRA: dict[str, tuple[Callable[..., Any], tuple[torch.dtype, ...]]] = {
    "median": (torch.median, DTYPES[1:10]),
    "median_dim": (lambda t: torch.median(t, 1), DTYPES[1:10]),
    "nanmedian": (lambda t: torch.nanmedian(t.masked_fill(t > 1, NAN) if t.is_floating_point()
                                            else t), DTYPES[1:10]),
    "nanmedian_dim": (lambda t: torch.nanmedian(t.masked_fill(t > 0.5, NAN) if
                                                t.is_floating_point() else t, 0), DTYPES[1:10]),
    "mode": (lambda t: torch.mode(t.round() if t.is_floating_point() else t, 1), DTYPES[1:10]),
    "cummax": (lambda t: torch.cummax(t, 1), DTYPES[:10]),
    "cummin": (lambda t: torch.cummin(t, 0), DTYPES[:10]),
    "logcumsumexp": (lambda t: torch.logcumsumexp(t, 1), FLOATS),
    "histc": (lambda t: torch.histc(t, 5, -1, 1), FLOATS[2:]),
    "bincount": (lambda t: torch.bincount(t.abs().long().flatten()), DTYPES[1:6]),
    "trace": (lambda t: torch.trace(t[:2, :2]), DTYPES[1:]),
    "renorm": (lambda t: torch.renorm(t, 2, 0, 0.5), FLOATS[2:]),
    "equal": (lambda t: torch.equal(t, t.clone()), DTYPES),
    "gcd": (lambda t: torch.gcd(t, t.flip(0)), DTYPES[1:6]),
    "lcm": (lambda t: torch.lcm(t, t.flip(0)), DTYPES[1:6]),
    "frexp": (torch.frexp, FLOATS[2:]),
    "polygamma": (lambda t: torch.polygamma(1, t.abs() + 0.5), FLOATS[2:]),
    "mvlgamma": (lambda t: torch.mvlgamma(t.abs() + 2, 3), FLOATS[2:]),
    "xlog1py": (lambda t: torch.special.xlog1py(t, t.abs()), FLOATS[2:]),
    "entr": (lambda t: torch.special.entr(t), FLOATS[2:]),
    "zeta": (lambda t: torch.special.zeta(t.abs() + 1.5, t.abs() + 1), FLOATS[2:]),
    "complex": (lambda t: torch.complex(t, t.flip(0)), FLOATS[2:]),
    "polar": (lambda t: torch.polar(t.abs(), t), FLOATS[2:]),
    "cdist": (lambda t: torch.cdist(t, t.flip(0)), FLOATS[2:]),
    "cdist_p1": (lambda t: torch.cdist(t, t, p=1), FLOATS[2:]),
    "pdist": (lambda t: torch.pdist(t), FLOATS[2:]),
    "fft": (lambda t: torch.fft.fft(t.to(torch.complex64)), FLOATS[2:]),
    "rfft2": (lambda t: torch.fft.rfft2(t, norm="ortho"), FLOATS[2:]),
    "irfft": (lambda t: torch.fft.irfft(torch.fft.rfft(t), n=3), FLOATS[2:]),
    "ifftn": (lambda t: torch.fft.ifftn(t.to(torch.complex128), norm="forward"), FLOATS[2:]),
    "repeat_interleave": (lambda t: torch.repeat_interleave(t.abs().long().flatten()),
                          DTYPES[1:6]),
    "index_reduce": (lambda t: t.index_reduce(0, torch.tensor([0, 0], device=t.device),
                                              t.flip(0), "amax"),
                     DTYPES[1:10]),
    "tril_indices": (lambda t: torch.tril_indices(3, 4, 1, device=t.device), DTYPES[:1]),
    "triu_indices": (lambda t: torch.triu_indices(4, 3, -1, device=t.device), DTYPES[:1]),
    "range": (lambda t: torch.range(0, 2, 0.5, device=t.device), DTYPES[:1]),
    "narrow_copy": (lambda t: torch.narrow_copy(t, 1, 1, 2), DTYPES),
    "unique_dim": (lambda t: torch.unique(torch.cat([t, t]), dim=0, return_inverse=True,
                                          return_counts=True), DTYPES[:10]),
    "unique_consecutive_dim": (lambda t: torch.unique_consecutive(t.repeat_interleave(2, 1),
                                                                  dim=1, return_counts=True),
                               DTYPES),
    "aminmax_legacy": (lambda t: torch.ops.aten._aminmax(t), DTYPES[1:10]),
    "cross": (lambda t: torch.linalg.cross(t.reshape(3, 2).t(), t.flip(1).reshape(3, 2).t()),
              DTYPES[1:]),
    "heaviside_nan": (lambda t: torch.heaviside(t.masked_fill(t > 0.5, NAN), t), FLOATS),
    "isin_scalar": (lambda t: torch.isin(2, t), DTYPES[1:10]),
    "linspace_int": (lambda t: torch.linspace(1.5, -3, 3, dtype=torch.int64, device=t.device),
                     DTYPES[:1]),
    "kaiser_window": (lambda t: torch.kaiser_window(6, device=t.device), DTYPES[:1]),
    "kaiser_window_beta": (lambda t: torch.kaiser_window(5, False, 3.0, device=t.device),
                           DTYPES[:1]),
    "bessel_j0": (torch.special.bessel_j0, DTYPES[1:]),
    "modified_bessel_k1": (lambda t: torch.special.modified_bessel_k1(t.abs() + 0.1),
                           FLOATS[2:]),
    "airy_ai": (torch.special.airy_ai, FLOATS),
    "spherical_bessel_j0": (torch.special.spherical_bessel_j0, FLOATS[2:]),
    "chebyshev_t": (lambda t: torch.special.chebyshev_polynomial_t(t / 3, t.flip(0) * 2),
                    FLOATS[2:]),
    "chebyshev_w": (lambda t: torch.special.chebyshev_polynomial_w(t / 3, 3), FLOATS[2:]),
    "hermite_he": (lambda t: torch.special.hermite_polynomial_he(t, 4), FLOATS[2:]),
    "legendre_p": (lambda t: torch.special.legendre_polynomial_p(t / 3, t.abs() * 3),
                   FLOATS[2:]),
    "nonzero_static": (lambda t: torch.nonzero_static(t, size=4), DTYPES),
}


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_more_overloads_against_cpu(name: str) -> None:
    fn, dtypes = EXTRA[name]
    failures = []
    for dtype in dtypes:
        x = sample(dtype, (2, 3), seed=21)
        failures.append(compare(fn, x, label=f"{name}({dtype})", **low_tol(dtype)))
    check_all(failures)


SCALAR_OVERLOADS = sorted(
    n for n in kernels.implemented()
    if n.endswith(".Scalar") and n.split(".")[0].rstrip("_") in set(BINARY_NAMES) | {"rsub"}
)


@pytest.mark.parametrize("name", SCALAR_OVERLOADS)
def test_explicit_scalar_overloads(name: str) -> None:
    base, overload = name.split(".")
    op = getattr(getattr(torch.ops.aten, base), overload)
    inplace = base.endswith("_")
    failures = []
    for dtype in (torch.int64, torch.float32, torch.float16, torch.bool):
        for scalar in (3, 0.5, True):
            extra = (2,) if base.rstrip("_") in ("add", "sub", "rsub") and not (
                dtype == torch.bool) else ()
            failures.append(compare(
                lambda t, s=scalar, e=extra: op(t.clone() if inplace else t, s, *e),
                sample(dtype, seed=4, positive=True), label=f"{name}({dtype}, {scalar!r})"))
    check_all(failures)


def test_cpu_check_order_for_errors() -> None:
    """ATen checks shapes, then the out=/in-place cast, then dtype support; errors match CPU's."""
    failures = [
        # shape before dtype support
        compare(lambda a, b: a.bitwise_left_shift_(b), torch.tensor(True),
                torch.tensor([True]), label="in-place shape before Bool refusal"),
        compare(lambda a, b: torch.remainder(a, b), torch.ones(2, dtype=torch.bool),
                torch.ones(3, dtype=torch.bool), label="broadcast before Bool refusal"),
        # in-place cast before dtype support
        compare(lambda a, b: a.floor_divide_(b), torch.ones(2, dtype=torch.bool),
                torch.ones(2, dtype=torch.complex64), label="cast before complex refusal"),
        # plain unary ops: out= must have the result dtype
        compare(lambda a, o: torch.abs(a, out=o), torch.ones(2, dtype=torch.int32),
                torch.empty(0), label="abs out dtype"),
        compare(lambda a, o: torch.neg(a, out=o), torch.ones(2), torch.empty(0, dtype=torch.int64),
                label="neg out dtype"),
        # non-TensorIterator structured kernels: exact out dtype
        compare(lambda a, o: torch.mm(a, a, out=o), torch.ones(2, 2),
                torch.empty(0, dtype=torch.float64), label="mm out exact"),
        compare(lambda a, o: torch.cumsum(a, 0, dtype=torch.float32, out=o), torch.ones(3),
                torch.empty(0, dtype=torch.float64), label="cumsum dtype= out"),
        compare(lambda a, v, i: torch.sort(a, out=(v, i)), torch.ones(3), torch.empty(0),
                torch.empty(0), label="sort indices out dtype"),
        # autogen'd .Scalar_out keeps ATen's composite: exact dtype
        compare(lambda a, o: torch.ops.aten.add.Scalar_out(a, 1, out=o), torch.ones(2),
                torch.empty(0, dtype=torch.float64), label="add.Scalar_out exact"),
        # early refusals
        compare(lambda a, o: torch.clamp(a, max=a, out=o), torch.ones(2, dtype=torch.complex64),
                torch.empty(0), label="clamp complex before out cast"),
        compare(lambda a: torch.argmax(a), torch.ones(2, dtype=torch.complex64),
                label="argmax complex"),
        compare(lambda a: torch.sign(a), torch.ones(2, dtype=torch.complex64), label="sign cplx"),
        compare(lambda a: torch.ceil(a), torch.ones(2, dtype=torch.complex64), label="ceil cplx"),
        # empty tensors skip the dtype dispatch on CPU
        compare(lambda a: a.normal_(), torch.empty(0, dtype=torch.bool), label="normal_ empty"),
        compare(lambda a, i: torch.gather(a, 0, i), torch.empty(0),
                torch.empty(0, dtype=torch.bool), label="gather empty index"),
        compare(lambda a: torch.remainder(a, 0), torch.empty(0, dtype=torch.uint8),
                label="remainder by 0 on empty"),
    ]
    check_all(failures)


@pytest.mark.parametrize("op", [
    "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
    "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
])
def test_chebyshev_non_finite_degree_returns(op):
    """A NaN/inf degree truncates to INT64_MIN as in ATen (result 0); it used to hang mlu."""
    n = torch.tensor([-7.25, float("-inf"), float("nan"), 1.59, 5.0])
    fn = getattr(torch.ops.aten, op).x_scalar
    torch.testing.assert_close(fn(3, n.to("mlu")).cpu(), fn(3, n))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int64, torch.float16,
                                   torch.bfloat16, torch.float32])
@pytest.mark.parametrize("include_self", [True, False])
def test_many_contributions_per_element_reduce_as_cpu(dtype: torch.dtype,
                                                      include_self: bool) -> None:
    """Over 256 source elements per target (issue 26: index_reduce of uint8, 'mean', 1025
    indices): index_reduce and scatter_reduce count in self's dtype (a uint8 count of 520 is
    8); index_reduce adds in self's dtype (a bfloat16 sum stops growing), scatter_reduce adds
    16-bit floats in float32 and rounds once. Exact agreement with CPU."""
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 2, (1025,), generator=g)
    src = (torch.rand(1025, generator=g) * 4).to(dtype) if dtype.is_floating_point else \
        torch.randint(0, 100, (1025,), generator=g).to(dtype)
    for name, fn in {
        "index_reduce": lambda s, i, v, r: s.index_reduce(0, i, v, r, include_self=include_self),
        "scatter_reduce": lambda s, i, v, r: s.scatter_reduce(0, i, v, r,
                                                              include_self=include_self),
    }.items():
        for reduce in ("mean", "amax") if name == "index_reduce" else ("mean", "sum"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # index_reduce is in beta
                want = fn(src[:2].clone(), idx, src, reduce)
                got = fn(src[:2].to("mlu"), idx.to("mlu"), src.to("mlu"), reduce).cpu()
            assert torch.equal(got, want), f"{name}({reduce}, {dtype}): {got} != CPU's {want}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_cross_fuses_its_first_product_as_cpu(dtype: torch.dtype) -> None:
    """CPU's cross kernel is fma(x, y, -(z * w)) for float and double (issue 26: float32
    a_z * b_x = -2.8e40 and a_x * b_z = -1.2e41 both overflow; CPU's fused difference is inf,
    a rounded one inf - inf = NaN). NaN where CPU has NaN; float32 bitwise."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2000, 3, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(
        -20, 20, (2000, 3), generator=g)
    b = torch.randn(2000, 3, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(
        -20, 20, (2000, 3), generator=g)
    scale = {torch.float32: 1e18, torch.float64: 1e290, torch.float16: 1.0}[dtype]
    a = torch.where(torch.rand(2000, 3, generator=g) < 0.3, a * scale, a)
    if dtype == torch.float16:
        a, b = a.clamp(-6e4, 6e4), b.clamp(-6e4, 6e4)
    a, b = a.to(dtype), b.to(dtype)
    want = torch.linalg.cross(a, b)
    got = torch.linalg.cross(a.to("mlu"), b.to("mlu")).cpu()
    assert torch.equal(got.isnan(), want.isnan())
    exact = dict(rtol=0, atol=0) if dtype != torch.float64 else {}
    torch.testing.assert_close(got, want, equal_nan=True, **exact)
