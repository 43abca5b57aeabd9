"""Arbitration of value disagreements, and elements whose value the contract leaves open.

Each test calls the comparison (``compare_outputs``, as the checks do) with a hand-made
"backend" answer: the call computed in float64 and rounded (a backend that is right where CPU's
float32 arithmetic is not), or a wrong one. Arbitration excuses the first (``cpu_imprecise``,
counted), never the second: a backend farther from float64 than CPU, or off the float64 answer,
or dropping a NaN, still fails; float64 results and ops whose dtype is the contract are not
arbitrated. Element-level unspecified values (``value_unspecified``): NaN against an infinity
where CPU's own answer changes with the operands' layout.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
import torch
from compare_calls import make_call as _call
from compare_calls import make_context

from conformance.compare.arbitration import (
    classify,
    distance,
    precise_call,
    rounded_reference,
)
from conformance.compare.context import Context
from conformance.compare.outputs import compare_outputs
from conformance.compare.values import assert_values
from conformance.core.call import Call
from conformance.core.verdicts import CheckFailure
from conformance.engine.ladder import climb
from opdb.errors import InputError
from opdb.opdata import load_tolerances
from opdb.outcomes import CPU_IMPRECISE, CPU_UNSTABLE, INFO_CATEGORIES, VALUE_UNSPECIFIED

INF, NAN = math.inf, math.nan


def _ctx(call: Call, tolerance_fn: Any = None) -> Context:
    return make_context(call, tolerance_fn)


def _float64_answer(call: Call) -> Any:
    """What a backend computing in float64 and rounding once to CPU's dtypes returns."""
    wide = precise_call(call)
    assert wide is not None
    out, cpu = wide.run("cpu"), call.run("cpu")
    if isinstance(out, tuple):
        return tuple(t.to(c.dtype) for t, c in zip(out, cpu, strict=True))
    return out.to(cpu.dtype)


def _judge(call: Call, actual: Any, tolerance_fn: Any = None) -> Context:
    """compare_outputs of ``actual`` against CPU's answer; the context, for its notes."""
    ctx = _ctx(call, tolerance_fn)
    compare_outputs(ctx, call, call.run("cpu"), actual, values=True)
    return ctx


LAYER_NORM = dict(input=torch.tensor([[-4.2e-45], [-4.087e20]]), normalized_shape=[1],
                  weight=None, bias=None, eps=0.0625)


def test_layer_norm_whose_float32_variance_overflows_passes_as_cpu_imprecise():
    """The issue's first example: CPU's float32 variance of -4.087e20 overflows (NaN), float64
    says out 0, rstd 4."""
    call = _call("native_layer_norm", **LAYER_NORM)
    cpu = call.run("cpu")
    assert math.isnan(cpu[0][1, 0]) and math.isnan(cpu[2][1, 0])
    right = _float64_answer(call)
    assert right[0][1, 0] == 0 and right[2][1, 0] == 4
    ctx = _judge(call, right)
    assert {cat for cat, _ in ctx.infos} == {CPU_IMPRECISE}
    assert ctx.info_elements[CPU_IMPRECISE] == 2  # out[0] and out[2], one element each
    line = next(line for _, line in ctx.infos)
    assert "as close as CPU to the call computed in float64" in line and "CPU nan" in line
    verdict, category, message = climb(ctx, "cpu")
    assert (verdict, category) == ("pass", CPU_IMPRECISE)
    assert "cpu_imprecise: 2 element(s)" in message


def test_an_answer_off_the_float64_one_still_fails_even_where_cpu_is_nan():
    """rstd 3 where float64 says 4 and CPU NaN: nearer than NaN, but not the answer."""
    call = _call("native_layer_norm", **LAYER_NORM)
    out, mean, rstd = _float64_answer(call)
    with pytest.raises(CheckFailure) as info:
        _judge(call, (out, mean, torch.where(rstd == 4, 3.0, rstd)))
    assert info.value.category == "value" and "out[2]" in info.value.message


