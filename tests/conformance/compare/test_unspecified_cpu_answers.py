"""CPU answers that specify nothing are not held against a backend.

CPU accepting a call only because every input tensor is empty (its kernels return before their
dtype dispatch and argument checks): a backend that refuses such a call is not failed when CPU
refuses the same call made non-empty; a backend refusing what CPU computes on non-empty inputs
still fails. CPU refusing with a failed internal assertion (its own bug): a backend that computes
the call is not failed; one that refuses with CPU's ordinary refusal still is where CPU refuses
ordinarily."""

from __future__ import annotations

import pytest
import torch
from compare_calls import make_call as _call
from compare_calls import make_context

from conformance.compare.context import Context, non_empty
from conformance.core.call import Call
from conformance.core.verdicts import CheckFailure, CpuRejected
from opdb.outcomes import is_internal_assert

pytestmark = pytest.mark.usefixtures("reference")


def _ctx(call: Call) -> Context:
    return make_context(call, backend="mlu")


def test_non_empty_grows_only_all_empty_inputs_and_keeps_out_tensors():
    grown = non_empty(_call("neg.out", self=torch.empty(3, 0), out=torch.empty(0)))
    assert grown is not None
    values = dict(grown.values)
    assert tuple(values["self"].shape) == (3, 1) and values["out"].numel() == 0
    assert non_empty(_call("add.Tensor", self=torch.empty(0), other=torch.ones(2))) is None
    assert non_empty(_call("cat", tensors=[torch.empty(0), torch.empty(2, 0)], dim=0)) is not None


def test_refusing_what_cpu_accepts_only_when_empty_is_not_counted(monkeypatch):
    """geometric_ of an empty bool tensor: CPU returns it, CPU refuses bool[1]; a backend that
    gates the dtype first refuses it."""
    call = _call("geometric_", self=torch.empty(0, dtype=torch.bool), p=0.5)
    ctx = _ctx(call)
    ctx.run_cpu(call)
    run = Call.run

    def gated(self: Call, device: str) -> object:
        if device != "cpu":
            raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
        return run(self, device)

    monkeypatch.setattr(Call, "run", gated)
    with pytest.raises(CpuRejected):
        ctx.run_backend(call)
    assert any(line.startswith("accepted only empty inputs") for line in ctx.cpu_errors)


def test_answering_otherwise_what_cpu_answers_only_when_empty_is_not_counted():
    """_foreach_powsum of an empty int64 list: CPU answers int64, refuses int64 values."""
    from conformance.compare.outputs import compare_outputs

    call = _call("_foreach_powsum.Scalar", self=[torch.empty(0, dtype=torch.int64)], ord=0.5)
    ctx = _ctx(call)
    expected = ctx.run_cpu(call)
    with pytest.raises(CpuRejected):
        compare_outputs(ctx, call, expected, [torch.zeros((), dtype=torch.float32)], values=True)
    # the same disagreement on a call CPU computes at any size is a failure
    call = _call("neg", self=torch.empty(0))
    with pytest.raises(CheckFailure):
        compare_outputs(ctx, call, ctx.run_cpu(call), torch.empty(0, dtype=torch.float64),
                        values=True)


def test_refusing_an_empty_input_cpu_computes_when_non_empty_still_fails(monkeypatch):
    """A backend raising on empty float tensors of neg, which CPU computes at any size."""
    call = _call("neg", self=torch.empty(2, 0))
    ctx = _ctx(call)

    def refuse(device: str) -> object:
        raise RuntimeError("neg: empty tensors are not supported")

    monkeypatch.setattr(Call, "run", lambda self, device: refuse(device) if device != "cpu"
                        else torch.neg(dict(self.values)["self"]))
    ctx.run_cpu(call)
    with pytest.raises(CheckFailure) as info:
        ctx.run_backend(call)
    assert info.value.category == "error_raises"


ASSERT = ('!needs_dynamic_casting<func_t>::check(iter) INTERNAL ASSERT FAILED at "/__w/pytorch/'
          'pytorch/aten/src/ATen/native/cpu/Loops.h":311, please report a bug to PyTorch. ')


