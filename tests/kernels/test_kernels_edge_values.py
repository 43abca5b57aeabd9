"""Edge values where a NumPy one-liner disagrees with CPU's kernel: each case is a call the
conformance run found failing (issue 9's adversarial values), compared with CPU bit for bit
(NaN equal to NaN) or, where CPU's last ulp is its own library's, within the default tolerance."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import kernels

kernels.install()

inf, nan = float("inf"), float("nan")
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _t(values: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def _flat(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple | list) else [out]


def _same(fn: Callable[..., Any], *args: Any, exact: bool = True, **kwargs: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _flat(fn(*args, **kwargs))
        dev = [a.to("mlu") if isinstance(a, torch.Tensor) else a for a in args]
        actual = _flat(fn(*dev, **kwargs))
    for e, a in zip(expected, actual, strict=True):
        if not isinstance(e, torch.Tensor):
            continue
        a = a.cpu()
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        if e.is_complex():
            e, a = torch.view_as_real(e.resolve_conj()), torch.view_as_real(a.resolve_conj())
        if exact:
            assert torch.equal(a.isnan(), e.isnan()) if e.is_floating_point() else True
            keep = ~e.isnan() if e.is_floating_point() else torch.ones_like(e, dtype=torch.bool)
            assert torch.equal(a[keep], e[keep]), f"{a} != {e}"
        else:
            torch.testing.assert_close(a, e, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64], ids=str)
def test_gcd_of_int_min_wraps_like_cpu(dtype: torch.dtype) -> None:
    info = torch.iinfo(dtype)
    _same(torch.gcd, _t([info.min, 0, info.min, 6, -4], dtype),
          _t([info.max, info.min, 0, -4, 0], dtype))


def test_digamma_pole_sign_follows_the_zero() -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        _same(torch.digamma, _t([0.0, -0.0, 1.5], dtype), exact=False)


def test_cummin_cummax_int_extremes_and_nan_index() -> None:
    _same(torch.cummin, _t([I32_MAX * 2**32 + I32_MAX, 2], torch.int64), 0)
    _same(torch.cummax, _t([-(2**63), -5], torch.int64), 0)
    _same(torch.cummin, _t([-3.0, nan, 1.0, nan, -9.0], torch.float16), 0)


def test_searchsorted_nan_and_unsorted_boundaries_as_cpu() -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        _same(torch.searchsorted, _t([0.0078125, 2.0], dtype), _t([nan, 1.0, -inf], dtype))
        _same(torch.bucketize, _t([nan, 1.0], dtype), _t([0.0078125, 2.0], dtype))
    unsorted = _t([[-4, -1, 8, 0], [6, 5, -8, -6]], torch.int16)
    values = _t([[-1, 0, -2, 2], [4, -9, -8, -5]], torch.int16)
    _same(torch.searchsorted, unsorted, values, right=True)
    _same(torch.searchsorted, unsorted, values)


def test_unique_orders_bfloat16_by_value() -> None:
    _same(torch.unique, _t([9.18e-41, -1.17e-38, nan, -7.71875, -7.90625, inf], torch.bfloat16),
          sorted=False)


@pytest.mark.parametrize("op", [torch.ops.aten._unique2.default, torch.ops.aten._unique.default])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_unique_keeps_every_nan_apart(op: Any, dtype: torch.dtype) -> None:
    # ATen compares sorted neighbours with ==: each NaN is a value of its own, in input order
    x = _t([-0.0, nan, 0.5, nan, 0.5, nan], dtype)
    _same(op, x, False, True, *([True] if op is torch.ops.aten._unique2.default else []))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_huber_loss_backward_follows_atens_scalar_loop(dtype: torch.dtype) -> None:
    big = torch.finfo(dtype).max
    f = torch.ops.aten.huber_loss_backward.default
    # mean of 2: (0.5 * -max) * 2.0 stays finite, as ATen multiplies norm first
    _same(f, _t([-3.5, -big], dtype), _t([1.0, 2.0], dtype), _t([-3.3, 5.9], dtype), 1, 2.0)
    # delta below the dtype's least subnormal stays a double: -inf * 6e-72 is -inf, not NaN
    _same(f, _t([-inf, inf], dtype), _t([7.7, 1.0], dtype), _t([-inf, -0.0], dtype), 0, 6.35e-72)
    # x = input - target rounds to the dtype before it meets delta (float16: 2.0002 is 2.0)
    _same(f, _t([-0.5, 1.5], dtype), _t([1.93e-4, 3.0], dtype), _t([-2.0, 0.5], dtype), 0, 2.0)


def test_std_out_reduces_in_the_outs_dtype() -> None:
    def std(x: torch.Tensor, out_dtype: torch.dtype, **kw: Any) -> torch.Tensor:
        return torch.std(x, out=torch.empty(0, dtype=out_dtype, device=x.device), **kw)

    # the input is cast to the out's dtype first: -1.79e308 and -7.5e51 are -inf in float32
    _same(std, _t([[5e-324, -1.0], [-7.49e51, -1.79e308]], torch.float64), torch.float32,
          dim=[1], unbiased=False)
    _same(std, _t([[complex(3.0, -1.79e308), 1j], [complex(-1.2e109, 0), 2.0]],
                  torch.complex128), torch.float32, dim=[0], unbiased=False)
    # and not rounded to the input's bfloat16 on the way into a float64 out
    _same(std, _t([[1.0, 2.0, 0.3], [2.7, 0.1, 0.33]], torch.bfloat16), torch.float64, dim=[0])
    # one element: std_var_all_cpu fills the out with the double result, which must fit
    with pytest.raises(RuntimeError, match="without overflow"):
        std(_t([1e30, -1e30, 3e30], torch.complex128).to("mlu"), torch.float32)


def test_pixel_unshuffle_of_an_empty_input_is_a_clone() -> None:
    _same(torch.pixel_unshuffle, torch.empty(2, 0, 3, dtype=torch.int16), 3)
    _same(torch.pixel_unshuffle, torch.arange(2 * 3 * 4 * 6.0).reshape(2, 3, 4, 6), 2)


def test_unique_consecutive_dim0_of_1d_leaves_inverse_and_counts_empty() -> None:
    _same(torch.unique_consecutive, _t([2.5, 2.5, 1.0], torch.float32), dim=0)


def test_complex_and_polar_keep_each_part() -> None:
    _same(torch.complex, _t([3.0, 0.0, inf], torch.float64), _t([-1.0, nan, nan], torch.float64))
    _same(torch.polar, _t([inf], torch.float32), _t([2.5], torch.float32), exact=False)


def test_complex_pow_minus_one_is_a_reciprocal() -> None:
    z = _t([complex(-1.34e154, -inf), complex(inf, 1), 0j, 3 + 4j], torch.complex128)
    _same(torch.pow, z, -1, exact=False)
    _same(torch.pow, z, 2, exact=False)


def test_lerp_does_not_overflow_where_cpus_fused_multiply_add_does_not() -> None:
    _same(torch.lerp, _t([-4.587277889251709], torch.float32), _t([3.4028234663852886e38],
                                                                    torch.float32), -1.0)
    _same(torch.lerp, _t([-4.59375], torch.bfloat16), _t([3.3895313892515355e38],
                                                        torch.bfloat16), -1.0)


@pytest.mark.parametrize("fn", [torch.var, torch.std, torch.var_mean, torch.std_mean],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("x,kwargs", [
    ([inf, 1.0], {}),  # Welford: the mean after delta = 1 - inf is NaN
    ([1.0, inf], {}),
    ([1e30, -1e30, 3e30], {}),  # accumulated in double: var overflows float32, std does not
    ([2.1875, -3.6875], {"correction": nan}),  # a NaN correction divides by 0
    ([[1.0], [2.0], [4.0]], {"dim": 0}),
])
def test_var_std_accumulate_as_cpu(fn: Callable[..., Any], x: Any, kwargs: dict[str, Any]
                                   ) -> None:
    _same(fn, _t(x, torch.float32), exact=False, **kwargs)
    _same(fn, _t(x, torch.bfloat16), exact=False, **kwargs)


def test_complex_var_adds_the_parts_in_the_real_dtype() -> None:
    z = _t([complex(-4.947706870653517e31, 3.5e-41), complex(4.4e27, 3.3e-07)], torch.complex64)
    _same(torch.std, z, exact=False)
    _same(torch.var_mean, z, exact=False)


def test_norm_of_one_element_is_its_absolute_value() -> None:
    x = _t(4.947706870653517e31, torch.float32)
    _same(torch.linalg.vector_norm, x, 1.5, exact=False)
    _same(torch.linalg.vector_norm, x.reshape(1), exact=False)
    _same(torch.linalg.vector_norm, x, dim=0, exact=False)  # 0-dim, explicit dim: overflows
    _same(torch.linalg.vector_norm, _t([3e38, 3e38], torch.float32), -1, exact=False)


def test_cdist_general_p_as_cpu() -> None:
    a = _t([[[5.057433638544495e-12]]], torch.float32)
    b = _t([[[3.280290535525144e24]]], torch.float32)
    _same(torch.cdist, a, b, p=1.5, exact=False)
    _same(torch.cdist, _t([[[4.947706870653517e31]]], torch.float32), _t([[[3.0]]],
                                                                        torch.float32), p=1.5)
    _same(torch.cdist, _t([[[nan]]], torch.float32), _t([[[1.0]]], torch.float32), p=0)


def test_mvlgamma_rounds_each_step_in_its_dtype() -> None:
    _same(torch.mvlgamma, _t([-4.76837158203125e-07, 40000.0], torch.float16), 3, exact=False)
    _same(torch.mvlgamma, _t([-3.640625, 5.5], torch.bfloat16), 2, exact=False)


def test_lgamma_of_a_subnormal_is_finite() -> None:
    _same(torch.lgamma, _t([5e-324, -5e-324, 0.0, 2.5], torch.float64), exact=False)


@pytest.mark.parametrize("fn", [torch.special.hermite_polynomial_h,
                                torch.special.hermite_polynomial_he,
                                torch.special.laguerre_polynomial_l,
                                torch.special.legendre_polynomial_p], ids=lambda f: f.__name__)
def test_orthogonal_polynomials_run_cpus_recurrence(fn: Callable[..., Any]) -> None:
    """float32 bit for bit (ATen's recurrence with its fused multiply-adds), overflow to
    inf - inf = NaN included; float64 within tolerance."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(600, generator=g) * 20 - 10
    x[:3] = torch.tensor([0.0, 1.0, -1.0])
    x[3] = -3.6e18
    n = torch.randint(-2, 30, (600,), generator=g).float()
    _same(fn, x, n)
    _same(fn, x.double(), n.double(), exact=False)


def test_airy_ai_far_left_and_right() -> None:
    _same(torch.special.airy_ai, _t([200.0, inf, -inf, 0.0], torch.float64), exact=False)
    far = torch.special.airy_ai(_t([-5e8, -1e7], torch.float64).to("mlu")).cpu()
    assert bool(far.isfinite().all()) and bool((far.abs() < 0.01).all())  # SciPy says NaN


def test_backward_formulas_in_cpus_order() -> None:
    # sigmoid_backward: (g * (1 - y)) * y, each step rounded for float16
    g = torch.randn(500, generator=torch.Generator().manual_seed(1)) * 8
    y = torch.randn(500, generator=torch.Generator().manual_seed(2)) * 8
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        _same(torch.ops.aten.sigmoid_backward, g.to(dtype), y.to(dtype))
    _same(torch.ops.aten.sigmoid_backward, _t(-0.0, torch.bfloat16), _t(2.1e25, torch.bfloat16))
    # _softmax_backward_data: y * (g - sum(g * y)), so an overflowing sum gives inf, not NaN
    _same(torch.ops.aten._softmax_backward_data, _t([-4.58727775693896], torch.float64),
          _t([1.7976931348623157e308], torch.float64), 0, torch.float64)


def test_addmm_ignores_the_product_when_alpha_is_zero() -> None:
    for dtype in (torch.float32, torch.float64, torch.complex64):
        _same(torch.addmm, _t([[-inf]], dtype), _t([[3e38]], dtype), _t([[6.6]], dtype),
              beta=0, alpha=0)


def test_addmv_ignores_the_product_when_alpha_is_zero() -> None:
    # float/double addmv is BLAS gemv: alpha = 0 returns beta * self without reading mat or vec;
    # Half/BFloat16/complex addmv is not BLAS and gives NaN, as mlu's plain product does
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.complex64):
        _same(torch.addmv, _t([4.9e31, -2.2e-13], dtype), _t([[3.0, 4.0], [-2.0, 3.0]], dtype),
              _t([-7.25, inf], dtype), beta=1, alpha=0)
        _same(torch.addmv, _t([nan, 2.0], dtype), _t([[-4.6e185, 1.0], [2.0, 3.0]], torch.float64)
              .to(dtype), _t([1.3e154, -2.0], torch.float64).to(dtype), beta=0, alpha=0)


