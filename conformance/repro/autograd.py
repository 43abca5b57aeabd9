"""The repro of an ``autograd`` example: leaves that require grad, the forward on clones of
them, the backward of the same upstream gradient on CPU and on the device.
"""

from __future__ import annotations

from typing import Any

from conformance.core.backends import Backend
from conformance.core.call import Call
from conformance.repro.common import bringup_lines, call_body, tensor_literal, value_text

_SHOW_GRADS = '''def show(device):
    try:
        out, inputs = call(device)
    except Exception as exc:
        print(f"{device}: forward raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
            if isinstance(o, torch.Tensor) and o.requires_grad]
    gen = torch.Generator().manual_seed(0)  # the upstream gradient: the same on every device
    ups = [torch.randn(tuple(o.shape), dtype=o.dtype, generator=gen).to(o.device) for o in outs]
    try:
        grads = torch.autograd.grad(outs, list(inputs.values()), ups, allow_unused=True)
    except Exception as exc:
        print(f"{device}: backward raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    for name, g in zip(inputs, grads):
        print(f"{device}: grad of {name}:", None if g is None else g.cpu())
'''


def autograd_snippet(call: Call, backend: Backend, note: str | None) -> str:
    """The repro of an ``autograd`` example: leaves that require grad, the forward on clones
    of them, and the backward of the same upstream gradient on CPU and on the device."""
    from conformance.compare.gradients import grad_leaves

    sig = call.sig
    leaves = {label: t for _, label, t in grad_leaves(call)}
    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# autograd of {sig.name}: {sig.schema_str}")
    lines.append("def call(device):")
    lines.append("    inputs = {")
    for label, t in leaves.items():
        lines.append(f"        {label!r}: {tensor_literal(t)}.to(device).requires_grad_(),")
    lines.append("    }")

    def text(name: str, value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(
                f"inputs[{f'{name}[{i}]'!r}].clone()" if f"{name}[{i}]" in leaves
                else value_text(v, True) for i, v in enumerate(value)) + "]"
        if name in leaves:
            return f"inputs[{name!r}].clone()"
        return value_text(value, name not in call.on_cpu)

    lines += call_body(call, text, to="out")
    lines.append("    return out, inputs")
    lines += ["", _SHOW_GRADS, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"
