"""The calls and contexts the comparison tests build, in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import opdb
from conformance.compare.context import Context
from conformance.core.backends import resolve
from conformance.core.call import Call
from conformance.core.inflight import Inflight
from conformance.core.signature import OpSignature
from opdb.opdata import load_hints, load_tolerances

if TYPE_CHECKING:
    from conformance.core.backends import Backend
    from conformance.core.verdicts import Verdict
    from opdb.opdata import OpHints


def make_call(name: str, **values: Any) -> Call:
    """A call of overload ``name`` with these argument values, in the schema's order given."""
    return Call(sig=OpSignature.of(opdb.load()[name]), values=tuple(values.items()))


def make_context(call: Call, tolerance_fn: Any = None, *, backend: str = "cpu") -> Context:
    """What a check compares ``call`` through on ``backend`` (``mlu``: its unmodified kernels),
    with the packaged hints and tolerances (or ``tolerance_fn``)."""
    found = resolve(backend, without=()) if backend == "mlu" else resolve(backend)
    return Context(backend=found, sig=call.sig, hints=load_hints().for_op(call.sig.name),
                   tolerance_fn=tolerance_fn or load_tolerances(), inflight=Inflight(None),
                   repro_fn=lambda c: "")


def forward_verdict(backend: Backend, name: str, hints: OpHints, *,
                    max_examples: int) -> Verdict:
    """The forward check's verdict on overload ``name`` with these ``hints`` (the packaged
    tolerances, seed 0, no example database: the same draws whatever the hints)."""
    from conformance.checks.registry import CHECKS
    from conformance.engine import EngineSettings, Item, run_check

    return run_check(Item(OpSignature.of(opdb.load()[name]), CHECKS["forward"]), backend,
                     settings=EngineSettings(max_examples=max_examples, seed=0, database=None),
                     hints=hints, tolerance_fn=load_tolerances(), repro_fn=lambda call: "")
