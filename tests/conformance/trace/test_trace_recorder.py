"""The dispatch recorder (conformance.trace.recorder): both levels, phases, specs, expansion."""

from __future__ import annotations

import torch
from torch import nn

from conformance.trace.recorder import (
    BACKEND,
    TOP,
    CallSpec,
    Recorder,
    TensorSpec,
    overload_key,
    record,
    spec_of,
)


def _mlp() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU()), torch.randn(2, 4)


def test_overload_keys_are_torchs_spelling() -> None:
    assert overload_key(torch.ops.aten.add.Tensor) == "add.Tensor"
    assert overload_key(torch.ops.aten.relu.default) == "relu"
    assert overload_key(torch.ops.aten.add_.Tensor) == "add_.Tensor"


def test_two_levels_composite_and_what_it_decomposed_into() -> None:
    model, x = _mlp()
    out, rec = record(lambda: model(x))
    assert torch.equal(out, model(x))  # recording changes no result
    # top: what the model called, above Autograd
    assert "linear" in rec.top and rec.top["linear"].decomposed
    assert rec.top["linear"].expands_to == ("t", "addmm")
    assert "relu" in rec.top and not rec.top["relu"].decomposed
    # backend: what reached the kernels; linear was decomposed before it got there
    assert "linear" not in rec.backend
    assert rec["addmm"].callers == frozenset({"linear"})
    assert rec["relu"].callers == frozenset()
    assert rec.names()[:2] == ("t", "addmm")
    assert rec.names(TOP)[0] == "linear"


def test_specs_bind_schema_argument_names() -> None:
    model, x = _mlp()
    _, rec = record(lambda: model(x))
    spec = rec["addmm"].examples[0]
    assert isinstance(spec, CallSpec)
    assert [n for n, _ in spec.args][:3] == ["self", "mat1", "mat2"]
    mat2 = spec["mat2"]
    assert isinstance(mat2, TensorSpec)
    assert (mat2.shape, mat2.stride, mat2.dtype, mat2.device) == ((4, 3), (1, 4), "float32", "cpu")
    assert not mat2.contiguous and "stride [1, 4]" in str(mat2)
    assert str(spec["mat1"]) == "float32[2, 4]"
    assert len(spec.tensors) == 3


def test_scalar_and_list_specs() -> None:
    assert spec_of(torch.float16) == "float16"
    assert spec_of([1, 2]) == (1, 2)
    assert spec_of(2.5) == 2.5 and spec_of(None) is None
    with Recorder(top=False) as r:
        torch.full((2,), 3.0, dtype=torch.float64).add(1, alpha=2)
    rec = r.recording
    assert rec["full"].examples[0]["fill_value"] == 3.0
    assert rec["full"].examples[0]["dtype"] == "float64"
    assert rec["add.Tensor"].examples[0]["other"] == 1  # Python scalar, wrapped by torch
    assert rec["add.Tensor"].examples[0]["alpha"] == 2


def test_phases_backward_nodes_and_labels() -> None:
    model, x = _mlp()
    with Recorder() as r:
        loss = model(x).sum()
        loss.backward()  # no label: the autograd engine's calls are 'backward' anyway
        with r.phase("optimizer"):
            torch.optim.SGD(model.parameters(), lr=0.1).step()
    rec = r.recording
    assert rec["addmm"].phases == frozenset({"forward"})
    assert "backward" in rec["mm"].phases
    assert "AddmmBackward0" in rec["mm"].nodes
    assert "threshold_backward" in rec.in_phase("backward")
    assert "optimizer" in rec["add_.Tensor"].phases


def test_counts_examples_and_kept_calls() -> None:
    a, b = torch.ones(2), torch.ones(3)
    with Recorder(top=False, max_examples=2, keep_calls=True) as r:
        for t in (a, a, b, torch.ones(4)):
            t.neg()
    rec = r.recording
    assert rec["neg"].count == 4
    assert [str(s) for s in rec["neg"].examples] == ["(self=float32[2])", "(self=float32[3])"]
    neg_calls = [c for c in rec.calls if c.name == "neg"]
    assert [c.spec.tensors[0].shape for c in neg_calls] == [(2,), (2,), (3,), (4,)]
    assert all(c.level == BACKEND for c in neg_calls)


def test_inference_mode_composites_are_expanded_at_the_backend_level() -> None:
    model, x = _mlp()
    with torch.inference_mode(), Recorder(top=False) as r:
        model(x)
    rec = r.recording
    assert rec["linear"].decomposed and rec["addmm"].callers == frozenset({"linear"})


def test_expand_runs_explicit_composites_through_their_kernel() -> None:
    with Recorder(top=False, expand=lambda name: name == "zeros") as r:
        z = torch.zeros(3)
    rec = r.recording
    assert torch.equal(z, torch.zeros(3))
    assert rec["zeros"].decomposed and "zero_" in rec["zeros"].expands_to
    assert rec["zero_"].callers == frozenset({"zeros"})
    # a composite whose kernel calls itself (detach) is not expanded forever
    model, x = _mlp()
    with Recorder(expand=lambda name: True) as r:
        model(x).sum().backward()
    assert "detach" in r.recording


def test_no_state_left_behind() -> None:
    from torch._ops import _len_torch_dispatch_stack_pre_dispatch

    model, x = _mlp()
    try:
        with Recorder():
            model(x)
            raise KeyError("boom")
    except KeyError:
        pass
    assert _len_torch_dispatch_stack_pre_dispatch() == 0
    assert not torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.PreDispatch)
    assert not torch._C._dispatch_tls_is_dispatch_key_included(
        torch._C.DispatchKey.PythonDispatcher)
    # and a new recording starts empty
    _, rec = record(lambda: torch.ones(1).neg())
    assert rec.names() == ("ones", "neg") and rec.total_calls() == 2
