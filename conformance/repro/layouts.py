"""The repro of a call whose arguments are non-contiguous views: the same views built on
CPU and on the device, strides shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from conformance.inputs.layouts import LAYOUTS, LayoutCall, with_strides
from conformance.repro.common import SHOW, bringup_lines, call_body, tensor_literal, value_text

if TYPE_CHECKING:
    from conformance.core.backends import Backend


def layout_snippet(call: LayoutCall, backend: Backend, note: str | None = None) -> str:
    """The standalone repro of a ``noncontiguous`` example: each laid-out argument is built as
    the check builds it (a base buffer on the device, then the view), and the results are shown
    with their strides."""
    layout_of = call.layout_of

    def lay(name: str, v: Any) -> str:
        on_device = name not in call.on_cpu
        kind = layout_of.get(name)
        if not isinstance(v, torch.Tensor) or kind is None or not LAYOUTS[kind].fits(
                tuple(v.shape)):
            return value_text(v, on_device)
        layout = LAYOUTS[kind]
        base = tensor_literal(layout.base(v)) + (".to(device)" if on_device else "")
        return layout.code(base, tuple(v.shape))

    def text(name: str, value: Any) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(lay(name, v) for v in value) + "]"
        return lay(name, value)

    lines = ["import torch", *bringup_lines(backend), ""]
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {call.sig.name}: {call.sig.schema_str}")
    lines.append(f"# noncontiguous inputs: {call.layout_text} (a base buffer, then the view)")
    lines.append("def call(device):")
    lines += call_body(call, text)  # an overload that returns nothing: the arguments it wrote
    lines += ["", _SHOW_STRIDES, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"


_SHOW_STRIDES = with_strides(SHOW)
