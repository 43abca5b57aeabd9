"""The ``noncontiguous`` check: views built the same way on both sides, caught layout bugs with
their category and a repro that builds the same view, strides compared where CPU's are a
contract, and no false failure on CPU against itself or on the unmodified reference backend."""

from __future__ import annotations

import pytest
import torch
from test_injected_bugs import _buggy, run_repro
from test_injected_bugs import _run as _run_check

from conformance.compare.strides import stride_contract
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.layouts import LAYOUTS, LayoutCall, with_layouts

SHAPES = {"channels_last": (1, 3, 2, 4), "channels_last_offset": (1, 3, 2, 4)}


def _sig(name: str) -> OpSignature:
    import opdb

    return OpSignature.of(opdb.load()[name])


def _run(backend, overload: str, max_examples: int = 20):
    return _run_check(backend, overload, "noncontiguous", max_examples=max_examples)


# --------------------------------------------------------------------------- the views


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_each_layout_holds_the_values_and_really_is_a_view(reference, kind):
    layout = LAYOUTS[kind]
    t = torch.arange(24.0).reshape(SHAPES.get(kind, (2, 3, 4)))
    shape = tuple(t.shape)
    assert layout.fits(shape)
    want = t.narrow(2, 0, 1).expand(shape) if kind == "expanded" \
        else t.narrow(-2, 0, 1).expand(shape) if kind == "expanded_transposed" else t
    for device in (None, "mlu"):
        v = layout.build(t, device)
        assert v.device.type == (device or "cpu")
        assert tuple(v.shape) == shape and torch.equal(v.cpu(), want)
        assert not v.is_contiguous() or v.storage_offset() > 0, (kind, v.stride())
        if device is None:  # a base with a storage of its own: in-place ops never reach t
            assert v.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    cpu, dev = layout.build(t, None), layout.build(t, "mlu")
    assert cpu.stride() == dev.stride() and cpu.storage_offset() == dev.storage_offset()
    # the repro's source builds the very same view
    base = layout.base(t)
    built = eval(layout.code("base", shape), {"base": base})  # noqa: S307 - our own snippet
    assert built.stride() == layout.view(base, shape).stride() and torch.equal(built, want)


def test_composites_combine_two_layouts():
    t = torch.arange(24.0).reshape(1, 3, 2, 4)
    v = LAYOUTS["channels_last_offset"].build(t, None)
    assert v.is_contiguous(memory_format=torch.channels_last) and v.storage_offset() > 0
    e = LAYOUTS["expanded_transposed"].build(t, None)
    assert 0 in e.stride() and e.stride()[-1] == 1 and e.stride()[-2] == 0


def test_a_zero_dim_operand_at_an_offset_next_to_a_transposed_one():
    from conformance.inputs.layouts import layout_variants

    sig = _sig("add.Tensor")
    seen = set()
    for k in range(12):
        call = Call(sig, (("self", torch.ones(2, 3) * k), ("other", torch.tensor(float(k)))))
        for v in layout_variants(call):
            seen.add(v.layouts)
    assert any(dict(lay).get("other") == "offset" and dict(lay).get("self") not in
               (None, "offset") for lay in seen), seen


def test_gaps_hold_poison():
    t = torch.ones(2, 2)
    strided = LAYOUTS["strided"].base(t)
    assert strided.shape == (2, 4) and bool(strided[:, 1::2].isnan().all())
    ints = torch.tensor([[0, 1], [2, 3]])
    offset = LAYOUTS["offset"].base(ints)
    assert offset[3:].tolist() == [0, 1, 2, 3] and offset[:3].tolist() == [3, 2, 1]


def test_a_layout_that_does_not_fit_leaves_the_tensor_contiguous(reference):
    sig = _sig("neg")
    call = with_layouts(Call(sig=sig, values=(("self", torch.tensor([1.0, 2.0])),)),
                        (("self", "transposed"),))
    args, _ = call.split("mlu")
    assert args[0].is_contiguous() and args[0].device.type == "mlu"


def test_written_arguments_are_never_expanded():
    from conformance.inputs.layouts import layout_variants

    sig = _sig("add_.Tensor")
    seen = set()
    for shape in ((2, 3), (3,), (2, 1, 4)):
        call = Call(sig, (("self", torch.ones(shape)), ("other", torch.ones(shape))))
        for v in layout_variants(call):
            seen.update(v.layouts)
    assert ("self", "expanded") not in seen and ("other", "expanded") in seen
    assert {k for _, k in seen} >= {"transposed", "strided", "offset"}


