"""Shape-only backends (``Backend.host_values`` false: meta, fake tensors): every check is judged
on metadata, agreement is a ``pass`` that says values were not compared, and a wrong shape,
dtype or error is still caught."""

from __future__ import annotations

import dataclasses
import importlib
import warnings

import pytest
import torch
from test_engine import run, sig_of

from conformance.compare.shapeonly import error_depends_on_values, refilled
from conformance.core.backends import resolve
from conformance.core.call import Call
from opdb.outcomes import METADATA_ONLY


def test_meta_declares_no_host_values():
    assert resolve("meta").host_values is False
    assert resolve("cpu").host_values is True


@pytest.mark.parametrize(("name", "check"), [
    ("add.Tensor", "forward"), ("add.Tensor", "broadcast"), ("mm", "forward"),
    ("sum.dim_IntList", "forward"), ("cat", "forward"), ("where.self", "broadcast"),
])
def test_meta_agreement_is_a_metadata_only_pass(name, check):
    v = run(name, check, resolve("meta"), k=6)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message
    assert v.examples > 0 and "values not compared" in v.message


def test_a_check_that_never_compares_values_passes_plainly_on_meta():
    v = run("mul.Tensor", "promotion", resolve("meta"))
    assert (v.verdict, v.category) == ("pass", None), v.message  # dtypes need no values


def test_injected_wrong_shape_meta_kernel_is_caught():
    """A meta kernel (torch.library registration on the Meta key) that transposes its result's
    shape: caught as ``shape`` on meta, and gone again once the library is destroyed."""
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        lib.impl("neg", lambda self: self.new_empty(tuple(reversed(self.shape))), "Meta")
    try:
        v = run("neg", "forward", resolve("meta"), k=20)
    finally:
        lib._destroy()
    assert (v.verdict, v.category) == ("fail", "shape"), v.message
    assert v.repro and "neg" in v.repro
    v = run("neg", "forward", resolve("meta"), k=6)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message


@pytest.fixture()
def shape_only_mlu():
    """The reference backend seen as a shape-only backend: the engine knows only the record."""
    kernels = importlib.import_module("kernels")
    mlu = resolve("mlu", without=())
    yield dataclasses.replace(mlu, host_values=False)
    kernels.install(without=())


def test_shape_only_wrapper_catches_a_wrong_shape_and_ignores_values(shape_only_mlu):
    import kernels
    from kernels.registry import kernel

    neg = kernel("neg")
    kernels.install(overrides={"neg": lambda self: neg(self).reshape(-1)})  # flattens
    v = run("neg", "forward", shape_only_mlu, k=20)
    assert (v.verdict, v.category) == ("fail", "shape"), v.message
    kernels.install(overrides={"neg": lambda self: neg(neg(self))})  # right shape, wrong values
    v = run("neg", "forward", shape_only_mlu, k=10)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message
    with_values = dataclasses.replace(shape_only_mlu, host_values=True)
    v = run("neg", "forward", with_values, k=10)
    assert (v.verdict, v.category) == ("fail", "value"), v.message


def test_shape_only_wrapper_still_owes_metadata_errors(shape_only_mlu):
    """A refusal CPU keeps whatever the values (non-broadcastable shapes) is owed by a
    shape-only backend too: a kernel that accepts it fails ``error_accepts``."""
    import kernels
    from kernels.registry import kernel

    mul = kernel("mul.Tensor")

    def lax(self, other):
        if isinstance(other, torch.Tensor) and other.dim() and self.dim() \
                and other.shape[-1] != self.shape[-1] and 1 not in (other.shape[-1],
                                                                    self.shape[-1]):
            return mul(self, self)  # no broadcast check
        return mul(self, other)

    kernels.install(overrides={"mul.Tensor": lax})
    v = run("mul.Tensor", "broadcast", shape_only_mlu, k=30)
    assert (v.verdict, v.category) == ("fail", "error_accepts"), v.message


def _call(name: str, **values) -> Call:
    sig = sig_of(name)
    return Call(sig=sig, values=tuple(values.items()))


def test_value_dependent_refusals_are_told_from_metadata_ones():
    def cpu(call: Call):
        return call.run("cpu")

    oob = _call("index_select", self=torch.ones(2, 3), dim=0, index=torch.tensor([5]))
    with pytest.raises(IndexError):
        cpu(oob)
    assert error_depends_on_values(oob, cpu)  # index 0 is fine
    singular = _call("linalg_cholesky", self=torch.zeros(3, 3))
    with pytest.raises(RuntimeError):
        cpu(singular)
    assert error_depends_on_values(singular, cpu)  # the identity is positive definite
    mismatch = _call("add.Tensor", self=torch.ones(2), other=torch.ones(3))
    with pytest.raises(RuntimeError):
        cpu(mismatch)
    assert not error_depends_on_values(mismatch, cpu)


def test_refilled_keeps_layout_and_scalars():
    base = torch.arange(24.0).reshape(4, 6)
    view = base.t()[1:, ::2]
    call = refilled(_call("add.Tensor", self=view, other=torch.ones(3).expand(5, 3), alpha=7),
                    "ones")
    got = dict(call.values)
    for new, old in ((got["self"], view), (got["other"], torch.ones(3).expand(5, 3))):
        assert (new.shape, new.stride(), new.storage_offset()) == \
            (old.shape, old.stride(), old.storage_offset())
        assert bool((new == 1).all())
    assert got["alpha"] == 7


