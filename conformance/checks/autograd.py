"""The ``autograd`` check: gradients of every differentiable output, for the same upstream
gradient, agree with CPU's for every differentiated input.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NoReturn

import torch

from conformance.checks.check import Check
from conformance.compare.gradients import (
    RANDOM_GRAD_RERUNS,
    CpuForward,
    Picked,
    backward_name,
    cpu_forward,
    grad_args,
    grad_leaves,
    random_grads,
    with_leaves,
    within_cpu_error,
)
from conformance.compare.outputs import compare_outputs, result_label, result_leaves
from conformance.compare.values import assert_values
from conformance.core.call import Call, settle, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import Abort, CheckFailure, CpuRejected, error_line, missing_op_from
from conformance.inputs.strategies import autograd_calls
from opdb.outcomes import (
    BACKWARD_RAISES,
    ERROR_RAISES,
    FORWARD_DIFFERS,
    GRAD_META,
    GRAD_PRESENCE,
    GRAD_VALUE,
)

if TYPE_CHECKING:
    from conformance.compare.context import Context


#: torch's error when autograd has no derivative for an op it reached (a ``not_implemented``
#: formula, or the fallback of an op with a kernel but no formula), naming the op
_NO_DERIVATIVE = re.compile(r"derivative for (?:aten::)?([\w.]+) is not implemented")


#: autograd's refusal of an input that requires grad where the formula has no derivative for it
_NOT_DIFFERENTIABLE = re.compile(r"is not differentiable with respect to argument '(\w+)'")


def _no_cpu_derivative(sig: OpSignature, exc: BaseException) -> None:
    """End the search as ``skip``/``cpu_unsupported`` when CPU's autograd says it implements no
    derivative for this very overload (``derivative for aten::silu_backward is not
    implemented``): the oracle cannot differentiate it on any input. An op it calls lacking
    one is just this example's rejection."""
    m = _NO_DERIVATIVE.search(str(exc))
    if m and m.group(1).split(".")[0] in (sig.base, sig.name):
        raise Abort("skip", "cpu_unsupported", f"CPU (the oracle) implements no derivative "
                                               f"for it: {error_line(exc)}") from None


def autograd_applies(sig: OpSignature) -> str | None:
    from conformance.core.rundb import current

    db = current()
    if sig.name not in db:
        return "not in the op database: its derivatives are unknown"
    how = db.autograd(sig.name)
    if how not in ("formula", "decomposition"):
        return f"not differentiable (autograd: {how})"
    if not grad_args(sig):
        return "no tensor argument has a derivative formula"
    return None


def verify_autograd(ctx: Context, call: Call) -> None:
    """Gradients of every differentiable output, for the same drawn upstream gradient, agree
    with CPU's for every differentiated input; the backward's own failures are named as such."""
    __tracebackhide__ = True
    call = written(call)  # an overload returning nothing: what it wrote is its result
    where = call.describe()
    picked, cpu = _cpu_forward(ctx, call)
    exp_grads = _cpu_backward(ctx, call, cpu)
    seeded = "nondeterministic_seeded" in call.sig.tags
    # seeded-random (dropout, rrelu, normal_): the backend draws other random values, so its
    # forward values are not CPU's; a gradient's values are compared only where CPU's own
    # gradient repeats on a second draw (zeros_like(grad) of the samplers, dropout with p=0 or
    # train=False, rrelu outside training); elsewhere its presence, dtype and shape are
    vary = random_grads(ctx, call, picked, cpu.idx, cpu.ups, exp_grads) if seeded else set()
    dev_leaves, act_outs = _backend_forward(ctx, call, where, cpu, seeded=seeded)
    act_grads = _backend_backward(ctx, call, where, dev_leaves, act_outs, cpu.ups)
    _compare_grads(ctx, call, where, picked, cpu, exp_grads, act_grads, vary, seeded=seeded)


def _cpu_refuses(ctx: Context, exc: BaseException) -> NoReturn:
    """This example is not counted: ``exc`` says why (noted among CPU's refusals)."""
    ctx.cpu_errors[error_line(exc)] += 1
    raise CpuRejected(exc)


