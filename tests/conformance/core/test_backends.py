"""Backend records (conformance/core/backends.py): what the harness assumes of a backend is a
field of its record, named backends resolve (``xla`` with them), bring-up touches the device,
and a repro brings the backend up as the record says."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from conformance.core import call as call_module
from conformance.core.backends import BACKEND_NAMES, BUILTIN, Backend, bring_up, resolve
from conformance.repro.common import bringup_lines
from opdb.errors import InputError

DATA = Path(__file__).parent.parent.parent / "data" / "engine"


@pytest.fixture()
def vendor_path():
    if str(DATA) not in sys.path:
        sys.path.insert(0, str(DATA))
    yield
    import kernels

    kernels.install(without=())
    resolve("mlu", without=())  # the device's lazy registration undone


def test_xla_is_a_named_backend_whose_properties_are_its_records():
    xla = BUILTIN["xla"]
    assert "xla" in BACKEND_NAMES
    assert (xla.device, xla.dispatch_key, xla.module) == ("xla", "XLA", "torch_xla")
    # lazy tensors without strides of their own, a runtime a forked child cannot use, no install
    assert xla.lazy and not xla.strides and not xla.fork_safe and not xla.installs
    assert xla.host_values
    # a forked child cannot use the parent's CUDA/XPU/MPS/XLA state
    assert not any(BUILTIN[n].fork_safe for n in ("cuda", "xpu", "mps", "xla"))
    assert all(b.strides and not b.lazy for n, b in BUILTIN.items() if n != "xla")


@pytest.mark.skipif(importlib.util.find_spec("torch_xla") is not None,
                    reason="torch_xla is installed here")
def test_xla_without_torch_xla_is_bad_input_naming_the_module():
    with pytest.raises(InputError, match="needs the module 'torch_xla'"):
        resolve("xla")


def test_a_vendor_module_declares_its_properties(vendor_path):
    lazy = resolve("privateuse1:lazy_refuses", without=())
    assert lazy.lazy and not lazy.strides and not lazy.fork_safe and not lazy.installs
    assert lazy.device in call_module.LAZY_DEVICES  # every call on it is read back
    plain = resolve("privateuse1:buggy_alpha", without=())
    assert not plain.lazy and plain.strides and not plain.installs
    assert plain.device not in call_module.LAZY_DEVICES


def test_a_lazy_backend_steps_after_every_call(vendor_path):
    """``LAZY_STEP`` (xla: ``torch_xla.sync``): called once per call on the device, after its
    results are read back, so no graph stays open across calls (torch_xla compiled a new graph
    for every random-op call without it)."""
    import opdb
    from conformance.core.call import Call
    from conformance.core.lazy import LAZY_DEVICES
    from conformance.core.signature import OpSignature

    assert BUILTIN["xla"].step == "torch_xla.sync"
    lazy = resolve("privateuse1:lazy_refuses", without=())
    import lazy_refuses

    assert lazy.step == "lazy_refuses.step" and LAZY_DEVICES[lazy.device] is lazy_refuses.step
    call = Call(OpSignature.of(opdb.load()["neg"]), (("self", torch.ones(3)),))
    before = len(lazy_refuses.STEPS)
    for _ in range(3):
        call.run(lazy.device)
    call.run("cpu")  # CPU is not lazy: no step
    assert len(lazy_refuses.STEPS) == before + 3
    plain = resolve("privateuse1:buggy_alpha", without=())
    assert plain.step is None and plain.device not in LAZY_DEVICES


def test_a_step_that_raises_is_not_the_calls_error(vendor_path, monkeypatch):
    """A step computes every live tensor; one an earlier call left failed makes it raise
    (torch_xla: "Check failed: tensor_data") while this call's results were read back fine."""
    import opdb
    from conformance.core.call import Call
    from conformance.core.lazy import LAZY_DEVICES
    from conformance.core.signature import OpSignature

    lazy = resolve("privateuse1:lazy_refuses", without=())

    def poisoned() -> None:
        raise RuntimeError("Check failed: tensor_data: ")

    monkeypatch.setitem(LAZY_DEVICES, lazy.device, poisoned)
    out = Call(OpSignature.of(opdb.load()["neg"]), (("self", torch.ones(3)),)).run(lazy.device)
    assert out.cpu().tolist() == [-1.0, -1.0, -1.0]


def test_a_step_barrier_that_does_not_import_is_bad_input():
    bad = dataclasses.replace(BUILTIN["cpu"], name="lazyx", lazy=True, step="no_such_mod.sync")
    with pytest.raises(InputError, match="step barrier 'no_such_mod.sync' does not import"):
        bring_up(bad, touch=False)
    assert "cpu" not in call_module.LAZY_DEVICES  # refused before the device was marked lazy


def test_shapes_are_fixed_where_the_backend_compiles_per_shape(vendor_path):
    """``compiles_per_shape``: xla's record and a vendor module's ``COMPILES_PER_SHAPE`` say so
    (shapes drawn from the menu), every other backend draws freely; ``--shapes`` overrides."""
    assert BUILTIN["xla"].compiles_per_shape and BUILTIN["xla"].shapes == "fixed"
    assert not any(b.compiles_per_shape for n, b in BUILTIN.items() if n != "xla")
    assert resolve("cpu").shapes == "free"
    assert resolve("mlu", without=()).shapes == "free"
    assert resolve("cpu", shapes="fixed").compiles_per_shape
    assert resolve("privateuse1:per_shape", without=()).shapes == "fixed"
    assert resolve("privateuse1:per_shape", without=(), shapes="free").shapes == "free"
    assert resolve("privateuse1:buggy_alpha", without=()).shapes == "free"
    with pytest.raises(InputError, match="--shapes must be one of fixed, free"):
        resolve("cpu", shapes="menu")


