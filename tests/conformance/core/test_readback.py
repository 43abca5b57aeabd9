"""Results the harness once could not read (each was a ``harness_error`` skip in full runs on mlu
and on CUDA): lazily conjugated/negated views, complex32, sparse tensors built from invalid
parts, nested tensors, legacy-batched tensors. Each is now compared and earns a verdict; each
test also shows the comparison still catches a wrong answer of that form."""

from __future__ import annotations

import pytest
import torch

import opdb
from conformance.compare.context import Context
from conformance.compare.outputs import compare_outputs
from conformance.core import readback
from conformance.core.call import Call
from conformance.core.inflight import Inflight
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from opdb.opdata import load_hints, load_tolerances


def _run(backend, overload: str, check: str = "forward", max_examples: int = 10):
    from conformance.checks.registry import CHECKS
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet

    sig = OpSignature.of(opdb.load()[overload])
    return run_check(Item(sig, CHECKS[check]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=load_hints().for_op(overload), tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend))


@pytest.fixture(scope="module")
def cpu():
    from conformance.core.backends import resolve

    return resolve("cpu")


def _compare(backend, overload: str, expected, actual, **values) -> None:
    """compare_outputs of one call of ``overload`` (``values``: its arguments)."""
    sig = OpSignature.of(opdb.load()[overload])
    ctx = Context(backend=backend, sig=sig, hints=load_hints().for_op(overload),
                  tolerance_fn=load_tolerances(), inflight=Inflight(None),
                  repro_fn=lambda call: "")
    compare_outputs(ctx, Call(sig=sig, values=tuple(values.items())), expected, actual,
                    values=True)


# --------------------------------------------------------------------------- conj / neg bits


def test_plain_resolves_bits_on_a_copy():
    z = torch.tensor([1 + 2j, 3 - 1j])
    view = z.conj()
    out = readback.plain(view)
    assert view.is_conj() and not out.is_conj() and readback.bits(view) == (True, False)
    assert torch.equal(torch.view_as_real(out), torch.view_as_real(z.conj_physical()))
    neg = torch._neg_view(torch.tensor([1.0, -0.0]))
    assert readback.plain(neg).tolist() == [-1.0, 0.0] and neg.is_neg()
    # negation is not defined for bool (CPU's resolve_neg raises): its stored values are read
    assert readback.plain(torch._neg_view(torch.tensor([True, False]))).tolist() == [True, False]


@pytest.mark.parametrize("overload", ["conj", "_conj", "mH", "adjoint", "matrix_H", "_neg_view",
                                      "fft_ihfft2"])
@pytest.mark.parametrize("check", ["forward", "dtypes"])
def test_conj_and_neg_views_are_compared(reference, cpu, overload, check):
    # (fft of infinities differs on mlu, a real failure: its fft, a conjugated view on CPU, is
    # run against CPU alone)
    for backend in (cpu,) if overload.startswith("fft") else (cpu, reference):
        v = _run(backend, overload, check, max_examples=4)
        assert (v.verdict, v.category) == ("pass", None), (backend.name, v.message)


def test_conjugated_result_with_wrong_values_fails(cpu):
    z = torch.tensor([1 + 2j, 3 - 1j, complex(float("nan"), 0)])
    _compare(cpu, "conj", z.conj(), z.clone().conj(), self=z)
    w = z.clone()
    w[0] = 5 + 0j
    with pytest.raises(CheckFailure, match="values differ") as info:
        _compare(cpu, "conj", z.conj(), w.conj(), self=z)
    assert info.value.category == "value"


def test_view_op_that_drops_the_conj_bit_fails_alias(cpu):
    """conj() is a view that conjugates lazily: a backend returning a resolved copy has the right
    values but not CPU's view (is_conj); for an op that is no view the bit is not a contract."""
    z = torch.tensor([1 + 2j, 3 - 1j])
    with pytest.raises(CheckFailure, match=r"out.is_conj\(\)=False, but should be True") as info:
        _compare(cpu, "conj", z.conj(), z.conj_physical(), self=z)
    assert info.value.category == "alias"
    x = torch.tensor([1.0, 2.0])
    _compare(cpu, "fft_ihfft", torch.fft.ihfft(x), torch.fft.ihfft(x).resolve_conj(), self=x)


# --------------------------------------------------------------------------- complex32


def test_complex32_results_are_compared(cpu):
    v = _run(cpu, "complex", max_examples=5)
    assert (v.verdict, v.category) == ("pass", None), v.message
    parts = torch.tensor([1.0, 2.0]).half(), torch.tensor([3.0, float("nan")]).half()
    good = torch.complex(*parts)
    _compare(cpu, "complex", good, good.clone(), real=parts[0], imag=parts[1])
    bad = torch.complex(parts[0] + 1, parts[1])
    with pytest.raises(CheckFailure) as info:
        _compare(cpu, "complex", good, bad, real=parts[0], imag=parts[1])
    assert info.value.category == "value"