def test_inplace_and_dtypes_checks_are_judged_on_metadata():
    meta = resolve("meta")
    v = run("abs_", "inplace", meta, k=4)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message
    v = run("sin", "dtypes", meta, k=2)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message
    assert set(v.dtype_support.values()) <= {"uncompared", "cpu_rejects"}, v.dtype_support
    assert "uncompared" in v.dtype_support.values()


def test_no_meta_kernel_is_unsupported_naming_the_op():
    """torch's Python dispatcher words a key with no kernel differently ("attempted to run this
    operator with Meta tensors, but there was no fake impl or Meta kernel registered"): still a
    missing kernel, so ``unsupported``, not an ``error_raises`` fail."""
    from conformance.core.verdicts import missing_op_from

    x = torch.empty(3, device="meta")
    with pytest.raises(NotImplementedError) as info:
        torch.ops.aten._cummin_helper(x, x, x.long(), 0)
    assert missing_op_from(info.value) == ("_cummin_helper", "Meta")
    assert missing_op_from(RuntimeError(str(info.value))) is None
    v = run("masked_select", "forward", resolve("meta"), k=4)
    assert (v.verdict, v.category, v.missing_op) == ("unsupported", "missing_kernel",
                                                     "masked_select"), v.message


def test_autograd_is_judged_on_metadata_with_the_about_to_run_marker(tmp_path):
    """The autograd check on meta: its device leaves are meta tensors, and the about-to-run
    marker's repro (written before every backend call when the run has an in-flight folder) is
    built from the CPU call, not read back from them (that was a harness_error on every item).
    Agreement is a metadata_only pass; a meta backward kernel whose gradient is on the wrong
    device fails (autograd itself sums a gradient to its input's shape where that shape expands
    to it, and casts its dtype: what is left to judge is device, presence and errors)."""
    from test_engine import HINTS, TOL

    from conformance.checks.registry import CHECKS
    from conformance.core.inflight import Inflight
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet

    meta = resolve("meta")

    def run_marked(name: str):
        return run_check(Item(sig_of(name), CHECKS["autograd"]), meta,
                         settings=EngineSettings(max_examples=4, database=None),
                         hints=HINTS.for_op(name), tolerance_fn=TOL,
                         repro_fn=lambda call: snippet(call, meta),
                         inflight=Inflight(tmp_path / "worker.json"))

    for name in ("sin", "mm", "relu"):
        v = run_marked(name)
        assert (v.verdict, v.category) == ("pass", METADATA_ONLY), (name, v.message)
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        lib.impl("threshold_backward",
                 lambda grad, self, threshold: torch.empty(grad.shape, dtype=grad.dtype), "Meta")
    try:
        v = run_marked("relu")
    finally:
        lib._destroy()
    assert v.verdict == "fail" and v.category in ("backward_raises", "grad_meta"), v.message
    assert v.repro and "relu" in v.repro
    # a kernel missing on the way (cov reaches aten::equal, which has no Meta kernel): the run
    # ends unsupported with a repro built from the CPU call (it was a pytest error, no verdict)
    v = run_marked("cov")
    assert (v.verdict, v.category, v.missing_op) == ("unsupported", "missing_kernel",
                                                     "equal"), v.message
    assert v.repro and "torch.ops.aten.cov" in v.repro


@pytest.mark.parametrize("name", ["mul.out", "add.out", "sin.out"])
def test_out_check_is_judged_on_metadata(name):
    """The out check on meta: its outs cannot be read back (their initial state, whether they
    were written, a view's other elements), so returned objects, resizing, dtype refusals and
    the outs' metadata are judged: a metadata_only pass (every example was a harness_error)."""
    v = run(name, "out", resolve("meta"), k=12)
    assert (v.verdict, v.category) == ("pass", METADATA_ONLY), v.message


def test_out_check_on_meta_finds_cats_refusal_of_another_type():
    """The out check tries a lower-category out dtype on every call: meta's cat.out refuses
    int8 into a bool out with a RuntimeError where CPU raises TypeError (a real difference of
    torch's meta kernel, judged on metadata)."""
    v = run("cat.out", "out", resolve("meta"), k=12)
    assert v.verdict == "fail" and "out_dtype" in {f.category for f in v.failures}, v.message


def test_out_check_on_meta_catches_a_fresh_result():
    """A meta out= kernel that computes into a new tensor and leaves out alone: the dispatcher
    hands back the out= argument itself (its schema aliases it), so what shows on meta is an
    out never resized to the result's shape (values cannot show it there)."""
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
        lib.impl("sin.out", lambda self, *, out: torch.empty_like(self), "Meta")
    try:
        v = run("sin.out", "out", resolve("meta"), k=12)
    finally:
        lib._destroy()
    assert v.verdict == "fail", v.message  # (its missing dtype check fails out_dtype too)
    assert "shape" in {f.category for f in v.failures}, v.failures
