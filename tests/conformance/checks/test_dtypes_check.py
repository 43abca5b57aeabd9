"""The ``dtypes`` check: every dtype tried on purpose, with its outcome per dtype in the verdict.

Proven by the bugs it catches (tests/data/engine): a kernel that refuses int16 although CPU
supports it, a kernel that computes float64 inputs in float32. The forward check, which draws
one dtype per example at random, may or may not meet either at its default depth."""

from __future__ import annotations

import pytest
from test_injected_bugs import _buggy, _run

from conformance.core.verdicts import Verdict
from opdb import outcomes
from opdb.dtypes import DTYPE_NAMES

pytestmark = pytest.mark.usefixtures("reference")

#: A few examples per dtype, as `conformance run` draws them at its default depth.
DEPTH = 10


def test_kernel_refusing_int16_fails_listing_int16():
    v = _run(_buggy("buggy_no_int16"), "neg", "dtypes", max_examples=DEPTH)
    assert v.verdict == "fail", v.message
    assert v.category == outcomes.DTYPE_UNSUPPORTED, v.message
    assert v.message.startswith("refuses int16, which CPU supports"), v.message
    assert "Short" in v.message and "neg" in v.message
    assert v.dtype_support["int16"] == outcomes.DTYPE_REFUSED
    others = {d: o for d, o in v.dtype_support.items() if d != "int16"}
    assert set(others.values()) <= {outcomes.DTYPE_OK, outcomes.DTYPE_CPU_REJECTS}, others
    assert v.repro and "import buggy_no_int16" in v.repro and "torch.int16" in v.repro


def test_kernel_computing_float64_in_float32_is_caught_at_float64():
    """Caught since the sweeps draw shapes largest first (strategies.dtype_sweeps): before, exp's
    three float64 calls at this depth held one element or none, whose float32 results stayed
    within float64's tolerance (a strict xfail here until then)."""
    v = _run(_buggy("buggy_f64_as_f32"), "exp", "dtypes", max_examples=DEPTH)
    assert v.verdict == "fail", v.message
    assert v.category == "value", v.message
    assert v.message.startswith("at float64: "), v.message
    assert v.dtype_support["float64"] == outcomes.DTYPE_DIFFERS
    assert v.dtype_support["float32"] == outcomes.DTYPE_OK
    assert v.repro and "torch.float64" in v.repro


@pytest.mark.parametrize("overload", ["neg", "exp", "bitwise_and.Tensor", "add.Tensor"])
def test_reference_backend_passes_and_tries_every_dtype(overload):
    from conformance.core.backends import resolve

    v = _run(resolve("mlu", without=()), overload, "dtypes", max_examples=DEPTH)
    assert v.verdict == "pass", f"{v.message}\n{v.repro}"
    assert tuple(v.dtype_support) == DTYPE_NAMES  # every dtype reached, in order
    assert set(v.dtype_support.values()) <= {outcomes.DTYPE_OK, outcomes.DTYPE_CPU_REJECTS}


def test_cpu_support_is_cpus_own():
    """bitwise_and has no floating kernel on CPU: those dtypes are cpu_rejects, not failures."""
    from conformance.core.backends import resolve

    v = _run(resolve("mlu", without=()), "bitwise_and.Tensor", "dtypes", max_examples=DEPTH)
    assert v.dtype_support["float32"] == outcomes.DTYPE_CPU_REJECTS
    assert v.dtype_support["int16"] == outcomes.DTYPE_OK


def test_missing_kernel_at_every_dtype_is_unsupported():
    import kernels
    from conformance.core.backends import resolve

    kernels.install(without=["neg", "neg.out"])
    v = _run(resolve("mlu", without=("neg", "neg.out")), "neg", "dtypes", max_examples=DEPTH)
    assert v.verdict == "unsupported", v.message
    assert v.missing_op == "neg.out"


