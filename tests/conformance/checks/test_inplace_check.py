"""The ``inplace`` check: each property of an in-place overload caught by the bug that breaks it
(backends in tests/data/engine), with its own category and a repro that shows it; the
reference backend and CPU itself pass the same overloads."""

from __future__ import annotations

import pytest
import torch
from test_injected_bugs import _buggy, _run, run_repro

from opdb import outcomes

# module -> [(overload, expected category)]
BUGS = {
    "buggy_inplace_copy": [("mul_.Tensor", outcomes.INPLACE_NOT_WRITTEN)],
    "buggy_inplace_view": [("mul_.Tensor", outcomes.INPLACE_VIEW)],
    "buggy_inplace_lenient": [("sub_.Tensor", outcomes.INPLACE_INPUT_CHANGED),
                              ("relu_", outcomes.INPLACE_VERSION)],
}


_VERDICTS: dict[tuple[str, str], object] = {}


def _verdict(module: str, overload: str):
    """The inplace verdict of ``overload`` on the buggy backend ``module`` (10 examples), run
    once per session: the category, refusal and repro tests read the same record."""
    if (module, overload) not in _VERDICTS:
        _VERDICTS[module, overload] = _run(_buggy(module), overload, "inplace", max_examples=10)
    return _VERDICTS[module, overload]


def _categories(v) -> set[str]:
    return {f.category for f in v.failures} | {v.category}


@pytest.mark.parametrize("module", sorted(BUGS))
@pytest.mark.usefixtures("reference")
def test_injected_inplace_bug_is_caught_with_its_category(module):
    for overload, category in BUGS[module]:
        v = _verdict(module, overload)
        assert v.verdict == "fail", f"{module}: {overload} -> {v.verdict}: {v.message}"
        assert category in _categories(v), f"{module}: {_categories(v)}: {v.message}"
        assert v.repro and f"import {module}" in v.repro
        assert overload.split(".")[0] in v.message


@pytest.mark.usefixtures("reference")
def test_refusal_cpu_makes_is_required_of_the_backend():
    """int64 -= float32 is refused by CPU (the result cannot be cast to self): a backend that
    truncates it into self is an ``inplace_refusal``, not a value failure."""
    v = _verdict("buggy_inplace_lenient", "sub_.Tensor")
    refusals = [f for f in v.failures if f.category == outcomes.INPLACE_REFUSAL]
    assert refusals, f"{_categories(v)}: {v.message}"
    assert "can't be cast" in refusals[0].message


@pytest.mark.parametrize("overload", ["mul_.Tensor", "div_.Tensor", "relu_",
                                      "_foreach_mul_.Scalar", "transpose_"])
@pytest.mark.usefixtures("reference")
def test_reference_backend_and_cpu_pass(overload):
    from conformance.core.backends import resolve

    for backend in (resolve("mlu", without=()), resolve("cpu", without=())):
        v = _run(backend, overload, "inplace", max_examples=5)
        assert v.verdict == "pass", f"{backend.name}: {v.id} {v.category}: {v.message}\n{v.repro}"
        assert v.examples > 0


