"""The ``autograd`` check: gradients against CPU's, and honest verdicts for the backward's own
failures (missing backward kernel, backward that raises, gradient present on one side only,
forward that already differs). Backends with injected backward bugs live in tests/data/engine."""

from __future__ import annotations

import pytest
from test_injected_bugs import _buggy, _run, run_repro


def _mlu():
    """The unmodified reference backend (the ``reference`` fixture installs and restores it)."""
    from conformance.core.backends import resolve

    return resolve("mlu", without=())


#: What a CNN and a transformer train through: conv, pools, norms, activations, softmax,
#: losses, matmul, embedding, views. The reference backend's gradients must agree on each.
MODEL_FAMILIES = (
    "convolution", "max_pool2d_with_indices", "avg_pool2d", "_adaptive_avg_pool2d",
    "native_layer_norm", "relu", "gelu", "silu", "tanh", "sigmoid", "hardtanh", "_softmax",
    "_log_softmax", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
    "mm", "bmm", "addmm", "linear", "embedding", "cat", "transpose.int", "view", "sum.dim_IntList",
    # the composite front ends a model calls (CompositeImplicitAutograd: differentiated through
    # what they decompose into); their shapes come from opdb/data/hints.yaml, without which
    # CPU refused every drawn call (skip/no_valid_inputs)
    "conv1d", "conv2d.padding", "conv3d", "conv_transpose1d", "conv_transpose2d.input",
    "conv_transpose3d.input", "conv_tbc", "batch_norm", "_batch_norm_impl_index", "group_norm",
    "instance_norm", "rms_norm", "max_pool3d", "adaptive_avg_pool3d", "nll_loss", "nll_loss2d",
    "nll_loss_nd",
    # recurrent cells (layouts in the hints) and the attention softmax
    "lstm_cell", "gru_cell", "_safe_softmax",
)


@pytest.mark.parametrize("overload", MODEL_FAMILIES)
@pytest.mark.usefixtures("reference")
def test_reference_backend_passes_autograd_on_model_families(overload):
    """Pass, or fail as its expected-failure entry (with the reason) says."""
    from conformance.store.expectations import expected_failures_path, load_for_backend

    v = _run(_mlu(), overload, "autograd", max_examples=5)
    if v.verdict == "fail":
        reason = load_for_backend(expected_failures_path("mlu")).reason_for(
            v.id, v.category, v.message)
        if reason is not None:
            pytest.xfail(reason)
    assert v.verdict == "pass", f"{v.id}: {v.verdict} {v.category}: {v.message}\n{v.repro}"
    assert v.examples > 0


@pytest.mark.usefixtures("reference")
def test_missing_backward_kernel_is_unsupported_naming_the_backward_op():
    import kernels
    from conformance.core.backends import resolve

    kernels.install(without=["_adaptive_avg_pool2d_backward"])
    backend = resolve("mlu", without=("_adaptive_avg_pool2d_backward",))
    assert _run(backend, "_adaptive_avg_pool2d", "forward").verdict == "pass"
    v = _run(backend, "_adaptive_avg_pool2d", "autograd")
    assert v.verdict == "unsupported", v.message
    assert v.category == "missing_kernel"
    assert v.missing_op == "_adaptive_avg_pool2d_backward", v.message
    assert v.repro and "without=['_adaptive_avg_pool2d_backward']" in v.repro
    assert "torch.autograd.grad" in v.repro


@pytest.mark.usefixtures("reference")
def test_autograd_repro_runs_standalone_and_shows_the_gradient_mismatch(tmp_path):
    backend = _buggy("buggy_grad_sign")
    v = _run(backend, "tanh", "autograd")
    assert v.verdict == "fail" and v.category == "grad_value", v.message
    script = tmp_path / "repro.py"
    script.write_text(v.repro or "")
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    grads = {ln.split(":", 1)[0]: ln.split(":", 2)[2] for ln in proc.stdout.splitlines()
             if ": grad of " in ln}
    assert set(grads) == {"cpu", "mlu"}, proc.stdout
    assert grads["cpu"] != grads["mlu"], proc.stdout  # the sign error, printed


@pytest.mark.usefixtures("reference")
def test_backward_that_raises_is_a_fail_naming_the_backward():
    import kernels

    def tanh_backward(grad_output, output):
        raise RuntimeError("tanh_backward: this vendor kernel is broken")

    backend = _mlu()  # resolving re-installs the reference kernels: override after it
    kernels.install(overrides={"tanh_backward": tanh_backward})
    v = _run(backend, "tanh", "autograd")
    assert v.verdict == "fail" and v.category == "backward_raises", v.message
    assert "TanhBackward0" in v.message and "tanh_backward" in v.message