def test_install_is_called_only_where_the_module_has_one(vendor_path):
    import vendor_installs

    before = len(vendor_installs.INSTALLS)
    backend = resolve("privateuse1:vendor_installs", without=())
    assert backend.installs and len(vendor_installs.INSTALLS) == before + 1
    lines = bringup_lines(backend)
    assert lines[:2] == ["import vendor_installs", "vendor_installs.install()"]
    # a module without install(): imported, never installed, however the name is spelled
    # (the repro of "PrivateUse1:buggy_alpha" called buggy_alpha.install(), which it lacks)
    for spelled in ("privateuse1:buggy_alpha", "PrivateUse1:buggy_alpha"):
        lines = bringup_lines(resolve(spelled, without=()))
        assert "import buggy_alpha" in lines and not any("install(" in x for x in lines), lines
    # the reference backend installs, with what it leaves out
    mlu = resolve("mlu", without=("neg",))
    assert bringup_lines(mlu)[:2] == ["import kernels", "kernels.install(without=['neg'])"]
    # xla: torch_xla imported, nothing installed, the device touched before any CPU backward
    lines = bringup_lines(BUILTIN["xla"])
    assert lines[0] == "import torch_xla" and not any("install(" in x for x in lines)
    assert lines[1].startswith("torch.empty(1, device='xla')")
    assert bringup_lines(BUILTIN["cpu"]) == []


def test_a_repro_of_a_vendor_module_without_install_runs(vendor_path, capsys):
    """The repro of a failure on ``privateuse1:buggy_alpha`` (no ``install``) runs as written
    (here in this process, where the module is already imported): it does not call an
    install() the module lacks, and shows the bug."""
    import opdb
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature
    from conformance.repro.snippet import snippet

    backend = resolve("privateuse1:buggy_alpha", without=())
    import buggy_alpha

    import kernels

    kernels.install(overrides=buggy_alpha.OVERRIDES)  # its import ran once per process
    sig = OpSignature.of(opdb.load()["add.Tensor"])
    text = snippet(Call(sig, (("self", torch.ones(2)), ("other", torch.ones(2)),
                              ("alpha", 2))), backend)
    exec(compile(text, "repro.py", "exec"), {"__name__": "repro"})
    shown = capsys.readouterr().out
    assert "tensor([3., 3.])" in shown and "tensor([2., 2.]" in shown, shown


def test_bring_up_makes_one_tensor_on_the_device(monkeypatch):
    """A device first touched after a CPU backward fails autograd's device_ready_queues_
    assert (torch_xla did): bring-up makes a tensor there; one that cannot is bad input."""
    made: list[object] = []
    real = torch.empty

    def empty(*args, **kwargs):
        made.append(kwargs.get("device"))
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "empty", empty)
    bring_up(BUILTIN["meta"])
    assert made == ["meta"]
    bring_up(BUILTIN["cpu"])
    assert made == ["meta"]  # CPU needs no bring-up
    nowhere = Backend("nowhere", "no_such_device", "PrivateUse1")
    with pytest.raises(InputError, match="making a tensor on its device 'no_such_device'"):
        bring_up(nowhere)


def test_a_lazy_device_is_read_back_inside_the_call(monkeypatch):
    """``Call.run`` on a device the bring-up registered lazy reads every result back before it
    returns (so the call raises what the computation raises); on any other it does not."""
    import opdb
    from conformance.core.call import Call
    from conformance.core.signature import OpSignature

    read: list[str] = []
    monkeypatch.setattr("conformance.core.readback.materialize",
                        lambda results: read.append(type(results).__name__))
    call = Call(OpSignature.of(opdb.load()["add.Tensor"]),
                (("self", torch.ones(2)), ("other", torch.ones(2))))
    meta = dataclasses.replace(BUILTIN["meta"], lazy=True)
    try:
        bring_up(meta)
        call.run("meta")
        assert read == ["Tensor"]
        call.run("cpu")
        assert read == ["Tensor"]
    finally:
        bring_up(BUILTIN["meta"])
    call.run("meta")
    assert read == ["Tensor"] and "meta" not in call_module.LAZY_DEVICES


@pytest.mark.parametrize(("backend", "key", "owns"), [
    ("mlu", "mlu", True), ("mlu", "PrivateUse1", True), ("mlu", "AutogradPrivateUse1", True),
    ("mlu", "*", True), ("mlu", "CPU", False), ("mlu", "Meta", False),
    ("cuda", "CUDA", True), ("cuda", "SparseCUDA", True), ("cuda", "CPU", False),
    ("meta", "Meta", True), ("cpu", "CPU", True), ("cpu", "QuantizedCPU", True),
    ("xla", "XLA", True), ("xla", "CPU", False),
])
def test_a_missing_kernel_is_the_backends_only_where_its_key_is(backend, key, owns):
    """The dispatcher's "Could not run ... from the 'K' backend" names whose kernel is missing:
    the backend's own key (with a functionality prefix) or another's (issue 25, 5a)."""
    record = BUILTIN.get(backend) or Backend("mlu", "mlu", "PrivateUse1")
    assert record.owns_key(key) is owns