def test_only_the_unexcused_elements_fail_and_the_message_shows_them():
    """out[0] right where CPU overflows (excused), but wrong in the other row: the failure
    counts and shows that row alone."""
    call = _call("native_layer_norm", **LAYER_NORM)
    out, mean, rstd = _float64_answer(call)
    wrong = out.clone()
    wrong[0, 0] = 0.5
    with pytest.raises(CheckFailure) as info:
        _judge(call, (wrong, mean, rstd))
    assert "Mismatched elements: 1 / 2" in info.value.message
    assert "index (0, 0)" in info.value.message


def test_a_wrong_answer_where_cpu_is_the_closer_side_fails():
    """float32 add is correctly rounded on CPU (its error is 0): a backend 1 ulp off is
    farther from the float64 answer and fails."""
    x, y = torch.tensor([1.0, 3.0]), torch.tensor([1e-8, 7.0])
    call = _call("add.Tensor", self=x, other=y)
    off = torch.nextafter(call.run("cpu"), torch.tensor(INF))
    with pytest.raises(CheckFailure):
        _judge(call, off)


def test_closer_is_required_not_only_near():
    """Both within the tolerance of the float64 answer but beyond it of each other: a backend
    farther from the reference than CPU is not excused; one as near as CPU is."""
    call = _call("native_layer_norm", **LAYER_NORM)
    ctx = _ctx(call)
    ref = torch.tensor([1.0, 1.0])
    tol = 1e-5 + 1.3e-6  # float32's atol + rtol at 1.0
    found = classify(ctx, call, ref + 0.7 * tol, ref - 0.4 * tol, reorderings=[],
                     reference=ref)
    assert found is not None and bool(found.remaining.all())
    found = classify(ctx, call, ref + 0.7 * tol, ref - 0.7 * tol, reorderings=[],
                     reference=ref)
    assert found is not None and bool(found.imprecise.all())


def test_a_dropped_nan_still_fails():
    """A NaN input's NaN is CPU's and float64's: a backend returning a number there fails
    (the NaN is infinitely far from it)."""
    x = torch.tensor([[NAN, 1.0], [2.0, 3.0]])
    call = _call("native_layer_norm", input=x, normalized_shape=[2], weight=None, bias=None,
                 eps=1e-5)
    out, mean, rstd = _float64_answer(call)
    assert math.isnan(out[0, 0])
    with pytest.raises(CheckFailure):
        _judge(call, (torch.nan_to_num(out), mean, rstd))
    ctx = _ctx(call)
    found = classify(ctx, call, torch.tensor([0.0]), torch.tensor([NAN]), reorderings=[],
                     reference=torch.tensor([NAN]))
    assert found is not None and bool(found.remaining.all())


def test_float64_results_are_not_arbitrated():
    """The same overflow in float64 (-1.7e308): CPU NaN, the exact answer 0 and 4, but no wider
    reference exists on CPU: the backend giving the exact answer still fails."""
    x = torch.tensor([[-4.2e-45], [-1.7e308]], dtype=torch.float64)
    call = _call("native_layer_norm", input=x, normalized_shape=[1], weight=None, bias=None,
                 eps=0.0625)
    out, mean, rstd = call.run("cpu")
    assert math.isnan(out[1, 0])
    with pytest.raises(CheckFailure):
        _judge(call, (torch.nan_to_num(out), mean, torch.nan_to_num(rstd, nan=4.0)))
    ctx = _ctx(call)
    wide = torch.zeros(2, 1, dtype=torch.float64)
    assert rounded_reference(ctx, call, wide, out) is None


def test_a_dtype_argument_that_fixes_the_precision_gives_no_reference():
    """sum(float32, dtype=float16) computes in float16 whatever its input: the widened call
    answers float16 too, so there is nothing to arbitrate with."""
    call = _call("sum.dim_IntList", self=torch.ones(3), dim=[0], dtype=torch.float16)
    wide = precise_call(call)
    assert wide is not None and dict(wide.values)["dtype"] is torch.float16
    answer = wide.run("cpu")
    assert rounded_reference(_ctx(call), call, answer, call.run("cpu")) is None


def test_arbitrate_false_keeps_the_comparison_where_the_dtype_is_the_contract():
    """nan_to_num(float32 inf) is float32's largest value; in float64 it is 1.8e308, which
    rounds to inf: a kernel leaving inf would side with float64. tolerances.yaml's
    ``arbitrate: false`` keeps it a failure; without that entry it would pass."""
    call = _call("nan_to_num", self=torch.tensor([INF, 1.0]))
    leaves_inf = torch.tensor([INF, 1.0])
    with pytest.raises(CheckFailure):
        _judge(call, leaves_inf)
    ctx = _judge(call, leaves_inf, tolerance_fn=lambda name, dtype: (None, None))
    assert {cat for cat, _ in ctx.infos} == {CPU_IMPRECISE}  # what the data entry prevents


