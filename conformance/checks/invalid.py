"""The ``invalid`` check: a call made invalid on purpose (an index out of range, a negative
size or dim, shapes or dtypes that do not fit: :mod:`conformance.inputs.invalid`) is refused
by the backend where CPU refuses it (``error_accepts`` otherwise, with the repro), and a call
with an index, mask or source emptied next to a non-empty ``self`` gets CPU's answer.

The valid call it was made from must be one CPU accepts (else the example is not counted), so
CPU's refusal is the change's. An invalid change CPU accepts (a dim list that ignores
duplicates, a negative count read as "all") is not counted: nothing was refused, and an
unchecked kernel's answer to it (``_unsafe_index``) specifies nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.checks.check import Check
from conformance.compare.outputs import compare_outputs
from conformance.core.call import Call, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from conformance.inputs.invalid import EdgeCall, invalid_calls, sites
from opdb.opdata import OpHints

if TYPE_CHECKING:
    from conformance.compare.context import Context


class NotChanged(Exception):
    """The drawn call could not be made invalid, or CPU accepts the invalid one."""


def invalid_applies(sig: OpSignature) -> str | None:
    if sites(sig, OpHints()) or len([a for a in sig.args if a.base == "Tensor"
                                      and not a.is_out]) >= 2:
        return None
    return "no argument with a validity rule (dim, size, index, shape relation)"


def invalid_hints(sig: OpSignature, hints: OpHints) -> str | None:
    if sites(sig, hints):
        return None
    return "no argument with a validity rule the schema or the hints give"


def verify_invalid(ctx: Context, call: Call) -> None:
    """CPU's refusal of the changed call is the backend's; an emptied argument CPU accepts
    gives CPU's answer."""
    __tracebackhide__ = True
    if not isinstance(call, EdgeCall) or call.base is None or not call.mutation:
        raise CpuRejected(NotChanged("no argument of this call could be made invalid"))
    ctx.run_cpu(written(call.base))  # the valid call: CPU refuses it, nothing is learnt
    call = written(call)
    expected, cpu_exc = ctx.run_cpu_or_error(call)
    if cpu_exc is None:
        if call.kind != "empty":
            raise CpuRejected(NotChanged(f"CPU accepts {call.mutation}"))
        actual = ctx.run_backend(call)
        seeded = "nondeterministic_seeded" in call.sig.tags
        compare_outputs(ctx, call, expected, actual, values=not seeded)
        return
    try:
        ctx.expect_same_error(call, cpu_exc)
    except CheckFailure as exc:
        raise CheckFailure(exc.category, f"{call.mutation}: {exc.message}") from None


CHECK = Check("invalid", invalid_calls,
              "invalid arguments refused as CPU refuses them; empty index/mask/source as CPU",
              invalid_applies, verify_invalid, examples_factor=0.6,
              applies_hints=invalid_hints)
