"""Every one of the 12 dtypes through the mlu backend: transfers, conversions, scalars, promotion."""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch

import kernels

kernels.install()

DTYPES = (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)
IDS = [str(d).removeprefix("torch.") for d in DTYPES]


def values(dtype: torch.dtype) -> torch.Tensor:
    """Edge values representable in ``dtype`` (extremes, zero, fractions, inf/nan for floats)."""
    if dtype == torch.bool:
        return torch.tensor([True, False, True])
    if dtype.is_complex:
        return torch.tensor([0, 1.5 - 2j, -3.25 + 0.5j, complex("nan+1j"), complex("inf-1j")],
                            dtype=dtype)
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        return torch.tensor([0.0, -0.0, 1.5, -2.75, info.max, info.min, info.tiny, float("inf"),
                             float("-inf"), float("nan")], dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.tensor([0, 1, -1 if info.min < 0 else 2, info.max, info.min, 100], dtype=dtype)


def same(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_round_trip_is_exact(dtype: torch.dtype) -> None:
    x = values(dtype)
    m = x.to("mlu")
    assert m.dtype == dtype and m.device.type == "mlu"
    same(m.cpu(), x)
    same(x.reshape(1, -1).t().to("mlu").cpu(), x.reshape(1, -1).t())  # strided source
    same(torch.empty(0, 2, dtype=dtype).to("mlu").cpu(), torch.empty(0, 2, dtype=dtype))


@pytest.mark.parametrize("src", DTYPES, ids=IDS)
def test_conversion_matrix_matches_cpu(src: torch.dtype) -> None:
    x = values(src)
    m = x.to("mlu")
    for dst in DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = x.to(dst)
            got = m.to(dst)
        assert got.device.type == "mlu" and got.dtype == dst
        finite = torch.isfinite(x) if (src.is_floating_point or src.is_complex) else None
        if finite is not None and not (dst.is_floating_point or dst.is_complex or
                                       dst == torch.bool):
            # float -> int of inf/nan/out-of-range values is undefined behaviour in C++ (CPU
            # gives platform-specific garbage); compare only values the target can hold.
            info = torch.iinfo(dst)
            real = x.real if src.is_complex else x
            ok = finite & (real.double() >= info.min) & (real.double() <= info.max)
            same(got.cpu()[ok], expected[ok])
        else:
            same(got.cpu(), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_copy_between_devices_and_dtypes(dtype: torch.dtype) -> None:
    x = values(dtype)
    for dst_dtype in (torch.float64, torch.int32, torch.bool, torch.complex64, dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            finite = not (dtype.is_floating_point or dtype.is_complex) or dst_dtype in (
                torch.float64, torch.bool, torch.complex64) or dst_dtype == dtype
            src = x if finite else x[:4]
            # mlu -> mlu, cpu -> mlu, mlu -> cpu copy_ with a dtype change
            dst_m = torch.empty(src.shape, dtype=dst_dtype, device="mlu")
            dst_m.copy_(src.to("mlu"))
            dst_c = torch.empty(src.shape, dtype=dst_dtype)
            dst_c.copy_(src)
            same(dst_m.cpu(), dst_c)
            dst_m.copy_(src)
            same(dst_m.cpu(), dst_c)
            back = torch.empty(src.shape, dtype=dst_dtype)
            back.copy_(src.to("mlu"))
            same(back, dst_c)
    # broadcasting copy
    row = values(dtype)[:3]
    m = torch.empty(2, 3, dtype=dtype, device="mlu").copy_(row.to("mlu"))
    same(m.cpu(), row.expand(2, 3))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_item_and_tolist_match_cpu(dtype: torch.dtype) -> None:
    x = values(dtype)
    m = x.to("mlu")
    for i in range(len(x)):
        a, b = x[i].item(), m[i].item()
        assert type(a) is type(b)
        assert a == b or (a != a and b != b)
    assert repr(m.tolist()) == repr(x.tolist())


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_factories_and_fill_every_dtype(dtype: torch.dtype) -> None:
    for fn in (lambda d, dev: torch.zeros(2, 3, dtype=d, device=dev),
               lambda d, dev: torch.ones(3, dtype=d, device=dev),
               lambda d, dev: torch.full((2,), True if d == torch.bool else 3, dtype=d,
                                         device=dev),
               lambda d, dev: torch.empty(4, dtype=d, device=dev).fill_(1),
               lambda d, dev: torch.eye(2, dtype=d, device=dev),
               lambda d, dev: torch.zeros(3, dtype=d, device=dev).masked_fill_(
                   torch.tensor([True, False, True], device=dev), 1)):
        same(fn(dtype, "mlu").cpu(), fn(dtype, "cpu"))
    assert repr(torch.zeros(2, dtype=dtype, device="mlu")).replace(", device='mlu:0'", "") == \
        repr(torch.zeros(2, dtype=dtype))


def test_add_promotion_over_every_dtype_pair() -> None:
    bad = []
    for a_dt, b_dt in itertools.product(DTYPES, DTYPES):
        a, b = values(a_dt)[:3], values(b_dt)[:3]
        try:
            expected = torch.add(a, b) if torch.promote_types(a_dt, b_dt) != torch.bool else (
                a | b)
        except RuntimeError:
            continue
        got = torch.add(a.to("mlu"), b.to("mlu")) if expected.dtype != torch.bool else (
            a.to("mlu") | b.to("mlu"))
        if got.dtype != expected.dtype:
            bad.append(f"add({a_dt}, {b_dt}): {got.dtype} != {expected.dtype}")
            continue
        try:
            torch.testing.assert_close(got.cpu(), expected, equal_nan=True)
        except AssertionError as exc:
            bad.append(f"add({a_dt}, {b_dt}): {exc}")
    assert not bad, "\n".join(bad)


def test_unsupported_dtype_is_refused_clearly() -> None:
    with pytest.raises(NotImplementedError, match="does not support dtype torch.complex32"):
        torch.empty(2, dtype=torch.complex32, device="mlu")


@pytest.mark.parametrize("op", ["silu_backward", "elu_backward"])
def test_activation_backward_promoting_to_complex32_is_refused_clearly(op: str) -> None:
    """A float16 grad with a complex64 0-d self computes in complex32: the documented refusal,
    not a KeyError from a dtype table."""
    g = torch.zeros(0, dtype=torch.float16, device="mlu")
    x = torch.tensor(1 + 1j, dtype=torch.complex64, device="mlu")
    args = (g, 1.0, 1.0, 1.0, False, x) if op == "elu_backward" else (g, x)
    with pytest.raises(NotImplementedError, match="does not support dtype torch.complex32"):
        getattr(torch.ops.aten, op)(*args)


def test_complex_to_bool_reads_both_parts() -> None:
    """complex -> bool is true when either part is non-zero (a real-part-only cast is not)."""
    x = torch.tensor([1j, 0j, 1 + 0j, complex(0, float("nan"))])
    same(x.to("mlu").to(torch.bool).cpu(), x.to(torch.bool))
