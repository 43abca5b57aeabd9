"""The ``out`` check: out= kernels with one deliberate bug each are caught with the category of
that bug, the repro runs on its own and shows it, and CPU against itself passes."""

from __future__ import annotations

import pytest
import torch
from test_injected_bugs import _buggy, _run, run_repro


def _mlu_with(overrides):
    import kernels
    from conformance.core.backends import resolve

    backend = resolve("mlu", without=())
    kernels.install(overrides=overrides)
    return backend


def _run_float32(backend, overload: str, max_examples: int = 30):
    """The out check on ``overload`` with float32 inputs only: each kind of failure is then one
    fingerprint (the engine keys failures by dtype too, and keeps a bounded number)."""
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import ArgHint, OpHints, load_hints, load_tolerances

    sig = OpSignature.of(opdb.load()[overload])
    hints = load_hints().for_op(overload)
    f32 = OpHints(args={**hints.args, **{a.name: ArgHint(dtypes=("float32",))
                                         for a in sig.args if a.base == "Tensor"}})
    return run_check(Item(sig, CHECKS["out"]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=f32, tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend))


def _run_forms(backend, overload: str, forms, **values):
    """The out check on ``overload`` with the given inputs (``values``: its arguments, the out
    among them) in each of ``forms`` (:class:`OutForm`), not drawn: a test about a form must
    not depend on Hypothesis drawing a call whose rotation (out_forms.forms_for) reaches it
    among the examples (a shift of the draw stream, such as a large size's extra choice,
    changed which forms a fixed seed's calls met)."""
    import dataclasses

    from hypothesis import strategies as st

    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.inputs.out_forms import with_form
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    sig = OpSignature.of(opdb.load()[overload])
    call = Call(sig=sig, values=tuple((a.name, values[a.name]) for a in sig.args
                                      if a.name in values))
    calls = [with_form(call, f) for f in forms]
    check = dataclasses.replace(CHECKS["out"], draw=lambda _sig, _hints: st.sampled_from(calls),
                                examples_factor=1)
    return run_check(Item(sig, check), backend,
                     settings=EngineSettings(max_examples=4 * len(calls), seed=0, database=None),
                     hints=load_hints().for_op(overload), tolerance_fn=load_tolerances(),
                     repro_fn=lambda c: snippet(c, backend))


def _categories(v):
    return {f.category for f in v.failures} or {v.category}