def test_addmv_reads_half_beta_and_alpha_as_its_scalar_type() -> None:
    # CPU's addmv converts beta and alpha to scalar_t: in float16 alpha = 4.3e-13 is 0, and
    # 0 * -inf = NaN; beta = 1e-30 is 0, so self's NaN is not read
    mat, vec = _t([[2.0, -3.0, -inf], [1.0, 2.0, 3.0]], torch.float16), _t([-1.5, 4.5, 5.5],
                                                                          torch.float16)
    _same(torch.addmv, _t([-4.0, -0.0], torch.float16), mat, vec, beta=0, alpha=4.25e-13)
    _same(torch.addmv, _t([nan, 2.0], torch.float16), mat, vec, beta=1e-30, alpha=1)


def test_addcmul_is_fused_in_float32_and_float64_also_through_foreach() -> None:
    # CPU: fma(value * t1, t2, self), one rounding. float64 -inf + 1.6 * -1.4e302 * -3.3e253 is
    # -inf (not inf - inf = NaN); -1 + (1 + 2**-30)**2 keeps the product's low bits
    x = 1 + 2**-30
    cases = [(torch.float64, [-inf, -1.0], [-1.408e302, x], [-3.27e253, x], 1.61),
             (torch.float32, [inf, 2.0], [-1.84e19, 3.0], [1.82e31, 4.0], 1.5),
             (torch.float64, [-1.0, 2.0], [x, 1.0], [x, 1.0], 1.0)]
    for dtype, s, a, b, value in cases:
        _same(torch.addcmul, _t(s, dtype), _t(a, dtype), _t(b, dtype), value=value)
        _same(lambda *ts, v=value, d=dtype: torch._foreach_addcmul(
            [ts[0], ts[3]], [ts[1], ts[1]], [ts[2], ts[2]],
            torch.tensor([v, 1.0], dtype=d)),
            _t(s, dtype), _t(a, dtype), _t(b, dtype), _t([0.5, 0.5], dtype))


def test_addmm_reads_beta_in_its_compute_type() -> None:
    # beta = 1e-308 is 0 in float16's opmath float32: self's inf is then not read, as on CPU
    _same(torch.addmm, _t([[inf], [-0.04], [-0.5]], torch.float16),
          _t([[2.5, 2.5], [-0.0, -255.875], [-4.5, nan]], torch.float16),
          _t([[-1.9140625], [-65504.0]], torch.float16), beta=2.2250738585072014e-308, alpha=2)


