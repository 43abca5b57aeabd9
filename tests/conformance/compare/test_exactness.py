"""Exactness classes: the data says where the answer is unique; the comparison holds backends to
it exactly (or within 1 ulp where a legitimate backend may round differently), never more."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import opdb
from conformance.compare.terms import terms_magnitude
from conformance.compare.values import comparison_for, mismatches
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from opdb import exactness
from opdb.errors import InputError
from opdb.opdata import load_hints, load_tolerances


def sig_of(name: str) -> OpSignature:
    return OpSignature.of(opdb.load()[name])


def call(name: str, **values) -> Call:
    return Call(sig=sig_of(name), values=tuple(values.items()))


CTX = SimpleNamespace(tolerance=lambda name, dtype: (None, None),
                      scale_ulps=load_tolerances().scale_ulps,
                      nonfinite_unspecified=load_tolerances().nonfinite_unspecified,
                      scale_kind=load_tolerances().scale_kind, terms_scale=terms_magnitude)


def _hinted(name: str) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(CTX), "hints": load_hints().for_op(name),
                              "comparisons": {}})


def how(c: Call, result: torch.Tensor):
    return comparison_for(_hinted(c.sig.name), c, result)  # type: ignore[arg-type]


def test_packaged_table_names_real_families():
    table = exactness.load()
    assert table.unknown_families(opdb.load().families) == []
    assert table.entry_for("add.Tensor", family="add", tags=(), is_view=False).klass == "rounded"
    assert table.entry_for("transpose.int", family="transpose", tags=(), is_view=True).klass \
        == "exact"
    assert table.entry_for("sum", family="sum", tags=(), is_view=False) is None


@pytest.mark.parametrize("text,message", [
    ("- {class: exact, families: [cat]}\n", "needs a 'reason'"),
    ("- {class: fuzzy, families: [cat], reason: r}\n", "'class' must be one of"),
    ("- {class: exact, families: [cat], reason: r, colour: red}\n", "unknown key 'colour'"),
    ("- {class: exact, reason: r}\n", "needs 'families'"),
    ("- {class: exact, families: [cat], reason: r, ulps: 1}\n", "rounded class only"),
    ("- {class: rounded, families: [cat], reason: r, ulps: 2}\n", "'ulps' must be 0 or 1"),
    ("- {class: exact, families: [cat], reason: r}\n- {class: exact, families: [cat], reason: s}\n",
     "already classified"),
])
def test_bad_data_is_one_line_error_with_location(tmp_path, text, message):
    path = tmp_path / "exactness.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as info:
        exactness.load_from(path)
    assert info.value.file == str(path) and info.value.line is not None


def test_classes_by_call():
    f32 = torch.ones(3)
    h = torch.ones(3, dtype=torch.float16)
    # correctly rounded arithmetic: 0 ulp at float32, 1 ulp at float16 (CPU rounds via float32)
    assert (how(call("add.Tensor", self=f32, other=f32), f32).ulps,
            how(call("add.Tensor", self=f32, other=f32), f32).kind) == (0, "exact")
    assert how(call("add.Tensor", self=h, other=h), h).ulps == 1
    # the product of two halves is exact in float32: CPU rounds once, 0 ulp
    assert how(call("mul.Tensor", self=h, other=h), h).ulps == 0
    # alpha != 1: a fused multiply-add may round once: tolerances
    assert how(call("add.Tensor", self=f32, other=f32, alpha=2), f32).kind == "tolerance"
    # a Python float that float32 cannot hold rounds first on CPU: tolerances
    assert how(call("add.Scalar", self=f32, other=0.1), f32).kind == "tolerance"
    assert how(call("add.Scalar", self=f32, other=0.5), f32).kind == "exact"
    # mixed dtypes (int64 input converted first): tolerances
    assert how(call("sub.Tensor", self=torch.ones(3, dtype=torch.int64), other=f32),
               f32).kind == "tolerance"
    # CPU's vectorized float32 sqrt is within 1 ulp, not always correctly rounded: 1 ulp
    assert (how(call("sqrt", self=f32), f32).kind, how(call("sqrt", self=f32), f32).ulps) \
        == ("exact", 1)
    # division by a device tensor is correctly rounded; CUDA divides by a host scalar (a Python
    # number, a 0-dim CPU tensor) through its reciprocal: tolerances
    assert (how(call("div.Tensor", self=f32, other=f32), f32).kind,
            how(call("div.Tensor", self=f32, other=f32), f32).ulps) == ("exact", 0)
    assert how(call("div.Scalar", self=f32, other=2.0), f32).kind == "tolerance"
    on_host = Call(sig=sig_of("div.Tensor"), values=(("self", f32), ("other", torch.ones(()))),
                   on_cpu=frozenset({"other"}))
    assert how(on_host, f32).kind == "tolerance"
    assert how(call("div.Tensor_mode", self=f32, other=f32, rounding_mode="floor"),
               f32).kind == "tolerance"
    # data movement is exact; narrowing float64 -> float16 may round twice on CPU: 1 ulp
    assert how(call("cat", tensors=[f32, f32]), f32).ulps == 0
    to_half = how(call("_to_copy", self=torch.ones(3, dtype=torch.float64),
                       dtype=torch.float16), h)
    assert (to_half.kind, to_half.ulps) == ("exact", 1)
    # |z| is a rounded hypot: complex abs keeps tolerances
    assert how(call("abs", self=torch.ones(2, dtype=torch.complex64)), f32).kind == "tolerance"
    assert how(call("abs", self=f32), f32).kind == "exact"
    # the sign of a zero result: specified for abs/ceil/copies, open for selection and sign
    assert how(call("abs", self=f32), f32).signed_zero
    assert how(call("ceil", self=f32), f32).signed_zero
    assert how(call("cat", tensors=[f32, f32]), f32).signed_zero
    assert not how(call("maximum", self=f32, other=f32), f32).signed_zero
    assert not how(call("sign", self=f32), f32).signed_zero
    c64 = torch.ones(3, dtype=torch.complex64)
    assert not how(call("neg", self=c64), c64).signed_zero  # CPU's vectorized neg is 0 - z
    # accumulate=True adds in an unspecified order
    idx = [torch.zeros(2, dtype=torch.int64)]
    assert how(call("index_put", self=f32, indices=idx, values=f32[:2], accumulate=True),
               f32).kind == "tolerance"
    assert how(call("index_put", self=f32, indices=idx, values=f32[:2]), f32).kind == "exact"
    assert how(call("sum", self=f32), f32).kind == "tolerance"
    # views: the schema says the result aliases the input
    assert how(call("transpose.int", self=torch.ones(2, 3), dim0=0, dim1=1), f32).kind == "exact"


def test_ulp_mask():
    one = torch.tensor([1.0, float("nan"), -0.0, 2.0])
    next_up = torch.nextafter(one, torch.tensor(float("inf")))
    actual = torch.stack([next_up[0], one[1], torch.tensor(0.0), one[3]])
    assert mismatches(actual, one, 0).tolist() == [True, False, False, False]
    assert not mismatches(actual, one, 1).any()
    two_up = torch.nextafter(next_up, torch.tensor(float("inf")))
    assert mismatches(two_up[:1], one[:1], 1).tolist() == [True]
    h = torch.tensor([65504.0], dtype=torch.float16)
    assert not mismatches(torch.tensor([float("inf")], dtype=torch.float16), h, 1).any()
    big = torch.tensor([1e300, -1e300], dtype=torch.float64)
    assert mismatches(-big, big, 1).all()  # opposite signs: no int64 overflow in the distance
    z = torch.tensor([complex(1, float("nan"))])
    assert not mismatches(z, z.clone(), 0).any()
    # signed zeros: -0.0 differs from 0.0 only where the data says the sign is specified
    zeros = torch.tensor([-0.0, 0.0, 1.0])
    flipped = torch.tensor([0.0, 0.0, 1.0])
    assert not mismatches(flipped, zeros, 0).any()
    assert mismatches(flipped, zeros, 0, signed_zero=True).tolist() == [True, False, False]
    assert mismatches(flipped, zeros, 1, signed_zero=True).tolist() == [True, False, False]


def test_an_elementwise_conversion_compares_its_defined_elements():
    """A NaN among the elements of a float -> int conversion leaves only its own element
    unspecified: a wrong rounding of the others is still a failure."""
    from conformance.compare.values import defined_elements

    c = call("_to_copy", self=torch.tensor([float("nan"), 1.7, 3e9]), dtype=torch.int32)
    assert defined_elements(c, torch.zeros(3, dtype=torch.int32)).tolist() == [False, True,
                                                                                 False]
    # not elementwise (a reduction's result) or with Python numbers: no element is specified
    other = call("_to_copy", self=torch.tensor([float("nan"), 1.7]), dtype=torch.int32)
    assert defined_elements(other, torch.zeros((), dtype=torch.int32)) is None


def test_undefined_conversion_is_not_counted_but_defined_ones_are_compared():
    from conformance.compare.values import conversion_undefined

    nan = call("_to_copy", self=torch.tensor([float("nan"), 1.0]), dtype=torch.int32)
    assert conversion_undefined(nan, torch.int32)
    ok = call("_to_copy", self=torch.tensor([3.5, -2.0]), dtype=torch.int32)
    assert not conversion_undefined(ok, torch.int32)
    big = call("_to_copy", self=torch.tensor([3e9]), dtype=torch.int32)
    assert conversion_undefined(big, torch.int32)


def assert_values(c: Call, actual: torch.Tensor, expected: torch.Tensor, position=None
                  ) -> list[tuple[str, str, int]]:
    """The comparison's verdict on one result: raises where it fails, else the informational
    notes it made (category, line, elements)."""
    from conformance.compare.values import assert_values

    notes: list[tuple[str, str, int]] = []
    ctx = SimpleNamespace(**vars(CTX), comparisons={},
                          note_info=lambda cat, line, n=0: notes.append((cat, line, n)))
    assert_values(ctx, c, "out", c.describe(), actual, expected,  # type: ignore[arg-type]
                   position=position)
    return notes


def test_low_precision_results_may_differ_by_ulps_at_their_inputs_scale():
    """A legitimate half-precision backend rounds its intermediates in half: CUDA's recorded
    float16 convolution rounds w * x before adding the bias (CPU: one float32 sum, one rounding),
    which cancellation leaves as 4 ulps of the result (0.5 ulp of the largest input); torch.
    testing's default float16 rtol (1e-3) failed it."""
    from conformance.core.verdicts import CheckFailure

    h = torch.float16
    x = torch.tensor([2.19140625], dtype=h).reshape(1, 1, 1, 1)
    w = torch.tensor([2.19140625, -3.68359375], dtype=h).reshape(2, 1, 1, 1)
    b = torch.tensor([0.1890869140625, 7.20703125], dtype=h)
    c = call("convolution", input=x, weight=w, bias=b, stride=[1, 1], padding=[0, 0],
             dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)
    cpu = torch.ops.aten.convolution.default(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    native = ((x * w).to(h).reshape(1, 2, 1, 1).float() + b.reshape(1, 2, 1, 1).float()).to(h)
    assert not torch.equal(native, cpu)
    assert_values(c, native, cpu)
    # a wrong answer still fails: 5% off, and a sign error
    with pytest.raises(CheckFailure):
        assert_values(c, (cpu.float() * 1.05).to(h), cpu)
    with pytest.raises(CheckFailure):
        assert_values(c, -cpu, cpu)
    # float32 results keep torch.testing's tolerances
    f = torch.float32
    c32 = call("convolution", input=x.to(f), weight=w.to(f), bias=b.to(f), stride=[1, 1],
               padding=[0, 0], dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)
    with pytest.raises(CheckFailure):
        assert_values(c32, native.to(f), cpu.to(f))


def test_log_softmax_cancellation_in_half_is_allowed():
    """log_softmax's result near 0 is x - logsumexp: a half-precision logsumexp's rounding at the
    inputs' scale (~7) is many ulps of a result of 1e-4."""
    from conformance.core.verdicts import CheckFailure

    x = torch.tensor([3.0, -0.6875], dtype=torch.float16)
    c = call("_log_softmax", self=x, dim=0, half_to_float=False)
    cpu = torch.ops.aten._log_softmax.default(x, 0, False)
    lse = torch.logsumexp(x.float(), 0).to(torch.float16)  # rounded to half before the difference
    native = (x.float() - lse.float()).to(torch.float16)
    assert not torch.equal(native, cpu)
    assert_values(c, native, cpu)
    with pytest.raises(CheckFailure):
        assert_values(c, cpu + torch.tensor([0.0, 0.25], dtype=torch.float16), cpu)


def test_scale_is_per_element_for_elementwise_inputs_and_per_list_element_for_foreach():
    """A huge input element loosens only the results it feeds: an elementwise op's other
    elements and a _foreach op's other list entries keep their own scale."""
    from conformance.core.verdicts import CheckFailure

    h = torch.float16
    grad = torch.tensor([30000.0, 1.0], dtype=h)
    self_ = torch.tensor([5.0, 5.0], dtype=h)
    c = call("hardshrink_backward", grad_out=grad, self=self_, lambd=0.5)
    cpu = torch.ops.aten.hardshrink_backward.default(grad, self_, 0.5)
    assert_values(c, cpu + torch.tensor([16.0, 0.0], dtype=h), cpu)  # 1 ulp at 30000: fine
    with pytest.raises(CheckFailure):
        assert_values(c, cpu + torch.tensor([0.0, 0.125], dtype=h), cpu)
    small, huge = torch.tensor([1.5], dtype=h), torch.tensor([30000.0], dtype=h)
    fc = call("_foreach_abs", self=[small, huge])
    assert_values(fc, huge + 16, huge, position=(1, 2))
    with pytest.raises(CheckFailure):
        assert_values(fc, small + 0.125, small, position=(0, 2))


def test_sums_of_many_terms_may_differ_by_ulps_at_their_inputs_scale():
    """An FFT element that cancels (int16 inputs near 32767) differs between FFT libraries by a
    few ulps of the inputs' magnitude (tolerances.yaml scale_ulps); float32 ops without such an
    entry keep torch.testing's tolerances, and a wrong transform still fails."""
    from conformance.core.verdicts import CheckFailure

    x = torch.tensor([32767, 6, -32768], dtype=torch.int16).reshape(3, 1, 1)
    c = call("fft_ihfft2", self=x, s=None, dim=[0], norm=None)
    cpu = torch.fft.ihfft2(x, dim=[0])
    other = cpu + torch.tensor([3.2e-4, 0.0]).reshape(2, 1, 1)  # pocketfft in float64, rounded
    assert not torch.allclose(other, cpu)
    assert_values(c, other, cpu)
    with pytest.raises(CheckFailure):
        assert_values(c, cpu * 1.01, cpu)
    y = torch.tensor([32767.0, 6.0, -32768.0])
    ca = call("add.Tensor", self=y, other=y, alpha=1.5)  # no scale_ulps for float32
    with pytest.raises(CheckFailure):
        assert_values(ca, torch.add(y, y, alpha=1.5) + 4e-3, torch.add(y, y, alpha=1.5))


def test_an_integral_minimum_counts_at_its_magnitude_in_the_inputs_scale():
    """int16's -32768 is its own abs() in int16: the inputs' scale took it as negative, so an
    FFT over it and small values was held to ulps of 3 (fft_ihfft2::dtypes at int16 failed by
    5e-4 where ulps of 32768 allow it)."""
    from conformance.core.verdicts import CheckFailure

    x = torch.tensor([[2, -1, -32768], [0, 2, -3], [-1, 0, -32768], [1, 1, -3]],
                     dtype=torch.int16)
    c = call("fft_ihfft2", self=x, s=None, dim=[-2, -1], norm=None)
    cpu = torch.fft.ihfft2(x)
    other = cpu + torch.tensor(4.9e-4 + 0j, dtype=cpu.dtype)
    assert not torch.allclose(other, cpu)
    assert_values(c, other, cpu)
    with pytest.raises(CheckFailure):
        assert_values(c, cpu + 0.1, cpu)


def test_a_transform_input_of_the_results_shape_counts_everywhere():
    """fft_ihfft2 over dims [0, 1, 2] of int16[3, 3, 1] has a result of the input's shape: the
    input counted per element, so the element where 16384 and -32768 cancel was held to ulps of
    its own input (2), not of 32768 (tolerances.yaml `scale: all_inputs`); an elementwise op
    keeps its per-element scale."""
    from conformance.core.verdicts import CheckFailure

    x = torch.tensor([-3, -1, 3, 0, -32768, 16384, -2, -2, 16384],
                     dtype=torch.int16).reshape(3, 3, 1)
    c = call("fft_ihfft2", self=x, s=None, dim=[0, 1, 2], norm=None)
    cpu = torch.fft.ihfft2(x, dim=[0, 1, 2])
    assert cpu.shape == x.shape
    other = cpu + torch.tensor(1.4e-5 + 0j, dtype=cpu.dtype)
    assert not torch.allclose(other, cpu)
    assert_values(c, other, cpu)
    with pytest.raises(CheckFailure):
        assert_values(c, cpu + 0.1, cpu)
    h = torch.float16
    y = torch.tensor([30000.0, 1.0], dtype=h)
    ce = call("exp", self=y)
    with pytest.raises(CheckFailure):
        assert_values(ce, torch.exp(y) + torch.tensor([0.0, 0.125], dtype=h), torch.exp(y))


def test_which_nonfinite_value_an_fft_gives_is_not_compared():
    """An FFT meeting inf gives inf or NaN by its plan (tolerances.yaml `nonfinite:
    unspecified`); a finite value against CPU's inf still fails, and so does NaN against inf
    for an op without the entry."""
    from conformance.core.verdicts import CheckFailure

    inf, nan = float("inf"), float("nan")
    x = torch.tensor([-6.638373272801211e+225, inf, 9.443991355239666e+36, 1e-290],
                     dtype=torch.float64)
    c = call("fft_hfftn", self=x, s=None, dim=None)
    cpu = torch.fft.hfftn(x)
    assert bool(cpu.isinf().all())
    notes = assert_values(c, torch.cat([cpu[:-1], torch.tensor([nan], dtype=torch.float64)]), cpu)
    assert [(cat, n) for cat, _, n in notes] == [("value_unspecified", 1)]
    with pytest.raises(CheckFailure):
        assert_values(c, torch.cat([cpu[:-1], torch.tensor([1.0], dtype=torch.float64)]), cpu)
    y = torch.tensor([inf, 1.0], dtype=torch.float64)
    ca = call("exp", self=y)
    with pytest.raises(CheckFailure):
        assert_values(ca, torch.tensor([nan, 2.718281828459045], dtype=torch.float64),
                      torch.exp(y))


def test_a_gemm_may_end_in_nan_or_an_infinity_but_not_in_a_number():
    """Which of NaN and inf a sum of products meeting inf ends in is the GEMM's order (CPU's
    MKL NaN+NaNj, C99's product inf-infj): left open element by element and counted. A number
    where CPU has NaN (a kernel that drops a NaN) still fails, as does a number where CPU has
    inf; an element both sides give alike is not counted."""
    from conformance.core.verdicts import CheckFailure

    inf, nan = float("inf"), float("nan")
    a = torch.tensor([[nan, 1.0], [2.0, 3.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 0.0], [0.0, inf]], dtype=torch.float64)
    c = call("mm", self=a, mat2=b)
    cpu = torch.mm(a, b)  # [[nan, nan], [2, inf]]
    notes = assert_values(c, torch.tensor([[-inf, nan], [2.0, inf]], dtype=torch.float64), cpu)
    assert [(cat, n) for cat, _, n in notes] == [("value_unspecified", 1)]
    assert "index (0, 0): -inf, CPU nan" in notes[0][1]
    with pytest.raises(CheckFailure, match="difference: nan"):
        assert_values(c, torch.tensor([[0.0, nan], [2.0, inf]], dtype=torch.float64), cpu)
    with pytest.raises(CheckFailure, match="difference: inf"):
        assert_values(c, torch.tensor([[nan, nan], [2.0, 1.0]], dtype=torch.float64), cpu)
    assert assert_values(c, cpu.clone(), cpu) == []
    z = torch.tensor([[complex(-inf, -0.85)]], dtype=torch.complex64)
    w = torch.tensor([[complex(3.4e38, -2.0)]], dtype=torch.complex64)
    cz = call("mm", self=z, mat2=w)
    nanj = torch.tensor([[complex(nan, nan)]], dtype=torch.complex64)
    assert [n for _, _, n in assert_values(cz, nanj, torch.tensor([[complex(-inf, inf)]],
                                                                  dtype=torch.complex64))] == [1]
    with pytest.raises(CheckFailure):
        assert_values(cz, torch.zeros(1, 1, dtype=torch.complex64), nanj)


def test_a_finite_value_never_matches_an_infinity_at_the_inputs_scale():
    """rtol * inf allowed anything: a float16 result of 1.0 where CPU's is inf passed."""
    from conformance.core.verdicts import CheckFailure

    h = torch.float16
    x = torch.tensor([12.0, 1.0], dtype=h)
    c = call("exp", self=x)
    with pytest.raises(CheckFailure):
        assert_values(c, torch.tensor([1.0, 2.71875], dtype=h), torch.exp(x))


def test_an_index_is_no_wide_value_source():
    """index_select of bfloat16 by an int64 index moves bfloat16 values: exact (0 ulp). The
    index's dtype is pinned to int64 by the hints (a position, not a value); a float64 source
    converted to bfloat16 may round through float32 on a legitimate backend (1 ulp)."""
    b = torch.ones(4, dtype=torch.bfloat16)
    c = call("index_select", self=b, dim=0, index=torch.zeros(2, dtype=torch.int64))
    assert how(c, b[:2]).ulps == 0
    wide = call("where.self", condition=torch.ones(4, dtype=torch.bool), self=b,
                other=torch.ones(4, dtype=torch.float64))
    assert how(wide, b).ulps == 1
