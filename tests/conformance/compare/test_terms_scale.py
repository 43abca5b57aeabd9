"""``scale: terms``: a sum of products may differ from CPU's by ulps of its terms' magnitude.

A GEMM's element sums K products; summed in another order (a sequential float32 loop here,
standing in for another BLAS or a device's tiles) it differs from CPU's by far more than the
result's rtol where the products cancel, and by little next to ``|A| @ |B|``. A kernel that
accumulates in a narrower type or drops a term still fails.
"""

from __future__ import annotations

import pytest
import torch
from compare_calls import make_call as _call
from compare_calls import make_context

from conformance.compare.context import Context
from conformance.compare.outputs import compare_outputs
from conformance.compare.terms import terms_magnitude
from conformance.compare.values import assert_values
from conformance.core.call import Call
from conformance.core.verdicts import CheckFailure
from opdb.opdata import load_tolerances
from opdb.outcomes import VALUE_UNSPECIFIED

K = 1025


def _ctx(call: Call) -> Context:
    return make_context(call)


def _operands(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(4, K, generator=g) * 16 - 8, torch.rand(K, 3, generator=g) * 16 - 8)


def _sequential(a: torch.Tensor, b: torch.Tensor, acc: torch.dtype = torch.float32,
                drop: int | None = None) -> torch.Tensor:
    """``a @ b`` summed one product at a time, last first, in ``acc`` (``drop``: that term left
    out). CPU sums these small GEMMs first to last: the reversed order is another correct one."""
    products = (a.unsqueeze(-1) * b.unsqueeze(0)).to(acc)  # [4, K, 3], each rounded once
    if drop is not None:
        products[:, drop, :] = 0
    total = torch.zeros(a.shape[0], b.shape[1], dtype=acc)
    for k in reversed(range(K)):
        total = total + products[:, k, :]
    return total.to(a.dtype)


def _seed_where_orders_differ() -> tuple[torch.Tensor, torch.Tensor]:
    """Operands whose sequential sum misses CPU's by more than float32's rtol/atol somewhere
    (the case the entry is for; most seeds have one within a few tries)."""
    for seed in range(50):
        a, b = _operands(seed)
        if not torch.allclose(_sequential(a, b), a @ b, rtol=1.3e-6, atol=1e-5):
            return a, b
    raise AssertionError("no seed gave a sum that cancels below the terms' rounding")


def test_terms_magnitude_is_the_call_on_absolute_values():
    a, b = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0], [4.0]])
    assert terms_magnitude(_call("mm", self=a, mat2=b), torch.Size([1, 1])).item() == 11.0
    c = _call("addmm", self=torch.tensor([[-5.0]]), mat1=a, mat2=b, beta=2, alpha=-1)
    assert terms_magnitude(c, torch.Size([1, 1])).item() == 21.0
    assert terms_magnitude(c, torch.Size([2, 2])) is None  # another shape: no terms scale


def test_a_gemm_summed_in_another_order_agrees():
    a, b = _seed_where_orders_differ()
    call = _call("matmul", self=a, other=b)
    compare_outputs(_ctx(call), call, call.run("cpu"), _sequential(a, b), values=True)


