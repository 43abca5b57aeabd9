"""ATen's composites on CPU (``conformance.core.composites``) and the comparison's use of them:
a backend that does what PyTorch's own composite does, where CPU's kernel differs from it, is
not failed for it (``aten_composite``); one that does neither still is."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

import opdb
from conformance.compare.context import Context
from conformance.compare.outputs import compare_outputs
from conformance.core.backends import resolve
from conformance.core.call import Call
from conformance.core.composites import composite_run
from conformance.core.inflight import Inflight
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from opdb.opdata import load_hints, load_tolerances
from opdb.outcomes import ATEN_COMPOSITE, INFO_CATEGORIES, VALUE_UNSPECIFIED


def _call(name: str, **values: Any) -> Call:
    return Call(sig=OpSignature.of(opdb.load()[name]), values=tuple(values.items()))


def _ctx(call: Call) -> Context:
    return Context(backend=dataclasses.replace(resolve("cpu")), sig=call.sig,
                   hints=load_hints().for_op(call.sig.name), tolerance_fn=load_tolerances(),
                   inflight=Inflight(None), repro_fn=lambda c: "")


def _layer_norm() -> Call:
    # CPU's float32 variance of -4.087e20 overflows (NaN); the composite centres first (0)
    return _call("native_layer_norm", input=torch.tensor([[-4.2e-45], [-4.087e20]]),
                 normalized_shape=[1], weight=None, bias=None, eps=0.0625)


def test_composite_run_names_the_overloads_cpu_overrides() -> None:
    run = composite_run(_layer_norm())
    assert run is not None
    assert run.routed == ("aten::native_layer_norm",) and run.error is None
    assert bool(_layer_norm().run("cpu")[0][1].isnan().all())
    assert run.answer[0][1].item() == 0.0
    plain = composite_run(_call("mode", self=torch.ones(3), dim=0, keepdim=False))
    assert plain is not None and plain.routed == ()  # CPU's kernel only: nothing to route
    # a structured op's functional form over its .out kernel is a composite too
    add = composite_run(_call("add.Tensor", self=torch.ones(2), other=torch.ones(2)))
    assert add is not None and add.routed == ("aten::add.Tensor",)


def test_a_wrapped_number_the_mode_cannot_replay_gives_no_answer() -> None:
    # x_scalar's composite wraps -1 and calls the Tensor overload, which a mode receives as a
    # Python number; no Python call makes it a wrapped number again
    call = _call("special_chebyshev_polynomial_t.x_scalar", x=-1,
                 n=torch.tensor(10, dtype=torch.uint8))
    assert call.run("cpu").item() == 1.0
    assert composite_run(call) is None


def test_composite_run_sees_inside_composites_cpu_runs_too() -> None:
    # addr_ is a composite on CPU as well; it calls addr.out, which CPU overrides
    # the composite forms the outer product first (1.797e308 * (1 + 2**-52) overflows), CPU's
    # kernel scales by alpha first
    f64 = torch.float64
    call = _call("addr_", self=torch.zeros(1, 1, dtype=f64),
                 vec1=torch.tensor([1.7976931348623157e308], dtype=f64),
                 vec2=torch.tensor([1.0000000000000002], dtype=f64), beta=0.5, alpha=0.5)
    run = composite_run(call)
    assert run is not None and "aten::addr.out" in run.routed
    assert run.answer[0, 0].isinf() and call.run("cpu")[0, 0].isfinite()


def _composite_answer(call: Call) -> Any:
    run = composite_run(call)
    assert run is not None and run.error is None
    return run.answer


def _group_norm_float64() -> Call:
    # float64 (no wider reference): CPU's one-pass E[x^2] overflows to NaN; the composite's
    # centred variance overflows to inf, rstd 0, output 0
    x = torch.tensor([[[1e200, 2e200, 3e200]]], dtype=torch.float64)
    return _call("native_group_norm", input=x, weight=None, bias=None, N=1, C=1, HxW=3,
                 group=1, eps=1e-5)


def test_backend_doing_what_the_composite_does_passes_with_the_note() -> None:
    call = _group_norm_float64()
    ctx = _ctx(call)
    compare_outputs(ctx, call, call.run("cpu"), _composite_answer(call), values=True)
    (category, line), = ctx.infos
    assert category == ATEN_COMPOSITE and "native_group_norm" in line
    assert ATEN_COMPOSITE in INFO_CATEGORIES


def test_backend_doing_neither_still_fails() -> None:
    call = _group_norm_float64()
    wrong = tuple(t.clone() for t in _composite_answer(call))
    wrong[0][0, 0, 1] = 5.0  # neither CPU's NaN nor the composite's 0
    with pytest.raises(CheckFailure):
        compare_outputs(_ctx(call), call, call.run("cpu"), wrong, values=True)


def test_backend_accepting_what_only_cpus_kernel_refuses_is_not_counted() -> None:
    # CPU's all.dims_out checks out='s dtype; ATen's composite does not
    call = _call("all.dims_out", self=torch.tensor([True, False]), dim=[0],
                 out=torch.empty((), dtype=torch.float32))
    with pytest.raises(RuntimeError, match="bool tensor for result"):
        call.run("cpu")
    ctx = _ctx(call)
    cpu_exc = RuntimeError("all only supports bool tensor for result, got: Float")
    with pytest.raises(CpuRejected):
        ctx.judge_refusal(cpu_exc, None, call.describe(), values_call=call)
    assert {c for c, _ in ctx.infos} == {ATEN_COMPOSITE}
    # an op CPU does not override: the refusal stands (error_accepts)
    add = _call("add.Tensor", self=torch.ones(2), other=torch.ones(3))
    with pytest.raises(CheckFailure):
        _ctx(add).judge_refusal(RuntimeError("size mismatch"), None, add.describe(),
                                values_call=add)


def test_elements_where_pytorch_answers_apart_from_itself_and_float64_are_left_open() -> None:
    # float32 [-4.09e23, 2, 1e-3]: CPU's kernel NaN (its one-pass variance overflows), ATen's
    # composite 0 (its centred variance overflows to inf), float64 [-1.41, 0.71, 0.71]
    call = _call("native_layer_norm", input=torch.tensor([[-4.0867839e23, 2.0, 1e-3]]),
                 normalized_shape=[3], weight=None, bias=None, eps=0.03125)
    cpu = call.run("cpu")
    assert bool(cpu[0].isnan().all()) and bool((_composite_answer(call)[0] == 0).all())
    # out[0] neither's: left open; out[2] (rstd) the composite's 0, near float64's 2e-24
    other = (torch.full((1, 3), 7.0), cpu[1], _composite_answer(call)[2])
    ctx = _ctx(call)
    compare_outputs(ctx, call, cpu, other, values=True)
    assert any(c == VALUE_UNSPECIFIED and "ATen's composite answer apart" in line
               for c, line in ctx.infos)