# --------------------------------------------------------------------------- sparse


def test_sparse_constructor_from_invalid_parts_is_not_counted(cpu):
    """CPU used to build a sparse tensor from parts that break its invariants (0-dim indices)
    and then fail reading it; the invariants are now checked: such a call is CPU's refusal."""
    v = _run(cpu, "sparse_csr_tensor.crow_col_value_size", max_examples=5)
    assert v.category != "harness_error", v.message
    c = Call(sig=OpSignature.of(opdb.load()["sparse_csr_tensor.crow_col_value_size"]),
             values=(("crow_indices", torch.tensor(False)), ("col_indices", torch.tensor(False)),
                     ("values", torch.tensor(False)), ("size", []), ("dtype", torch.bool)))
    with pytest.raises(RuntimeError, match="dimensionality"):
        c.run("cpu")
    ok = Call(sig=c.sig, values=(("crow_indices", torch.tensor([0, 1, 2])),
                                 ("col_indices", torch.tensor([1, 0])),
                                 ("values", torch.tensor([3.0, 4.0])), ("size", [2, 2])))
    out = ok.run("cpu")
    assert out.layout == torch.sparse_csr
    _compare(cpu, ok.sig.name, out, ok.run("cpu"), **dict(ok.values))
    with pytest.raises(CheckFailure) as info:  # a dense answer is the wrong kind of tensor
        _compare(cpu, ok.sig.name, out, out.to_dense(), **dict(ok.values))
    assert info.value.category == "structure"


# --------------------------------------------------------------------------- nested


def test_nested_results_are_compared_by_component(reference, cpu):
    v = _run(cpu, "_nested_tensor_from_tensor_list", max_examples=5)
    assert (v.verdict, v.category) == ("pass", None), v.message
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0])
    expected = torch._nested_tensor_from_tensor_list([a, b])
    _compare(cpu, "_nested_tensor_from_tensor_list", expected,
             torch._nested_tensor_from_tensor_list([a.clone(), b.clone()]), list=[a, b])
    with pytest.raises(CheckFailure, match=r"out\.unbind\(\)\[1\] values differ") as info:
        _compare(cpu, "_nested_tensor_from_tensor_list", expected,
                 torch._nested_tensor_from_tensor_list([a, b + 1]), list=[a, b])
    assert info.value.category == "value"
    with pytest.raises(CheckFailure, match="has 3 components, but should have 2"):
        _compare(cpu, "_nested_tensor_from_tensor_list", expected,
                 torch._nested_tensor_from_tensor_list([a, b, b]), list=[a, b])
    with pytest.raises(CheckFailure, match="is a strided tensor, but should be a nested tensor"):
        _compare(cpu, "_nested_tensor_from_tensor_list", expected, a, list=[a, b])
    # mlu has no nested kernels: its nested result cannot be read, an honest device failure
    v = _run(reference, "_nested_tensor_from_tensor_list", max_examples=2)
    assert (v.verdict, v.category) == ("fail", "device") and "NestedTensormlu" in v.message


# --------------------------------------------------------------------------- legacy batched


def test_unbatch_finds_levels_and_values():
    x = torch.arange(24.0).reshape(2, 3, 4)
    twice = torch._add_batch_dim(torch._add_batch_dim(x, 1, 2), 0, 5)
    values, levels = readback.unbatch(twice)
    assert levels == (5, 2) and readback.form(twice) == "tensor batched at vmap levels (5, 2)"
    assert torch.equal(values, x.permute(1, 0, 2))


def test_batched_results_are_compared(reference, cpu):
    for backend in (cpu, reference):
        v = _run(backend, "_add_batch_dim", max_examples=5)
        assert (v.verdict, v.category) == ("pass", None), (backend.name, v.message)
    x = torch.arange(6.0).reshape(2, 3)
    expected = torch._add_batch_dim(x, 0, 1)
    with pytest.raises(CheckFailure) as info:
        _compare(cpu, "_add_batch_dim", expected, torch._add_batch_dim(x + 1, 0, 1),
                 self=x, batch_dim=0, level=1)
    assert info.value.category == "value"
    with pytest.raises(CheckFailure, match=r"is a tensor batched at vmap levels \(2,\), but "
                                           r"should be a tensor batched at vmap levels \(1,\)"
                       ) as info:
        _compare(cpu, "_add_batch_dim", expected, torch._add_batch_dim(x, 0, 2),
                 self=x, batch_dim=0, level=1)
    assert info.value.category == "structure"
    # CPU batches at a dimension the tensor lacks without complaint and can then read nothing
    # of it: no answer to compare with, the example is not counted
    with pytest.raises(CpuRejected):
        _compare(cpu, "_add_batch_dim", torch._add_batch_dim(x, 5, 1),
                 torch._add_batch_dim(x, 5, 1), self=x, batch_dim=5, level=1)