@pytest.mark.usefixtures("reference")
def test_inplace_repro_runs_standalone_and_shows_self_unchanged(tmp_path):
    v = _verdict("buggy_inplace_copy", "mul_.Tensor")
    not_written = next(f for f in v.failures if f.category == outcomes.INPLACE_NOT_WRITTEN)
    script = tmp_path / "repro.py"
    script.write_text(not_written.repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "cpu: self after the call" in out and "mlu: self after the call" in out, out
    cpu_block, dev_block = out.split("mlu:", 1)
    cpu_self = cpu_block.split("cpu: self after the call", 1)[1].split("cpu:", 1)[0]
    dev_self = dev_block.split("self after the call", 1)[1].split("mlu:", 1)[0]
    assert cpu_self != dev_self, out


@pytest.mark.usefixtures("reference")
def test_view_repro_builds_self_as_a_view_of_a_base(tmp_path):
    v = _verdict("buggy_inplace_view", "mul_.Tensor")
    view = next(f for f in v.failures if f.category == outcomes.INPLACE_VIEW)
    assert "through self = base" in view.message
    assert "base = torch.tensor(" in view.repro and "'self': base" in view.repro, view.repro
    script = tmp_path / "repro.py"
    script.write_text(view.repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "cpu: base after the call" in proc.stdout and "mlu: base after the call" in proc.stdout


@pytest.mark.parametrize("kind", ["transpose", "slice", "offset", "offset0"])
def test_views_hold_the_drawn_values_and_alias_their_base(kind):
    from conformance.inputs.inplace_forms import make_base, make_view

    x = torch.arange(6.0).reshape(2, 3) if kind != "offset0" else torch.tensor(5.0)
    base = make_base(kind, x)
    view = make_view(kind, base)
    assert torch.equal(view, x)
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    view.add_(1)
    assert torch.equal(make_view(kind, base), x + 1)


def test_functional_sibling_pairs_inplace_with_functional_overloads():
    import opdb
    from conformance.checks.inplace import functional_sibling
    from conformance.core.signature import OpSignature

    db = opdb.load()
    for inplace, functional in [("add_.Tensor", "add.Tensor"), ("relu_", "relu"),
                                ("__iand__.Scalar", "__and__.Scalar"),
                                ("_foreach_mul_.List", "_foreach_mul.List")]:
        sibling = functional_sibling(OpSignature.of(db[inplace]))
        assert sibling is not None and sibling.name == functional


def test_applies_only_to_inplace_overloads():
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature

    db = opdb.load()
    check = CHECKS["inplace"]
    assert check.applies(OpSignature.of(db["add_.Tensor"])) is None
    assert check.applies(OpSignature.of(db["_foreach_add_.List"])) is None
    assert check.applies(OpSignature.of(db["add.Tensor"]))
    assert check.applies(OpSignature.of(db["add.out"]))


def test_variants_are_drawn_and_broadcast_ones_are_refused_by_cpu():
    """Every variant comes up for a pointwise binary overload; a ``broadcast`` variant is one CPU
    refuses, and its control (self at the broadcast shape) one CPU accepts or refuses for another
    reason (an alpha beyond int64 is an OverflowError before any shape is read)."""
    from hypothesis import given, settings

    import opdb
    from conformance.checks.inplace import control
    from conformance.core.signature import OpSignature
    from conformance.inputs.inplace_forms import inplace_calls, variant_of
    from conformance.inputs.strategies import draw_calls
    from opdb.opdata import load_hints

    sig = OpSignature.of(opdb.load()["add_.Tensor"])
    seen: set[str] = set()

    @settings(max_examples=20, database=None, deadline=None, derandomize=True)
    @given(draw_calls(sig, load_hints().for_op(sig.name), inplace_calls))
    def body(drawn):
        assert variant_of(drawn) == ("plain", None)
        kinds = [variant_of(c) for c in drawn.variants]
        assert len(kinds) == len(set(kinds)) and ("dtype" in {k for k, _ in kinds})
        for call in (drawn, *drawn.variants):
            check(call)

    def check(call):
        variant, detail = variant_of(call)
        seen.add(variant)
        if variant == "broadcast":
            with pytest.raises((RuntimeError, OverflowError)):
                call.run("cpu")
            plain = control(call, variant, detail)
            assert plain is not None
            try:
                plain.run("cpu")
            except (RuntimeError, OverflowError) as exc:  # another reason (a float alpha on ints)
                assert "broadcast" not in str(exc) and "doesn't match" not in str(exc), exc
        if variant == "dtype":
            assert detail is not None and detail in {"bool", "uint8", "int8", "int16", "int32",
                                                     "int64", "float16", "bfloat16", "float32",
                                                     "float64", "complex64", "complex128"}

    body()
    assert seen == {"plain", "view", "dtype", "broadcast"}


def test_categories_have_one_home():
    for name in (outcomes.INPLACE_IDENTITY, outcomes.INPLACE_NOT_WRITTEN,
                 outcomes.INPLACE_INPUT_CHANGED, outcomes.INPLACE_REFUSAL,
                 outcomes.INPLACE_VIEW, outcomes.INPLACE_VERSION):
        assert name in outcomes.FAIL_CATEGORIES and name in outcomes.FAIL_SEVERITY
