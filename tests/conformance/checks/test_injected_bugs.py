"""Injected bugs: the reference backend with one wrong kernel each must be caught, with the right
category, and the unmodified reference backend must pass the same (overload, check) pairs."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent.parent.parent / "data" / "engine"

# module -> [(overload, check, expected category)]
BUGS = {
    "buggy_promotion": [("add.Tensor", "promotion", "dtype")],
    "buggy_broadcast": [("mul.Tensor", "broadcast", "shape")],
    "buggy_alpha": [("add.Tensor", "forward", "value")],
    "buggy_raises": [("sub.Tensor", "forward", "error_raises")],
    "buggy_accepts": [("sub.Tensor", "promotion", "error_accepts")],
    "buggy_errtype": [("sub.Tensor", "promotion", "error_type")],
    "buggy_zerosize": [("neg", "forward", "shape")],
    # a float64 -> float32 conversion rounding toward zero: the dtypes check's pair sweep
    "buggy_to_truncate": [("_to_copy", "dtypes", "value")],
    # an out= kernel reading its out's old contents when the out already fits: the forward
    # check's pre-sized out refill (checks.SIZED_OUT_REFILL)
    "buggy_out_reads_out": [("clamp.out", "forward", "value")],
    # backward kernels (the autograd check): sign error, upstream gradient ignored, swapped
    "buggy_grad_sign": [("tanh", "autograd", "grad_value")],
    "buggy_grad_ones": [("relu", "autograd", "grad_value")],
    "buggy_grad_swap": [("native_layer_norm", "autograd", "grad_value")],
    # an overload returning nothing (-> ()) whose kernel writes nothing: the value checks
    # compare what it wrote (they compared None with None, and passed it)
    "buggy_writes_nothing": [("_foreach_neg_", "forward", "value"),
                             ("_foreach_neg_", "dtypes", "value"),
                             ("_foreach_neg_", "noncontiguous", "value")],
}


def _run(backend, overload: str, check: str, max_examples: int = 20):
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    sig = OpSignature.of(opdb.load()[overload])
    return run_check(Item(sig, CHECKS[check]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=load_hints().for_op(overload), tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend))


def _buggy(module: str):
    """Bring up ``privateuse1:MODULE`` from tests/data/engine (its import installs the bug)."""
    import kernels
    from conformance.core.backends import resolve

    if str(DATA) not in sys.path:
        sys.path.insert(0, str(DATA))
    mod = importlib.import_module(module)
    backend = resolve(f"privateuse1:{module}", without=())
    kernels.install(overrides=mod.OVERRIDES)  # again: the import ran once per process
    return backend


def run_repro(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a failure's repro ``script`` as a user would, in a fresh interpreter that can import
    the buggy backends of tests/data/engine and this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DATA), os.getcwd(),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


@pytest.mark.parametrize("module", sorted(BUGS))
def test_injected_bug_is_caught_with_its_category(reference, module):
    backend = _buggy(module)
    for overload, check, category in BUGS[module]:
        v = _run(backend, overload, check)
        assert v.verdict == "fail", f"{module}: {overload}::{check} -> {v.verdict}: {v.message}"
        # the bug's failure among the item's distinct failures (the reference backend's
        # documented complex32 limitation may be found too, and first)
        found = {v.category} | {f.category for f in v.failures}
        assert category in found, f"{module}: {found} lacks {category}: {v.message}"
        assert v.repro and f"import {module}" in v.repro
        assert overload.split(".")[0] in v.message
        if module == "buggy_writes_nothing":  # named by the argument it failed to write
            value = next(f for f in v.failures if f.category == category)
            assert re.search(r"\bself\[\d+\] values differ", value.message), value.message


#: The reference backend's documented limitation (README): float16 with a complex operand
#: promotes to complex32, which mlu refuses; drawn promotion operands can reach it.
DOCUMENTED = "does not support dtype torch.complex32"


def test_reference_backend_passes_the_same_pairs(reference):
    for cases in BUGS.values():
        for overload, check, _ in cases:
            v = _run(reference, overload, check)
            if v.verdict == "fail" and DOCUMENTED in v.message:
                continue
            assert v.verdict == "pass", f"false failure on mlu: {v.id} {v.message}\n{v.repro}"
            assert v.examples > 0


def test_repro_runs_standalone_and_shows_the_mismatch(reference, tmp_path):
    backend = _buggy("buggy_alpha")
    v = _run(backend, "add.Tensor", "forward")
    assert v.verdict == "fail"
    script = tmp_path / "repro.py"
    script.write_text(v.repro)
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    cpu = [ln for ln in out.splitlines() if ln.startswith("cpu:")]
    dev = [ln for ln in out.splitlines() if ln.startswith("mlu:")]
    assert cpu and dev, out
    # both results printed, and they differ (the bug: alpha ignored)
    cpu_block = out.split("mlu:")[0]
    dev_block = "mlu:" + out.split("mlu:", 1)[1]
    assert cpu_block.replace("cpu:", "") != dev_block.replace("mlu:", ""), out


def test_cpu_dtype_gap_is_informational_not_a_fail(reference):
    """CPU refuses bool threshold only for lack of a kernel; a backend that computes it passes,
    and the verdict says so (category ``cpu_dtype_gap``); the reference backend, which refuses
    as CPU does, passes without the note."""
    from opdb.outcomes import CPU_DTYPE_GAP

    ref = _run(reference, "threshold", "promotion", max_examples=30)
    assert ref.verdict == "pass" and ref.category is None, ref.message
    v = _run(_buggy("wider_threshold"), "threshold", "promotion", max_examples=30)
    assert v.verdict == "pass", v.message
    assert v.category == CPU_DTYPE_GAP, v.message
    assert "not implemented for 'Bool'" in v.message


def test_dtype_gap_recognises_only_dtype_refusals():
    from opdb.outcomes import is_dtype_gap

    assert is_dtype_gap('"threshold_cpu" not implemented for \'Bool\'')
    assert is_dtype_gap('RuntimeError: "addmm_impl_cpu_" not implemented for \'Half\'')
    # a template kernel (conv1d's dilated path): its refusal of uint8 was held against a backend
    assert is_dtype_gap('"slow_conv_dilated<>" not implemented for \'Byte\'')
    assert not is_dtype_gap("output with shape [1] doesn't match the broadcast shape [2]")
    assert not is_dtype_gap('"foo" not implemented for \'Sparse\'')


# ------------------------------------------------- refusals whose exception type is not owed


def _documented(category: str, message: str) -> str | None:
    """mlu's documented complex32 gap (README) as an expected failure: the promotion check's
    0-dim dtype sweep reaches it in any float16 op with a complex operand."""
    return "mlu has no complex32" if DOCUMENTED in message else None


def _run_overridden(overload: str, check: str, fn, *, hints=None, max_examples: int = 30,
                    expected=None, seed: int = 0):
    """``overload::check`` on the reference backend with ``fn`` as its kernel (restored after)."""
    import kernels
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.backends import resolve
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    backend = resolve("mlu", without=())
    kernels.install(overrides={overload: fn})
    try:
        return run_check(Item(OpSignature.of(opdb.load()[overload]), CHECKS[check]), backend,
                         settings=EngineSettings(max_examples=max_examples, seed=seed,
                                                 database=None),
                         hints=hints or load_hints().for_op(overload),
                         tolerance_fn=load_tolerances(),
                         repro_fn=lambda call: snippet(call, backend), expected=expected)
    finally:
        kernels.install()


def test_cpu_dtype_gap_refused_otherwise_is_not_an_error_type_fail(reference):
    """CPU refuses bool threshold only for lack of its kernel (NotImplementedError); a backend
    that refuses it by another check first (TypeError) owes CPU's type no more than it owes
    CPU's gap: a pass. The same backend raising where CPU computes still fails."""
    import torch

    from kernels.registry import kernel

    ref = kernel("threshold")

    def threshold(self, threshold, value):
        if self.dtype == torch.bool:
            raise TypeError("threshold: value must be a number of self's kind")
        return ref(self, threshold, value)

    v = _run_overridden("threshold", "promotion", threshold)
    assert v.verdict == "pass" and v.examples > 0, v.message

    def threshold_no_int8(self, threshold, value):
        if self.dtype in (torch.bool, torch.int8):
            raise TypeError("threshold: value must be a number of self's kind")
        return ref(self, threshold, value)

    v = _run_overridden("threshold", "promotion", threshold_no_int8)
    assert v.verdict == "fail", v.message
    assert "error_raises" in {f.category for f in v.failures}, [f.message for f in v.failures]