def test_fresh_result_and_untouched_out_is_caught_with_a_runnable_repro(reference, tmp_path):
    from opdb.outcomes import OUT_NOT_WRITTEN

    v = _run(_buggy("buggy_out_fresh"), "add.out", "out")
    assert v.verdict == "fail", v.message
    assert v.category == OUT_NOT_WRITTEN, v.message
    assert "add.out" in v.message and "was not written" in v.message
    script = tmp_path / "repro.py"
    script.write_text(v.repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "import buggy_out_fresh" in v.repro
    lines = proc.stdout.splitlines()
    cpu = next(ln for ln in lines if ln.startswith("cpu: out[0]"))
    dev = next(ln for ln in lines if ln.startswith("mlu: out[0]"))
    # the out as CPU leaves it (the result's shape) and as the bug leaves it (as it was given)
    assert cpu.split(" device=")[0].removeprefix("cpu") != dev.split(" device=")[0].removeprefix(
        "mlu"), proc.stdout


def test_a_copy_returned_instead_of_out_is_out_identity(monkeypatch):
    """A kernel that writes ``out`` but returns a copy (torch returns the out argument itself
    for a Python kernel, so the copy is made where the backend's answer is read)."""
    from conformance.checks import out as variants_out
    from conformance.core.backends import Backend
    from opdb.outcomes import OUT_IDENTITY

    real = variants_out.run_side

    def run_side(ctx, call, side, device, *, cpu):
        real(ctx, call, side, device, cpu=cpu)
        if not cpu and isinstance(side.result, torch.Tensor):
            side.result = side.result.clone()

    monkeypatch.setattr(variants_out, "run_side", run_side)
    cpu_again = Backend(name="cpu-copy", device="cpu", dispatch_key="CPU")
    v = _run(cpu_again, "add.out", "out")
    assert v.verdict == "fail" and v.category == OUT_IDENTITY, v.message
    assert "not the out= tensor 'out'" in v.message


def test_a_silent_resize_breaks_the_warning_and_strided_views(reference):
    """resize_(0) first (a common shortcut): CPU's resize warning is never given, and a
    strided-view out is re-laid out instead of written through to its base."""
    from conformance.inputs.out_forms import OutForm
    from kernels.registry import kernel
    from opdb.outcomes import OUT_RESIZE, OUT_VIEW

    ref = kernel("add.out")

    def add_out(self, other, *, alpha=1, out):
        out.resize_(0)
        return ref(self, other, alpha=alpha, out=out)

    forms = [OutForm("resize", grow=True), OutForm("resize", grow=False), OutForm("view")]
    v = _run_forms(_mlu_with({"add.out": add_out}), "add.out", forms,
                   self=torch.arange(6.0).reshape(2, 3), other=torch.ones(3),
                   out=torch.empty(0))
    assert v.verdict == "fail", v.message
    assert {OUT_RESIZE, OUT_VIEW} <= _categories(v), [f.key for f in v.failures]


def test_casting_into_any_out_dtype_and_taking_cpu_outs_are_caught(reference):
    """An out= kernel that computes, then copies into whatever ``out`` is: a dtype CPU refuses
    is cast into (out_dtype), and an out on cpu is taken by the backend's own kernel
    (out_device)."""
    from kernels.registry import kernel
    from opdb.outcomes import OUT_DEVICE, OUT_DTYPE

    ref = kernel("add.Tensor")

    def add_out(self, other, *, alpha=1, out):
        res = ref(self, other, alpha=alpha)
        out.resize_(res.shape)
        out.copy_(res)
        return out

    v = _run_float32(_mlu_with({"add.out": add_out}), "add.out")
    assert v.verdict == "fail", v.message
    assert {OUT_DTYPE, OUT_DEVICE} <= _categories(v), [f.key for f in v.failures]


@pytest.mark.parametrize("overload", ["add.out", "max.dim_max", "cat.out", "_softmax.out",
                                      "gelu_backward.grad_input", "zeros.out"])
def test_cpu_against_itself_passes(overload):
    from conformance.core.backends import resolve

    v = _run(resolve("cpu"), overload, "out")
    assert v.verdict == "pass", f"{v.id}: {v.message}\n{v.repro}"


@pytest.mark.parametrize("overload", ["max.dim_max", "zeros.out", "linspace.out"])
def test_reference_backend_passes(reference, overload):
    v = _run(reference, overload, "out")
    assert v.verdict == "pass", f"false failure on mlu: {v.id} {v.message}\n{v.repro}"
    assert v.examples > 0


def test_applies_to_out_overloads_with_tensor_outs_only():
    import opdb
    from conformance.checks.out import out_applies
    from conformance.core.signature import OpSignature

    db = opdb.load()
    assert out_applies(OpSignature.of(db["add.out"])) is None
    assert out_applies(OpSignature.of(db["max.dim_max"])) is None
    assert out_applies(OpSignature.of(db["gelu_backward.grad_input"])) is None
    assert out_applies(OpSignature.of(db["add.Tensor"])) == "not an out= overload"
    assert "Tensor[]" in out_applies(OpSignature.of(db["_foreach_add.Scalar_out"]))


def test_make_outs_builds_each_form():
    from conformance.inputs.out_forms import make_outs

    shapes, dtypes = [(2, 3), ()], [torch.float32, torch.int64]
    outs, bases = make_outs("fresh", shapes, dtypes, "cpu")
    assert [o.shape for o in outs] == [(0,), (0,)] and outs[0] is bases[0]
    outs, bases = make_outs("sized", shapes, dtypes, "cpu")
    assert [tuple(o.shape) for o in outs] == shapes and bool((outs[0] == 77).all())
    outs, _ = make_outs("resize", shapes, dtypes, "cpu")
    assert [tuple(o.shape) for o in outs] == [(7,), (2,)]
    outs, _ = make_outs("resize", shapes, dtypes, "cpu", grow=True)
    assert [tuple(o.shape) for o in outs] == [(1,), (2,)]
    outs, _ = make_outs("dtype", shapes, dtypes, "cpu", alt=torch.bool, index=3)
    assert [o.dtype for o in outs] == [torch.float32, torch.bool]
    outs, bases = make_outs("view", shapes, dtypes, "cpu")
    assert tuple(outs[0].shape) == (2, 3) and not outs[0].is_contiguous()
    assert outs[0]._base is bases[0] and tuple(bases[1].shape) == (2,)


def test_warnings_seen_reads_python_and_cpp_warnings():
    import warnings

    from conformance.inputs.out_forms import warnings_seen

    with warnings_seen() as seen:
        warnings.warn("from python", UserWarning, stacklevel=1)
        torch.ops.aten.add.out(torch.ones(2), torch.ones(2), out=torch.zeros(3))  # TORCH_WARN
    assert any("from python" in w for w in seen)
    assert any("was resized since it had shape" in w for w in seen), seen


def test_each_call_is_judged_in_chosen_forms_that_take_turns():
    """A drawn call is judged in ``fresh`` and three more forms, chosen by the call (the same
    call, the same forms: a replay is judged alike); over calls every form takes its turn,
    and the dtype form offers a dtype CPU will not cast into and one it casts into."""
    import opdb
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature
    from conformance.inputs.out_forms import FORMS, alt_dtypes, forms_for

    assert alt_dtypes("float32", 0)[0] in ("bool", "uint8", "int8", "int16", "int32", "int64")
    assert alt_dtypes("float32", 0)[1] in ("float16", "bfloat16", "float64", "complex64",
                                          "complex128")
    assert alt_dtypes("bool", 3) == [alt_dtypes("bool", 3)[0]] != ["bool"]  # none lower
    sig = OpSignature.of(opdb.load()["add.out"])
    seen = set()
    for n in range(2, 14):
        call = Call(sig, (("self", torch.ones(n)), ("other", torch.ones(n)),
                          ("out", torch.empty(0))))
        forms = forms_for(call, [torch.float32])
        assert forms == forms_for(call, [torch.float32])
        assert forms[0].kind == "fresh" and len(forms) == 4 and len(set(forms)) == 4
        seen |= {(f.kind, f.grow, f.dtype is not None and f.dtype.startswith(("float", "c")))
                 for f in forms}
    assert {k for k, _, _ in seen} == set(FORMS)
    assert ("resize", True, False) in seen and ("resize", False, False) in seen
    assert ("dtype", False, True) in seen and ("dtype", False, False) in seen


def test_refusal_types_are_owed_only_where_the_engine_owes_them(reference):
    """Both sides refuse an out of another dtype: where CPU's refusal is its own missing dtype
    kernel ('"nansum_cpu" not implemented for 'Long''), another exception type from the backend
    is no failure (as :func:`opdb.outcomes.error_type_owed` rules for every check); where CPU
    refuses for a reason (add.out's cast rule, a RuntimeError), a TypeError still fails."""
    from conformance.inputs.out_forms import OutForm
    from kernels.registry import kernel
    from opdb.outcomes import OUT_DTYPE

    nansum = kernel("nansum.out")

    def nansum_out(self, dim=None, keepdim=False, *, dtype=None, out):
        # refuses where CPU does: an empty input runs no kernel, and CPU fills any out then
        if self.dtype.is_floating_point and dtype is None and not (
                out.dtype.is_floating_point) and self.numel():
            raise RuntimeError(f"result type Float can't be cast to {out.dtype}")
        return nansum(self, dim, keepdim, dtype=dtype, out=out)

    into_ints = [OutForm("dtype", dtype=d) for d in ("int8", "int64", "bool")]
    planted = _mlu_with({"nansum.out": nansum_out})
    for self_ in (torch.arange(6.0).reshape(2, 3), torch.empty(0, 1)):
        v = _run_forms(planted, "nansum.out", into_ints, self=self_, keepdim=True,
                       out=torch.empty(0))
        assert v.verdict == "pass" and v.examples > 0, v.message
    v = _run_float32(planted, "nansum.out")
    assert v.verdict == "pass", v.message

    add = kernel("add.out")

    def add_out(self, other, *, alpha=1, out):
        if out.dtype != torch.promote_types(self.dtype, other.dtype) and not (
                out.dtype.is_floating_point or out.dtype.is_complex):
            raise TypeError("cannot cast")
        return add(self, other, alpha=alpha, out=out)

    v = _run_forms(_mlu_with({"add.out": add_out}), "add.out", [OutForm("dtype", dtype="int64")],
                   self=torch.arange(3.0), other=torch.ones(3), out=torch.empty(0))
    assert v.verdict == "fail" and OUT_DTYPE in _categories(v), v.message


def test_a_random_result_equal_to_the_old_out_is_no_unwritten_out(reference):
    """randint_like(low=0, high=2) into small bool outs: the result equals what the out held
    about one time in two, which proves nothing about whether the kernel wrote it (an
    all-checks run failed randint_like.low_dtype_out "out was not written", the next run
    passed it). Seeded ops' outs with fewer than SEEDED_WRITE_EVIDENCE elements are not judged
    on that; their shapes and dtypes still are."""
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import ArgHint, OpHints, load_hints, load_tolerances

    name = "randint_like.low_dtype_out"
    packaged = load_hints().for_op(name)
    hints = OpHints(args={**packaged.args, "low": ArgHint(choices=(0,)),
                          "high": ArgHint(choices=(2,))})
    for seed in range(6):
        v = run_check(Item(OpSignature.of(opdb.load()[name]), CHECKS["out"]), reference,
                      settings=EngineSettings(max_examples=20, seed=seed, database=None),
                      hints=hints, tolerance_fn=load_tolerances(),
                      repro_fn=lambda call: snippet(call, reference))
        assert not any("was not written" in f.message for f in v.failures), (seed, v.message)
        assert v.examples > 0, v.message


def test_a_fallback_refusing_a_cpu_out_with_a_cpu_key_message_is_no_missing_kernel(reference):
    """A vendor's CPU fallback: the op computed on CPU, copied back with
    ``_copy_from_and_resize(result, out)``; with ``out`` on CPU both arguments are CPU
    tensors and the dispatcher answers "Could not run 'aten::_copy_from_and_resize' with
    arguments from the 'CPU' backend". That refuses the device form, as it should: the item is
    judged (here it passes), never ``unsupported`` naming an op CPU lacks (issue 25, 5a)."""
    from kernels.registry import kernel

    ref = kernel("add.out")
    refused = []

    def add_out(self, other, *, alpha=1, out):
        if out.device.type == "cpu":  # the fallback's copy-back, as a vendor's C++ does it
            res = torch.add(self.cpu(), other.cpu(), alpha=alpha)
            try:
                return torch.ops.aten._copy_from_and_resize(res, out)
            except NotImplementedError as exc:
                refused.append(str(exc))
                raise
        return ref(self, other, alpha=alpha, out=out)

    v = _run_float32(_mlu_with({"add.out": add_out}), "add.out")
    assert refused and "from the 'CPU' backend" in refused[0], "the device form never ran"
    assert v.verdict != "unsupported" and v.missing_op is None, v.message
    assert v.verdict == "pass", f"{v.message}\n{v.repro}"


def test_a_missing_kernel_of_the_backend_is_still_unsupported(reference):
    """The same fallback, its copy-back missing on the backend's own key: ``unsupported``."""
    def add_out(self, other, *, alpha=1, out):
        raise NotImplementedError("Could not run 'aten::_copy_from_and_resize' with arguments "
                                  "from the 'mlu' backend. This could be because ...")

    v = _run_float32(_mlu_with({"add.out": add_out}), "add.out")
    assert (v.verdict, v.category, v.missing_op) == ("unsupported", "missing_kernel",
                                                     "_copy_from_and_resize"), v.message
