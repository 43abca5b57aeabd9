"""What every repro snippet is made of: the backend's bring-up lines, tensors written as
literals, argument values, the op call.
"""

from __future__ import annotations

import base64
import math
import zlib
from collections.abc import Callable
from typing import Any

import torch

from conformance.core.backends import Backend
from conformance.core.call import Call
from conformance.core.signature import DEVICE

#: elements; above this a tensor is written as its bytes, compressed (:func:`_bytes_literal`):
#: a literal of every value would make the repro megabytes long
_MAX_LITERAL = 4096

#: bytes; above this (more than a vector of 2**16 + 1 complex128 values, the largest size the
#: strategies draw) a tensor is written as zeros of its shape and dtype: the repro then shows
#: the call's shapes, not its values
_MAX_BYTES = 2**20 + 2**10


def bringup_lines(backend: Backend) -> list[str]:
    """Python lines that bring the backend up, derived from its record as
    :func:`conformance.core.backends.bring_up` does: its module imported; ``install()``
    called only where the record ``installs`` (the reference backend, with the overloads it was
    told to leave out; a vendor module that has one), never because of how the name is
    spelled; one tensor made on the device before the snippet's CPU side runs (a device first
    touched after a CPU backward fails autograd's ``device_ready_queues_`` assert)."""
    lines = []
    if backend.module is not None:
        lines.append(f"import {backend.module}")
        if backend.installs:
            args = f"without={list(backend.without)!r}" if backend.without else ""
            lines.append(f"{backend.module}.install({args})")
    if not backend.is_cpu:
        lines.append(f"torch.empty(1, device={backend.device!r})  # the device is up before "
                     f"any CPU backward")
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
        return _bytes_literal(t, dtype)
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


def _bytes_literal(t: torch.Tensor, dtype: str) -> str:
    """A large tensor, exactly: its bytes zlib-compressed and base64-encoded, decoded by an
    expression that imports what it needs (the snippet's header stays ``import torch``)."""
    shape = ", ".join(map(str, t.shape))
    nbytes = t.numel() * t.element_size()
    if nbytes > _MAX_BYTES:
        # no comment here: the caller writes more after it on the same line (.to(device),)
        return f"torch.zeros(({shape},), dtype={dtype})"
    raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    text = base64.b64encode(zlib.compress(raw, 1)).decode("ascii")
    data = (f'bytearray(__import__("zlib").decompress(__import__("base64").b64decode('
            f'"{text}")))')
    return f"torch.frombuffer({data}, dtype={dtype}).reshape({shape})"


def value_text(v: Any, on_device: bool) -> str:
    if v is DEVICE:  # with its index, as the harness passed it (core.call.indexed_device)
        return "torch.empty(0, device=device).device"
    if isinstance(v, torch.Tensor):
        return tensor_literal(v) + (".to(device)" if on_device else "")
    if isinstance(v, list):
        return "[" + ", ".join(value_text(x, on_device) for x in v) + "]"
    if isinstance(v, torch.dtype):
        return f"torch.{str(v).removeprefix('torch.')}"
    if isinstance(v, float | complex | int | bool):
        return _number(v)
    return repr(v)


SHOW = '''def show(device):
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


def call_body(call: Call, text: Callable[[str, Any], str], *, to: str = "return") -> list[str]:
    """The lines of ``call(device)``'s body: the op called with each argument written by
    ``text(name, value)``, its results returned (``to="out"``: assigned to ``out``); for an
    overload that returns nothing and writes its arguments (``_foreach_neg_``,
    ``_foreach_add.Scalar_out``), those arguments, flattened, which is what the value checks
    compared (a snippet printing ``None`` on both sides reproduces nothing)."""
    from conformance.core.call import written_results

    lead = "return " if to == "return" else f"{to} = "
    given = dict(call.values)
    written = [n for n in written_results(call.sig) if n in given]
    if not written:
        return [f"    {lead}{op_call(call, text)}"]
    lines = [f"    {name} = {text(name, given[name])}" for name in written]
    lines.append(f"    {op_call(call, lambda n, v: n if n in written else text(n, v))}")
    parts = [f"*{n}" if isinstance(given[n], list) else n for n in written]
    lines.append(f"    {lead}[{', '.join(parts)}]  # the arguments it wrote")
    return lines


def op_call(call: Call, text: Callable[[str, Any], str]) -> str:
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