def test_backend_dtype_gap_where_cpu_refuses_otherwise_is_not_an_error_type_fail(reference):
    """sub of two bool tensors: CPU refuses with a RuntimeError (use ``^``); a backend without a
    bool kernel refuses with ATen's dtype-gap NotImplementedError: both refuse, and the type is
    not owed. Another exception type with another reason still fails (buggy_errtype above)."""
    import torch

    from kernels.registry import kernel

    ref = kernel("sub.Tensor")

    def sub(self, other, *, alpha=1):
        if isinstance(other, torch.Tensor) and self.dtype == other.dtype == torch.bool:
            raise NotImplementedError("\"sub_mlu\" not implemented for 'Bool'")
        return ref(self, other, alpha=alpha)

    v = _run_overridden("sub.Tensor", "promotion", sub, max_examples=20, expected=_documented)
    unexpected = [f.message for f in v.failures if f.expected is None]
    assert v.verdict in ("pass", "fail") and v.examples > 0 and not unexpected, unexpected


def test_cpu_specific_refusal_binds_no_other_backend(reference):
    """CPU refuses _log_softmax(float16, half_to_float=True) "on CPU" (CUDA computes it, in
    float32): a backend that computes it is not failed ``error_accepts``; one that refuses with
    another type is not failed ``error_type``."""
    import torch

    from kernels.registry import kernel
    from opdb.opdata import ArgHint, OpHints, load_hints
    from opdb.outcomes import is_cpu_specific

    assert is_cpu_specific("softmax with half to float conversion is not supported on CPU")
    assert is_cpu_specific("mixed dtype (CPU): expect parameter to have scalar type of Float")
    assert is_cpu_specific("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    # oneDNN's refusal (gelu_backward of an int64 grad): CPU computes it with oneDNN off
    assert is_cpu_specific("itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor "
                           "inputLong")
    with torch.backends.mkldnn.flags(enabled=False):
        assert torch.ops.aten.gelu_backward(torch.ones(2, dtype=torch.int64),
                                            torch.ones(2)).dtype == torch.float32
    assert not is_cpu_specific("Expected all tensors to be on the same device, but found at "
                               "least two devices, mlu:0 and cpu!")
    assert not is_cpu_specific("expected scalar type Float but found Half")
    ref = kernel("_log_softmax")
    hints = load_hints().for_op("_log_softmax")
    half = OpHints(args={**hints.args, "self": ArgHint(dtypes=("float16",)),
                         "half_to_float": ArgHint(choices=(True, False))})

    def computes(self, dim, half_to_float):
        if half_to_float and self.dtype == torch.float16:
            return torch.log_softmax(self.cpu().float(), dim).to(self.device)
        return ref(self, dim, half_to_float)

    def refuses(self, dim, half_to_float):
        if half_to_float and self.dtype == torch.float16:
            raise NotImplementedError("half_to_float is not supported")
        return ref(self, dim, half_to_float)

    for fn in (computes, refuses):
        v = _run_overridden("_log_softmax", "promotion", fn, hints=half)
        assert v.verdict == "pass" and v.examples > 0, (fn.__name__, v.message)


def test_refused_cpu_operand_is_judged_on_the_device(reference):
    """A backend whose mul refuses a 0-dim CPU tensor operand (ATen's device check, as CUDA's
    logaddexp2 or gcd do) is judged on the same call with the operand on its device: a pass
    that notes ``cpu_operand_refused``; a wrong result dtype there still fails ``dtype``."""
    import torch

    from kernels.registry import kernel
    from opdb.outcomes import CPU_OPERAND_REFUSED

    ref = kernel("mul.Tensor")

    def refuses_cpu(self, other):
        if isinstance(other, torch.Tensor) and other.device.type == "cpu":
            raise RuntimeError("Expected all tensors to be on the same device, but got other "
                               "is on cpu, different from other tensors on mlu:0")
        return ref(self, other)

    v = _run_overridden("mul.Tensor", "promotion", refuses_cpu, expected=_documented)
    # the 0-dim sweep can reach mlu's documented complex32 gap (an expected fail, whose verdict
    # carries no informational category); the refusal itself is never a failure
    assert not [f.message for f in v.failures if f.expected is None], v.message
    assert not any("same device" in f.message for f in v.failures), v.message
    if v.verdict == "pass":
        assert v.category == CPU_OPERAND_REFUSED and "same device" in v.message, v.message

    def refuses_cpu_narrows(self, other):
        out = refuses_cpu(self, other)
        return out.to(torch.int32) if out.dtype == torch.int64 else out

    v = _run_overridden("mul.Tensor", "promotion", refuses_cpu_narrows)
    assert v.verdict == "fail", v.message
    assert "dtype" in {f.category for f in v.failures}, [f.message for f in v.failures]


# --------------------------------------------------------------------------- distinct failures


def _two_bugs(self, other, *, alpha=1):
    """add.Tensor with two unrelated bugs: float16 ignores alpha; int64 results come back int32."""
    import torch

    from kernels.registry import kernel

    ref = kernel("add.Tensor")
    if isinstance(self, torch.Tensor) and self.dtype == torch.float16:
        return ref(self, other)
    out = ref(self, other, alpha=alpha)
    return out.to(torch.int32) if out.dtype == torch.int64 else out


def _run_two_bugs(expected=None, k: int = 30, shapes: str | None = None):
    import kernels
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.backends import resolve
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.dtypes import DTYPE_NAMES
    from opdb.opdata import load_hints, load_tolerances

    kernels.install(overrides={"add.Tensor": _two_bugs})
    backend = resolve("mlu", without=(), shapes=shapes)
    kernels.install(overrides={"add.Tensor": _two_bugs})
    sig = OpSignature.of(opdb.load()["add.Tensor"])
    hints = load_hints().for_op("add.Tensor")
    from opdb.opdata import ArgHint, OpHints

    # both bugs reachable: only float16 and int64 drawn
    two = OpHints(args={**hints.args, "self": ArgHint(dtypes=("float16", "int64"))})
    assert set(two.args["self"].dtypes) <= set(DTYPE_NAMES)
    return run_check(Item(sig, CHECKS["forward"]), backend,
                     settings=EngineSettings(max_examples=k, seed=0, database=None),
                     hints=two, tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend), expected=expected)


