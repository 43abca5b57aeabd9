"""Declared backend properties (``--assume``): the comparison honours what a backend declares
it does on purpose, and only that; a probe says when a device shows a property undeclared.

Each comparison test hands ``compare_outputs`` (as the checks call it) what a device with the
property computes, on a context whose backend declares it or not: declared, the elements that
agree with CPU's answer under the property pass (``backend_property``, counted); undeclared, or
for an answer the property does not explain, the failure stands.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Any

import pytest
import torch
from compare_calls import make_call as _call

import opdb
from conformance.compare.context import Context
from conformance.compare.outputs import compare_outputs
from conformance.compare.properties import flush_subnormals, round_tf32, transformed
from conformance.core.backends import Backend, resolve
from conformance.core.call import Call
from conformance.core.inflight import Inflight
from conformance.core.probes import PROBES, probe
from conformance.core.verdicts import CheckFailure, CpuRejected
from opdb.errors import InputError
from opdb.opdata import load_hints, load_tolerances
from opdb.outcomes import BACKEND_PROPERTY, INFO_CATEGORIES
from opdb.properties import parse_assumes, properties

SUB = 2.0 ** -140  # a float32 subnormal


def _judge(call: Call, actual: Any, assumes: frozenset[str] = frozenset()) -> Context:
    backend = dataclasses.replace(resolve("cpu"), assumes=assumes)
    ctx = Context(backend=backend, sig=call.sig, hints=load_hints().for_op(call.sig.name),
                  tolerance_fn=load_tolerances(), inflight=Inflight(None),
                  repro_fn=lambda c: "")
    compare_outputs(ctx, call, call.run("cpu"), actual, values=True)
    return ctx


def _ftz_answer(call: Call) -> torch.Tensor:
    """What a device with FTZ and DAZ answers: CPU with flush-to-zero and denormals-are-zero
    (on one thread: the mode is the calling thread's own)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    try:
        return call.run("cpu")
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)


def test_every_property_has_a_probe_and_a_summary() -> None:
    assert set(properties()) == set(PROBES)
    assert BACKEND_PROPERTY in INFO_CATEGORIES
    for prop in properties().values():
        assert prop.summary and prop.dtypes and prop.ops


def test_each_property_names_ops_that_exist() -> None:
    bases = {o.base for o in opdb.load().overloads} | {o.name.split(".")[0]
                                                       for o in opdb.load().overloads}
    for prop in properties().values():
        for pattern in prop.ops:
            assert any(prop.concerns(b, next(iter(prop.dtypes))) for b in bases
                       if fnmatch.fnmatchcase(b, pattern)), (prop.name, pattern)


def test_unknown_property_is_one_line_naming_the_option() -> None:
    with pytest.raises(InputError, match=r"--assume: unknown backend property 'ftx' \(known: "):
        parse_assumes("ftz,ftx")
    assert parse_assumes(" ftz , tf32") == {"ftz", "tf32"}


@pytest.mark.skipif(not torch.set_flush_denormal(False), reason="CPU cannot flush denormals")
def test_flushing_device_passes_only_when_declared() -> None:
    call = _call("mul.Tensor", self=torch.tensor([SUB, 1.0, 3.0]), other=torch.tensor([1.5, 2.0,
                                                                                        SUB]))
    flushed = _ftz_answer(call)
    assert flushed[0] == 0 and call.run("cpu")[0] != 0
    with pytest.raises(CheckFailure):  # undeclared: a flushing device differs from CPU
        _judge(call, flushed)
    ctx = _judge(call, flushed, frozenset({"ftz"}))
    (category, line), = ctx.infos
    assert category == BACKEND_PROPERTY and "declared 'ftz'" in line
    assert ctx.info_elements[BACKEND_PROPERTY] == 2  # both subnormal elements, nothing else