def test_dtype_support_round_trips_and_old_records_read():
    v = Verdict(overload="neg", check="dtypes", backend="mlu", verdict="fail",
                category=outcomes.DTYPE_UNSUPPORTED, message="refuses int16", examples=3,
                duration_s=0.1, seed=0, torch_version="x",
                dtype_support={"int16": outcomes.DTYPE_REFUSED, "int32": outcomes.DTYPE_OK})
    back = Verdict.from_json(v.to_json())
    assert back == v
    old = v.to_json()
    del old["dtype_support"]
    assert Verdict.from_json(old).dtype_support == {}


def test_dtype_error_recognised_by_name():
    from conformance.checks.dtypes import is_dtype_error

    assert is_dtype_error("NotImplementedError: \"neg_mlu\" not implemented for 'Short'", "int16")
    assert is_dtype_error("TypeError: MPS does not support int16 tensors", "int16")
    assert is_dtype_error("RuntimeError: unsupported dtype", "int16")
    assert not is_dtype_error("RuntimeError: shapes cannot be multiplied (2x3 and 4x5)", "int16")
    assert not is_dtype_error("RuntimeError: index 16 out of range", "int16")
    assert is_dtype_error("RuntimeError: expected scalar type Float but found Double", "float64")
    assert not is_dtype_error("TypeError: float() argument must be a string or a real number, "
                              "not 'complex'", "float32")
    assert not is_dtype_error("TypeError: an integer is required (got type bool)", "bool")
    assert is_dtype_error("RuntimeError: Unsupported data type for int16_t", "int16")


def test_sweep_pins_each_dtype_on_the_primary_tensors():
    from hypothesis import given, settings

    import opdb
    from conformance.core.signature import OpSignature
    from conformance.inputs.strategies import DtypeSweep, calls
    from opdb.opdata import load_hints

    sig = OpSignature.of(opdb.load()["masked_fill.Scalar"])
    hints = load_hints().for_op("masked_fill.Scalar")

    @settings(max_examples=5, database=None, deadline=None, derandomize=True)
    @given(calls(sig, hints, mode="dtypes"))
    def check(sweep: DtypeSweep) -> None:
        assert [d for d, _ in sweep.calls] == list(DTYPE_NAMES)
        for dtype, call in sweep.calls:
            values = dict(call.values)
            assert str(values["self"].dtype) == f"torch.{dtype}"
            assert str(values["mask"].dtype) == "torch.bool"  # hinted (hints.yaml): kept

    check()


def test_refusal_of_an_empty_input_is_not_a_dtype_gap():
    """CPU returns early on empty tensors, before its dtype dispatch: computing them is no
    evidence that CPU supports the dtype, so a backend refusing one is `raises`, not `refused`."""
    import torch

    import opdb
    from conformance.checks.dtypes import all_empty
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature

    sig = OpSignature.of(opdb.load()["neg"])
    assert all_empty(Call(sig=sig, values=(("self", torch.empty(0, 3)),)))
    assert not all_empty(Call(sig=sig, values=(("self", torch.ones(2)),)))