def test_every_distinct_failure_is_recorded_and_shrunk_separately(reference):
    v = _run_two_bugs()
    assert v.verdict == "fail"
    cats = {f.category for f in v.failures}
    assert {"value", "dtype"} <= cats, [f.key for f in v.failures]
    keys = [f.key for f in v.failures]
    assert len(keys) == len(set(keys))
    for f in v.failures:
        assert f.repro and "add.Tensor" in f.message
        if f.category == "dtype":
            assert "int64" in f.message and "int64" in f.key
        if f.category == "value":
            assert "{float16}" in f.key
    # the primary failure is the first record, and the verdict's fields are its fields
    assert (v.category, v.message, v.repro) == (v.failures[0].category, v.failures[0].message,
                                                v.failures[0].repro)
    rec = v.to_json()
    assert [f["key"] for f in rec["failures"]] == keys
    from conformance.core.verdicts import Verdict

    assert Verdict.from_json(rec) == v


def test_an_expected_failure_masks_only_its_fingerprint(reference):
    def only_dtype(category, message):
        return "known: int64 results narrowed" if category == "dtype" else None

    v = _run_two_bugs(expected=only_dtype)
    assert v.verdict == "fail"
    assert v.expected is None, "a new failure next to a known one is not expected"
    assert v.category != "dtype" and v.failures[0].expected is None, "the primary is a new one"
    by_cat = {f.category: f for f in v.failures}
    assert by_cat["dtype"].expected == "known: int64 results narrowed"
    assert by_cat["value"].expected is None
    # every failure known: the verdict is expected
    v = _run_two_bugs(expected=lambda c, m: "known")
    assert v.verdict == "fail" and v.expected == "known"