@pytest.mark.skipif(not torch.set_flush_denormal(False), reason="CPU cannot flush denormals")
def test_ftz_does_not_excuse_a_wrong_normal_value() -> None:
    call = _call("mul.Tensor", self=torch.tensor([SUB, 1.0]), other=torch.tensor([1.5, 2.0]))
    wrong = _ftz_answer(call).clone()
    wrong[1] = 2.5  # a normal element off: no property explains it
    with pytest.raises(CheckFailure, match="1 of 2|2.5"):
        _judge(call, wrong, frozenset({"ftz"}))


@pytest.mark.skipif(not torch.set_flush_denormal(False), reason="CPU cannot flush denormals")
def test_ftz_honours_a_device_that_flushes_inside_the_kernel() -> None:
    # every input and result is normal, so flushing them changes nothing: only the squares
    # inside the norm (1e-40) are subnormal; a device that flushes every instruction divides
    # by a zero norm
    v = torch.full((2, 2), 1e-20)
    call = _call("_weight_norm_interface", v=v, g=torch.ones(2, 1), dim=0)
    flushed = _ftz_answer(call)
    assert flushed[0].isinf().any() and call.run("cpu")[0].isfinite().all()
    with pytest.raises(CheckFailure):
        _judge(call, flushed)
    ctx = _judge(call, flushed, frozenset({"ftz"}))
    assert {c for c, _ in ctx.infos} == {BACKEND_PROPERTY}


@pytest.mark.skipif(not torch.set_flush_denormal(False), reason="CPU cannot flush denormals")
def test_ftz_reaches_integral_results_of_floating_inputs() -> None:
    # frexp's exponent of a subnormal: a device that flushes it sees 0, whose exponent is 0
    call = _call("frexp.Tensor", self=torch.tensor([SUB, 3.0]))
    mantissa, exponent = call.run("cpu")
    assert exponent[0] != 0
    flushed = (mantissa * torch.tensor([0.0, 1.0]), exponent * torch.tensor([0, 1],
                                                                            dtype=torch.int32))
    with pytest.raises(CheckFailure):
        _judge(call, flushed)
    ctx = _judge(call, flushed, frozenset({"ftz"}))
    assert {c for c, _ in ctx.infos} == {BACKEND_PROPERTY}


def test_ftz_reaches_a_refusal_of_flushed_inputs() -> None:
    # a matrix whose only nonzero entries are subnormal is singular on a flushing device
    a = torch.tensor([[SUB, 0.0], [0.0, SUB]])
    call = _call("linalg_solve", A=a, B=torch.ones(2, 1))
    call.run("cpu")  # CPU answers: the matrix is regular to it
    from torch.linalg import LinAlgError

    refusal = LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.")
    plain = _judge_ctx(call, frozenset())
    plain.reject_if_refused_under_property(call, refusal)  # undeclared: nothing to say
    declared = _judge_ctx(call, frozenset({"ftz"}))
    with pytest.raises(CpuRejected):
        declared.reject_if_refused_under_property(call, refusal)
    assert {c for c, _ in declared.infos} == {BACKEND_PROPERTY}
    declared.reject_if_refused_under_property(call, ValueError("another refusal"))


def _judge_ctx(call: Call, assumes: frozenset[str]) -> Context:
    backend = dataclasses.replace(resolve("cpu"), assumes=assumes)
    return Context(backend=backend, sig=call.sig, hints=load_hints().for_op(call.sig.name),
                   tolerance_fn=load_tolerances(), inflight=Inflight(None),
                   repro_fn=lambda c: "")


def _tf32_answer(call: Call) -> torch.Tensor:
    changed = transformed(call, round_tf32)
    assert changed is not None
    return changed.run("cpu")