# --- issue 9, forward fails of the 2026-11-30 full run (s4) -----------------------------------


def test_search_promotes_before_its_dtype_gate_and_puts_nan_boundaries_last() -> None:
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        _same(torch.bucketize, 0, _t([nan], dtype))  # ATen's bisection: 1, np.searchsorted 0
    _same(torch.searchsorted, _t([False], torch.bool), 0)  # bool with an int: compared as int64
    _same(torch.bucketize, _t([0], torch.int64), _t([True], torch.bool))
    _same(lambda b, v: torch.ops.aten.bucketize.Scalar_out(v, b, out=torch.empty(
        0, dtype=torch.int64, device=b.device)), _t([False], torch.bool), 0)


def test_nansum_skips_nan_in_bfloat16() -> None:  # np.nansum does not: not np.inexact
    _same(torch.nansum, _t(nan, torch.bfloat16))
    _same(torch.nanmean, _t([nan, -inf], torch.bfloat16))


def test_scatter_reduce_without_self_starts_from_infinity() -> None:
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for reduce, value in (("amin", inf), ("amax", -inf)):
            _same(torch.scatter_reduce, _t([3.0, 4.0], dtype), 0, _t([1, 1], torch.int64),
                  _t([value, value], dtype), reduce, include_self=False)


def test_scatter_add_keeps_bfloat16() -> None:  # a float32 sum rounded back to float16 was inf
    _same(torch.scatter_add, _t(-4.0, torch.bfloat16), -1, _t(0, torch.int64),
          _t(3.3895313892515355e38, torch.bfloat16))


def test_linspace_and_logspace_read_their_bounds_in_the_output_dtype() -> None:
    def lin(end: torch.Tensor, start: Any, steps: int, dtype: torch.dtype) -> torch.Tensor:
        return torch.ops.aten.linspace.Scalar_Tensor_out(start, end, steps, out=torch.empty(
            0, dtype=dtype, device=end.device))

    def log(end: torch.Tensor, start: Any, steps: int, base: float, dtype: torch.dtype
            ) -> torch.Tensor:
        return torch.ops.aten.logspace.Scalar_Tensor_out(start, end, steps, base, out=torch.empty(
            0, dtype=dtype, device=end.device))

    _same(lin, _t(11, torch.uint8), -1, 3, torch.uint8)  # -1 wraps to 255 first
    _same(lin, _t(-1799705082360311927, torch.int64), -1799705082360311927, 1, torch.int64)
    _same(lin, _t(0, torch.complex64), complex(inf, -2.0), 3, torch.complex64)  # by part
    _same(log, _t(7, torch.int64), 0.5, 2, 0.0, torch.int64)  # start 0: 0 ** 0 = 1
    _same(log, _t(-5.8125, torch.float32), False, 2, 0.41796875, torch.int8)
    _same(log, _t(-915222647, torch.int32), 0, 3, -1.0, torch.float32)  # end rounded: even
    _same(log, _t(complex(3, 0), torch.complex128), 0, 3, 0.0, torch.complex128)  # exp(y log 0)


def test_gelu_tanh_is_correctly_rounded_near_minus_one() -> None:
    _same(torch.ops.aten.gelu_backward, _t([-3.8e-9, -15990784.0], torch.bfloat16),
          _t(-5.1875, torch.bfloat16), approximate="tanh")


def test_zeta_at_q_infinity_is_nan_as_cephes_loop_gives() -> None:
    _same(torch.special.zeta, _t([4.0, 2.0, 1.0, 0.5], torch.float32), _t(inf, torch.float32))
    _same(torch.special.zeta, _t([inf, 1e30, 5.0], torch.float32), _t(3.4e38, torch.float32))


def test_sub_alpha_int64_min_negates_with_wraparound() -> None:
    _same(lambda x: x.sub_(0, alpha=-(2**63)), _t(7, torch.int64))
    _same(lambda x: torch.sub(x, 1, alpha=-(2**63)), _t([7], torch.int64))
    _same(lambda x: x.clone().sub_(1, alpha=-(2**63)), _t(0.0, torch.bfloat16))  # 0 - 2**63
    _same(lambda x: torch.rsub(x, 1.5, alpha=-(2**63)), _t([2.0], torch.float32))


