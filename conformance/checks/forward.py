"""The ``forward`` check: values (dtype-aware tolerances), dtype and shape agree with CPU;
one refill as non-contiguous views and, for ``out=`` overloads, one with pre-sized outs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from conformance.checks.check import Check
from conformance.compare.outputs import compare_outputs
from conformance.core.call import Call, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure
from conformance.inputs.dims import twin_dims
from conformance.inputs.large import tiled_large
from conformance.inputs.layouts import LayoutCall
from conformance.inputs.strategies import forward_calls

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from opdb.opdata import OpHints


def forward_applies(sig: OpSignature) -> str | None:
    return None


#: The forward refill whose tensors are laid out as non-contiguous views
#: (:func:`conformance.inputs.layouts.refill_views`): a kernel right only for contiguous input shows
#: in the default run, at no extra call. Refill 6 keeps the drawn dtype and no forced special.
VIEW_REFILL = 6


#: The forward refill of an ``out=`` overload whose outs are given pre-sized: CPU's result
#: shape and dtype, holding a fill value (the ``out`` check's ``sized`` form,
#: :func:`sized_outs`), on both sides. Every other refill gives empty outs, which a kernel
#: resizes: one that reads its out's old contents where the out already fits (an in-place path
#: taken on ``out`` instead of ``self``) shows only here in the default run. Refill 4 keeps the
#: drawn dtype and no forced special; it costs one more CPU call (the shape probe).
SIZED_OUT_REFILL = 4


#: The forward refill whose dimension arguments come in their other spelling (``d - rank`` for
#: ``d >= 0``, ``d + rank`` for a negative one: :func:`conformance.inputs.dims.twin_dims`):
#: ATen wraps both to one dimension, and a kernel that wraps only one way (a negative dim taken
#: as dim 0) shows in the default run, at no extra call, whichever sign the draw chose.
TWIN_DIM_REFILL = 2


#: The forward refill whose input tensors are tiled along their common last dimension past 256
#: elements (2**16 + 1 for a pointwise op on vectors: :func:`conformance.inputs.large.
#: tiled_large`), for one drawn call in two: an item runs past the sizes where kernels change
#: path whatever size was drawn, at the cost of that refill's larger tensors.
LARGE_REFILL = 8


_SIZED_OUT = "out= pre-sized"


def forward_refill(call: Call, i: int, hints: OpHints) -> Call:
    if i == TWIN_DIM_REFILL:
        return twin_dims(call, hints)
    if i == LARGE_REFILL:
        return tiled_large(call, hints.max_side)
    if i == SIZED_OUT_REFILL and call.sig.kind == "out" and any(
            a.is_out for a in call.sig.args) and not any(a.is_out and a.is_list
                                                          for a in call.sig.args):
        return replace(call, notes=(*call.notes, _SIZED_OUT))
    if i != VIEW_REFILL:
        return call
    from conformance.inputs.layouts import refill_views

    return refill_views(call)


def sized_outs(call: Call, probe: Any) -> Call | None:
    """``call`` with each ``out=`` tensor replaced by one of the shape and dtype CPU's answer
    ``probe`` (to the call with empty outs) gave it, filled as the ``out`` check's ``sized``
    form fills it; ``None`` where the results cannot be matched to the outs."""
    from conformance.inputs.out_forms import make_outs

    names = [a.name for a in call.sig.args if a.is_out]
    results = list(probe) if isinstance(probe, tuple | list) else [probe]
    if len(results) != len(names) or not all(isinstance(r, torch.Tensor) for r in results):
        return None
    outs, _ = make_outs("sized", [tuple(r.shape) for r in results],
                        [r.dtype for r in results], "cpu")
    given = dict(zip(names, outs, strict=True))
    return replace(call, values=tuple((n, given.get(n, v)) for n, v in call.values))


def verify_forward(ctx: Context, call: Call) -> None:
    """Values (dtype-aware tolerances), dtype and shape agree with CPU."""
    __tracebackhide__ = True
    if isinstance(call, LayoutCall):  # the view refill: a failure the layout's alone
        from conformance.checks.noncontiguous import verify_layouts

        verify_layouts(ctx, call, strides=False)
        return
    call = written(call)  # an overload returning nothing: what it wrote is its result
    if _SIZED_OUT in call.notes:
        call = sized_outs(call, ctx.run_cpu(call)) or call
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
    try:
        actual = ctx.run_backend(call)
        compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)
    except CheckFailure as exc:
        exc.call = exc.call or call  # the pre-sized outs are part of the repro
        raise


CHECK = Check("forward", forward_calls, "values, dtype and shape as CPU", forward_applies,
              verify_forward, refills=True, prepare=forward_refill, recorded="forward")