def test_failure_key_normalizes_numbers_and_shapes_but_keeps_kinds():
    from conformance.engine.fingerprints import failure_key

    a = failure_key("value", "out values differ from CPU: Mismatched elements: 1 / 2 (50.0%) "
                             "Greatest absolute difference: 0.5 at index (0, 1) [add.Tensor("
                             "float32[2, 3], float32[3])]", ["float32"])
    b = failure_key("value", "out values differ from CPU: Expected 1.0 but got 3.0. Absolute "
                             "difference: 2.0 [add.Tensor(float32[], float32[])]", ["float32"])
    c = failure_key("value", "out values differ from CPU: Expected nan but got 1.0. [add.Tensor("
                             "float32[], float32[])]", ["float32"])
    assert a == b != c and "nan" in c
    assert failure_key("value", "x [y]", ["float16"]) != failure_key("value", "x [y]", ["float32"])
    d = failure_key("shape", "out.shape=(2, 3), but should be (3,) [f(float32[2])]", ["float32"])
    e = failure_key("shape", "out.shape=(4,), but should be (1, 1) [f(float32[1])]", ["float32"])
    assert d == e
    f = failure_key("error_mismatch", "raised RuntimeError: index 5 is out of bounds for "
                                      "size 3, but CPU returned a result [g(int64[3])]")
    g = failure_key("error_mismatch", "raised RuntimeError: index 0 is out of bounds for "
                                      "size 0, but CPU returned a result [g(int64[0])]")
    assert f == g