def test_empty_random_and_geometric_skip_the_dtype_gate() -> None:
    _same(lambda x: x.random_(), torch.empty(0, dtype=torch.complex128))
    _same(lambda x: x.geometric_(0.5), torch.empty(0, 0, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="random_kernel_cpu"):
        torch.empty(2, dtype=torch.complex64, device="mlu").random_()


@pytest.mark.parametrize("n", [0, 3])
def test_random_from_to_checks_the_bounds_against_the_dtype(n: int) -> None:
    # ATen's check_from_to_in_range runs before random_ returns for an empty tensor
    for dtype, lo, hi, message in [
            (torch.bool, 2, 3, "from is out of bounds for bool"),
            (torch.bool, 0, 3, "to - 1 is out of bounds for bool"),
            (torch.uint8, -5, 3, "from is out of bounds for unsigned char"),
            (torch.uint16, -1, 3, "from is out of bounds for short unsigned int"),
            (torch.float16, 0, 70000, "to - 1 is out of bounds for c10::Half"),
            (torch.int8, 200, None, "from is out of bounds for signed char"),
            (torch.bool, 2, None, "from is out of bounds for bool")]:
        for device in ("cpu", "mlu"):
            with pytest.raises(RuntimeError, match=message):
                torch.empty(n, dtype=dtype, device=device).random_(lo, hi)
    out = torch.empty(0, dtype=torch.bool, device="mlu")
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        torch.ops.aten.random.from_out(torch.empty(0, dtype=torch.bool, device="mlu"), 0, 3,
                                       out=out)
    torch.empty(n, dtype=torch.bool, device="mlu").random_(0, 2)
    torch.empty(n, dtype=torch.int8, device="mlu").random_(-128, None)


def test_batch_norm_no_update_runs_on_mlu() -> None:
    # ATen's CompositeExplicitAutograd kernel calls batch_norm_cpu itself: without an mlu kernel
    # every call ended in "Expected tensor to have CPU Backend" (contiguous or not)
    x = _t([[6.19, -1.44, 2.81], [0.5, 3.25, -7.0]], torch.float32)
    w, rv = _t([2.19, -3.68, -7.34], torch.float32), _t([0.76, 2.16, 5.96], torch.float32)
    b = _t([-3.52], torch.float32).expand(3)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        _same(torch.ops.aten._batch_norm_no_update, x.to(dtype), w.to(dtype), b.to(dtype),
              w.to(dtype), rv.to(dtype), 0.0, 0.0625, exact=False)
        _same(torch.ops.aten._batch_norm_no_update, x.t().contiguous().t().to(dtype), None,
              b.to(dtype), w.to(dtype), rv.to(dtype), 0.1, 1e-5, exact=False)


def test_batch_norm_no_stats_out_of_nothing_leaves_its_outs_unchecked() -> None:
    def bn(x: torch.Tensor) -> Any:
        def e(dtype: torch.dtype) -> torch.Tensor:
            return torch.empty(0, dtype=dtype, device=x.device)
        return torch.ops.aten._native_batch_norm_legit.no_stats_out(
            x, None, None, False, 0.0, 0.0625, out=e(x.dtype), save_mean=e(torch.int64),
            save_invstd=e(torch.float32))

    _same(bn, torch.empty(0, 3, 4, dtype=torch.float64))


def test_div_reads_a_python_divisor_of_a_low_precision_tensor_in_float32() -> None:
    for dtype, big in ((torch.bfloat16, 3.4028234663852886e38), (torch.float16, 3.3895e38)):
        _same(lambda x, b=big: x.clone().div_(b), _t([-4.65625, -3.3895e38 if dtype ==
                                                      torch.bfloat16 else -6e4, inf, 3.0], dtype))


def test_fft_normalization_scales_each_part_on_its_own() -> None:
    # NumPy's complex / real divides as complexes: a NaN imaginary part spread into the real one
    _same(lambda x: torch.ops.aten._fft_c2c(x, [], 1, False),
          _t([complex(-1.25e-29, -1.2e9), complex(-1.2e-38, nan)], torch.complex64))
    _same(torch.fft.ihfft, _t([0.0, -1.0, inf], torch.float32))
    _same(torch.fft.ihfftn, _t([0.0, -1.0, inf, 2.0], torch.float64))


def test_elu_of_a_zero_takes_the_positive_branch() -> None:
    for alpha in (inf, -inf, nan, 1.0):
        _same(torch.ops.aten.elu, _t([0.0, -0.0, -5.0, 3.0], torch.float64), alpha, -0.6, 2e-16)


def test_stack_out_stacks_as_cpus_kernel() -> None:
    # ATen's composite _stack.out (what a backend without a kernel gets) concatenates instead
    for tensors, dim in (([_t(True, torch.bool)], 0), ([torch.ones(2, 3), torch.zeros(2, 3)], -1)):
        expected = torch.ops.aten._stack.out(tensors, dim, out=torch.empty(0, dtype=tensors[0].dtype))
        actual = torch.ops.aten._stack.out([t.to("mlu") for t in tensors], dim,
                                           out=torch.empty(0, dtype=tensors[0].dtype, device="mlu"))
        assert torch.equal(actual.cpu(), expected)


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_rowwise_prune_as_cpu(index_dtype: torch.dtype) -> None:
    weight = _t([[236, 1], [136, 2], [7, 3]], torch.uint8)
    mask = _t([True, False, True], torch.bool)
    _same(lambda w, m: torch.ops.aten._rowwise_prune(w, m, index_dtype), weight, mask)
    pruned, mapping = torch.ops.aten._rowwise_prune(weight.to("mlu"), mask.to("mlu"), index_dtype)
    assert pruned.device.type == "mlu" and mapping.device.type == "cpu"  # as ATen's at::empty


def test_fused_sgd_over_empty_parameters_reads_no_flag() -> None:
    def step(device: str) -> list[torch.Tensor]:
        ps = [torch.empty(2, 0, device=device) for _ in range(3)]
        torch.ops.aten._fused_sgd_(ps, [p.clone() for p in ps], [p.clone() for p in ps],
                                   weight_decay=0.1, momentum=0.5, lr=0.1, dampening=0.0,
                                   nesterov=True, maximize=True, is_first_step=True,
                                   grad_scale=torch.empty(2, 0, device=device),
                                   found_inf=torch.empty(2, 0, device=device))
        return ps

    assert [tuple(p.shape) for p in step("mlu")] == [tuple(p.shape) for p in step("cpu")]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_fused_sgd_fuses_its_multiply_adds_as_cpu(dtype: torch.dtype, n: int) -> None:
    """ATen's fused SGD contracts ``grad + buf * momentum`` (Nesterov), ``grad + param *
    weight_decay`` and ``param - grad * lr`` into fused multiply-adds (float16/bfloat16 in
    float32): a product that alone overflows leaves a finite sum, and lr = 0 keeps the
    parameter (unfused: -inf * 0 = NaN, the default run's 26 _fused_sgd failures)."""
    big = torch.finfo(dtype).max

    def step(device: str) -> list[torch.Tensor]:
        ps = [torch.full((n,), 1.5, dtype=dtype, device=device),
              torch.full((n,), big / 2, dtype=dtype, device=device)]
        gs = [torch.full((n,), big, dtype=dtype, device=device),
              torch.full((n,), -big, dtype=dtype, device=device)]
        bufs = [torch.zeros(n, dtype=dtype, device=device) for _ in ps]
        for first, lr in ((True, 0.0), (False, 0.0), (False, 2.0 ** -30)):
            torch.ops.aten._fused_sgd_(ps, [g.clone() for g in gs], bufs, weight_decay=1.5,
                                       momentum=-1.75, lr=lr, dampening=0.0, nesterov=True,
                                       maximize=False, is_first_step=first)
        return ps + bufs

    for c, m in zip(step("cpu"), step("mlu"), strict=True):
        torch.testing.assert_close(m.cpu(), c, equal_nan=True)


def test_fused_sgd_of_a_zero_dim_parameter_takes_the_scalar_loop() -> None:
    """A 0-dim parameter is all remainder: its buffer update fuses the buffer's product
    (``inf * 1 + -inf``: NaN), as one of 1..7 elements does; NumPy's 0-dim result was a scalar
    the remainder's assignment did not write through, so mlu gave the vectorized formula."""
    def step(device: str) -> list[torch.Tensor]:
        ts = [torch.tensor(x, device=device) for x in (-3.4028234663852886e38, 1.0, inf)]
        torch.ops.aten._fused_sgd_([ts[0]], [ts[1]], [ts[2]], weight_decay=1.0, momentum=1.0,
                                   lr=-1.0, dampening=-1.0, nesterov=False, maximize=False,
                                   is_first_step=False)
        return ts

    for c, m in zip(step("cpu"), step("mlu"), strict=True):
        torch.testing.assert_close(m.cpu(), c, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("op", ["_foreach_add_.List", "_foreach_sub.List"])
def test_foreach_alpha_is_fused_as_cpus_add(op: str, dtype: torch.dtype) -> None:
    """``self + alpha * other`` of float32/float64 lists with alpha != 1 rounds once, as the
    per-tensor add/sub CPU runs: ``inf + 1.45 * -max`` is ``inf``, not ``inf - inf``, and
    ``0.75 * max + 1.45 * 0.5 * max`` overflows only in the rounded product."""
    fn = getattr(torch.ops.aten, op.split(".")[0]).List
    big = torch.finfo(dtype).max

    def step(device: str) -> list[torch.Tensor]:
        xs = [torch.tensor([inf, 1.0], dtype=dtype, device=device),
              torch.tensor([-0.75 * big, -2.0], dtype=dtype, device=device)]
        ys = [torch.tensor([-big, 4.0], dtype=dtype, device=device),
              torch.tensor([big, 0.5], dtype=dtype, device=device)]
        out = fn(xs, ys, alpha=1.4453595070369927 if "add" in op else -1.4453595070369927)
        return xs if out is None else list(out)

    for c, m in zip(step("cpu"), step("mlu"), strict=True):
        torch.testing.assert_close(m.cpu(), c, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
@pytest.mark.parametrize("adamw", [False, True], ids=["adam", "adamw"])
def test_fused_adam_takes_cpus_vectorized_and_scalar_loops(dtype: torch.dtype, adamw: bool) -> None:
    """ATen's fused Adam runs a ``Vectorized`` loop over the first multiple of 8 float32 (4
    float64, 16 float16/bfloat16) elements and a scalar loop over the rest: the AMSGrad maximum
    propagates a NaN second moment in the first (``vec::maximum``) and keeps the old maximum in
    the second (``std::max``); each fuses another product of ``exp_avg_sq * beta2 + (1 - beta2)
    * grad * grad``. ``exp_avg`` moves by the two-sided fused lerp (an infinite gradient with
    ``1 - beta1 >= 0.5``: NaN) and the parameter by ``(step_size * exp_avg) / denom`` (the
    product overflows first). Found by the forward check once the lists came in one form."""
    n, big = 33, torch.finfo(dtype).max
    cases = [  # (grad, exp_avg, exp_avg_sq, max_exp_avg_sq, beta1, beta2, lr)
        (nan, 1.0, 0.5, 2.0, 0.9, 0.999, 0.1),     # NaN moments against a finite maximum
        (inf, -2.5, 0.5, 2.0, 0.0, 0.5, 0.1),      # lerp from the gradient's end: inf - inf
        (big / 2, -big / 2, 0.5, 2.0, 1.5, 1.0, 0.5),  # lerp weight -0.5, (1 - beta2) = 0
        (-1.0, 2.0, big, 0.5, 0.5, -1.39453125, 0.5),  # state * beta2 overflows alone
        (big / 4, 3.0, 0.5, 300.0, 0.0, 0.0, 1.5),  # step_size * exp_avg overflows first
    ]

    def step(device: str, case: tuple[float, ...]) -> list[torch.Tensor]:
        g, m, v, vmax, beta1, beta2, lr = case

        def full(x: float) -> torch.Tensor:
            return torch.full((n,), x, dtype=dtype, device=device)
        ts = [full(0.5), full(g), full(m), full(v), full(vmax)]
        ts[1][::3] = 1.0  # finite gradients between the special ones
        fn = torch.ops.aten._fused_adamw_ if adamw else torch.ops.aten._fused_adam_
        fn([ts[0]], [ts[1]], [ts[2]], [ts[3]], [ts[4]], [torch.tensor(1.0, device=device)],
           lr=lr, beta1=beta1, beta2=beta2, weight_decay=0.25, eps=1e-3, amsgrad=True,
           maximize=False)
        return ts

    for case in cases:
        for c, m in zip(step("cpu", case), step("mlu", case), strict=True):
            torch.testing.assert_close(m.cpu(), c, equal_nan=True,
                                       msg=lambda s, case=case: f"{case}: {s}")


@pytest.mark.parametrize("input_dtype", [torch.bfloat16, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("shape", [(), (1, 2, 2), (2, 0)], ids=str)
def test_softmax_backward_half_to_float_only_for_half(input_dtype: torch.dtype, shape: Any
                                                       ) -> None:
    for fn in (torch.ops.aten._log_softmax_backward_data, torch.ops.aten._softmax_backward_data):
        g, y = torch.linspace(-1, 1, math.prod(shape)).reshape(shape), torch.zeros(shape)
        try:
            expected = fn(g, y, 0, input_dtype)
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=str(exc)):
                fn(g.to("mlu"), y.to("mlu"), 0, input_dtype)
            continue
        actual = fn(g.to("mlu"), y.to("mlu"), 0, input_dtype).cpu()
        assert actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected)


def test_unique_dim_orders_bfloat16_by_value() -> None:
    _same(lambda x: torch.ops.aten.unique_dim(x, 0, False, True, True),
          _t([4.5, 1.5, -2.0, 4.5], torch.bfloat16))


@pytest.mark.parametrize("dtype", [None, torch.float16, torch.float32, torch.complex64], ids=str)
@pytest.mark.parametrize("ord", [0, -1, 0.5, 2, inf])
def test_foreach_powsum_takes_the_modulus_as_cpus_kernel(dtype: Any, ord: Any) -> None:
    # ATen's composite (what a backend without the kernel gets) drops the imaginary part
    xs = [_t([complex(2.5, 2.0), complex(3, -1e5), 0j], torch.complex64),
          _t([complex(nan, -1.8e19), complex(2.5, 2.0)], torch.complex128),
          _t([1.5, -2.25], torch.float16), _t([[0.5, -3.0], [1e-3, 7.0]], torch.float32)]
    _same(lambda *ts: torch.ops.aten._foreach_powsum.Scalar(list(ts), ord, dtype=dtype), *xs,
          exact=False)


@pytest.mark.parametrize("dtype", [None, torch.float16, torch.float32, torch.float64,
                                   torch.complex128], ids=str)
@pytest.mark.parametrize("shape,dim", [((3,), None), ((2, 3), [1]), ((3, 1), [1]), ((), None),
                                       ((1, 1), [0, 1])], ids=str)
def test_linalg_powsum_of_complex_as_cpus_kernel(dtype: Any, shape: Any, dim: Any) -> None:
    """mlu had no linalg__powsum: ATen's composite casts a complex input to a real dtype= first
    (complex128[2], ord=-1, dtype=float32: 1.5, CPU 0.54). CPU takes the modulus where it
    reduces, and only casts where nothing is reduced (one element, size-1 dims)."""
    values = torch.tensor([complex(-1, 3), complex(2, 4), complex(0.5, -1e5), 2.5j, -3, 1e-3j],
                          dtype=torch.complex128)
    x = values[: math.prod(shape)].reshape(shape)
    for ord in (-1, 0, 0.5, 2):
        _same(lambda t, o=ord: torch.ops.aten.linalg__powsum(t, o, dim, True, dtype=dtype), x,
              exact=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64],
                         ids=str)
def test_powsum_of_int_min_converts_before_the_modulus(dtype: Any) -> None:
    """CPU converts to dtype= before |x|: int64's minimum is -inf in float16, so |x| is inf;
    NumPy's abs of it wraps to itself (mlu's _foreach_powsum gave -inf, NaN for ord=0.5)."""
    x = _t([-(2**63), -5, 4], torch.int64)
    for ord in (1, 0.5, 2):
        _same(lambda t, o=ord: torch.ops.aten.linalg__powsum(t, o, dtype=dtype), x, exact=False)
        _same(lambda t, o=ord: torch.ops.aten._foreach_powsum.Scalar([t, t[1:]], o, dtype), x,
              exact=False)


@pytest.mark.parametrize("x,dim,dtype", [
    (_t([[1, 2]], torch.int32), None, None),                      # int64: no kernel
    (_t([[1, 2]], torch.uint8), [1], torch.int32),                # no Int kernel
    (_t([[1 + 1j, 2]], torch.complex64), [1], torch.int32),       # no complex counterpart
    (_t([[1 + 1j], [2]], torch.complex64), [1], torch.int32),     # cast only: no Int kernel
    (_t([[1, 2]], torch.int32)[:0], [1], None),                   # empty: int64 zeros
    (_t([[1 + 1j, 2]], torch.complex64)[:0], [0], torch.bool),    # empty, cast only: zeros
    (_t([[1, 2]], torch.float32), [0, 0], None),                  # dim twice
    (_t([[1 + 1j, 2]], torch.complex64), [2], torch.int32),       # dim first
], ids=["int64", "int32", "complex-int32", "cast-only-int32", "empty", "empty-cast-only",
        "dim-twice", "dim-range"])
def test_linalg_powsum_refuses_as_cpu(x: torch.Tensor, dim: Any, dtype: Any) -> None:
    def call(t: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.linalg__powsum(t, 2, dim, dtype=dtype)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _outcome(lambda: call(x))
        actual = _outcome(lambda: call(x.to("mlu")))
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor) and actual.dtype == expected.dtype
        assert torch.equal(actual, expected)
    else:
        assert actual is expected


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16, torch.float32,
                                       torch.float64, torch.complex64], ids=str)
