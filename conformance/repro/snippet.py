"""Standalone repro snippets: paste into a shell where the backend is installed, see the
mismatch. :func:`snippet` picks the snippet by the call's type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.core.backends import Backend
from conformance.core.call import AutogradCall, Call
from conformance.core.compiled import CompiledCall
from conformance.inputs.inplace_forms import InplaceCall
from conformance.inputs.layouts import LayoutCall
from conformance.inputs.out_forms import OutCall
from conformance.repro.autograd import autograd_snippet
from conformance.repro.common import SHOW, bringup_lines, call_body, value_text
from conformance.repro.compiled import compiled_snippet
from conformance.repro.inplace import inplace_snippet
from conformance.repro.layouts import layout_snippet
from conformance.repro.out import out_snippet

#: The snippet of each kind of call, the first whose type matches (a kind of call is a
#: :class:`Call` variant: a new one with a repro of its own is a row here).
SNIPPETS: tuple[tuple[type[Call], Callable[[Any, Backend, str | None], str]], ...] = (
    (AutogradCall, autograd_snippet),  # backpropagates too
    (CompiledCall, compiled_snippet),  # eager, fake propagation and torch.compile
    (InplaceCall, inplace_snippet),  # self as the same view or dtype on both sides
    (LayoutCall, layout_snippet),  # arguments laid out as the same views
    (OutCall, out_snippet),  # out= tensors built in the same form
)


def snippet(call: Call, backend: Backend, *, note: str | None = None) -> str:
    """The standalone repro for ``call`` on ``backend``: the kind's own snippet
    (:data:`SNIPPETS`), else the plain call on CPU and on the device."""
    for kind, render in SNIPPETS:
        if isinstance(call, kind):
            return render(call, backend, note)
    sig = call.sig
    lines = ["import torch"]
    lines += bringup_lines(backend)
    lines.append("")
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {sig.name}: {sig.schema_str}")
    lines.append("def call(device):")
    lines += call_body(call, lambda name, value: value_text(value, name not in call.on_cpu))
    lines.append("")
    lines.append(SHOW)
    lines.append('show("cpu")')
    lines.append(f"show({backend.device!r})")
    return "\n".join(lines) + "\n"