def test_addmm_whose_float32_sum_meets_inf_and_an_overflowing_product():
    """The issue's second example in float32: +inf meets 3.3e38 * -4 (overflows to -inf in
    float32): CPU NaN, float64 +inf. The backend's +inf is excused, its -inf is not."""
    s = torch.tensor([[INF, 1.0], [2.0, 3.0]])
    call = _call("addmm", self=s, mat1=torch.tensor([[3.3e38, 1.0], [1.0, 1.0]]),
                 mat2=torch.tensor([[-4.0, 1.0], [1.0, 1.0]]))
    cpu = call.run("cpu")
    assert math.isnan(cpu[0, 0])
    right = _float64_answer(call)
    assert right[0, 0] == INF
    ctx = _judge(call, right)
    assert ctx.info_elements[CPU_IMPRECISE] == 1
    with pytest.raises(CheckFailure):
        _judge(call, torch.where(right == INF, -INF, right))


def _layouts(call: Call) -> tuple[torch.Tensor, torch.Tensor]:
    """CPU's answer, and its answer for every operand as a transposed copy."""
    from conformance.inputs.layouts import with_layouts

    names = tuple((n, "transposed") for n, v in call.values if isinstance(v, torch.Tensor))
    return call.run("cpu"), with_layouts(call, names).run("cpu")


#: The packaged tolerances without their ``nonfinite: unspecified`` entries: the tests of CPU's
#: reorderings as evidence use a float64 GEMM, whose NaN-against-inf elements the packaged data
#: leaves open anyway (any order's; tested last in the first test below).
WITHOUT_NONFINITE = replace(load_tolerances(), entries=tuple(
    t for t in load_tolerances().entries if not t.nonfinite_unspecified))

ADDMM64 = dict(self=torch.tensor([[INF, -INF], [1.7e308, -1.7e308]], dtype=torch.float64),
               mat1=torch.tensor([[2.0, -4.0], [0.5, 2.0]], dtype=torch.float64),
               mat2=torch.tensor([[1.7e308, 1.7e308], [-INF, -1.7e308]], dtype=torch.float64))


def test_float64_addmm_nan_or_inf_is_unspecified_where_cpu_changes_with_the_layout():
    """float64 addmm whose sums meet an infinity and overflowing products: CPU's GEMM gives NaN
    at one element for contiguous operands and at another for transposed ones. A backend
    giving the transposed answer passes (``cpu_unstable``, as before); one giving NaN at both
    elements (each one of CPU's answers, the whole one neither) passes element by element
    (``value_unspecified``, counted); a third value still fails."""
    call = _call("addmm", **ADDMM64)
    plain, transposed = _layouts(call)
    differ = ~((plain == transposed) | (plain.isnan() & transposed.isnan()))
    if not bool(differ.any()):
        pytest.skip("this CPU's GEMM gives the same answer for transposed operands")
    ctx = _judge(call, transposed, WITHOUT_NONFINITE)
    assert ctx.cpu_unstable_calls and not ctx.infos
    assert climb(ctx, "cpu")[1] == CPU_UNSTABLE
    both = torch.where(plain.isnan() | transposed.isnan(), NAN, plain)
    opened = int((both.isnan() & ~plain.isnan()).sum())
    # NaN at both elements is one of CPU's answers on some CPUs (an AMD EPYC's GEMM gave it
    # for contiguous operands, 2026-12-04): then it is no test of the element rule
    neither = bool(((both != plain) & ~(both.isnan() & plain.isnan())).any()) \
        and bool(((both != transposed) & ~(both.isnan() & transposed.isnan())).any())
    if neither:
        ctx = _judge(call, both, WITHOUT_NONFINITE)
        assert {cat for cat, _ in ctx.infos} == {VALUE_UNSPECIFIED}
        assert ctx.info_elements[VALUE_UNSPECIFIED] == opened
    third = torch.where(differ, 0.0, plain)  # a finite value where CPU gives NaN or an infinity
    with pytest.raises(CheckFailure):
        _judge(call, third, WITHOUT_NONFINITE)
    # the packaged data: the GEMM's NaN against an infinity is open whatever CPU's layouts give,
    # counted; a finite value there still fails
    ctx = _judge(call, both)
    if neither:
        assert {cat for cat, _ in ctx.infos} == {VALUE_UNSPECIFIED}
        assert ctx.info_elements[VALUE_UNSPECIFIED] == opened
    with pytest.raises(CheckFailure):
        _judge(call, third)