@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32, torch.complex64,
                                   torch.complex128], ids=str)
def test_logsumexp_out_sums_in_outs_dtype(dtype: torch.dtype, out_dtype: torch.dtype) -> None:
    """logsumexp.out is sum_out(out, exp(x - m)), then out.log_().add_(m): a complex input into
    a real out= sums only the real parts (a negative sum: NaN), and each step rounds to out='s
    dtype (mlu took the complex log's real part, and rounded once, to the input's dtype)."""
    x = torch.tensor([[complex(0.5, 3), complex(-1, 2.5), complex(2, -2)],
                      [complex(1, 0.1), complex(-3, 1), complex(0.25, -0.5)]])
    x = (x if dtype.is_complex else x.real * 3).to(dtype)
    _same(lambda t: torch.logsumexp(t, [1], out=torch.empty(0, dtype=out_dtype,
                                                             device=t.device)), x, exact=False)


@pytest.mark.parametrize("out_dtype", [torch.bool, torch.uint8, torch.int32, torch.int64], ids=str)
def test_logsumexp_out_refuses_an_integral_out(out_dtype: torch.dtype) -> None:
    x = _t([1.0, 2.0], torch.float32)
    for device in ("cpu", "mlu"):
        with pytest.raises(RuntimeError, match="Expected floating point type for result tensor"):
            torch.logsumexp(x.to(device), [0], out=torch.empty(0, dtype=out_dtype, device=device))


