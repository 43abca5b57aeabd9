"""The repro of a compiled call (:class:`~conformance.core.compiled.CompiledCall`): the call in
eager, under fake-tensor propagation, and through ``torch.compile`` on the device, and compiled
on CPU: each layer the compile check asks about, shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.core.call import Call
from conformance.core.compiled import CompiledCall
from conformance.repro.common import SHOW, bringup_lines, op_call, value_text

if TYPE_CHECKING:
    from conformance.core.backends import Backend

_COMPILED = '''def compiled(fn):
    # fullgraph: a graph break is an error; failures raised, never hidden behind eager
    torch._dynamo.config.suppress_errors = False
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend={compiler!r}, dynamic={dynamic!r})


def fake(device):
    # fake-tensor (meta) propagation for the device, as Dynamo traces the call
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    args = [[mode.from_tensor(x) for x in t] if isinstance(t, list) else mode.from_tensor(t)
            for t in tensors(device)]  # a Tensor[] argument is a list of tensors
    with mode:
        out = op_on(device)(*args)
    for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out]):
        print(f"fake on {{device}}: out[{{i}}] " + (f"dtype={{o.dtype}} shape={{tuple(o.shape)}} "
              f"device={{o.device}}" if isinstance(o, torch.Tensor) else repr(o)))
'''


def _tensor_names(call: Call) -> list[str]:
    return [name for name, v in call.values if _is_tensors(v)]


def _is_tensors(v: object) -> bool:
    import torch

    return isinstance(v, torch.Tensor) or (isinstance(v, list) and bool(v) and all(
        isinstance(x, torch.Tensor) for x in v))


def _function(call: Call, label: str) -> list[str]:
    """``def tensors_<label>(device)``: the call's tensor arguments on ``device``; the op itself
    takes them and holds the other arguments as constants."""
    names = _tensor_names(call)
    given = dict(call.values)
    body = ", ".join(value_text(given[n], n not in call.on_cpu) for n in names)
    return [f"def tensors{label}(device):", f"    return [{body}{',' if len(names) == 1 else ''}]"]


def compiled_snippet(call: CompiledCall, backend: Backend, note: str | None = None) -> str:
    """The standalone repro of a ``compile`` example: eager on CPU and on the device, fake
    propagation for the device, and the compiled call on CPU and on the device (with a first
    shape run through the same dynamic compilation where the example had one)."""
    names = _tensor_names(call)
    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {call.sig.name}: {call.sig.schema_str}")
    lines += _function(call, "")
    lines.append("def op_on(device):  # the op: tensors are its inputs, the rest constants")
    lines.append(f"    def op({', '.join(names)}):")
    lines.append(f"        return {op_call(call, lambda n, v: n if n in names else value_text(v, True))}")
    lines.append("    return op")
    lines.append("")
    lines.append("def call(device):  # eager")
    lines.append("    return op_on(device)(*tensors(device))")
    lines.append("")
    lines.append(_COMPILED.format(compiler=call.compiler, dynamic=call.dynamic))
    first = call.first
    if first is not None:
        lines += _function(first, "_first")
        lines.append("")
    lines.append("def compiled_call(device):")
    lines.append("    fn = compiled(op_on(device))")
    if first is not None:
        lines.append("    fn(*tensors_first(device))  # the first shape, then this one")
    lines.append("    return fn(*tensors(device))")
    lines += ["", SHOW, 'show("cpu")', f"show({backend.device!r})", f"fake({backend.device!r})",
              "call = compiled_call", 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"