@pytest.mark.usefixtures("reference")
def test_gradient_missing_on_the_backend_is_grad_presence():
    import kernels
    from kernels.registry import kernel

    real = kernel("native_layer_norm_backward")

    def no_bias_grad(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask):
        gi, gw, _ = real(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                         output_mask)
        return gi, gw, None

    backend = _mlu()  # resolving re-installs the reference kernels: override after it
    kernels.install(overrides={"native_layer_norm_backward": no_bias_grad})
    v = _run(backend, "native_layer_norm", "autograd", max_examples=30)
    assert v.verdict == "fail" and v.category == "grad_presence", v.message
    assert "grad of bias is None on mlu" in v.message


@pytest.mark.usefixtures("reference")
def test_forward_disagreement_is_reported_as_such_not_as_a_gradient():
    v = _run(_buggy("buggy_alpha"), "add.Tensor", "autograd")
    assert v.verdict == "fail" and v.category == "forward_differs", v.message
    assert "gradients not compared" in v.message


def test_applies_only_to_differentiable_overloads():
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.compare.gradients import grad_args
    from conformance.core.signature import OpSignature

    db = opdb.load()
    applies = CHECKS["autograd"].applies

    def sig(name: str) -> OpSignature:
        return OpSignature.of(db[name])

    assert applies(sig("mul.Tensor")) is None
    assert applies(sig("cat")) is None and grad_args(sig("cat")) == ("tensors",)
    assert applies(sig("add_.Tensor")) is None  # in-place: through a clone of a leaf
    assert "out_unsupported" in (applies(sig("mul.out")) or "")
    assert "not differentiable" in (applies(sig("argmax")) or "")
    # seeded-random: applies (gradient values compared where CPU's own repeat)
    assert applies(sig("native_dropout")) is None and applies(sig("normal_")) is None
    # embedding differentiates its weight only; indices are not differentiable
    assert grad_args(sig("embedding")) == ("weight",)


def test_categories_have_one_home():
    from opdb.outcomes import FAIL_CATEGORIES, FAIL_SEVERITY

    for name in ("grad_value", "grad_meta", "grad_presence", "backward_raises",
                 "forward_differs"):
        assert name in FAIL_CATEGORIES and name in FAIL_SEVERITY


@pytest.mark.usefixtures("reference")
@pytest.mark.parametrize("overload", ["reflection_pad3d", "replication_pad3d"])
def test_gradients_are_compared_with_tolerances_not_the_forwards_exactness(overload):
    # padding is data movement (its values compared exactly), but its backward sums the
    # gradients of every padded copy of an element, in an order CPU does not promise; the
    # schema cannot feed these (5-d input): the packaged corpus's OpInfo calls do
    from conformance.inputs import corpus

    if not corpus.usable_specs(_sig(overload), None, "autograd"):
        pytest.skip("no packaged corpus calls for this overload")
    v = _run(_mlu(), overload, "autograd", max_examples=5)
    assert v.verdict == "pass", v.message
    assert v.sources.get("corpus")


def _sig(name: str):
    import opdb
    from conformance.core.signature import OpSignature

    return OpSignature.of(opdb.load()[name])


def _run_hinted(backend, overload: str, args: dict, max_examples: int = 10):
    """``_run`` with the packaged hints of ``overload`` plus argument hints ``args``."""
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import OpHints, load_hints, load_tolerances

    packaged = load_hints().for_op(overload)
    hints = OpHints(args={**packaged.args, **args})
    return run_check(Item(OpSignature.of(opdb.load()[overload]), CHECKS["autograd"]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=hints, tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend))


def _dropout_backward(bug):
    import kernels
    from kernels.registry import kernel

    real = kernel("native_dropout_backward")
    backend = _mlu()  # resolving re-installs the reference kernels: override after it
    kernels.install(overrides={"native_dropout_backward": lambda g, mask, scale: bug(
        real(g, mask, scale))})
    return backend


@pytest.mark.usefixtures("reference")
def test_seeded_random_gradients_compared_where_cpu_repeats_them():
    """Seeded-random overloads get the check: the forward's random values are not compared;
    a gradient's values are wherever CPU's own gradient repeats on a second draw (dropout in
    eval mode, the samplers' zeros), so a sign error in dropout's backward is caught there."""
    from opdb.opdata import ArgHint

    for overload in ("native_dropout", "normal.Tensor_float", "uniform_"):
        v = _run(_mlu(), overload, "autograd", max_examples=5)
        assert v.verdict == "pass" and v.examples > 0, f"{overload}: {v.message}"
    evaluation = {"train": ArgHint(choices=(False,))}
    assert _run_hinted(_mlu(), "native_dropout", evaluation).verdict == "pass"
    v = _run_hinted(_dropout_backward(lambda g: -g), "native_dropout", evaluation)
    assert v.verdict == "fail" and v.category == "grad_value", v.message


