"""Python scalars a dtype cannot hold: mlu refuses them where CPU does (``value cannot be
converted to type uint8_t without overflow``), through the one shared check
``kernels._semantics.checked_scalar``, and accepts them where CPU does."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import kernels
from kernels._semantics import checked_scalar

kernels.install()

DTYPES = (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)
VALUES = (300, -255, -256, 2**31, 2**63 - 1, 2**64 - 1, 1e5, 65504.0, 65519.0, 3.5e38, 1e300,
          math.inf, -math.inf, math.nan, True, 2.5, 0j, 1.5 + 0.5j, 3.5e38 + 0j)


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as exc:  # noqa: BLE001 - the outcome is compared
        return f"{type(exc).__name__}: {exc}"
    return "ok"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_checked_scalar_is_cpus_fill_check(dtype: torch.dtype) -> None:
    """CPU's fill_ of a multi-element tensor reads the value with c10's checked conversion."""
    for v in VALUES:
        cpu = _outcome(lambda v=v: torch.zeros(2, dtype=dtype).fill_(v))
        ours = _outcome(lambda v=v: checked_scalar(v, dtype))
        assert ours == cpu, (dtype, v)


F = torch.nn.functional
OPS: dict[str, Callable[[torch.Tensor, torch.Tensor, Any], Any]] = {
    "fill_": lambda x, m, v: x.clone().fill_(v),
    "full_like": lambda x, m, v: torch.full_like(x, v),
    "masked_fill": lambda x, m, v: x.masked_fill(m, v),
    "where": lambda x, m, v: torch.where(m, x, v),
    "index_fill": lambda x, m, v: x.index_fill(0, torch.zeros(1, dtype=torch.long,
                                                                device=x.device), v),
    "clamp": lambda x, m, v: torch.clamp(x, 0, v),
    "clamp_max_": lambda x, m, v: x.clone().clamp_max_(v),
    "threshold": lambda x, m, v: torch.threshold(x, 1, v),
    "threshold_min": lambda x, m, v: torch.threshold(x, v, 1),
    "hardtanh": lambda x, m, v: F.hardtanh(x, 0, v),
    "leaky_relu": lambda x, m, v: F.leaky_relu(x, v),
    "pow": lambda x, m, v: torch.pow(x, v),
    "add_alpha": lambda x, m, v: torch.add(x, x, alpha=v),
    "sub_alpha": lambda x, m, v: torch.sub(x, x, alpha=v),
    "addcmul": lambda x, m, v: torch.addcmul(x, x, x, value=v),
    "lerp_": lambda x, m, v: x.clone().lerp_(x, v),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_scalar_arguments_are_refused_as_on_cpu(op: str) -> None:
    fn = OPS[op]
    for dtype in (torch.bool, torch.uint8, torch.int32, torch.float16, torch.bfloat16,
                  torch.float32, torch.complex64):
        for shape in ((2,), (1,)):
            x, m = torch.ones(shape).to(dtype), torch.ones(shape, dtype=torch.bool)
            for v in (300, -300, 2**31, 1e5, 1e300, math.nan, math.inf, 1 + 1j, 0j, 2.5):
                cpu = _outcome(lambda v=v, x=x, m=m: fn(x, m, v))
                dev = _outcome(lambda v=v, x=x, m=m: fn(x.to("mlu"), m.to("mlu"), v))
                if "complex32" in dev:  # README: mlu stores no complex32
                    continue
                if "overflow" in cpu + dev:
                    assert dev == cpu, (op, dtype, shape, v)
                else:
                    assert dev.split(":")[0] == cpu.split(":")[0], (op, dtype, shape, v, cpu, dev)


@pytest.mark.parametrize("dtype", (torch.float16, torch.float32, torch.float64, torch.complex64,
                                   torch.int32, torch.uint8, torch.bool), ids=str)
def test_histc_range_checks_in_cpus_order(dtype: torch.dtype) -> None:
    """histc's range: as doubles, data extrema when equal, widened, finite, ordered, then in the
    input's dtype (float32/float64 before the checks) — and the dtype gates after."""
    for lo, hi in ((0, 0), (0j, True), (1 + 1j, 2), (0, math.inf), (math.nan, 1), (2, 1),
                   (-1, 1), (0, 1e300), (0.5, 0.5), (1e300, 1e300)):
        for n in (0, 3):
            x = torch.tensor([0.5, -1.0, 2.0])[:n].to(dtype)
            cpu = _outcome(lambda x=x, lo=lo, hi=hi: torch.histc(x, 4, lo, hi))
            dev = _outcome(lambda x=x, lo=lo, hi=hi: torch.histc(x.to("mlu"), 4, lo, hi))
            assert dev == cpu, (dtype, lo, hi, n)