def _cpu_forward(ctx: Context, call: Call) -> tuple[Picked, CpuForward]:
    """CPU's forward (:func:`cpu_forward`) through ctx (counted, marked), and the inputs it
    differentiates. An argument the derivatives do not cover (nll_loss's weight, through
    nll_loss_forward) is refused as a leaf by name: it is passed again as a plain input."""
    picked = grad_leaves(call)
    if not picked:
        _cpu_refuses(ctx, ValueError("no floating or complex tensor input to differentiate"))
    while True:
        try:
            cpu = cpu_forward(call, picked, ctx.run_cpu)
            break
        except CpuRejected as rejected:
            refusal = rejected.exc
        picked = _without_refused_leaf(ctx, call.sig, picked, refusal)
    if not cpu.idx:
        _cpu_refuses(ctx, ValueError("no output of this example requires grad"))
    return picked, cpu


def _without_refused_leaf(ctx: Context, sig: OpSignature, picked: Picked,
                          refusal: BaseException) -> Picked:
    """``picked`` less the argument CPU's ``refusal`` names as not differentiable (that
    refusal is then not this example's: uncounted); else the example is CPU's refusal."""
    _no_cpu_derivative(sig, refusal)
    m = _NOT_DIFFERENTIABLE.search(str(refusal))
    rest = [p for p in picked if m is None or p[0] != m.group(1)]
    if not rest or len(rest) == len(picked):
        raise CpuRejected(refusal)
    line = error_line(refusal)  # not this example's refusal: it is retried
    ctx.cpu_errors[line] -= 1
    if ctx.cpu_errors[line] <= 0:
        del ctx.cpu_errors[line]
    return rest


def _cpu_backward(ctx: Context, call: Call, cpu: CpuForward) -> tuple[Any, ...]:
    """CPU's gradients; CPU without a backward kernel or derivative for this overload ends the
    search (``skip``/``cpu_unsupported``), any other refusal is this example's."""
    try:
        return cpu.grads()
    except Exception as exc:  # noqa: BLE001 - CPU's errors are data here
        if missing_op_from(exc) is not None:
            raise Abort("skip", "cpu_unsupported", f"CPU (the oracle) has no backward kernel: "
                                                   f"{error_line(exc)}") from None
        _no_cpu_derivative(call.sig, exc)
        ctx.cpu_errors[error_line(exc)] += 1
        raise CpuRejected(exc) from None


def _backend_forward(ctx: Context, call: Call, where: str, cpu: CpuForward, *, seeded: bool
                     ) -> tuple[dict[str, torch.Tensor], list[torch.Tensor]]:
    """The backend's forward: leaves on the device (by label) and its outputs at ``cpu.idx``,
    which agree with CPU's (values unless ``seeded``) and require grad as CPU's do."""
    # the op sees clones of the leaves (so in-place overloads work)
    device = ctx.backend.device
    ctx.inflight.call(call, ctx.repro_fn, side=device)
    try:
        dev_leaves = {k: t.detach().to(device).requires_grad_() for k, t in cpu.leaves.items()}
    except Exception as exc:  # noqa: BLE001
        ctx.stop_if_unsupported(exc, call)
        raise CheckFailure(ERROR_RAISES, f"copying an input to {device} raised "
                                         f"{error_line(exc)} [{where}]") from None
    actual = ctx.run_backend(with_leaves(call, dev_leaves, torch.Tensor.clone), marker=call)
    try:
        compare_outputs(ctx, call, cpu.out, actual, values=not seeded)
    except CheckFailure as exc:
        raise CheckFailure(FORWARD_DIFFERS, f"forward already differs from CPU, gradients not "
                                            f"compared: {exc.message}") from None
    act_all = result_leaves(actual)
    missing = [i for i in cpu.idx if not getattr(act_all[i], "requires_grad", False)]
    if missing:
        raise CheckFailure(GRAD_PRESENCE, f"{result_label(missing[0], len(act_all))} does not require "
                                          f"grad, but CPU's does [{where}]")
    return dev_leaves, [act_all[i] for i in cpu.idx]