@pytest.mark.usefixtures("reference")
def test_seeded_random_gradient_that_depends_on_the_draw_is_judged_on_its_metadata():
    """In training, dropout's gradient follows its random mask: CPU's differs from draw to draw,
    so its values are not compared (the pass says so: cpu_unstable), but the rest is: a
    backward returning a wrongly shaped gradient fails."""
    from opdb.opdata import ArgHint

    training = {"train": ArgHint(choices=(True,)), "p": ArgHint(choices=(0.5,)),
                "input": ArgHint(dtypes=("float32",), shape=(4, 8))}
    v = _run_hinted(_mlu(), "native_dropout", training)
    assert v.verdict == "pass" and v.category == "cpu_unstable", v.message
    assert "depends on the random draw" in v.message
    v = _run_hinted(_dropout_backward(lambda g: -g), "native_dropout", training)
    assert v.verdict == "pass", v.message  # a sign error is invisible against a random mask
    v = _run_hinted(_dropout_backward(lambda g: g[..., :1]), "native_dropout", training)
    assert v.verdict == "fail" and v.category == "backward_raises", v.message


@pytest.mark.usefixtures("reference")
def test_overload_returning_nothing_is_differentiated_through_what_it_writes(tmp_path):
    """``_foreach_div_.List(Tensor(a!)[] self, Tensor[] other) -> ()`` returns nothing: the
    tensors it wrote are its results, differentiated as such, and so in its repro."""
    import torch

    from conformance.core.call import AutogradCall, written, written_results
    from conformance.repro.snippet import snippet

    assert written_results(_sig("_foreach_div_.List")) == ("self",)
    assert written_results(_sig("add_.Tensor")) == ()  # it returns self
    v = _run(_mlu(), "_foreach_div_.List", "autograd", max_examples=5)
    assert v.verdict == "pass" and v.examples > 0, v.message
    call = AutogradCall(sig=_sig("_foreach_div_.List"),
                values=(("self", [torch.tensor([1.0, -2.0])]), ("other", [torch.tensor([4.0, 8.0])])))
    out = written(call).run("cpu")
    assert isinstance(out, tuple) and torch.equal(out[0], torch.tensor([0.25, -0.25]))
    repro = snippet(call, _mlu())
    assert "out = [*self]" in repro
    script = tmp_path / "repro.py"
    script.write_text(repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    grads = [ln for ln in proc.stdout.splitlines() if ": grad of other[0]:" in ln]
    assert len(grads) == 2 and "None" not in "".join(grads), proc.stdout


@pytest.mark.usefixtures("reference")
def test_no_derivative_on_cpu_is_said_not_drawn_for():
    """CPU's autograd implements no derivative for silu_backward (its kernel has no formula):
    the oracle cannot differentiate it on any input, so the item is a cpu_unsupported skip at
    once, not a no_valid_inputs after every draw."""
    v = _run(_mlu(), "silu_backward", "autograd", max_examples=5)
    assert (v.verdict, v.category) == ("skip", "cpu_unsupported"), v.message
    assert "implements no derivative" in v.message and "silu_backward" in v.message


def test_a_nested_result_gets_a_nested_upstream_gradient():
    """A nested output has no single shape: its upstream gradient is nested alike, one drawn
    gradient per component (it was a harness_error: ``NestedTensorImpl doesn't support sizes``),
    and CPU against itself differentiates _nested_tensor_from_tensor_list."""
    import torch

    from conformance.compare.gradients import upstream_grads
    from conformance.core.backends import resolve

    parts = [torch.randn(2, 3, requires_grad=True), torch.randn(1, 3, requires_grad=True)]
    out = torch.ops.aten._nested_tensor_from_tensor_list(parts)
    (up,) = upstream_grads([out])
    assert up.is_nested and [tuple(c.shape) for c in up.unbind()] == [(2, 3), (1, 3)]
    grads = torch.autograd.grad([out], parts, [up])
    assert [torch.equal(g, u) for g, u in zip(grads, up.unbind(), strict=True)] == [True, True]
    v = _run(resolve("cpu"), "_nested_tensor_from_tensor_list", "autograd", max_examples=5)
    assert v.verdict == "pass" and v.examples > 0, v.message


@pytest.mark.usefixtures("reference")
@pytest.mark.parametrize("materialized", [False, True])
def test_a_gradients_lazy_conj_bit_is_not_compared_its_values_are(monkeypatch, materialized):
    """mH's backward returns grad.mH(), a lazy conj() view on CPU. Whether a gradient comes
    back as such a view is the formula's bookkeeping, not an answer: a backend handing back
    the resolved values passes (it failed grad_meta on is_conj), and mlu's own gradient (a
    view since its views keep the conj bit; before, the bit was lost and the values were the
    unconjugated transpose) agrees with CPU's values."""
    import torch

    from opdb.opdata import ArgHint

    real = torch.autograd.grad

    def resolved(outputs, inputs, *args, **kwargs):
        grads = real(outputs, inputs, *args, **kwargs)
        if not materialized or inputs[0].device.type != "mlu":
            return grads
        return tuple(None if g is None else g.resolve_conj() for g in grads)

    monkeypatch.setattr(torch.autograd, "grad", resolved)
    v = _run_hinted(_mlu(), "mH", {"self": ArgHint(dtypes=("complex64", "complex128"))},
                    max_examples=5)
    assert v.verdict == "pass" and v.examples > 0, v.message


@pytest.mark.usefixtures("reference")
@pytest.mark.parametrize("bug", [None, 1 + 1e-4])
def test_a_summed_gradient_is_judged_against_cpus_own_rounding(bug):
    """conv2d's weight gradient at [2,3,32,32] * [8,3,7,7], stride 2 (the search reaches it)
    sums 512 products per element: mlu's summation order is 3e-5 from CPU's, beyond float32's
    atol 1e-5, though both are as close to the float64 gradient (tolerances.yaml's
    grad_error_factor). A weight gradient off by 1e-4 relative is still a grad_value fail."""
    import kernels
    from kernels.registry import kernel

    backend = _mlu()  # resolving re-installs the reference kernels: override after it
    if bug is not None:
        real = kernel("convolution_backward_overrideable")

        def scaled(*args):
            gi, gw, gb = real(*args)
            return gi, None if gw is None else gw * bug, gb

        kernels.install(overrides={"convolution_backward_overrideable": scaled})
    v = _run(backend, "conv2d", "autograd", max_examples=30)
    if bug is None:
        assert v.verdict == "pass" and v.examples > 0, v.message
    else:
        assert (v.verdict, v.category) == ("fail", "grad_value"), v.message
        assert "grad of weight" in v.message


@pytest.mark.usefixtures("reference")
def test_an_argument_autograd_refuses_to_differentiate_is_passed_plainly():
    """nll_loss is a decomposition, so every tensor argument is a candidate leaf, but its
    nll_loss_forward has no derivative for weight: CPU refuses a weight that requires grad
    ("not differentiable with respect to argument 'weight'"), which made 51 of 80 drawn
    examples refusals. The example is run again with weight a plain input; the other
    gradients are still compared (and counted)."""
    import torch

    import opdb
    from conformance.checks.autograd import verify_autograd
    from conformance.compare.context import Context
    from conformance.core.call import Call
    from conformance.core.inflight import Inflight
    from conformance.core.signature import OpSignature
    from opdb.opdata import load_hints, load_tolerances

    sig = OpSignature.of(opdb.load()["nll_loss"])
    call = Call(sig=sig, values=(("self", torch.randn(4, 3)), ("target", torch.tensor([0, 2, 1, 1])),
                                 ("weight", torch.rand(3) + 0.5), ("reduction", 1),
                                 ("ignore_index", -100)))
    ctx = Context(backend=_mlu(), sig=sig, hints=load_hints().for_op(sig.name),
                  tolerance_fn=load_tolerances(), inflight=Inflight(None), repro_fn=lambda c: "")
    verify_autograd(ctx, call)  # raised CpuRejected (the example was not counted)
    assert not ctx.cpu_errors, ctx.cpu_errors


@pytest.mark.usefixtures("reference")
def test_an_output_on_cpu_by_design_gets_its_upstream_gradient_on_cpu():
    """_to_cpu returns CPU tensors from device inputs: the upstream gradient goes where the
    output lives (it was sent to the device, and autograd refused it: 'invalid gradient at
    index 0 - expected device cpu but got mlu:0', backward_raises)."""
    v = _run(_mlu(), "_to_cpu", "autograd", max_examples=10)
    assert v.verdict == "pass", f"{v.category}: {v.message}\n{v.repro}"
    assert v.examples > 0