def test_unspecified_needs_an_infinity_or_nan_and_one_of_cpus_answers():
    """classify: an element is unspecified only where one side is not finite and some CPU
    reordering gives the backend's value there; finite differences are never unspecified."""
    call = _call("addmm", **ADDMM64)
    ctx = _ctx(call, WITHOUT_NONFINITE)
    cpu = torch.tensor([INF, 1.0, NAN], dtype=torch.float64)
    again = torch.tensor([NAN, 2.0, -INF], dtype=torch.float64)
    backend = torch.tensor([NAN, 2.0, INF], dtype=torch.float64)
    found = classify(ctx, call, backend, cpu, reorderings=[again], reference=None)
    assert found is not None
    assert found.unspecified.tolist() == [True, False, False]
    assert found.remaining.tolist() == [False, True, True]


def test_nan_sign_and_payload_and_a_free_zero_sign_are_not_compared():
    """NaN's sign and payload are never compared; a zero's sign only where IEEE fixes it (the
    exactness data's ``signed_zero``: neg, copies), not for a sum."""
    neg_nan = torch.tensor([NAN]).neg()
    payload = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    call = _call("exp", self=torch.tensor([NAN]))
    for other in (neg_nan, payload):
        assert math.isnan(other.item())
        assert_values(_ctx(call), call, "out", "", other, torch.tensor([NAN]))
    add = _call("add.Tensor", self=torch.tensor([-0.0]), other=torch.tensor([0.0]))
    assert_values(_ctx(add), add, "out", "", torch.tensor([-0.0]), torch.tensor([0.0]))
    neg = _call("neg", self=torch.tensor([0.0]))
    with pytest.raises(CheckFailure):
        assert_values(_ctx(neg), neg, "out", "", torch.tensor([0.0]), torch.tensor([-0.0]))


def test_distance_counts_nan_and_infinities_as_infinitely_far():
    ref = torch.tensor([0.0, NAN, INF, 1.0])
    got = distance(torch.tensor([NAN, NAN, INF, 3.0]), ref).tolist()
    assert got == [INF, 0.0, 0.0, 2.0]
    assert distance(torch.tensor([-INF]), torch.tensor([INF])).item() == INF
    z = distance(torch.tensor([complex(1, NAN)]), torch.tensor([complex(1, 2)]))
    assert z.item() == INF


def test_the_categories_are_informational():
    assert CPU_IMPRECISE in INFO_CATEGORIES and VALUE_UNSPECIFIED in INFO_CATEGORIES


@pytest.mark.parametrize("value", [True, "maybe"])
def test_arbitrate_accepts_only_false(tmp_path, value):
    path = tmp_path / "tolerances.yaml"
    path.write_text(f"- names: [nextafter]\n  arbitrate: {value}\n  reason: r\n")
    with pytest.raises(InputError, match="'arbitrate' must be false"):
        load_tolerances(path)
    path.write_text("- names: [nextafter]\n  arbitrate: false\n  reason: r\n")
    assert not load_tolerances(path).arbitrates("nextafter", torch.float32)