def test_failure_key_normalizes_dtype_names_but_keeps_the_lead_dtype():
    """One missing out= dtype check gave logsumexp.out ~35 fingerprints (the drawn out= dtype's
    name in CPU's message times the lead dtype): names are normalized as numbers are, the lead
    dtype still separates input dtypes, and the message an expected entry's regex reads keeps
    its names."""
    from conformance.engine.fingerprints import failure_key

    msg = ("returned a result, but should raise RuntimeError: logsumexp(): Expected floating "
           "point type for result tensor, but got: {} as CPU does [logsumexp.out(x)]")
    keys = {failure_key("out_dtype", msg.format(n), ["float64"]) for n in ("Int", "Byte", "Bool")}
    assert len(keys) == 1 and "<dtype>" in keys.pop()
    assert failure_key("out_dtype", msg.format("Int"), ["float64"]) != failure_key(
        "out_dtype", msg.format("Int"), ["float32"])
    a = failure_key("dtype", "out.dtype=torch.float32, but should be torch.float64 [f(x)]")
    b = failure_key("dtype", "out.dtype=int64, but should be bool [f(x)]")
    c = failure_key("error_raises", "raised RuntimeError: value cannot be converted to type "
                                    "c10::complex<float> without overflow [f(x)]")
    assert a == b and c.endswith("to type <dtype> without overflow")
    assert "interval" in failure_key("error_type", "the interval [2, 1] is empty [f(x)]")


# --------------------------------------------------------------------------- mutation benchmark


def _mutants():
    bench = Path(__file__).resolve().parent.parent.parent.parent / "benchmarks"
    if str(bench) not in sys.path:
        sys.path.insert(0, str(bench))
    import mutants

    return mutants


def test_mutant_suite_is_live_and_covers_the_classes(reference):
    """Every mutant of benchmarks/mutants.py is a real bug: its witness disagrees with CPU on the
    mutated backend and agrees on the unmodified one (no equivalent mutants)."""
    import kernels

    m = _mutants()
    assert len(m.MUTANTS) >= 40
    assert len({x.name for x in m.MUTANTS}) == len(m.MUTANTS)
    assert {x.cls for x in m.MUTANTS} >= {"edge", "exactness", "rounding", "relations", "masking",
                                          "promotion", "broadcast", "variants", "autograd"}
    dead, wrong = [], []
    for mutant in m.MUTANTS:
        kernels.install()
        if m.witness_differs(mutant)[0]:
            wrong.append(mutant.name)
        kernels.install(overrides={mutant.overload: mutant.kernel()})
        try:
            if not m.witness_differs(mutant)[0]:
                dead.append(mutant.name)
        finally:
            kernels.install()
    assert not dead, f"mutants whose witness shows no bug: {dead}"
    assert not wrong, f"witnesses the unmodified backend already gets wrong: {wrong}"


@pytest.mark.parametrize("name", ["abs_negzero", "sub_swapped"])
def test_bench_mutants_smoke(reference, name):
    """bench_mutants' harness side on two mutants: caught, and the unmodified backend clean on
    the same overload (the full suite is `python benchmarks/bench_mutants.py`)."""
    import kernels

    _mutants()
    import bench_mutants

    mutant = next(x for x in _mutants().MUTANTS if x.name == name)
    base = bench_mutants.harness_failures(reference, mutant.overload, 10)
    kernels.install(overrides={mutant.overload: mutant.kernel()})
    try:
        bug = bench_mutants.harness_failures(reference, mutant.overload, 10)
    finally:
        kernels.install()
    assert set(bug["keys"]) - set(base["keys"]), (base, bug)