def test_arguments_of_an_op_given_its_own_geometry_are_never_expanded(reference):
    """_reshape_alias reads self's storage through size/stride, which the hints fit to self's
    elements: an expanded self's storage is smaller, and ATen read past it (a false failure,
    mlu's readback refused the view); its other layouts keep the storage whole."""
    from conformance.inputs.layouts import layout_variants

    sig = _sig("_reshape_alias")
    call = Call(sig, (("self", torch.ones(2, 3)), ("size", [2, 3]), ("stride", [0, 1])))
    seen = {lay for v in layout_variants(call) for lay in v.layouts}
    assert ("self", "expanded") not in seen
    assert {k for _, k in seen} == {"transposed", "strided", "offset"}
    v = _run(reference, "_reshape_alias", max_examples=10)
    assert v.verdict == "pass", f"{v.message}\n{v.repro}"


def test_each_call_is_checked_in_every_layout_that_fits_it():
    """The variants are chosen, not drawn: each layout that fits some argument lays out every
    argument it fits, and with two tensor arguments one of them is also laid out alone; the
    order is a function of the call, so a replayed call is checked in the same order."""
    from conformance.inputs.layouts import layout_variants

    sig = _sig("mul.Tensor")
    call = Call(sig, (("self", torch.ones(1, 3, 2, 4)), ("other", torch.ones(4))))
    variants = layout_variants(call)
    layouts = [v.layouts for v in variants]
    every = {(("self", "transposed"),), (("self", "channels_last"),),
             (("self", "strided"), ("other", "strided")),
             (("self", "expanded"), ("other", "expanded")),
             (("self", "offset"), ("other", "offset"))}
    assert every <= set(layouts) and len(layouts) == len(set(layouts))
    assert any(len(lay) == 1 and lay not in every for lay in layouts)  # one argument alone
    assert layouts == [v.layouts for v in layout_variants(call)]  # same call, same order
    firsts = {layout_variants(Call(sig, (("self", torch.ones(2, i + 2)),
                                         ("other", torch.ones(2, i + 2)))))[0].layouts
              for i in range(12)}
    assert len(firsts) > 1  # rotated by the call: another call may start elsewhere
    scalar = Call(_sig("neg"), (("self", torch.tensor(1.0)),))
    assert [v.layouts for v in layout_variants(scalar)] == [(("self", "offset"),)]


def test_one_drawn_call_checks_several_layouts(reference):
    """An example is one drawn forward call checked in its variants in order, up to the first
    that fails, which the failure names (its repro and fingerprint are that variant's)."""
    from conformance.checks.noncontiguous import verify_variants
    from conformance.inputs.layouts import layout_variants

    backend = _buggy("buggy_contiguous")
    sig = _sig("mul.Tensor")
    call = Call(sig, (("self", torch.arange(6.0).reshape(2, 3)),
                      ("other", torch.arange(6.0).reshape(2, 3) + 1)))
    ctx = _context(backend, sig)
    with pytest.raises(Exception) as info:
        verify_variants(ctx, call)
    assert info.value.category == "value" and info.value.call is not None
    assert info.value.call.layouts == layout_variants(call)[0].layouts


def _context(backend, sig):
    from conformance.compare.context import Context
    from conformance.core.inflight import Inflight
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    return Context(backend=backend, sig=sig, hints=load_hints().for_op(sig.name),
                   tolerance_fn=load_tolerances(), inflight=Inflight(None),
                   repro_fn=lambda call: snippet(call, backend))


def test_stride_contracts():
    def contract(name: str, kind: str = "transposed") -> str | None:
        sig = _sig(name)
        first = sig.args[0].name
        return stride_contract(with_layouts(Call(sig=sig, values=()), ((first, kind),)))

    assert contract("transpose.int") == "a view of an input"
    assert contract("clone") is not None and "memory_format" in contract("clone")
    assert contract("neg") == "an elementwise op on dense non-overlapping inputs of one layout"
    assert contract("neg", "strided") is None  # gapped input: CPU promises nothing
    assert contract("add_.Tensor") == "an in-place result is self"
    assert contract("mm") is None and contract("sum") is None and contract("neg.out") is None


# --------------------------------------------------------------------------- injected bugs