def test_complex_pow_of_a_non_finite_operand_is_left_open_and_counted():
    """torch_xla's answers: (-4-2j) ** (-inf-4.43j) and (inf-2.37j) ** -3 are NaN+NaNj where CPU
    says 0: C99 gives cpow no special values, so elements fed by a non-finite operand are
    unspecified (``nonfinite_inputs: unspecified``), counted; an element of finite operands that
    differs still fails."""
    call = _call("pow.Tensor_Tensor",
                 self=torch.tensor([-4 - 2j, complex(INF, -2.37), 2 + 1j], dtype=torch.complex128),
                 exponent=torch.tensor([complex(-INF, -4.43), -3, 2], dtype=torch.complex128))
    cpu = call.run("cpu")
    assert cpu[0] == 0 and cpu[1] == 0
    xla = cpu.clone()
    xla[:2] = complex(NAN, NAN)
    ctx = _judge(call, xla)
    (category, line), = ctx.infos
    assert category == VALUE_UNSPECIFIED and "fed by an inf or NaN input" in line
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 2
    wrong = xla.clone()
    wrong[2] = 3 + 4j + 1e-3  # (2+1j)**2 = 3+4j: off at finite operands
    with pytest.raises(CheckFailure, match="1 / 3|1 of 3"):
        _judge(call, wrong)
    real = _call("pow.Tensor_Tensor", self=torch.tensor([INF, 2.0]), exponent=torch.tensor([-3.0, 2.0]))
    with pytest.raises(CheckFailure):  # not a complex pow: real pow's special values are C99's
        _judge(real, torch.tensor([NAN, 4.0]))


def test_a_float_result_of_integral_inputs_is_arbitrated_in_the_float64_default_dtype():
    """pairwise_distance of int64 computes x1 - x2 + eps in the default dtype: CPU's float32
    cube of 1e13 overflows (inf) where the distance is 1e13. Nothing widens, but computed with
    float64 as the default dtype the call sides with a backend that answers 1e13."""
    call = _call("pairwise_distance", x1=torch.tensor([[10**13, 0, 1, 2]]),
                 x2=torch.zeros(1, 4, dtype=torch.int64), p=3.0)
    cpu = call.run("cpu")
    assert cpu.dtype == torch.float32 and bool(cpu.isinf().all())
    ctx = _judge(call, torch.tensor([1e13]))
    assert {c for c, _ in ctx.infos} == {CPU_IMPRECISE}
    with pytest.raises(CheckFailure):  # a finite answer far from the distance still fails
        _judge(call, torch.tensor([2e13]))
    assert torch.get_default_dtype() == torch.float32


def test_a_factorys_dtype_argument_widens():
    """fft_rfftfreq(1, d=9.6e-155, dtype=float16) is [0]: CPU's float16 1 / (n * d) overflows
    and 0 * inf is NaN. A factory's dtype is only its result's: computed in float64 and rounded
    the answer is 0, which a backend giving 0 is held to."""
    call = _call("fft_rfftfreq", n=1, d=9.567649535606985e-155, dtype=torch.float16)
    assert bool(call.run("cpu").isnan().all())
    ctx = _judge(call, torch.zeros(1, dtype=torch.float16))
    assert {c for c, _ in ctx.infos} == {CPU_IMPRECISE}


class PlainTolerances:
    """torch.testing's defaults and nothing else: no entry of the packaged tolerances."""

    def __call__(self, overload: str, dtype: torch.dtype) -> tuple[None, None]:
        return None, None


def _long_gemm() -> Call:
    g = torch.Generator().manual_seed(1)
    return _call("mm", self=torch.rand(4, 1025, generator=g) * 16 - 8,
                 mat2=torch.rand(1025, 3, generator=g) * 16 - 8)


def test_where_cpu_itself_misses_float64_a_backend_within_a_few_times_its_error_passes():
    """A float32 GEMM over K = 1025: CPU's own sum misses the float64 answer by up to 8e-4,
    beyond the comparison's tolerance, at two elements. Another evaluation order misses it by as
    much again; a kernel that drops a term misses by the term. (The packaged tolerances allow a
    GEMM ulps of its terms' magnitude, ``scale: terms``, which settles this before arbitration:
    judged here without them, as an op with no such entry is.)"""
    call = _long_gemm()
    plain = PlainTolerances()
    cpu = call.run("cpu")
    exact = (dict(call.values)["self"].double() @ dict(call.values)["mat2"].double())
    error = (cpu.double() - exact).abs()
    assert bool((error > 1e-5 + 1.3e-6 * exact.abs()).any())
    lost = error > 1e-5 + 1.3e-6 * exact.abs()
    assert bool(lost.any())
    # where CPU misses: twice CPU's error, on the other side; elsewhere CPU's own value
    other_order = torch.where(lost, (exact - 2 * (cpu.double() - exact)).float(), cpu)
    ctx = _judge(call, other_order, plain)
    assert {c for c, _ in ctx.infos} == {CPU_IMPRECISE}
    assert not _judge(call, other_order).infos  # the packaged terms scale: a plain pass
    dropped = cpu.clone()
    dropped[0, 0] -= 1.0  # a term of size 1 lost
    for tolerances in (plain, None):
        with pytest.raises(CheckFailure):
            _judge(call, dropped, tolerances)


