"""Standalone repro snippets: paste into a shell where the backend is installed, see the
mismatch. :func:`snippet` picks the snippet by the call's type.
"""

from __future__ import annotations

from conformance.core.backends import Backend
from conformance.core.call import Call
from conformance.repro.autograd import autograd_snippet
from conformance.repro.common import SHOW, bringup_lines, op_call, value_text


def snippet(call: Call, backend: Backend, *, note: str | None = None) -> str:
    """The standalone repro for ``call`` on ``backend`` (an ``autograd`` example's repro
    backpropagates too; a ``noncontiguous`` one builds the same views)."""
    if "autograd" in call.notes:
        return autograd_snippet(call, backend, note)
    if any(n.startswith("inplace:") for n in call.notes):  # the in-place check's own snippet
        from conformance.repro.inplace import inplace_snippet

        return inplace_snippet(call, backend, note)
    if "noncontiguous" in call.notes:  # arguments laid out as views (conformance.layouts)
        from conformance.inputs.layouts import LayoutCall
        from conformance.repro.layouts import layout_snippet

        assert isinstance(call, LayoutCall)
        return layout_snippet(call, backend, note=note)
    if any(n.startswith("out form:") for n in call.notes):
        from conformance.repro.out import out_snippet

        return out_snippet(call, backend, note)
    sig = call.sig
    lines = ["import torch"]
    lines += bringup_lines(backend)
    lines.append("")
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {sig.name}: {sig.schema_str}")
    lines.append("def call(device):")
    lines.append(f"    return {op_call(call, lambda name, value: value_text(value, name not in call.on_cpu))}")
    lines.append("")
    lines.append(SHOW)
    lines.append('show("cpu")')
    lines.append(f"show({backend.device!r})")
    return "\n".join(lines) + "\n"