@pytest.mark.parametrize("wrong", ["float16 accumulator", "a term dropped"])
def test_a_gemm_that_loses_precision_or_a_term_still_fails(wrong):
    a, b = _seed_where_orders_differ()
    actual = _sequential(a, b, acc=torch.float16) if wrong == "float16 accumulator" \
        else _sequential(a, b, drop=K // 2)
    call = _call("matmul", self=a, other=b)
    with pytest.raises(CheckFailure):
        compare_outputs(_ctx(call), call, call.run("cpu"), actual, values=True)


def test_bad_scale_is_a_located_error(tmp_path):
    from opdb.errors import InputError

    f = tmp_path / "tol.yaml"
    f.write_text("- names: [mm]\n  scale_ulps: 4\n  scale: products\n  reason: x\n")
    with pytest.raises(InputError, match="'scale' must be one of inputs, all_inputs, terms"):
        load_tolerances(f)


def test_a_sum_whose_order_loses_small_values_under_huge_ones_agrees():
    """nanmean of float64 holding +-1.8e308 and small values: another summation order loses
    the small values (0 where the exact mean is 2.5): no order is a contract there."""
    x = torch.tensor([[1.7e308, 4.0, -1.7e308], [6.0, 0.0, 0.0]], dtype=torch.float64)
    call = _call("nanmean", self=x, dim=None, keepdim=False, dtype=None)
    cpu = call.run("cpu")
    compare_outputs(_ctx(call), call, cpu, torch.zeros_like(cpu), values=True)


def test_an_overflowing_partial_sum_may_be_infinite_and_a_lost_element_still_fails():
    """A float32 mean over values near +-3e38 may overflow in a partial sum in any order (an
    infinity agrees); with tame values a dropped element fails."""
    g = torch.Generator().manual_seed(0)
    signs = torch.tensor([1.0, -1.0]).repeat(386)[:771]
    huge = (signs * 1e36).reshape(1, 1, 3, 257)  # sum |x| = 7.7e38, past float32's 3.4e38
    call = _call("adaptive_avg_pool2d", self=huge, output_size=[1, 1])
    cpu = call.run("cpu")
    assert bool(cpu.isfinite().all())
    ctx = _ctx(call)
    compare_outputs(ctx, call, cpu, torch.full_like(cpu, float("inf")), values=True)
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 1  # counted, not silently passed
    tame = torch.rand(1, 1, 3, 257, generator=g) * 16 - 8
    call = _call("adaptive_avg_pool2d", self=tame, output_size=[1, 1])
    dropped = tame.reshape(-1)[:-1].sum() / tame.numel()
    with pytest.raises(CheckFailure):
        compare_outputs(_ctx(call), call, call.run("cpu"), dropped.reshape(1, 1, 1, 1),
                        values=True)


def test_each_element_may_agree_by_either_allowance():
    """The whole result agrees where every element does, each by torch.testing's tolerance or
    by the scale ulps, as the element-wise judgement (arbitration's) has it. _fft_r2c of float32
    [257] up to 1.05e37 (README command 1 at 0cb6059): one element's imaginary part 1.8e-6
    apart from CPU's (only the ulps of the terms' total cover it), another whose real part
    cancelled to near zero (only its modulus is close) failed the whole comparison though each
    element agreed, and mlu was ten times closer to float64 than CPU."""
    x = torch.tensor([1e37, -3e36, 2e36], dtype=torch.float32)
    call = _call("_fft_r2c", self=x, dim=[0], normalization=0, onesided=False)
    ctx = make_context(call)
    expected = torch.tensor([2e37j, 2e37j], dtype=torch.complex64)
    # the terms' total is 2 * 1.5e37 = 3e37, where 4 ulps of float32 are 1.01e31; rtol 1.3e-6
    # of |2e37| is 2.6e31
    by_modulus_only = complex(1.5e31, 2e37)  # the real part misses the ulps
    by_ulps_only = complex(0.0, 2e37 + 3e31)  # the modulus misses rtol
    assert_values(ctx, call, "out", "w", torch.tensor([by_modulus_only, by_ulps_only],
                                                      dtype=torch.complex64), expected)
    by_neither = complex(0.0, 2e37 + 4e31)
    with pytest.raises(CheckFailure):
        assert_values(ctx, call, "out", "w", torch.tensor([by_modulus_only, by_neither],
                                                          dtype=torch.complex64), expected)


def test_a_transforms_allowance_grows_with_its_length():
    """An FFT's element sums every input: its rounding error is bounded by the terms' total
    (tolerances.yaml `scale: all_inputs`), not by the largest input. fft_hfft2 of int64[2, 257]
    near 9e18 (the forward check's tiled refill, 512 points): mlu 3.3e13 from CPU, 30 ulps of
    float32 at the largest input and a tenth of one at the total. The allowance is 4 ulps of
    twice the total (a real-output transform adds an input and its mirror): an error past it,
    or any error of a short transform of the same values, still fails."""
    long = torch.full((257,), 9e18, dtype=torch.float32)
    call = _call("_fft_r2c", self=long, dim=[0], normalization=0, onesided=True)
    ctx = make_context(call)
    expected = torch.zeros(129, dtype=torch.complex64)
    expected[0] = float(long.double().sum())
    ulp_at_total = 2.0 ** 49  # float32 at 2 * 257 * 9e18 = 4.6e21, in [2**72, 2**73)
    within = expected.clone()
    within[5] = complex(3.3e13, 0.0)  # 30 ulps of 9e18 (2**40 each)
    assert_values(ctx, call, "out", "w", within, expected)
    beyond = expected.clone()
    beyond[5] = complex(5 * ulp_at_total, 0.0)
    with pytest.raises(CheckFailure):
        assert_values(ctx, call, "out", "w", beyond, expected)
    short = _call("_fft_r2c", self=long[:3], dim=[0], normalization=0, onesided=True)
    short_expected = torch.tensor([float(long[:3].double().sum()), 0.0], dtype=torch.complex64)
    off = short_expected.clone()
    off[1] = complex(3.3e13, 0.0)
    with pytest.raises(CheckFailure):
        assert_values(make_context(short), short, "out", "w", off, short_expected)