def test_nan_or_inf_where_an_intermediate_overflowed_and_float64_is_finite_is_unspecified():
    """_euclidean_dist of bfloat16 with -2.47e38: CPU's GEMM step meets inf - inf (NaN) where
    the answer, computed in float64 and rounded, is 2.47e38. A backend that sums wider and
    keeps an infinity is no worse: unspecified (counted). A finite wrong answer still fails,
    and so does an infinity where CPU gives a number."""
    x1 = torch.tensor([[-3.484375, -5.4375], [-5.03125, 2.125]], dtype=torch.bfloat16)
    x2 = torch.tensor([[-2.4723640721599435e38, -5.2e-07], [0.0119, 1.2820487131228138e21],
                       [1.0, 2.0]], dtype=torch.bfloat16)
    call = _call("_euclidean_dist", x1=x1, x2=x2)
    cpu = call.run("cpu")
    assert bool(cpu[:, 0].isnan().all()) and bool(cpu[:, 2].isfinite().all())
    wider = torch.where(cpu.isnan(), INF, cpu)
    ctx = _judge(call, wider)
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 2
    finite_wrong = torch.where(cpu.isnan(), 0.0, cpu)
    inf_where_cpu_is_finite = wider.clone()
    inf_where_cpu_is_finite[0, 2] = INF
    for wrong in (finite_wrong, inf_where_cpu_is_finite):
        with pytest.raises(CheckFailure):
            _judge(call, wrong)


def test_linspace_with_a_non_finite_endpoint_is_left_open():
    """linspace(NaN, -5e-324, 2) in float32: CPU [nan, nan]; torch_xla returns the documented
    last element, end (-0.): both are left open (nonfinite_inputs), counted."""
    call = _call("linspace.Tensor_Scalar_out", start=torch.tensor(NAN, dtype=torch.float64),
                 end=-5e-324, steps=2, out=torch.empty(0))
    cpu = call.run("cpu")
    assert bool(cpu.isnan().all())
    ctx = _judge(call, torch.tensor([NAN, -0.0]))
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}


def test_a_float64_transform_whose_inputs_total_overflows_leaves_inf_or_a_number_open():
    """_fft_r2c of float64 values near 1e308: whether a partial sum overflows is the FFT plan's
    (CPU's pocketfft gave inf where NumPy's plan gave 1.77e308, 20 of 1025 elements). Where the
    finite inputs' total passes float64's range, a number against CPU's inf (and an inf against
    CPU's number) is unspecified and counted; inputs whose total fits leave no such room, and a
    wrong finite value still fails."""
    big = torch.tensor([1.5e308, -1.2e308, 1.6e308, 0.7e308, -1.7e308, 1.1e308], dtype=torch.float64)
    call = _call("_fft_r2c", self=big, dim=[0], normalization=0, onesided=False)
    cpu = call.run("cpu")
    assert not bool(torch.view_as_real(cpu).isfinite().all())  # element 0's sum overflows
    first = int((~torch.view_as_real(cpu).isfinite().all(-1)).nonzero()[0])
    planned = cpu.clone()
    planned[first] = complex(1.7e308, 0.0)
    ctx = _judge(call, planned)
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 1
    finite_wrong = planned.clone()
    assert bool(cpu[3].isfinite())  # 8e307: the alternating sum
    finite_wrong[3] += 1e303
    with pytest.raises(CheckFailure):
        _judge(call, finite_wrong)
    small = _call("_fft_r2c", self=big * 1e-10, dim=[0], normalization=0, onesided=False)
    overflowed = small.run("cpu").clone()
    overflowed[0] = complex(INF, 0.0)
    with pytest.raises(CheckFailure):
        _judge(small, overflowed)


