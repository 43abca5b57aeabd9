"""Repro snippets show what the check compared: for an overload that returns nothing and writes
its arguments (``_foreach_neg_``, ``_foreach_add.Scalar_out``), the written arguments, on both
sides (torch_xla's complex128 ``_foreach_neg_`` lost its imaginary part; the snippet printed
``out[0] = None`` twice and reproduced nothing), in the noncontiguous check's snippet too (its
``_foreach_div.List_out`` repro on torch_xla showed ``None`` twice)."""

from __future__ import annotations

import subprocess
import sys

import torch

import opdb
from conformance.core.backends import resolve
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.layouts import with_layouts
from conformance.repro.snippet import snippet


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True).stdout


def test_written_arguments_are_what_the_snippet_shows() -> None:
    neg = Call(sig=OpSignature.of(opdb.load()["_foreach_neg_"]),
               values=(("self", [torch.tensor(3.5 + 3.5j, dtype=torch.complex128),
                                 torch.tensor([1.0, 2.0])]),))
    out = _run(snippet(neg, resolve("mlu")))
    assert "None" not in out
    assert out.count("tensor(-3.5000-3.5000j, dtype=torch.complex128)") == 2  # cpu and mlu
    assert out.count("tensor([-1., -2.])") == 2
    add_out = Call(sig=OpSignature.of(opdb.load()["_foreach_add.Scalar_out"]),
                   values=(("self", [torch.tensor([1.0, 2.0])]), ("scalar", 2),
                           ("out", [torch.empty(0)])))
    out = _run(snippet(add_out, resolve("mlu")))
    assert out.count("tensor([3., 4.])") == 2 and "None" not in out


def test_a_layout_snippet_shows_the_written_arguments_too() -> None:
    call = Call(sig=OpSignature.of(opdb.load()["_foreach_neg.out"]),
                values=(("self", [torch.tensor([[1.0, 2.0], [3.0, 4.0]])]),
                        ("out", [torch.empty(0)])))
    laid = with_layouts(call, (("self", "transposed"),))
    code = snippet(laid, resolve("mlu"))
    assert "noncontiguous inputs: self transposed" in code
    out = _run(code)
    assert "None" not in out
    assert out.count("tensor([[-1., -2.],\n        [-3., -4.]])") == 2  # cpu and mlu