def test_verdict_does_not_depend_on_modules_loaded_before(tmp_path, monkeypatch):
    """Hypothesis draws constants found in the source of loaded modules: a module imported
    between two runs (a vendor's backend, another test) must not change the examples."""
    from conformance.core.backends import resolve

    backend = resolve("mlu", without=())
    first = _run(backend, "exp", "dtypes", max_examples=DEPTH)
    consts = ", ".join(f"{v}" for i in range(300) for v in (1.5 + i * 0.37, -(i * 7919) - 3))
    (tmp_path / "opconform_constants_probe.py").write_text(f"VALUES = [{consts}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("opconform_constants_probe")
    second = _run(backend, "exp", "dtypes", max_examples=DEPTH)
    assert (first.examples, first.message, first.dtype_support) == \
        (second.examples, second.message, second.dtype_support)


def _sweeps(overload: str, n: int = 3, seed: int = 0) -> list:
    """The first ``n`` sweeps the dtypes check draws for ``overload`` (as at the default depth)."""
    from hypothesis import given, settings
    from hypothesis import seed as hseed

    import opdb
    from conformance.core.signature import OpSignature
    from conformance.engine.hypothesis_hooks import no_local_constants
    from conformance.inputs.strategies import dtype_sweeps
    from opdb.opdata import load_hints

    no_local_constants()  # as the engine draws: the same sweeps whatever ran before in the process
    sig = OpSignature.of(opdb.load()[overload])
    got: list = []

    @hseed(seed)
    @settings(max_examples=n, database=None)
    @given(dtype_sweeps(sig, load_hints().for_op(overload)))
    def collect(sweep):
        got.append(sweep)

    collect()
    return got


def test_sweeps_hold_several_elements_and_forced_specials():
    """The check does not shrink: its shapes are drawn largest first (Hypothesis' first examples
    are its simplest: over half of the calls had one element or none), and each call is checked
    with a plain, a forced-NaN or a forced-+inf refill (strategies.SWEEP_REFILLS)."""
    import math

    calls = [c for seed in range(4) for s in _sweeps("nan_to_num", seed=seed) for _, c in s.calls]
    selves = [dict(c.values)["self"] for c in calls]
    several = sum(t.numel() >= 2 for t in selves)
    # drawn smallest first, over half held one element or none; largest first, 86-92 of 144
    # (Hypothesis' draws still vary a little with what ran before in the process)
    assert several > 0.5 * len(selves), f"{several} of {len(selves)} calls hold 2+ elements"
    floating = [t for t in selves if t.is_floating_point() and t.numel() >= 2]
    assert any(bool(t.isnan().any()) for t in floating)
    assert any(bool((t == math.inf).any()) for t in floating)


def _sort_nan_first(self, *, stable=None, dim=-1, descending=False):
    """sort.stable placing NaN first (ascending) instead of last."""
    import torch

    from kernels.registry import kernel

    values, indices = kernel("sort.stable")(self, stable=stable, dim=dim, descending=descending)
    if not self.is_floating_point() or descending or self.dim() == 0:
        return values, indices
    v, i = values.cpu(), indices.cpu()
    order = torch.sort((~v.isnan()).to(torch.int8), dim=dim, stable=True).indices
    return v.gather(dim, order).to(self.device), i.gather(dim, order).to(self.device)


def test_nan_order_of_sort_is_caught_at_the_default_depth():
    import kernels
    from conformance.core.backends import resolve

    kernels.install(overrides={"sort.stable": _sort_nan_first})
    backend = resolve("mlu", without=())
    kernels.install(overrides={"sort.stable": _sort_nan_first})
    v = _run(backend, "sort.stable", "dtypes", max_examples=DEPTH)
    assert v.verdict == "fail", v.message
    assert v.category == "value" and "nan" in v.message, v.message
    kernels.install(without=())
    ref = _run(resolve("mlu", without=()), "sort.stable", "dtypes", max_examples=DEPTH)
    assert ref.verdict == "pass", ref.message


def test_float32_precision_is_told_from_an_exact_float32_result():
    """A float64 result rounded to float32 is flagged; a backend whose only differing element
    is within float64's rounding of CPU's (complex128 pow of small integers: 5.5 where CPU gave
    5.500000000000005) is not, though 5.5 is a float32 value."""
    from types import SimpleNamespace

    import torch

    from conformance.checks.dtypes import _single_precision

    ctx = SimpleNamespace(hints=SimpleNamespace(values=True), to_host=lambda t: t)
    call = SimpleNamespace(describe=lambda: "op(float64[4])")
    exact = torch.tensor([0.1, 1 / 3, 2.0 / 7, 5.5], dtype=torch.float64)
    assert _single_precision(ctx, call, exact, exact.float().double()) is not None
    cpu = torch.tensor([5.500000000000005, 2.0], dtype=torch.float64)
    assert _single_precision(ctx, call, cpu, torch.tensor([5.5, 2.0], dtype=torch.float64)) \
        is None