def _backend_backward(ctx: Context, call: Call, where: str, dev_leaves: dict[str, torch.Tensor],
                      act_outs: list[torch.Tensor], ups: list[torch.Tensor]) -> tuple[Any, ...]:
    """The backend's gradients of ``act_outs`` for CPU's upstream gradients ``ups``."""
    ctx.inflight.call(call, ctx.repro_fn, side=ctx.backend.device)
    try:
        # each upstream gradient where its output lives (an op returning CPU tensors by design,
        # _to_cpu, takes a CPU gradient on every device)
        grads = torch.autograd.grad(act_outs, list(dev_leaves.values()),
                                    [u.to(o.device) for u, o in zip(ups, act_outs, strict=True)],
                                    allow_unused=True)
        return settle(ctx.backend.device, grads)  # a lazy device computes them now
    except Exception as exc:  # noqa: BLE001
        ctx.stop_if_unsupported(exc, call)  # a missing backward kernel: unsupported, naming it
        raise CheckFailure(BACKWARD_RAISES, f"{backward_name(call.sig, act_outs)} raised "
                                            f"{error_line(exc)}, but CPU's returned gradients "
                                            f"[{where}]") from None


def _compare_grads(ctx: Context, call: Call, where: str, picked: Picked, cpu: CpuForward,
                   exp_grads: tuple[Any, ...], act_grads: tuple[Any, ...], vary: set[str], *,
                   seeded: bool) -> None:
    """Each input's gradient on the backend against CPU's: present on both or neither, then
    as :func:`compare_outputs` has them, then values (not those in ``vary``)."""
    device = ctx.backend.device
    precise: dict[str, Any] = {}  # CPU's gradients in float64, computed on first need
    for label, e, a in zip(cpu.leaves, exp_grads, act_grads, strict=True):
        if (e is None) != (a is None):
            has, lacks = ("CPU", device) if a is None else (device, "CPU")
            raise CheckFailure(GRAD_PRESENCE, f"grad of {label} is None on {lacks}, but a "
                                              f"tensor on {has} [{where}]")
        if e is None:
            continue
        try:
            # structure, device, dtype and shape as compare_outputs has them; values by the same
            # tolerances (not through its CPU rerun, which re-runs the forward, not the backward).
            # Not by the overload's exactness class: that is a contract on its forward values;
            # a gradient sums contributions (reflection_pad3d's backward adds the gradients of
            # every padded copy of an element, in an order CPU's kernel does not promise).
            # Nor by the forward's view contract: whether a gradient comes back as a lazy
            # conj() view (mH's backward is grad.mH()) is the formula's bookkeeping, not an
            # answer; its values are compared resolved (readback.plain)
            compare_outputs(ctx, call, e, a, values=False, view_bits=False)
            if ctx.hints.values and label not in vary and ctx.values_comparable():
                host = ctx.to_host(a)
                try:
                    assert_values(ctx, call, "out", where, host, e, exactness=False)
                except CheckFailure:
                    if seeded:
                        # a random gradient can repeat once by chance: it is the backend's
                        # mismatch only if CPU repeats it every time
                        if not random_grads(ctx, call, picked, cpu.idx, cpu.ups, exp_grads,
                                             reruns=RANDOM_GRAD_RERUNS, only={label}):
                            raise
                    elif not within_cpu_error(ctx, call, picked, cpu.idx, cpu.ups, precise,
                                               label, host, e):
                        raise
        except CheckFailure as exc:
            category = GRAD_VALUE if exc.category == "value" else GRAD_META
            raise CheckFailure(category, f"grad of {label}{exc.message.removeprefix('out')}") \
                from None


CHECK = Check("autograd", autograd_calls, "gradients of differentiable outputs as CPU's",
              autograd_applies, verify_autograd, forks=False, recorded="autograd")
