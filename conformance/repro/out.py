"""The repro of an ``out=`` call in one of its forms: the out tensors built as the check built
them, on CPU and on the device.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from conformance.core.call import Call
from conformance.inputs.out_forms import (
    OutCall,
    OutForm,
    effective_kind,
    make_outs,
    out_names,
    warnings_seen,
)
from opdb.dtypes import dtype_name

if TYPE_CHECKING:
    from conformance.core.backends import Backend


_SHOW = '''def show(device):
    outs, bases = make_outs(KIND, SHAPES, DTYPES, device, alt=ALT, index=INDEX, grow=GROW)
    with warnings_seen() as seen:
        try:
            res = call(device, outs)
        except Exception as exc:
            print(f"{device}: raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            res = exc
    if isinstance(res, Exception):
        return
    rets = list(res) if isinstance(res, (tuple, list)) else [res]
    print(f"{device}: returns the out= tensors themselves: {[r is o for r, o in zip(rets, outs)]}")
    print(f"{device}: resize warning: {any('was resized' in w for w in seen)}")
    for i, (o, b) in enumerate(zip(outs, bases)):
        print(f"{device}: out[{i}] dtype={o.dtype} shape={tuple(o.shape)} device={o.device}")
        print(b.cpu() if b is o else f"base {tuple(b.shape)}:\\n{b.cpu()}")
'''


def out_snippet(call: Call, backend: Backend, note: str | None = None) -> str:
    """The standalone repro of an ``out`` example: the outs built as the check builds them (the
    check's own :func:`make_outs`), the call on CPU and on the device, and for each side whether
    the outs came back, what they hold, and whether a resize warning was given."""
    from conformance.repro.common import bringup_lines, op_call, value_text

    sig = call.sig
    names = out_names(sig)
    form = call.form if isinstance(call, OutCall) else OutForm()
    kind = effective_kind(call, backend)
    drawn = dict(call.values)
    dtypes = [f"torch.{dtype_name(drawn[n].dtype)}" for n in names]

    def text(name: str, value: Any) -> str:
        if name in names:
            return f"outs[{names.index(name)}]"
        return value_text(value, name not in call.on_cpu)

    lines = ["from __future__ import annotations", "", "import os", "import sys", "import tempfile", "import warnings",
             "from contextlib import contextmanager", "", "import torch", *bringup_lines(backend),
             ""]
    if note:
        lines.append(f"# {note}")
    lines += [f"# {sig.name}: {sig.schema_str}",
              f"# the out check, form {kind!r}: {OutForm(kind, form.dtype, form.index, form.grow).describe(len(names))}",
              "def call(device, outs):", f"    return {op_call(call, text)}", "",
              f"DTYPES = [{', '.join(dtypes)}]",
              "probe = [torch.empty(0, dtype=d) for d in DTYPES]",
              "call('cpu', probe)  # the shapes CPU gives empty outs",
              "SHAPES = [tuple(p.shape) for p in probe]",
              f"KIND, ALT, INDEX, GROW = {kind!r}, "
              f"{'torch.' + form.dtype if form.dtype and kind == 'dtype' else None}, "
              f"{form.index}, {form.grow}", "", "",
              inspect.getsource(make_outs), "",
              "@contextmanager", inspect.getsource(warnings_seen).split("@contextmanager\n", 1)[1],
              "", _SHOW, 'show("cpu")', f"show({backend.device!r})"]
    return "\n".join(lines) + "\n"
