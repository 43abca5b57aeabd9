"""The repro of an in-place variant: ``self`` as the same view or dtype on both sides, what
the call wrote and returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from conformance.core.call import Call
from conformance.inputs.inplace_forms import VIEWS, make_base, variant_of, written_self

if TYPE_CHECKING:
    from conformance.core.backends import Backend


_SHOW = '''def show(device):
    try:
        out, inputs, base, before = call(device)
    except Exception as exc:
        print(f"{device}: raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    outs = out if isinstance(out, (tuple, list)) else [out]
    returned = [next((k for k, v in inputs.items() if o is v), None) for o in outs]
    print(f"{device}: returned {returned} (the argument each result is; None: a new object)")
    for name, v in inputs.items():
        for i, t in enumerate(v if isinstance(v, list) else [v]):
            label = f"{name}[{i}]" if isinstance(v, list) else name
            print(f"{device}: {label} after the call (_version {before[label]} -> {t._version}):")
            print(t.cpu())
    if base is not None:
        print(f"{device}: base after the call:")
        print(base.cpu())
'''


def inplace_snippet(call: Call, backend: Backend, note: str | None = None) -> str:
    """The repro of an ``inplace`` example: the same variant (a view ``self`` is made from a
    literal base), then every argument, the base and the version counters printed after the
    call on CPU and on the device."""
    from conformance.repro.common import bringup_lines, op_call, tensor_literal, value_text

    variant, kind = variant_of(call)
    sig = call.sig
    me = written_self(sig)
    given = dict(call.values)
    view = kind if variant == "view" and me is not None \
        and isinstance(given.get(me), torch.Tensor) else None
    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {sig.name}: {sig.schema_str}")
    lines.append(f"# in-place check, variant {variant}" + (f" ({view} view)" if view else ""))
    lines.append("def call(device):")
    if view is not None:
        assert me is not None
        lines.append(f"    base = {tensor_literal(make_base(view, given[me]))}.to(device)")
    else:
        lines.append("    base = None")
    lines.append("    inputs = {")
    for name, value in call.values:
        if name == me and view is not None:
            lines.append(f"        {name!r}: {VIEWS[view][1]},")
        elif isinstance(value, torch.Tensor) or (isinstance(value, list) and any(
                isinstance(v, torch.Tensor) for v in value)):
            lines.append(f"        {name!r}: {value_text(value, name not in call.on_cpu)},")
    lines.append("    }")
    lines.append("    before = {(f'{k}[{i}]' if isinstance(v, list) else k): t._version")
    lines.append("              for k, v in inputs.items()")
    lines.append("              for i, t in enumerate(v if isinstance(v, list) else [v])}")

    def text(name: str, value: Any) -> str:
        if name == me and view is not None or isinstance(value, torch.Tensor) or (
                isinstance(value, list) and any(isinstance(v, torch.Tensor) for v in value)):
            return f"inputs[{name!r}]"
        return value_text(value, name not in call.on_cpu)

    lines.append(f"    out = {op_call(call, text)}")
    lines.append("    return out, inputs, base, before")
    lines += ["", _SHOW, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"