@pytest.mark.parametrize("shape", [(), (1,), (2, 3)], ids=str)
def test_mode_out_warns_on_resizing_as_cpu(shape: tuple[int, ...]) -> None:
    """A 0-dim self takes ATen's trivial path (resize_ of both outs, no warning); any other
    self resizes through resize_output, which warns for a non-empty out= of the wrong shape."""
    seen = {}
    for device in ("cpu", "mlu"):
        x = torch.arange(math.prod(shape)).reshape(shape).to(device)
        values = torch.empty(5, dtype=torch.int64, device=device)
        indices = torch.empty(0, dtype=torch.int64, device=device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.mode(x, 0, out=(values, indices))
        seen[device] = (len(caught), tuple(values.shape), tuple(indices.shape))
    assert seen["mlu"] == seen["cpu"]


@pytest.mark.parametrize("kind", ["t", "u", "v", "w"])
@pytest.mark.parametrize("shifted", [False, True], ids=["plain", "shifted"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_chebyshev_as_atens_forward(kind: str, shifted: bool, dtype: torch.dtype) -> None:
    """ATen's early returns (degree 0 is 1 even at x = +-inf, |x| = 1), its trigonometric form
    for |x| < 1 above degree 6 or 8, and its fused recurrence, whose overflow ends in
    inf - inf = NaN (mlu took SciPy's closed forms: inf, NaN at degree 0 for x = inf, 0.0
    for V at (0.5, 1000)); the shifted ones switch to the trigonometric form above degree 6."""
    name = ("shifted_" if shifted else "") + f"chebyshev_polynomial_{kind}"
    xs = [0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e3, -1e20, 3e38, inf, -inf, 0.999, 1.0001, 0.3,
          1.1920928955078125e-07]
    ns = [-1, 0, 1, 2, 3, 6, 7, 8, 8.5, 9, 10, 50, 200, 1000, 2.7, nan]
    x = _t([a for a in xs for _ in ns], dtype)
    n = _t([b for _ in xs for b in ns], dtype)
    _same(getattr(torch.special, name), x, n, exact=False)


def test_isin_of_bfloat16_with_a_nan_among_the_test_elements() -> None:
    """np.isin sorts longer inputs, and NumPy orders ml_dtypes' bfloat16 by its bits: a NaN
    among the test elements hid a 0 (the dtypes check's larger sweeps found it)."""
    test = _t([nan, 0.0, 1.0, -0.0, inf] * 4, torch.bfloat16)
    _same(lambda t: torch.isin(0, t), test)
    _same(lambda t: torch.isin(t, t), test)
    _same(lambda t: torch.isin(t, 1.0), test)


def _outcome(fn: Callable[[], torch.Tensor]) -> Any:
    """A call's result on CPU (values) or the type of the exception it raised."""
    try:
        return fn().cpu()
    except Exception as exc:  # noqa: BLE001 - the exception type is the outcome compared
        return type(exc)


@pytest.mark.parametrize("shape,dim,index", [((0, 0), 0, [3]), ((2, 0), 0, [3]), ((0, 1), 0, [3]),
                                             ((1, 0), 1, [3]), ((0,), 0, [0]), ((0,), 0, [])],
                         ids=str)
def test_index_ops_on_empty_self_check_positions_as_cpu(shape: Any, dim: int, index: Any) -> None:
    """ATen checks positions per element written: on an empty self nothing is checked (index_add
    of more than one dim; index_copy and index_fill unless their restrided view has elements)."""
    idx = _t(index, torch.int64)
    src_shape = [len(index) if k == dim else n for k, n in enumerate(shape)]
    for fn in (lambda s, i, src: torch.index_add(s, dim, i, src),
               lambda s, i, src: torch.index_copy(s, dim, i, src),
               lambda s, i, src: s.index_fill(dim, i, 1.0)):
        def on(device: str, fn: Any = fn) -> Any:
            return _outcome(lambda: fn(torch.zeros(shape, device=device), idx.to(device),
                                       torch.ones(src_shape, device=device)))
        expected, actual = on("cpu"), on("mlu")
        if isinstance(expected, type):
            assert actual is expected, (shape, dim, index, expected, actual)
        else:
            assert isinstance(actual, torch.Tensor) and torch.equal(actual, expected)


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.float32], ids=str)
def test_index_reduce_takes_cpus_dtypes_per_reduction(dtype: torch.dtype) -> None:
    s, src = _t([[1, 2], [3, 0]], dtype), _t([[2, 1], [1, 1], [0, 3]], dtype)
    idx = _t([0, 1, 0], torch.int64)
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            def on(device: str, reduce: str = reduce, include_self: bool = include_self) -> Any:
                return _outcome(lambda: torch.index_reduce(
                    s.to(device), 0, idx.to(device), src.to(device), reduce,
                    include_self=include_self))
            expected, actual = on("cpu"), on("mlu")
            if isinstance(expected, type):
                assert actual is expected, (reduce, include_self, expected, actual)
            else:
                assert isinstance(actual, torch.Tensor) and torch.equal(actual, expected)


def test_index_add_of_a_0_dim_source_takes_one_index() -> None:
    for k in (0, 1, 2):
        def on(device: str, k: int = k) -> Any:
            out = torch.empty(0, device=device)
            return _outcome(lambda: torch.ops.aten.index_add.out(
                torch.tensor(1.0, device=device), 0, torch.zeros(k, dtype=torch.int64,
                                                                 device=device),
                torch.tensor(2.0, device=device), out=out))
        expected, actual = on("cpu"), on("mlu")
        assert (actual is expected) if isinstance(expected, type) else torch.equal(actual,
                                                                                   expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_mse_loss_backward_rounds_each_step_in_a_half_type(dtype: torch.dtype) -> None:
    # 2 * (max - 0) overflows float16 to inf before the zero grad makes it NaN (issue 9)
    big = torch.finfo(dtype).max
    x = _t([big, big, -big, 3.0, 1e-3] * 4, dtype)
    t = _t([0.0, -big, 0.0, 0.1, 7.0] * 4, dtype)
    g = _t([0.0, 1.0, 0.5, 3.3, -2.1] * 4, dtype)
    for reduction in (0, 1, 2):
        _same(torch.ops.aten.mse_loss_backward, g, x, t, reduction)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int32, torch.int64, torch.float32], ids=str)
def test_isin_takes_a_uint64_scalar(dtype: torch.dtype) -> None:
    # an int in [2**63, 2**64) is c10's uint64 Scalar: it wraps into an integer dtype (issue 9)
    el = torch.tensor([-(2**63), -1, 0, 3, 255, 2**63 - 1]).to(dtype)
    for value in (2**63, 2**63 + 3, 2**64 - 1):
        for invert in (False, True):
            _same(lambda e, v=value, i=invert: torch.ops.aten.isin.Tensor_Scalar_out(
                e, v, invert=i, out=torch.empty(0, dtype=torch.bool, device=e.device)), el)


