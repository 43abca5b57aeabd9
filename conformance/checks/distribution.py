"""The ``distribution`` check: a seeded-random overload's samples follow the distribution its
arguments define, which CPU samples from: per result element, the backend's
:data:`BACKEND_SAMPLES` samples against CPU's :data:`CPU_SAMPLES`, with a two-sample KS bound
whose false-alarm rate is stated (:mod:`conformance.compare.distribution`); half the examples
with their bounded parameters on their bounds (:mod:`conformance.inputs.edges`: ``p = 0``,
``p = 1``, a category of weight 0, ``from == to``).

The ``forward`` check judges these overloads on structure, dtype, shape and a value range
widened around CPU's samples: a sampler returning a constant inside the range, ignoring its
probability argument, or never drawing an outcome of probability strictly between 0 and 1
passes it, and fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from conformance.checks.check import Check
from conformance.compare.distribution import assert_same_distribution, columns
from conformance.compare.outputs import compare_outputs, result_labels, result_leaves
from conformance.core.call import Call, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CpuRejected
from conformance.inputs.edges import edge_calls
from opdb.dtypes import default_tolerance

if TYPE_CHECKING:
    from conformance.compare.context import Context

#: Samples of the call on the backend, and on CPU (cheap: more of them tightens the bound
#: at little cost). 256 and 2048 put the bound near 0.28 for 50 elements: a sampler that
#: never draws an outcome of probability 0.3, or draws p = 0.5 where p is 0 or 1, is found.
BACKEND_SAMPLES = 256
CPU_SAMPLES = 2048


def distribution_applies(sig: OpSignature) -> str | None:
    if "nondeterministic_seeded" not in sig.tags:
        return "not a seeded-random op (tag nondeterministic_seeded): values are compared"
    return None


#: Elements compared per result at most (evenly spread over a larger one: a large drawn size,
#: 2**16 elements, would hold 2048 x 65537 CPU samples in memory; thresholds are not this
#: check's subject).
MAX_ELEMENTS = 256


def _kept(t: Any) -> Any:
    """A result tensor's elements this check compares (all, or :data:`MAX_ELEMENTS` of them)."""
    if not isinstance(t, torch.Tensor) or t.numel() <= MAX_ELEMENTS:
        return t
    flat = t.detach().reshape(-1)
    return flat[torch.linspace(0, flat.numel() - 1, MAX_ELEMENTS, device=flat.device).long()]


def _leaves(out: Any) -> list[Any]:
    """An answer as the result leaves compared (each tensor cut by :func:`_kept`)."""
    return [_kept(t) for t in result_leaves(out)]


def _samples(run: Callable[[Call], Any], call: Call, n: int, first: Any) -> list[list[Any]]:
    """``n`` answers of ``call`` by ``run`` (``first`` among them), as :func:`_leaves`."""
    return [_leaves(first)] + [_leaves(run(call)) for _ in range(n - 1)]


def _tolerance(ctx: Context, call: Call, dtype: torch.dtype) -> tuple[float, float]:
    rtol, atol = ctx.tolerance(call.sig.name, dtype)
    d_rtol, d_atol = default_tolerance(dtype)
    return (d_rtol if rtol is None else rtol), (d_atol if atol is None else atol)


def verify_distribution(ctx: Context, call: Call) -> None:
    """Structure, dtype and shape as CPU's; each result element's samples distributed as
    CPU's (to tolerance)."""
    __tracebackhide__ = True
    call = written(call)
    expected = ctx.run_cpu(call)
    actual = ctx.run_backend(call)
    compare_outputs(ctx, call, expected, actual, values=False)
    if not ctx.hints.values or not ctx.values_comparable():
        return
    # CPU's reruns of the call it answered skip the per-example bookkeeping: half of this
    # check's CPU time went to the marker and the tallies, not to sampling
    try:
        cpu = [_leaves(expected), *ctx.cpu_samples(call, CPU_SAMPLES - 1, keep=_leaves)]
    except Exception as exc:  # noqa: BLE001 - CPU refusing a rerun: the example is not counted
        raise CpuRejected(exc) from None
    backend = [[ctx.to_host(t) if isinstance(t, torch.Tensor) else t for t in leaves]
               for leaves in _samples(ctx.run_backend, call, BACKEND_SAMPLES, actual)]
    labels = result_labels(call, len(cpu[0]))
    judged = [i for i, e in enumerate(cpu[0]) if isinstance(e, torch.Tensor)
              and all(isinstance(s[i], torch.Tensor) and s[i].shape == e.shape
                      for s in cpu + backend)]  # CPU's shapes vary: nothing to line up
    tests = sum(cpu[0][i].numel() * (2 if cpu[0][i].is_complex() else 1) for i in judged)
    for i in judged:
        rtol, atol = _tolerance(ctx, call, cpu[0][i].dtype)
        assert_same_distribution(labels[i], call.describe(),
                                 columns([s[i] for s in backend]), columns([s[i] for s in cpu]),
                                 rtol, atol, tests)


CHECK = Check("distribution", edge_calls,
              "seeded-random samples distributed as CPU's (per element, KS bound)",
              distribution_applies, verify_distribution, examples_factor=0.6, shrink=False)