def test_tf32_matrix_product_passes_only_when_declared() -> None:
    g = torch.Generator().manual_seed(1)
    call = _call("mm", self=torch.randn(8, 64, generator=g), mat2=torch.randn(64, 4, generator=g))
    tf32 = _tf32_answer(call)
    with pytest.raises(CheckFailure):
        _judge(call, tf32)
    ctx = _judge(call, tf32, frozenset({"tf32"}))
    assert {c for c, _ in ctx.infos} == {BACKEND_PROPERTY}
    # not an op TF32 concerns: the declaration does not reach it
    add = _call("add.Tensor", self=torch.randn(64, generator=g), other=torch.randn(64, generator=g))
    with pytest.raises(CheckFailure):
        _judge(add, _tf32_answer(add), frozenset({"tf32"}))


def test_half_accumulation_widens_only_declared_half_reductions() -> None:
    g = torch.Generator().manual_seed(2)
    a = (torch.rand(1, 4096, generator=g) * 0.5 + 0.5).half()
    b = torch.ones(4096, 1, dtype=torch.half)
    call = _call("mm", self=a, mat2=b)
    # split-K as cuBLAS does with reduced-precision reduction: 256 partial sums (float32 inside),
    # each rounded to float16 and added up in a float16 accumulator
    running = torch.zeros((), dtype=torch.half)
    for partial in a.reshape(256, 16).float().sum(1).half():
        running = running + partial
    narrow = running.reshape(1, 1)
    with pytest.raises(CheckFailure):
        _judge(call, narrow)
    ctx = _judge(call, narrow, frozenset({"half_accumulation"}))
    assert {c for c, _ in ctx.infos} == {BACKEND_PROPERTY}
    with pytest.raises(CheckFailure):  # off by far more than narrow accumulation explains
        _judge(call, narrow * 1.5, frozenset({"half_accumulation"}))


def test_flush_and_tf32_rounding() -> None:
    t = torch.tensor([SUB, -SUB, 1e-30, float("nan"), float("inf"), 1.0 + 2 ** -20,
                      1.0 + 3 * 2 ** -11])
    f = flush_subnormals(t)
    assert f[0] == 0 and str(f[1].item()) == "-0.0" and f[2] == 1e-30 and f[3].isnan()
    r = round_tf32(t)
    assert r[5] == 1.0 and r[6] == 1.0 + 4 * 2 ** -11 and r[4] == float("inf") and r[3].isnan()
    c = flush_subnormals(torch.complex(torch.tensor([SUB]), torch.tensor([1.0])))
    assert c[0] == 1j


def test_probes_see_a_flushing_and_a_tf32_device_and_nothing_on_cpu() -> None:
    cpu = resolve("cpu")
    assert probe(cpu) == {}
    if torch.set_flush_denormal(True):
        try:
            assert set(probe(cpu)) == {"ftz"}
        finally:
            torch.set_flush_denormal(False)

    class TF32(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if getattr(func, "__name__", "") in ("__matmul__", "matmul", "mm"):
                args = tuple(round_tf32(a) if isinstance(a, torch.Tensor) else a for a in args)
            return func(*args, **(kwargs or {}))

    with TF32():
        assert set(probe(cpu)) == {"tf32"}
    meta = Backend("meta", "meta", "Meta", host_values=False)
    assert probe(meta) == {}


def test_declared_on_the_command_line_and_by_a_vendor_module(tmp_path, monkeypatch) -> None:
    """``resolve(..., assumes=)`` joins the command line's declaration with the module's
    ``ASSUMES``; a module declaring an unknown property is bad input naming it."""
    assert resolve("cpu", assumes=frozenset({"ftz"})).assumes == {"ftz"}
    (tmp_path / "flushing_vendor.py").write_text("ASSUMES = ('tf32',)\n")
    (tmp_path / "typo_vendor.py").write_text("ASSUMES = ('tf23',)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    vendor = resolve("privateuse1:flushing_vendor", touch=False, assumes=frozenset({"ftz"}))
    assert vendor.assumes == {"tf32", "ftz"}
    with pytest.raises(InputError, match="typo_vendor.ASSUMES: unknown backend property 'tf23'"):
        resolve("privateuse1:typo_vendor", touch=False)