def test_a_resampling_whose_zero_weight_tap_holds_nan_leaves_its_elements_open():
    """upsample_bilinear2d.vec of a 3x3 image to 3x3: each output element reads its own input
    element by weight 1 and the next one along each axis by weight 0. With a NaN in the last
    row, CPU's kernel leaves the zero-weight taps out (the image back) where ATen's own
    decomposition (and a kernel multiplying every tap: CUDA's form) gives NaN at the NaN's
    neighbours too. The input, though of the result's shape, is each element's neighbourhood,
    not its element: the NaN feeds every element (nonfinite_inputs, packaged tolerances), not
    only the one at its own index. The same image without the NaN, answered wrong, still
    fails."""
    from torch._decomp import decomposition_table

    image = torch.tensor([[[[0.0, 4.0, -2.0], [-1.0, 4.0, 3.0], [-2.0, NAN, 2.0]]]])
    call = _call("upsample_bilinear2d.vec", input=image, output_size=[3, 3],
                 align_corners=False, scale_factors=None)
    cpu = call.run("cpu")
    decomposed = decomposition_table[torch.ops.aten.upsample_bilinear2d.default](
        image, [3, 3], False)
    assert cpu[0, 0, 1, 0] == -1.0 and bool(decomposed[0, 0, 1, 0].isnan())
    ctx = _judge(call, decomposed, load_tolerances())
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}
    finite = _call("upsample_bilinear2d.vec", input=image.nan_to_num(), output_size=[3, 3],
                   align_corners=False, scale_factors=None)
    wrong = finite.run("cpu").clone()
    wrong[0, 0, 1, 0] += 1.0
    with pytest.raises(CheckFailure):
        _judge(finite, wrong, load_tolerances())


def test_a_transform_whose_terms_total_overflows_leaves_a_backends_infinity_open():
    """float32 irfft of [-1.1, 3.4e38, -3.8]: the answer 1.7e38 is finite, but the terms' total
    (the interior input counts twice) passes float32's range, so whether a partial sum overflows
    is the plan's: CPU scales by 1/n inside its plan and keeps 1.7e38, a plan that scales after
    the transform (cuFFT through ATen's CUDA path; NumPy's pocketfft here) gives inf. The
    backend's infinity is counted unspecified; a wrong finite value still fails against the
    float64 reference."""
    x = torch.tensor([-1.1239560842514038, 3.4028234663852886e+38, -3.8272476196289062])
    call = _call("fft_irfft", self=x, n=None, dim=0, norm=None)
    cpu = call.run("cpu")
    assert bool(cpu.isfinite().all())
    planned = cpu.clone()
    planned[0], planned[2] = INF, -INF
    ctx = _judge(call, planned)
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}
    assert ctx.info_elements[VALUE_UNSPECIFIED] == 2
    wrong = cpu.clone()
    wrong[0] = 1.0e38
    with pytest.raises(CheckFailure):
        _judge(call, wrong)


def test_elements_an_infinite_input_feeds_are_the_fft_plans():
    """fft_hfft of complex128 [5.3+1.47j, -0.5-0.85j, 7.73+inf j, -6.25+3.35j], n = 6: output
    3 meets the infinite imaginary part with a twiddle whose sine is exactly 0; CPU's plan skips
    the product (28.01), one that multiplies every twiddle (NumPy's) gets inf * 0 = NaN.
    tolerances.yaml's `nonfinite_inputs: unspecified` for the FFTs leaves it open, counted;
    the same NaN from finite inputs still fails."""
    z = torch.tensor([complex(5.3, 1.47), complex(-0.5, -0.85), complex(7.73, INF),
                      complex(-6.25, 3.35)], dtype=torch.complex128)
    call = _call("fft_hfft", self=z, n=6, dim=0, norm=None)
    cpu = call.run("cpu")
    assert math.isclose(float(cpu[3]), 28.01, rel_tol=1e-9)
    planned = cpu.clone()
    planned[3] = NAN
    ctx = _judge(call, planned)
    assert {c for c, _ in ctx.infos} == {VALUE_UNSPECIFIED}
    finite = _call("fft_hfft", self=z.real.to(torch.complex128), n=6, dim=0, norm=None)
    wrong = finite.run("cpu").clone()
    wrong[3] = NAN
    with pytest.raises(CheckFailure):
        _judge(finite, wrong)