@pytest.mark.parametrize("out_dtype", [torch.bool, torch.int64, torch.float32], ids=str)
def test_pow_of_base_one_fills_any_out_dtype(out_dtype: torch.dtype) -> None:
    # ATen's pow_Scalar_out fills ones before any result-type cast check (issue 9); True and
    # other bases keep pow.Tensor_Tensor_out's check
    x = _t([0.5, nan], torch.float64)
    for base in (1, 1.0, 1 + 0j, True, 2.0):
        def on(device: str, base: Any = base) -> Any:
            return _outcome(lambda: torch.ops.aten.pow.Scalar_out(
                base, x.to(device), out=torch.empty(0, dtype=out_dtype, device=device)))
        expected, actual = on("cpu"), on("mlu")
        if isinstance(expected, type):
            assert actual is expected, (base, expected, actual)
        else:
            assert isinstance(actual, torch.Tensor)
            torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_prod_of_a_half_type_rounds_each_product(dtype: torch.dtype) -> None:
    # CPU multiplies in the half type itself: 1e-4 * 1e-4 underflows float16 to 0, and 0 * inf
    # is NaN where a float32 accumulator gives inf (issue 9); the last row's bfloat16 product
    # is 3.796875 rounded step by step, 3.8125 rounded once
    tiny, big = (1e-4, 1e4) if dtype == torch.float16 else (1e-30, 1e30)
    x = _t([[tiny, tiny, inf, 3.0], [big, big, 0.5, tiny], [1.9921875, 2.796875, 0.765625, 0.89453125]], dtype)
    _same(torch.prod, x)
    for dim in (0, 1):
        _same(torch.prod, x, dim)
    _same(torch.prod, x.float(), dtype=dtype)


@pytest.mark.parametrize("n", [4, 17, 40], ids=str)
def test_unique_dim_orders_nan_rows_as_cpus_std_sort(n: int) -> None:
    # CPU's row comparator with a NaN is no strict weak ordering: its std::sort leaves
    # [nan, 1, nan, 0] as is (issue 9); introsort past 16 rows
    g = torch.Generator().manual_seed(n)
    x = torch.randint(-3, 4, (n, 2), generator=g).double()
    x[torch.rand(n, 2, generator=g) < 0.3] = nan
    _same(lambda t: torch.ops.aten.unique_dim(t, 0, True, True, True), x)
    _same(lambda t: torch.ops.aten.unique_dim(t, 0, True, True, True), _t([nan, 1.0, nan, 0.0],
                                                                         torch.float16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_add_and_sub_with_alpha_fuse_the_multiply_as_cpu(dtype: torch.dtype) -> None:
    """CPU forms a + alpha * b with one rounding (fmadd): the product alone may overflow, and a
    sum that cancels it keeps the product's low bits (two roundings: nan, or 4.8828e-4 where
    CPU has 4.8834e-4)."""
    x = 1 + 2**-12
    a, b = _t([-1.0, -inf, 3.0], dtype), _t([x, -3.4e38 if dtype == torch.float32 else -1.7e308,
                                             0.5], dtype)
    for fn, alpha in ((torch.add, x), (torch.sub, -x), (torch.sub, 2.5), (torch.rsub, -x)):
        _same(fn, a, b, alpha=alpha)
        _same(fn, a, b[2], alpha=alpha)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_pow_half_exponents_as_cpus_kernels(dtype: torch.dtype, exponent: float) -> None:
    """pow(x, +-0.5) is sqrt / 1 / sqrt on CPU (-0.0 ** -0.5 is -inf, -inf ** 0.5 is nan),
    except for float16, whose loop calls pow itself (-inf ** 0.5 is inf); 0-dim too. The finite
    values have exact roots: the subject is the special values, and CPU's float64 sqrt is not
    correctly rounded on every machine (sqrt(2.0) is 0x1.6a09e667f3bccp+0, one ulp low, on an
    AVX512 Xeon whatever ATEN_CPU_CAPABILITY says), which no backend owes."""
    values = [-inf, inf, -0.0, 0.0, -4.0, 4.0, nan, 9.0]
    _same(torch.pow, _t(values, dtype), exponent)
    _same(torch.pow, _t(values, dtype).reshape(2, 4).t(), exponent)
    for v in values:
        _same(torch.pow, _t(v, dtype), exponent)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.complex64])
