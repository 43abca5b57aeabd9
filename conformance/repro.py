"""Standalone repro snippets: paste into a shell where the backend is installed, see the mismatch.

The snippet brings the backend up from the :class:`~conformance.backends.Backend` record
(``Backend.module``), writes every tensor literally (small, from Hypothesis's shrunk example),
runs the overload on CPU and on the device and prints both results with their dtypes and shapes.
It needs only torch and the backend's module — not opconform.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from conformance.backends import Backend
from conformance.strategies import DEVICE, Call

_MAX_LITERAL = 4096  # elements; above this the tensor is written as a seeded random draw


def bringup_lines(backend: Backend) -> list[str]:
    """Python lines that bring the backend up, derived from its record.

    A ``privateuse1:MODULE`` backend comes up by importing its module; a named backend whose
    record carries a module (the reference backend) comes up through that module's
    ``install()``, with the overloads it was told to leave out.
    """
    if backend.module is None:
        return []
    lines = [f"import {backend.module}"]
    if backend.name != f"privateuse1:{backend.module}":
        args = f"without={list(backend.without)!r}" if backend.without else ""
        lines.append(f"{backend.module}.install({args})")
    return lines


def _number(x: Any) -> str:
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, complex):
        return f"complex({_number(x.real)}, {_number(x.imag)})"
    if isinstance(x, float):
        if math.isnan(x):
            return "float('nan')"
        if math.isinf(x):
            return "float('inf')" if x > 0 else "float('-inf')"
        return repr(x)
    return repr(x)


#: ``torch.float32`` -> ``"torch.float32"`` (every repro of every example writes one per tensor)
_DTYPE_TEXT: dict[torch.dtype, str] = {}


def tensor_literal(t: torch.Tensor) -> str:
    """``torch.tensor([...], dtype=torch.float32).reshape(2, 3)`` — exact for every dtype."""
    dtype = _DTYPE_TEXT.get(t.dtype)
    if dtype is None:
        dtype = _DTYPE_TEXT[t.dtype] = f"torch.{str(t.dtype).removeprefix('torch.')}"
    if t.requires_grad or t.device.type != "cpu":
        t = t.detach().cpu()
    dims = t.dim()
    if dims == 0:
        return f"torch.tensor({_number(t.item())}, dtype={dtype})"
    if t.numel() > _MAX_LITERAL:
        return f"torch.zeros({tuple(t.shape)!r}, dtype={dtype})  # too large to write literally"
    flat = t.reshape(-1)
    if t.dtype == torch.bfloat16:
        values = flat.float().tolist()  # every bfloat16 is exact in float32
    else:
        values = flat.tolist()
    if t.is_complex() or (t.is_floating_point() and not all(map(math.isfinite, values))):
        body = ", ".join(_number(v) for v in values)
    else:  # repr writes finite floats, ints and bools as _number does, at C speed
        body = repr(values)[1:-1]
    text = f"torch.tensor([{body}], dtype={dtype})"
    if dims == 1:
        return text
    return f"{text}.reshape({', '.join(map(str, t.shape))})"


def _value(v: Any, on_device: bool) -> str:
    if v is DEVICE:
        return "device"
    if isinstance(v, torch.Tensor):
        return tensor_literal(v) + (".to(device)" if on_device else "")
    if isinstance(v, list):
        return "[" + ", ".join(_value(x, on_device) for x in v) + "]"
    if isinstance(v, torch.dtype):
        return f"torch.{str(v).removeprefix('torch.')}"
    if isinstance(v, float | complex | int | bool):
        return _number(v)
    return repr(v)


_SHOW = '''def show(device):
    try:
        out = call(device)
    except Exception as exc:
        print(f"{device}: raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return
    for i, o in enumerate(out if isinstance(out, (tuple, list)) else [out]):
        if isinstance(o, torch.Tensor):
            print(f"{device}: out[{i}] dtype={o.dtype} shape={tuple(o.shape)} device={o.device}")
            try:
                print(o.cpu() if o.device.type != "meta" else "  (meta tensor: no values)")
            except Exception as exc:
                print(f"  copying to cpu raised {type(exc).__name__}: {exc}")
        else:
            print(f"{device}: out[{i}] = {o!r}")
'''


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


def _op_call(call: Call, text: Callable[[str, Any], str]) -> str:
    """``torch.ops.aten.X.Y(...)`` with the call's arguments, each written by ``text(name,
    value)``: positional until the first keyword-only or omitted argument, keywords after."""
    sig = call.sig
    given = dict(call.values)
    args: list[str] = []
    kwargs: list[str] = []
    positional = True
    for spec in sig.args:
        if spec.name not in given:
            positional = False
            continue
        written = text(spec.name, given[spec.name])
        if positional and not spec.kwarg_only:
            args.append(written)
        else:
            positional = False
            kwargs.append(f"{spec.name}={written}")
    packet = f"torch.ops.aten.{sig.base}.{sig.overload_name or 'default'}"
    joined = ",\n        ".join(args + kwargs)
    return f"{packet}(\n        {joined},\n    )" if joined else f"{packet}()"


def _autograd_snippet(call: Call, backend: Backend, note: str | None) -> str:
    """The repro of an ``autograd`` example: leaves that require grad, the forward on clones
    of them, and the backward of the same upstream gradient on CPU and on the device."""
    from conformance.checks import grad_leaves
    from conformance.strategies import written_results

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
                else _value(v, True) for i, v in enumerate(value)) + "]"
        if name in leaves:
            return f"inputs[{name!r}].clone()"
        return _value(value, name not in call.on_cpu)

    written = [n for n in written_results(sig) if n in dict(call.values)]
    if written:  # it returns nothing: its results are the arguments it writes
        given = dict(call.values)
        for name in written:
            lines.append(f"    {name} = {text(name, given[name])}")
        lines.append(f"    {_op_call(call, lambda n, v: n if n in written else text(n, v))}")
        parts = [f"*{n}" if isinstance(given[n], list) else n for n in written]
        lines.append(f"    out = [{', '.join(parts)}]")
    else:
        lines.append(f"    out = {_op_call(call, text)}")
    lines.append("    return out, inputs")
    lines += ["", _SHOW_GRADS, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"


def snippet(call: Call, backend: Backend, *, note: str | None = None) -> str:
    """The standalone repro for ``call`` on ``backend`` (an ``autograd`` example's repro
    backpropagates too; a ``noncontiguous`` one builds the same views)."""
    if "autograd" in call.notes:
        return _autograd_snippet(call, backend, note)
    if any(n.startswith("inplace:") for n in call.notes):  # the in-place check's own snippet
        from conformance.variants_inplace import snippet as inplace_snippet

        return inplace_snippet(call, backend, note)
    if "noncontiguous" in call.notes:  # arguments laid out as views (conformance.layouts)
        from conformance.layouts import LayoutCall
        from conformance.layouts import snippet as layout_snippet

        assert isinstance(call, LayoutCall)
        return layout_snippet(call, backend, note=note)
    if any(n.startswith("out form:") for n in call.notes):
        from conformance.variants_out import out_snippet

        return out_snippet(call, backend, note)
    sig = call.sig
    lines = ["import torch"]
    lines += bringup_lines(backend)
    lines.append("")
    if note:
        lines.append(f"# {note}")
    lines.append(f"# {sig.name}: {sig.schema_str}")
    lines.append("def call(device):")
    lines.append(f"    return {_op_call(call, lambda name, value: _value(value, name not in call.on_cpu))}")
    lines.append("")
    lines.append(_SHOW)
    lines.append('show("cpu")')
    lines.append(f"show({backend.device!r})")
    return "\n".join(lines) + "\n"
