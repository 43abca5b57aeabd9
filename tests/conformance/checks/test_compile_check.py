"""The ``compile`` check: each layer of a compiled call caught by the bug injected there (a fake
impl wrong for the device, a kernel only the compiled graph calls left out, a kernel only the
compiled graph calls that computes wrong), the unmodified reference backend passing the same
items, and a failure's repro compiling as the check did."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.conformance.checks.test_injected_bugs import run_repro

pytestmark = pytest.mark.filterwarnings("ignore")


def _run(backend, overload: str, max_examples: int = 10):
    import opdb
    from conformance.checks.registry import CHECKS
    from conformance.core.signature import OpSignature
    from conformance.engine import EngineSettings, Item, run_check
    from conformance.repro.snippet import snippet
    from opdb.opdata import load_hints, load_tolerances

    return run_check(Item(OpSignature.of(opdb.load()[overload]), CHECKS["compile"]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=load_hints().for_op(overload), tolerance_fn=load_tolerances(),
                     repro_fn=lambda call: snippet(call, backend))


@contextlib.contextmanager
def _fake_impl_wrong_on(device: str, op: torch._ops.OpOverload) -> Iterator[None]:
    """A fake (meta) implementation of ``op`` that drops the last dimension for ``device``
    only (the device-specific fake impls torch registers for CUDA's attention kernels are of
    this kind), removed afterwards."""
    from torch._subclasses import fake_impls
    from torch._subclasses.fake_tensor import FakeTensorMode

    def applies(func: object) -> bool:
        return func is op

    def impl(mode, func, *args, **kwargs):
        x = args[0]
        if x.device.type != device:
            return NotImplemented
        with mode:
            return torch.empty(tuple(x.shape[:-1]), dtype=x.dtype, device=x.device)

    entry = (applies, impl)
    fake_impls.op_implementations_checks.insert(0, entry)
    FakeTensorMode.cache_clear()  # fake results are cached per op and metadata
    try:
        yield
    finally:
        fake_impls.op_implementations_checks.remove(entry)
        FakeTensorMode.cache_clear()


def test_reference_backend_passes(reference):
    for overload in ("cos", "relu_", "add.Tensor", "sum.dim_IntList"):
        v = _run(reference, overload)
        assert v.verdict == "pass", f"false failure on mlu: {v.id} {v.message}\n{v.repro}"
        assert v.examples > 0


def test_what_compiling_changes_on_cpu_too_is_not_the_backends(reference):
    """Three false failures of the full compile run on the reference backend, each one every
    indexed device would get: cumprod_backward of an integral grad compiles to int64 on CPU too
    (informational ``cpu_compile_differs``); native_layer_norm.out's compiled result is eager's,
    which agreed with CPU through ATen's composite (CPU's mean of [-inf] is NaN); a
    ``device=`` argument is passed with its index, as fake kernels compare it
    (``_assert_tensor_metadata``: "Expected: mlu, Got: mlu:0")."""
    v = _run(reference, "cumprod_backward")
    assert (v.verdict, v.category) == ("pass", "cpu_compile_differs"), v.message
    assert "compiled on mlu and on cpu alike" in v.message
    for overload in ("native_layer_norm.out", "_assert_tensor_metadata"):
        v = _run(reference, overload)
        assert v.verdict == "pass" and v.category != "cpu_compile_differs", v.message


def test_fake_impl_wrong_for_the_device_is_compile_fake(reference):
    with _fake_impl_wrong_on(reference.device, torch.ops.aten.cos.default):
        v = _run(reference, "cos")
    assert (v.verdict, v.category) == ("fail", "compile_fake"), v.message
    assert "fake-tensor propagation on mlu gives" in v.message, v.message


def test_kernel_only_the_compiled_graph_calls_left_out_is_unsupported_naming_it(reference):
    """``relu_`` runs in eager on its own kernel; functionalization compiles it into ``relu``,
    which ``--without relu`` leaves out: ``unsupported`` naming ``relu``, not ``relu_``."""
    import kernels
    from conformance.core.backends import resolve

    kernels.install(without=("relu",))
    try:
        v = _run(resolve("mlu", without=("relu",)), "relu_")
    finally:
        kernels.install(without=())
    assert (v.verdict, v.category, v.missing_op) == ("unsupported", "missing_kernel", "relu"), \
        v.message
    assert "torch.compile" in v.message and v.repro and "torch.compile(" in v.repro


def _wrong_relu(self):
    from kernels.registry import kernel

    out = kernel("relu")(self)
    return out * 2 if out.is_floating_point() or out.is_complex() else out + 1


def test_compiled_result_that_differs_from_eager_is_a_value_fail(reference, tmp_path: Path):
    """A wrong ``relu`` kernel that eager ``relu_`` never calls: the compiled ``relu_``
    (functionalized into ``relu``) differs from eager; its repro compiles and shows it."""
    import kernels
    from conformance.core.backends import resolve

    backend = resolve("mlu", without=())  # bring-up installs the plain kernels: then the bug
    kernels.install(overrides={"relu": _wrong_relu})
    try:
        v = _run(backend, "relu_")
    finally:
        kernels.install()
    assert (v.verdict, v.category) == ("fail", "value"), v.message
    assert "compiled (torch.compile(fullgraph=True, backend='aot_eager'" in v.message
    assert "eager on mlu agrees with CPU" in v.message
    script = tmp_path / "repro.py"
    script.write_text(v.repro)
    # the standalone repro installs the unmodified kernels: it runs and shows every layer
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(ln.startswith("fake on mlu: out[0]") for ln in lines), proc.stdout
    assert sum(ln.startswith("mlu: out[0]") for ln in lines) == 2, proc.stdout  # eager, compiled


def _compiler_failing_on(devices: tuple[str, ...]) -> str:
    """A ``torch.compile`` backend (registered once) that raises for graphs whose inputs are
    on one of ``devices`` and runs the rest as aot_eager."""
    import torch._dynamo

    name = "failing_on_" + "_".join(devices)
    if name not in torch._dynamo.list_backends(exclude_tags=()):
        aot_eager = torch._dynamo.lookup_backend("aot_eager")

        def compiler(gm, example_inputs):
            if any(isinstance(x, torch.Tensor) and x.device.type in devices
                   for x in example_inputs):
                raise RuntimeError(f"codegen has no {devices} target")
            return aot_eager(gm, example_inputs)

        torch._dynamo.register_backend(compiler, name=name)
    return name


def test_compiler_failing_on_the_device_only_is_compile_raises(reference):
    from dataclasses import replace

    backend = replace(reference, compile_backend=_compiler_failing_on(("mlu",)))
    v = _run(backend, "cos")
    assert (v.verdict, v.category) == ("fail", "compile_raises"), v.message
    assert "codegen has no" in v.message and "compiled call on cpu compute" in v.message


def test_torch_compile_failing_on_cpu_too_is_not_the_backends(reference):
    from dataclasses import replace

    backend = replace(reference, compile_backend=_compiler_failing_on(("mlu", "cpu")))
    v = _run(backend, "cos")
    assert (v.verdict, v.category) == ("skip", "cpu_compile_fails"), v.message


def test_compile_backend_reaches_the_plugin_and_the_backend_record():
    from conformance.checks.registry import CHECKS, DEFAULT_CHECKS
    from conformance.cli import build_parser
    from conformance.commands.run import pytest_argv
    from conformance.core.backends import resolve

    args = build_parser().parse_args(["run", "--backend", "cpu", "--checks", "compile",
                                      "--compile-backend", "aot_eager_decomp_partition"])
    argv = pytest_argv(args, 0, "/tmp")
    assert argv[argv.index("--compile-backend") + 1] == "aot_eager_decomp_partition"
    assert resolve("cpu").compile_backend == "aot_eager"
    assert resolve("cpu", compile_backend="inductor").compile_backend == "inductor"
    # compiling costs ~4 s an item: not in the default set (docs/decisions.md#compile-cost)
    assert "compile" in CHECKS and "compile" not in DEFAULT_CHECKS


def test_repro_of_a_tensor_list_call_runs_every_layer(reference, tmp_path: Path):
    """A compiled call's repro whose op takes a Tensor[] (``cat``): its fake step makes each
    list element a fake tensor (it handed the list itself to ``from_tensor``: "cannot create
    weak reference to 'list' object", seen on ``_fused_adam.tensor_lr_out``'s repro)."""
    import opdb
    from conformance.core.call import Call, as_kind
    from conformance.core.compiled import CompiledCall
    from conformance.core.signature import OpSignature
    from conformance.repro.snippet import snippet

    call = Call(sig=OpSignature.of(opdb.load()["cat"]),
                values=(("tensors", [torch.ones(2, 3), torch.zeros(1, 3)]), ("dim", 0)))
    script = tmp_path / "repro.py"
    script.write_text(snippet(as_kind(call, CompiledCall, compiler="aot_eager"), reference))
    proc = run_repro(script, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "fake on mlu: out[0] dtype=torch.float32 shape=(3, 3)" in proc.stdout, proc.stdout


def test_inductor_without_a_codegen_for_the_device_is_refused_before_the_run(tmp_path: Path):
    """Inductor on a device with no code generator raised ``KeyError: 'mlu'`` on every item
    (as many compile_raises fails as items); it is one fact about the run: a one-line error
    naming the option, exit 2, nothing run. aot_eager needs no codegen; cpu has Inductor's."""
    import subprocess
    import sys

    from conformance.core.compiled import missing_codegen

    assert missing_codegen("aot_eager", "mlu") is None
    assert missing_codegen("inductor", "cpu") is None
    assert "no code generator for device 'mlu'" in (missing_codegen("inductor", "mlu") or "")
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--backend", "mlu",
                           "--checks", "compile", "--compile-backend", "inductor", "--ops", "abs",
                           "-n", "0", "-o", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "--compile-backend inductor: Inductor has no code generator for device 'mlu'" in \
        proc.stdout + proc.stderr
    assert not (tmp_path / "r.jsonl").exists() or "verdict" not in (tmp_path / "r.jsonl").read_text()