def test_bench_mutants_refuses_unknown_names(capsys):
    _mutants()
    import bench_mutants

    assert bench_mutants.main(["--only", "no_such_mutant", "--no-opinfo"]) == 2
    assert "unknown mutant" in capsys.readouterr().err


def _tensor_sizes(message: str) -> list[int]:
    """Element counts of the tensors in a failure message's trailing call."""
    import math
    import re

    call = message.rsplit("[add.Tensor(", 1)[1]
    return [math.prod(int(d) for d in dims.split(",") if d.strip())
            for dims in re.findall(r"\w+\[([\d, ]*)\]", call)]


def test_a_known_failure_is_shrunk_within_a_budget_and_stays_small(reference, monkeypatch):
    """A failure an entry already expects gets EXPECTED_SHRINK_EXAMPLES checked examples of shrinking (a new one
    is shrunk in full): its repro is still a small call, and a tighter budget runs fewer
    examples than a full shrink."""
    from conformance.engine import search as engine

    full = _run_two_bugs()
    known = _run_two_bugs(expected=lambda c, m: "known")
    assert known.verdict == "fail" and known.expected == "known"
    # both bugs found either way (which further fingerprints a search meets, an inf variant of
    # the value bug, depends on how far each failure is shrunk)
    assert {f.category for f in known.failures} == {f.category for f in full.failures}
    for f in known.failures:
        # at most the forward strategy's simplest pointwise shape (3x3: sizes middle first)
        assert f.repro and max(_tensor_sizes(f.message), default=0) <= 9, f.message
    monkeypatch.setattr(engine, "EXPECTED_SHRINK_EXAMPLES", 3)
    tight = _run_two_bugs(expected=lambda c, m: "known")
    assert tight.verdict == "fail" and tight.expected == "known"
    assert tight.examples < full.examples, (tight.examples, full.examples)
    assert all(f.repro for f in tight.failures)


def test_a_new_failure_next_to_a_known_one_is_shrunk_in_full(reference, monkeypatch):
    from conformance.engine import search as engine

    def only_dtype(category, message):
        return "known" if category == "dtype" else None

    monkeypatch.setattr(engine, "EXPECTED_SHRINK_EXAMPLES", 1)
    tight = _run_two_bugs(expected=only_dtype)
    known = _run_two_bugs(expected=lambda c, m: "known")  # every failure on the budget
    new = {f.category: f for f in tight.failures}["value"]
    assert new.expected is None
    # the new one shrunk in full: more examples than with every failure on the budget, and
    # down to a small call (at most the strategy's simplest shape, 3x3)
    assert tight.examples > known.examples, (tight.examples, known.examples)
    assert max(_tensor_sizes(new.message), default=0) <= 9, new.message


def test_shape_menus_find_both_bugs_and_shrink_within_the_budget(reference):
    """Where the backend compiles per shape (``--shapes fixed``): both bugs are still found, on
    menu sizes only (conformance.inputs.shape_menus; 0 among them), and every failure's shrink is budgeted
    (PER_SHAPE_SHRINK_EXAMPLES): fewer examples than the free draw's full shrink."""
    import re

    from conformance.inputs.shape_menus import SIDES

    full = _run_two_bugs()
    fixed = _run_two_bugs(shapes="fixed")
    assert fixed.verdict == "fail"
    assert {f.category for f in fixed.failures} >= {"dtype", "value"}
    assert fixed.examples < full.examples, (fixed.examples, full.examples)
    for f in fixed.failures:
        call = f.message.rsplit("[add.Tensor(", 1)[1]
        sides = {int(d) for dims in re.findall(r"\w+\[([\d, ]*)\]", call)
                 for d in dims.split(",") if d.strip()}
        # the menu's sides, and 0 where a range allows it (shape_menus.ZERO_ONE_IN)
        assert f.repro and sides <= {0, *SIDES}, f.message


