"""Result strides: where CPU's are a contract (:func:`stride_contract`) and how the backend's
are compared (:func:`compare_strides`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import torch
from torch._prims_common import check_significant_strides

from conformance.compare.outputs import result_leaves
from conformance.core.verdicts import CheckFailure
from conformance.inputs.layouts import LayoutCall, tensors_of
from opdb.outcomes import STRIDES, STRIDES_INFORMATIONAL

if TYPE_CHECKING:
    from conformance.compare.context import Context


_VIEW_RETURN = re.compile(r"\([a-z]+\)")  # `-> Tensor(a)`: the result aliases an input


def stride_contract(call: LayoutCall) -> str | None:
    """Why CPU's result strides are a contract for ``call`` (``None``: they are not)."""
    sig = call.sig
    returns = sig.schema_str.rpartition("->")[2]
    if sig.kind == "functional" and _VIEW_RETURN.search(returns):
        return "a view of an input"
    if sig.kind == "inplace":
        return "an in-place result is self"
    if any(a.base == "MemoryFormat" for a in sig.args):
        return "memory_format (default preserve_format) decides them"
    tensors = {name for name, value in call.values if tensors_of(value)}
    if sig.is_pointwise and sig.kind == "functional" and call.dense \
            and tensors <= set(call.layout_of):
        # every tensor in one dense layout (with mixed layouts TensorIterator's choice of the
        # result's is an implementation detail: then the difference is informational)
        return "an elementwise op on dense non-overlapping inputs of one layout"
    return None


def compare_strides(ctx: Context, call: LayoutCall, expected: Any, actual: Any) -> None:
    """Strides (of dimensions longer than 1) and, for views, storage offsets of every strided
    result as CPU's: a ``strides`` failure where :func:`stride_contract` says they are a
    contract, else an informational note (``strides_informational``)."""
    __tracebackhide__ = True
    contract = stride_contract(call)
    exp, act = result_leaves(expected), result_leaves(actual)
    for i, (e, a) in enumerate(zip(exp, act, strict=True)):
        if not (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor)) \
                or e.layout != torch.strided or a.layout != torch.strided:
            continue
        label = "out" if len(exp) == 1 else f"out[{i}]"
        same, _ = check_significant_strides(e, a, only_cuda=False)
        what = f"{label}.stride()={tuple(a.stride())}, but CPU's is {tuple(e.stride())}"
        if same and contract == "a view of an input" and e.numel() > 0 \
                and a.storage_offset() != e.storage_offset():
            same = False
            what = (f"{label}.storage_offset()={a.storage_offset()}, but CPU's is "
                    f"{e.storage_offset()}")
        if same:
            continue
        if contract is not None:
            raise CheckFailure(STRIDES, f"with {call.layout_text}, {what} (a contract: "
                                        f"{contract}) [{call.describe()}]")
        ctx.note_info(STRIDES_INFORMATIONAL, f"with {call.layout_text}, {what}")
