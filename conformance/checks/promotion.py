"""The ``promotion`` check: result dtype (and shape) as CPU across operand dtypes and forms;
where CPU raises, the backend raises the same type.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from conformance.checks.check import Check
from conformance.compare.outputs import compare_outputs
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure
from conformance.inputs.strategies import promotion_calls
from opdb.dtypes import DTYPE_NAMES, category, dtype_name, torch_dtypes

if TYPE_CHECKING:
    from conformance.compare.context import Context


def promotion_applies(sig: OpSignature) -> str | None:
    if not sig.operands:
        return "no Tensor or Scalar operand whose dtype could promote"
    if not sig.tensor_args:
        return "no tensor argument"
    return None


def promotion_identity(call: Call) -> str:
    """A promotion example is its structure: operand forms, dtypes, shapes and Python scalar
    values (tensor values are a safe fill the check does not compare). Drawn calls repeat one
    in three times at the default 30 examples (mul.Tensor: 20 distinct of 30)."""
    return f"{call.describe()}|{call.notes}|{sorted(call.on_cpu)}"


def verify_promotion(ctx: Context, call: Call) -> None:
    """Result dtype (and shape) as CPU; where CPU raises, the backend raises the same type.

    A backend that refuses a call with a 0-dim CPU tensor among device operands is judged on
    the same call with that operand on the device (its verdict stands for the example, and a
    pass notes ``cpu_operand_refused``): ATen's generated device check refuses CPU operands
    except in the TensorIterator ops that opt out, so accepting one is not a promotion rule."""
    __tracebackhide__ = True
    _verify_promotion_one(ctx, call)
    for partner in (*zero_dim_partners(call), *python_partners(call)):
        try:
            _verify_promotion_one(ctx, partner)
        except CheckFailure as exc:
            exc.call = exc.call or partner
            raise


def zero_dim_partners(call: Call) -> list[Call]:
    """``call`` again with its first 0-dim tensor operand (on the device or kept on CPU)
    retyped to each dtype where promoting it with the first operand of higher rank follows a
    rule rather than the table: ``torch.result_type`` differs from ``torch.promote_types`` (a
    wider 0-dim operand of the same category does not promote: float32 with a float64 0-dim is
    float32) or the 0-dim operand gives the result its dtype (int32 with a float16 0-dim is
    float16). Drawn at random, one such (dtype, 0-dim dtype) pair comes about once in fifty
    promotion calls; every drawn call with a 0-dim operand now tries them all (at most eleven
    small calls, dtypes only: the values are the safe fill). Empty without such a pair."""
    names = [a.name for a in call.sig.operands if a.base == "Tensor"]
    given = dict(call.values)
    tensors = [(n, given[n]) for n in names if isinstance(given.get(n), torch.Tensor)]
    lead = next((t for _, t in tensors if t.dim() > 0), None)
    zero = next(((n, t) for n, t in tensors if t.dim() == 0), None)
    if lead is None or zero is None:
        return []
    name, z = zero
    out = []
    for dtype in torch_dtypes():
        if dtype == z.dtype:
            continue
        probe = torch.ones((), dtype=dtype)
        result = torch.result_type(lead, probe)
        if result == torch.promote_types(lead.dtype, dtype) and result == lead.dtype:
            continue
        retyped = (z.real if z.is_complex() and not dtype.is_complex else z).to(dtype)
        out.append(replace(call, values=tuple((n, retyped if n == name else v)
                                               for n, v in call.values)))
    return out


#: A Python number of each kind, by category, for :func:`python_partners`: not 0 or 1 (a
#: kernel's identity fast path returns ``self`` in its own dtype whatever the rule says).
PYTHON_OF_CATEGORY: dict[str, bool | int | float | complex] = {
    "bool": True, "integral": 3, "floating": 0.5, "complex": complex(0.5, 0.25)}


def python_partners(call: Call) -> list[Call]:
    """``call`` again with its first Python-number operand replaced by a number of each kind
    of a higher category than the first tensor operand's dtype (:data:`PYTHON_OF_CATEGORY`):
    a wrapped number of a higher category gives the result its category (an int64 tensor
    times 0.5 is float32, the default dtype), one of the same or a lower category never
    changes it. Drawn at random, the pair (an integral tensor, a Python float) comes in about
    one promotion call in thirty; every drawn call with a Python operand now tries its rule's
    pairs (at most three small calls, dtypes only). Empty without a Python operand."""
    given = dict(call.values)
    names = [a.name for a in call.sig.operands]
    lead = next((given[n] for n in names if isinstance(given.get(n), torch.Tensor)), None)
    number = next((n for n in names if isinstance(given.get(n), bool | int | float | complex)),
                  None)
    if lead is None or number is None:
        return []
    order = tuple(PYTHON_OF_CATEGORY)
    lowest = order.index(category(dtype_name(lead.dtype))) + 1 \
        if dtype_name(lead.dtype) in DTYPE_NAMES else len(order)
    drawn = f"{number}=python {type(given[number]).__name__}"
    out = []
    for kind in order[lowest:]:
        value = PYTHON_OF_CATEGORY[kind]
        if type(value) is type(given[number]):
            continue
        notes = tuple(f"{number}=python {type(value).__name__}" if note == drawn else note
                      for note in call.notes)
        out.append(replace(call, notes=notes, values=tuple(
            (n, value if n == number else v) for n, v in call.values)))
    return out


def _verify_promotion_one(ctx: Context, call: Call) -> None:
    __tracebackhide__ = True
    from opdb.outcomes import CPU_OPERAND_REFUSED, ERROR_RAISES, ERROR_TYPE

    expected, cpu_exc = ctx.run_cpu_or_error(call)
    try:
        _promotion_on_backend(ctx, call, expected, cpu_exc)
    except CheckFailure as refused:
        if not call.on_cpu or refused.category not in (ERROR_RAISES, ERROR_TYPE):
            raise
        on_device = replace(call, on_cpu=frozenset())
        try:
            _promotion_on_backend(ctx, on_device, expected, cpu_exc)
        except CheckFailure as exc:
            exc.call = exc.call or on_device
            raise
        ctx.note_info(CPU_OPERAND_REFUSED, refused.message)


def _promotion_on_backend(ctx: Context, call: Call, expected: Any,
                          cpu_exc: BaseException | None) -> None:
    __tracebackhide__ = True
    if cpu_exc is not None:
        ctx.expect_same_error(call, cpu_exc)
        return
    actual = ctx.run_backend(call)
    compare_outputs(ctx, call, expected, actual, values=False)


CHECK = Check("promotion", promotion_calls,
              "result dtype as CPU across dtype pairs and operand forms", promotion_applies,
              verify_promotion, examples_factor=3, identity=promotion_identity)