def test_cumsum_and_cumprod_run_in_cpus_accumulator_type(dtype: torch.dtype) -> None:
    """CPU's cumulative kernels keep the running value in acc_type (double for float32,
    complex<double> for complex64, float for the half types): 3e38 * 10 * 1e-10 is 3e29 there,
    not inf; cumprod.out of the default run (float32[4, 3] near 3.4e38) came back finite."""
    big = 6e4 if dtype == torch.float16 else 3e38
    x = _t([[big, 10.0, 1e-10, 2.0], [big, big, -big, 1.0]], dtype)
    for fn in (torch.cumprod, torch.cumsum):
        _same(fn, x, 1)
        _same(fn, x.t(), 0)
    _same(lambda t: torch.cumprod(t, 1, out=torch.empty(0, device=t.device)),
          _t([[3e38 + 1j, 10.0, 1e-10]], torch.complex64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("divisor", [1.401298464324817e-45, 3.4e38, 1e-8, 0.1])
def test_floor_and_trunc_division_read_a_python_divisor_in_float32(dtype: torch.dtype,
                                                                    divisor: float) -> None:
    """CPU divides a float16/bfloat16 tensor by a Python number held in float32 (opmath), not
    rounded to the tensor's dtype: bfloat16 -9.2e-41 // 1.4e-45 is -65536 and -0.0 // 1.4e-45
    is -0.0 (a divisor rounded to 0 gives -inf and NaN); the default run's floor_divide.Scalar_out."""
    x = _t([-9.183549615799121e-41, -0.0, 3.0, 1e-3, -2.5, inf], dtype)
    _same(torch.floor_divide, x, divisor)
    _same(torch.floor_divide, x[1], divisor)
    for mode in ("floor", "trunc"):
        _same(torch.div, x, divisor, rounding_mode=mode)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_histc_rounds_its_range_to_the_input_dtype(dtype: torch.dtype) -> None:
    """histc's bin edges are linspace(min, max) in the input's dtype: min=3.6e-121 is 0.0 in
    float32 and narrower types, so -0.0 falls in the histogram there (not in float64); the
    default run's histc.out(float32[2, 2], bins=1, min=3.57e-121, max=0.5)."""
    x = _t([[-1.0, -0.0], [3.03, 5.22]], dtype)
    for bins, lo, hi in ((1, 3.5734053203170503e-121, 0.5), (3, 1e-50, 4.0), (2, -3.0, 1e-30)):
        _same(torch.histc, x, bins, lo, hi)


def test_a_complex_result_stored_into_bool_tests_both_parts() -> None:
    """c10 converts a complex value to bool as value != 0: complex(-0.0, nan) and -2.5j are
    true, not their real part's false (default run: _fft_c2c.out and
    linspace.Tensor_Scalar_out into bool out=)."""
    z = _t([complex(-0.0, nan), complex(-7.0, 3.2)], torch.complex64)
    _same(lambda t: torch.ops.aten._fft_c2c.out(t, [], 0, False,
                                                out=torch.empty(0, dtype=torch.bool,
                                                                device=t.device)), z)
    for v in (complex(-0.0, -2.5), complex(0.0, 0.0), complex(3.0, 0.0)):
        _same(lambda t: torch.linspace(t, 0, 1, out=torch.empty(0, dtype=torch.bool,
                                                                 device=t.device)),
              _t(v, torch.complex128))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pow_of_a_broadcast_tensor_exponent_calls_pow_per_element(dtype: torch.dtype) -> None:
    """A 0-dim (or broadcast) tensor exponent 0.5: CPU's pow_tensor_tensor loop calls
    std::pow, so -inf ** 0.5 is inf and -0.0 ** 0.5 is 0.0 (a Python exponent takes sqrt
    instead); the default run's float_power.Tensor_Tensor_out(float64[], float64[])."""
    a = _t([[-inf, -0.0, 4.0], [inf, nan, -2.0]], dtype)
    half = _t(0.5, dtype)
    _same(torch.pow, a, half)
    _same(torch.pow, a.t(), _t([0.5, 0.5], dtype))
    _same(torch.pow, a[0, 0], half)
    _same(torch.float_power, a[0, 0], half)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_only_a_trailing_python_number_keeps_float32_in_half_arithmetic(dtype: torch.dtype
                                                                         ) -> None:
    """mul/div/floor_divide read a Python-number second operand in float32 (ATen's
    iter.is_scalar(2)), a leading one rounded to the tensor's dtype: x * 1.2e-27 keeps -inf
    (cumulative_trapezoid.dx's (left + right) * dx / 2 of the default run), 1.2e-27 * x is
    NaN in float16, and 1.4e-45 / x divides 0 by it."""
    x = _t([-inf, 3.0, -9.183549615799121e-41, 0.0], dtype)
    for s in (1.2e-27, 1.401298464324817e-45):
        _same(torch.mul, x, s)
        _same(lambda t, _s=s: _s * t, x)
        _same(lambda t, _s=s: torch.div(_s, t), x)
        _same(lambda t, _s=s: torch.floor_divide(_s, t), x)
    _same(torch.cumulative_trapezoid, _t([[nan, -inf], [3.42, -inf]], dtype),
          dx=2.4445486640847067e-27, dim=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_addcmul_fuses_the_product_as_cpu(dtype: torch.dtype) -> None:
    """CPU computes addcmul as fma(value * t1, t2, self) (float32 opmath for the half types):
    inf + 814741 * -1.35e33 stays inf and -1 + (1 + 2**-12)**2 keeps the product's low bits;
    the default run's addcmul(float32[], float32[3, 3], float32[], value=1)."""
    big = 6e4 if dtype == torch.float16 else 3.3e38
    s, t2 = _t(inf, dtype), _t(-big, dtype)
    t1 = _t([[814741.0 if dtype != torch.float16 else 600.0, -3.0, 1.0], [-inf, 0.5, 2.0]], dtype)
    _same(torch.addcmul, s, t1, t2)
    _same(torch.addcmul, -s, t1, t2, value=2)
    x = _t([1 + 2**-12] * 3, dtype)
    _same(torch.addcmul, _t(-1.0, dtype), x, x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_in_place_mul_by_a_python_number_rounds_it_to_a_half_self(dtype: torch.dtype) -> None:
    """ATen's mul_.Scalar is mul_out(self, wrapped number, self): the number leads, so it is
    rounded to self's float16/bfloat16 dtype (1.85e28 -> inf in float16: 0 * inf = NaN), as
    fft_rfftfreq(1, d=5.4e-29, dtype=float16) shows; mul.Scalar keeps it in float32 (0)."""
    x = _t([0.0, 1.0, -3.0, 0.1], dtype)
    for s in (1.85e28, 1.0003, 1e-30):
        _same(lambda t, _s=s: torch.ops.aten.mul_.Scalar(t.clone(), _s), x)
        _same(lambda t, _s=s: torch.ops.aten.mul.Scalar(t, _s), x)
    for fn in (torch.fft.rfftfreq, torch.fft.fftfreq):
        for n in (1, 2, 5):
            expected, actual = (fn(n, d=5.403320847820426e-29, dtype=dtype, device=device)
                                for device in ("cpu", "mlu"))
            torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_logaddexp_keeps_atens_branch(dtype: torch.dtype) -> None:
    """ATen's complex logaddexp/logcumsumexp is max + log1p(exp(min - max)): its imaginary
    part is max's plus an angle, not wrapped into (-pi, pi] as NumPy's log(exp(x) + exp(y)),
    2 pi apart where max's is near +-pi (the autograd run's logaddexp(complex64[],
    complex64[]): CPU 2.8845 - 3.6834j); NaN in either part, equal infinite real parts too."""
    a = _t([2.88 - 3.1j, 1.0 + 3.1j, complex(nan, 0.0), complex(inf, 1.0), complex(-inf, 2.0),
            0.5 + 0.5j, complex(inf, inf)], dtype)
    b = _t([-1.0 - 2.9j, 0.9 + 3.0j, 1.0 + 0.0j, complex(inf, -2.0), complex(-inf, 1.0),
            0.5 - 0.5j, 1.0 + 0.0j], dtype)
    _same(torch.logaddexp, a, b, exact=False)
    grid = torch.stack([a, b, a.flip(0)])
    _same(torch.logcumsumexp, grid, 0, exact=False)
    _same(torch.logcumsumexp, grid, 1, exact=False)


def test_float32_erfcx_of_a_negative_x_rounds_x_squared_as_aten() -> None:
    """ATen's float32 erfcx(x < 0) is 2 exp(x^2) - erfcx(-x) with x^2 rounded to float32, an
    error exp amplifies past torch.testing's rtol (the autograd run's special_erfcx(float32[2,
    2]): -7.7356 gives 1.9440906e26 on CPU, 1.9440878e26 exactly); ATen's cut-offs -6.1 and
    -26.7 too. Away from them mlu's last ulp is SciPy's."""
    x = torch.cat([torch.linspace(-27.0, 3.0, 3001), _t([-7.735558032989502, -26.7, -6.1,
                                                         -1e-30, 0.0, inf, -inf, nan], torch.float32)])
    _same(torch.special.erfcx, x, exact=False)


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_igamma_takes_atens_boundary_cases_before_nan(fn: Callable[..., Any],
                                                     dtype: torch.dtype) -> None:
    """ATen's calc_igamma/calc_igammac test a < 0 or x < 0, a = 0, x = 0, an infinite a, an
    infinite x in that order before anything else: igammac(NaN, -0.0) is 1 (the in-place run's
    igammac_(float32[3, 3]) with a NaN self), igamma(inf, NaN) 0; SciPy returns NaN for both."""
    vals = [nan, 0.0, -0.0, 1.0, -1.0, inf, -inf, 0.5, 3.0, 200.0]
    a = _t([v for v in vals for _ in vals], dtype)
    x = _t(vals * len(vals), dtype)
    _same(fn, a, x, exact=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16],
                         ids=str)
def test_polygamma_follows_atens_trigamma_series_and_zeta(dtype: torch.dtype) -> None:
    """polygamma(1, x) is ATen's calc_trigamma, finite at the negative-integer poles (pi x is
    not a multiple of pi in floating point; the in-place run's polygamma_(bfloat16[2], 1) at
    -1.02e10: CPU 82.5, SciPy inf) and NaN at -inf; polygamma(n >= 2, +inf) is NaN, as zeta(n + 1,
    inf) in ATen's Cephes loop (polygamma_(bfloat16[2, 2], 2) with self inf: SciPy -0)."""
    x = torch.cat([torch.linspace(-12.0, 12.0, 2401),
                   _t([-1.02e10, -3.0, 0.0, -0.0, inf, -inf, nan, 1e-30, -3e38], torch.float32)])
    for n in (1, 2, 3):
        _same(lambda t, _n=n: torch.polygamma(_n, t), x.to(dtype), exact=False)
        _same(lambda t, _n=n: t.clone().polygamma_(_n), x.to(dtype), exact=False)