def test_kernel_right_only_for_contiguous_input_is_caught(reference, tmp_path):
    backend = _buggy("buggy_contiguous")
    v = _run(backend, "mul.Tensor")
    assert v.verdict == "fail" and v.category == "value", v.message
    assert "mul.Tensor" in v.message and v.message.startswith("with ")
    kinds = {k for k in LAYOUTS if any(f" {k}," in f.message for f in v.failures)}
    # each view kind is its own failure; the search now goes on past the first failure, and
    # the same kind at other dtypes can take the distinct-failure slots first (MAX_DISTINCT)
    assert kinds, [f.message for f in v.failures]
    # the repro builds the same view on the device and shows CPU and mlu disagree
    assert "import buggy_contiguous" in v.repro and ".to(device)" in v.repro
    assert any(LAYOUTS[k].code("X", (2, 2)).removeprefix("X") in v.repro for k in kinds) or \
        "::2]" in v.repro or ".view(" in v.repro or ".expand(" in v.repro
    script = tmp_path / "repro.py"
    script.write_text(v.repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    cpu_block, dev_block = proc.stdout.split("\nmlu:", 1)
    assert "stride=" in cpu_block
    assert cpu_block.split("\n", 1)[1] != dev_block.split("\n", 1)[1], proc.stdout


def test_the_forward_checks_view_refill_catches_it(reference):
    """The same bug is invisible to contiguous inputs; the forward check lays one refill of
    each drawn call out as views (layouts.refill_views), so the default run sees it too."""
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    backend = _buggy("buggy_contiguous")
    sig = OpSignature.of(opdb.load()["mul.Tensor"])
    v = run_check(Item(sig, CHECKS["forward"]), backend,
                  settings=EngineSettings(max_examples=20, seed=0, database=None),
                  hints=load_hints().for_op(sig.name), tolerance_fn=load_tolerances(),
                  repro_fn=lambda call: snippet(call, backend))
    assert v.verdict == "fail" and v.category == "value", v.message
    assert v.message.startswith("with ") and ("strided" in v.message or "transposed" in v.message)
    assert ".to(device)" in v.repro  # the repro builds the same views


def test_refill_views_lay_out_every_fitting_argument_but_out():
    from conformance.inputs.layouts import refill_views

    sig = _sig("mm.out")
    c = Call(sig, (("self", torch.ones(2, 3)), ("mat2", torch.ones(3, 1)),
                   ("out", torch.empty(0))))
    v = refill_views(c)
    assert isinstance(v, LayoutCall) and dict(v.layouts) == {"self": "transposed",
                                                              "mat2": "strided"}
    single = Call(_sig("neg"), (("self", torch.ones(())),))
    assert refill_views(single) is single  # a 0-dim tensor has no non-contiguous view


def test_stride_bug_is_a_strides_failure_where_a_contract(reference):
    backend = _buggy("buggy_strides")
    v = _run(backend, "neg")
    assert v.verdict == "fail" and v.category == "strides", v.message
    assert "contract" in v.message and "stride()" in v.message
    assert "stride=" in v.repro
    # mm promises no strides: the same kind of difference is only informational
    v = _run(backend, "mm")
    assert v.verdict == "pass" and v.category == "strides_informational", v.message


def test_a_backend_without_strides_is_not_held_to_cpus(reference):
    """A backend whose record says it keeps no strides of its own (``Backend.strides`` false:
    XLA's lazy tensors, where 43 of 44 items failed on result strides) promises none: the same
    contiguous result for a transposed input is a pass noting it, values still compared."""
    import dataclasses

    backend = dataclasses.replace(_buggy("buggy_strides"), strides=False)
    v = _run(backend, "neg")
    assert (v.verdict, v.category) == ("pass", "strides_informational"), v.message
    assert "stride()" in v.message and "keeps no strides of its own" in v.message
    backend = dataclasses.replace(_buggy("buggy_alpha"), strides=False)
    v = _run_check(backend, "add.Tensor", "forward")  # a value bug is still one
    assert (v.verdict, v.category) == ("fail", "value"), v.message


def test_a_forward_failure_is_not_filed_again(reference):
    """A kernel wrong for contiguous input too is the forward check's failure: its examples are
    not counted here (the contiguous twin disagrees with CPU as well)."""
    backend = _buggy("buggy_alpha")  # add.Tensor ignores alpha, whatever the layout
    v = _run(backend, "add.Tensor")
    assert v.verdict != "fail", v.message


# --------------------------------------------------------------------------- no false failures


@pytest.mark.parametrize("overload", ["add.Tensor", "mul_.Tensor", "mm", "sum.dim_IntList",
                                      "transpose.int", "clone", "cat", "softmax.int",
                                      "neg", "where.self", "isnan", "isinf", "square"])
def test_cpu_against_itself_and_the_reference_backend_pass(reference, overload):
    from conformance.core.backends import resolve

    for backend in (resolve("cpu"), reference):
        v = _run(backend, overload, max_examples=10)
        assert v.verdict in ("pass", "skip"), f"{backend.name} {v.id}: {v.message}\n{v.repro}"
        if v.verdict == "skip":
            assert v.category == "no_valid_inputs", v.message
        if backend.name == "cpu" and v.verdict == "pass":
            assert v.category is None, v.message  # CPU's strides are CPU's


def test_a_refusal_cpu_skips_only_for_views_is_not_the_layouts(reference):
    """CPU refuses a 1-d input to batch norm when contiguous (IndexError) and, on its strided
    path, accepts it laid out as views; a backend that refuses it in both layouts is not wrong
    about the layout (it failed error_raises before)."""
    import torch

    op = torch.ops.aten._native_batch_norm_legit_no_training.default
    stats = torch.tensor([1.0, 2.0])
    one = torch.tensor([0.5])
    with pytest.raises(IndexError):
        op(stats, stats, stats, stats, stats, 0.0, 0.1)
    op(one.expand(2), stats, stats, stats, stats, 0.0, 0.1)  # accepted as an expanded view
    v = _run(reference, "_native_batch_norm_legit_no_training", max_examples=10)
    assert v.verdict != "fail", f"{v.message}\n{v.repro}"


def test_registered_and_described():
    from conformance.checks.noncontiguous import laid_out_calls
    from conformance.checks.registry import CHECKS
    from opdb import outcomes

    assert CHECKS["noncontiguous"].draw is laid_out_calls  # forward's calls, laid out
    assert outcomes.severity("strides") < outcomes.severity("value")
    assert "strides_informational" in outcomes.INFO_CATEGORIES
    assert LayoutCall.__mro__[1] is Call


def test_column_major_copies_keep_values_and_reverse_strides_of_every_dimension():
    """Arbitration's last reordering (conformance/compare/outputs.py): every 2+-dim argument as
    a column-major copy, size-1 dimensions included (the one layout 'transposed' never fits),
    out= left alone; on CPU the call computes the same values."""
    from conformance.inputs.layouts import column_major_call

    sig = _sig("mm.out")
    # small integers: every summation order gives the same float32 (random normals differed in
    # the last bit now and then, the column-major product taking another BLAS path)
    a, b = torch.tensor([[1.0, -2.0, 3.0]]), torch.tensor([[4.0], [5.0], [-6.0]])
    call = Call(sig, (("self", a), ("mat2", b), ("out", torch.empty(0))))
    stored = column_major_call(call, frozenset({"out"}))
    assert stored is not None
    got = dict(stored.values)
    assert got["self"].stride() == (1, 1) and got["mat2"].stride() == (1, 3)
    assert torch.equal(got["self"], a) and torch.equal(got["mat2"], b)
    assert got["out"] is dict(call.values)["out"]
    assert torch.equal(stored.run("cpu"), a @ b)
    assert column_major_call(Call(_sig("neg"), (("self", torch.ones(3)),)), frozenset()) is None


@pytest.mark.parametrize("overload", ["mul.Tensor", "where.self", "sum.dim_IntList"])
def test_laid_out_calls_have_no_size_0_side(overload):
    """The check's calls are forward's without an empty side (a view of an empty tensor holds
    nothing to misread; most layouts fit only sides past 1): every drawn call, not a seed's."""
    from hypothesis import HealthCheck, given, settings

    import opdb
    from conformance.checks.noncontiguous import laid_out_calls
    from conformance.core.signature import OpSignature
    from opdb.opdata import load_hints

    sig = OpSignature.of(opdb.load()[overload])

    @settings(max_examples=40, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(laid_out_calls(sig, load_hints().for_op(overload)))
    def drawn(call):
        shapes = [tuple(v.shape) for _, v in call.values if isinstance(v, torch.Tensor)]
        assert all(0 not in s for s in shapes), call.describe()

    drawn()