def test_internal_assert_recognised():
    assert is_internal_assert(ASSERT)
    assert not is_internal_assert("index_select(): self and result must have the same scalar type")


def test_computing_what_cpu_refuses_by_internal_assert_is_not_counted():
    """ldexp.out(bfloat16, uint8, out=float32): CPU trips an internal assertion, mlu computes."""
    call = _call("ldexp.out", self=torch.tensor(2.9, dtype=torch.bfloat16),
                 other=torch.tensor(4, dtype=torch.uint8), out=torch.empty(0))
    ctx = _ctx(call)
    _, cpu_exc = ctx.run_cpu_or_error(call)
    assert cpu_exc is not None and is_internal_assert(str(cpu_exc))
    with pytest.raises(CpuRejected):
        ctx.expect_same_error(call, cpu_exc)
    # an ordinary refusal is still held against a backend that computes
    with pytest.raises(CheckFailure) as info:
        ctx.expect_same_error(call, RuntimeError("ldexp: unsupported dtypes"))
    assert info.value.category == "error_accepts"


def test_cpu_answer_that_depends_on_the_layout_accepts_either_answer():
    """float32 fmod by the smallest subnormal: CPU's vectorized loop (contiguous, 16+ elements)
    answers NaN, its scalar loop (step-2 views) the correct 0. A backend giving the scalar
    loop's answer agrees (noted ``cpu_unstable``); an answer CPU gives in no layout still fails."""
    from conformance.compare.outputs import compare_outputs

    tiny = -1.401298464324817e-45
    call = _call("fmod.Scalar", self=torch.linspace(-7.5, 7.5, 32), other=tiny)
    ctx = _ctx(call)
    expected = ctx.run_cpu(call)
    assert bool(expected.isnan().all())  # CPU's vectorized answer
    correct = torch.linspace(-7.5, 7.5, 32) * 0.0  # IEEE: +-0 with the sign of self
    compare_outputs(ctx, call, expected, correct.to("mlu"), values=True)
    assert any("step-2 views" in line for line in ctx.cpu_unstable_calls)
    with pytest.raises(CheckFailure):
        compare_outputs(ctx, call, expected, torch.ones(32, device="mlu"), values=True)


def test_complex64_pow_is_compared_within_cpus_own_rounding():
    """CPU's complex64 pow is exp(y * log(x)): pow(1+1.3j, 64) is 1.5e-6 off the correctly
    rounded answer, beyond complex64's default rtol (tolerances.yaml); a wrong answer still
    fails."""
    from conformance.compare.outputs import compare_outputs

    base = torch.tensor(complex(1.0000001192092896, 1.2997616529464722), dtype=torch.complex64)
    call = _call("pow.Tensor_Scalar", self=base, exponent=64)
    ctx = _ctx(call)
    expected = ctx.run_cpu(call)
    exact = (base.to(torch.complex128) ** 64).to(torch.complex64)
    assert not torch.allclose(exact, expected, rtol=1.3e-6, atol=1e-5)
    compare_outputs(ctx, call, expected, exact.to("mlu"), values=True)
    with pytest.raises(CheckFailure):
        compare_outputs(ctx, call, expected, (exact * 1.001).to("mlu"), values=True)


def test_cpu_internal_size_overflow_binds_no_backend():
    """_native_batch_norm_legit.no_stats of a 0-dim input: CPU computes a size of -1 and c10's
    SmallVector refuses capacity 2**64 - 1 (a ValueError); mlu refuses with its RuntimeError:
    the exception type is not owed."""
    assert not is_internal_assert("SmallVector unable to grow. Requested capacity (5) is larger "
                                  "than maximum value for size type")
    call = _call("_native_batch_norm_legit.no_stats", input=torch.tensor(1.0), weight=None,
                 bias=None, training=True, momentum=0.1, eps=1e-5)
    ctx = _ctx(call)
    _, cpu_exc = ctx.run_cpu_or_error(call)
    assert isinstance(cpu_exc, ValueError) and is_internal_assert(str(cpu_exc)), cpu_exc
    ctx.expect_same_error(call, cpu_exc)  # mlu's RuntimeError: not an error_type failure
