"""The forms an ``out=`` call gives its out tensors in (:data:`FORMS`): drawing calls for the
``out`` check, choosing forms per call, building the out tensors alike on both sides.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.drawing import composite
from opdb.dtypes import CATEGORIES, DTYPE_NAMES, category, dtype_name

if TYPE_CHECKING:
    from conformance.core.backends import Backend


#: The forms a call gives its out= tensors in (``fresh`` is judged first).
FORMS: tuple[str, ...] = ("fresh", "sized", "resize", "dtype", "device", "view")


@dataclass(frozen=True)
class OutForm:
    """How one example gives its out= tensors: ``kind`` (one of :data:`FORMS`), and for
    ``dtype`` the other dtype and which out gets it, for ``resize`` whether the wrong shape is
    smaller (``grow``: the out must grow) or larger than the result."""

    kind: str = "fresh"
    dtype: str | None = None
    index: int = 0
    grow: bool = False

    def describe(self, n_outs: int = 1) -> str:
        which = "out" if n_outs == 1 else f"out[{self.index % n_outs}]"
        return {
            "fresh": "empty out=",
            "sized": "out= of the result's shape and dtype",
            "resize": f"non-empty out= of a wrong shape ({'too few' if self.grow else 'too many'}"
                      f" elements)",
            "dtype": f"{which} of dtype {self.dtype}",
            "device": "out= on cpu",
            "view": "out= a strided view (every other element of a larger base)",
        }[self.kind]


@dataclass(frozen=True)
class OutCall(Call):
    """A :class:`Call` of an out= overload, with the form its out= tensors are given in."""

    form: OutForm = OutForm()


def out_names(sig: OpSignature) -> tuple[str, ...]:
    return tuple(a.name for a in sig.args if a.is_out)


@composite
def out_calls(draw: Any, sig: OpSignature, hints: Any) -> Call:
    """Calls for the ``out`` check: inputs as ``forward`` draws them (plain values: the values
    are the forward check's business); each is judged in every form (:func:`forms_for`)."""
    from conformance.inputs.strategies import Plan, assemble, draw_shapes, tensor_arg_dtypes

    shapes = draw_shapes(draw, sig, hints, mode="forward")
    dtypes = tensor_arg_dtypes(draw, sig, hints, DTYPE_NAMES)
    return assemble(draw, sig, hints, Plan(shapes=shapes, dtypes=dtypes))


def _rotation(call: Call) -> int:
    """A function of the call alone (Hypothesis replays a failing call: its forms must come
    back in the same order, with the same picks)."""
    return zlib.crc32(call.describe().encode() + repr(
        [v.reshape(-1)[:8].tolist() for _, v in call.values
         if isinstance(v, torch.Tensor) and v.layout == torch.strided]).encode())


def alt_dtypes(dtype: str, h: int) -> list[str]:
    """Other dtypes for an out of ``dtype`` in the ``dtype`` form: one of a lower category
    (a result CPU will not cast into it: float into an integral out), one of the same or a
    higher category (one it casts into); each picked among its candidates by ``h``."""
    rank = CATEGORIES.index(category(dtype))
    lower = [d for d in DTYPE_NAMES if CATEGORIES.index(category(d)) < rank]
    higher = [d for d in DTYPE_NAMES if d != dtype and CATEGORIES.index(category(d)) >= rank]
    return [pick[h % len(pick)] for pick in (lower, higher) if pick]


#: Forms one drawn call is judged in: ``fresh`` and three of the seven others, by turns.
FORMS_PER_CALL = 4


def forms_for(call: Call, dtypes: list[torch.dtype]) -> list[OutForm]:
    """The forms one drawn call is judged in, chosen rather than drawn: ``fresh`` first (its
    failure is the forward check's kind, and CPU's answer is the probe's), then
    :data:`FORMS_PER_CALL` - 1 of ``sized``, ``resize`` too small and too large, ``dtype`` with
    a lower-category and a same-or-higher-category dtype (on one out, by turns), ``device`` and
    ``view``, where the call's rotation starts (so an item's calls take their turns through
    them, and a call that stops at its first failing form leaves the others to other calls).
    ``dtypes``: the outs' dtypes."""
    h = _rotation(call)
    index = h % len(dtypes) if dtypes else 0
    alts = alt_dtypes(dtype_name(dtypes[index]), h) if dtypes else []
    rest = [OutForm("sized"), OutForm("resize", grow=True), OutForm("resize", grow=False),
            *(OutForm("dtype", dtype=d, index=index) for d in alts),
            OutForm("device"), OutForm("view")]
    r = h % len(rest)
    return [OutForm("fresh"), *(rest[r:] + rest[:r])[:FORMS_PER_CALL - 1]]


def with_form(call: Call, form: OutForm) -> OutCall:
    """``call`` given its out= tensors in ``form``."""
    return OutCall(sig=call.sig, values=call.values, on_cpu=call.on_cpu, notes=call.notes,
                   source=call.source, form=form)


def make_outs(kind: str, shapes: list[tuple[int, ...]], dtypes: list[torch.dtype], device: str,
              *, alt: torch.dtype | None = None, index: int = 0, grow: bool = False,
              fill: int = 77) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The out= tensors of one form (the repro snippet carries this function's source), and for
    each the tensor whose storage it writes (its base: the out itself unless ``view``).
    ``shapes``/``dtypes``: the outs CPU returns for the call with empty outs."""
    outs, bases = [], []
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes, strict=True)):
        where = "cpu" if kind == "device" else device
        if kind == "fresh":
            base = torch.empty(0, dtype=dtype).to(where)
            out = base
        elif kind == "view":
            base = torch.full((*shape, 2), fill, dtype=dtype).to(where)
            out = base.select(-1, 1)
        else:
            if kind == "resize":
                n = torch.Size(shape).numel()
                shape = (1,) if grow and n > 1 else (n + 1,)
            if kind == "dtype" and i == index % len(shapes) and alt is not None:
                dtype = alt
            base = torch.full(shape, fill, dtype=dtype).to(where)
            out = base
        outs.append(out)
        bases.append(base)
    return outs, bases


@contextmanager
def warnings_seen() -> Iterator[list[str]]:
    """The warnings given inside the block: Python's (a Python kernel's ``warnings.warn``) and
    C++'s (``TORCH_WARN`` of an op called through ``torch.ops``, which reach stderr, not Python:
    read from file descriptor 2). The list is filled when the block ends."""
    seen: list[str] = []
    with tempfile.TemporaryFile() as tmp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield seen
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            seen.extend(str(w.message) for w in caught)
            seen.extend(line for line in text.splitlines() if "Warning" in line)
            other = [line for line in text.splitlines() if "Warning" not in line]
            if other:  # not ours: give it back
                sys.stderr.write("\n".join(other) + "\n")


def effective_kind(call: Call, backend: Backend) -> str:
    """The form ``call`` is judged in on ``backend``: ``device`` needs a backend other than CPU
    and a tensor input on it (an out= factory call, ``zeros.out``, runs where its out is)."""
    kind = call.form.kind if isinstance(call, OutCall) else "fresh"
    if kind == "device":
        outs = set(out_names(call.sig))
        on_device = any(isinstance(t, torch.Tensor) for n, v in call.values
                        if n not in outs and n not in call.on_cpu
                        for t in (v if isinstance(v, list | tuple) else (v,)))
        if backend.is_cpu or not on_device:
            return "sized"
    return kind