def test_zero_dim_operand_that_promotes_is_caught_at_default_depth(reference):
    """A kernel that lets a wider 0-dim operand of the same category promote (float32 tensor +
    float64 0-dim gives float64; torch keeps float32): the pair comes about once in fifty drawn
    calls, so the promotion check sweeps the 0-dim operand's dtypes on every call that has one;
    and the search does not end at the first (other) failure."""
    import torch

    from kernels.registry import kernel

    ref = kernel("add.Tensor")

    def add(self, other, *, alpha=1):
        out = ref(self, other, alpha=alpha)
        ts = [t for t in (self, other) if isinstance(t, torch.Tensor)]
        if len(ts) == 2 and {t.dim() == 0 for t in ts} == {True, False} \
                and all(t.is_floating_point() for t in ts):
            wide = max((t.dtype for t in ts), key=lambda d: torch.finfo(d).bits)
            return out.to(wide)
        return out

    v = _run_overridden("add.Tensor", "promotion", add, max_examples=30)
    assert v.verdict == "fail", v.message
    # float16 with a complex operand reaches mlu's documented complex32 gap early (a failure of
    # its own): the search goes on past it and finds the promotion bug too
    assert "dtype" in {f.category for f in v.failures}, [f.message for f in v.failures]


def test_a_python_number_of_a_higher_category_is_tried_with_every_drawn_python_operand(reference):
    """An integral tensor times a Python float must be the default dtype (float32); a kernel
    that gives float64 is caught wherever a drawn call has a Python operand next to a bool or
    integral tensor (:func:`~conformance.checks.promotion.python_partners`), not only where the
    draw pairs an integral tensor with a float: at 10 examples, at nearly every seed (11 of
    seeds 0-11 on 2026-12-04; seed 0's 30 calls drew three Python numbers, all next to
    floating tensors)."""
    import torch

    from kernels.registry import kernel

    ref = kernel("mul.Tensor")

    def float64_for_python_floats(self, other):
        out = ref(self, other)
        if isinstance(other, float) and not self.is_floating_point() and not self.is_complex():
            return out.to(torch.float64)
        return out

    missed = []
    for seed in range(6):
        v = _run_overridden("mul.Tensor", "promotion", float64_for_python_floats,
                            max_examples=10, expected=_documented, seed=seed)
        if v.verdict != "fail" or "dtype" not in {f.category for f in v.failures}:
            missed.append((seed, v.message))
    assert len(missed) <= 1, missed


def test_a_dim_wrapped_one_way_only_is_caught_whichever_sign_was_drawn(reference):
    """A kernel that takes a negative dim as dim 0 passes every call drawn with dim >= 0; the
    forward check's twin-dim refill (:data:`~conformance.checks.forward.TWIN_DIM_REFILL`)
    runs such a call with dim - rank too, and that refill fails it."""
    import torch

    import kernels
    import opdb
    from conformance.checks.forward import TWIN_DIM_REFILL, forward_refill, verify_forward
    from conformance.compare.context import Context
    from conformance.core.backends import resolve
    from conformance.core.call import Call
    from conformance.core.inflight import Inflight
    from conformance.core.signature import OpSignature
    from conformance.core.verdicts import CheckFailure
    from kernels.registry import kernel
    from opdb.opdata import load_hints, load_tolerances

    ref = kernel("cumprod")

    def negative_dim_as_zero(self, dim, *args, **kwargs):
        return ref(self, 0 if dim < 0 else dim, *args, **kwargs)

    sig = OpSignature.of(opdb.load()["cumprod"])
    drawn = Call(sig=sig, values=(("self", torch.arange(1.0, 7.0).reshape(2, 3)), ("dim", 1),
                                  ("dtype", None)))
    twin = forward_refill(drawn, TWIN_DIM_REFILL, load_hints().for_op("cumprod"))
    assert dict(twin.values)["dim"] == -1
    backend = resolve("mlu", without=())
    ctx = Context(backend=backend, sig=sig, hints=load_hints().for_op("cumprod"),
                  tolerance_fn=load_tolerances(), inflight=Inflight(None),
                  repro_fn=lambda c: "")
    kernels.install(overrides={"cumprod": negative_dim_as_zero})
    try:
        verify_forward(ctx, drawn)  # the drawn spelling passes
        with pytest.raises(CheckFailure):
            verify_forward(ctx, twin)
    finally:
        kernels.install()
