"""Gradients for the autograd check and the corpus's backward calls: which inputs are
differentiated, the upstream gradients, CPU's half of a forward-backward, and CPU's own error
against float64 where a gradient's values are judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from conformance.compare.arbitration import PRECISE
from conformance.compare.outputs import result_leaves
from conformance.compare.values import dense
from conformance.core import readback
from conformance.core.call import Call
from conformance.core.signature import OpSignature
from opdb.dtypes import default_tolerance

if TYPE_CHECKING:
    from conformance.compare.context import Context


def grad_args(sig: OpSignature) -> tuple[str, ...]:
    """Tensor arguments autograd differentiates for ``sig``: those derivatives.yaml gives a
    formula (``formula``), or every tensor argument (``decomposition``: differentiable through
    the ops it calls); ``()`` when the overload is not differentiable (``db.autograd``)."""
    from conformance.core.rundb import current

    db = current()
    if sig.name not in db:
        return ()
    how = db.autograd(sig.name)
    tensors = tuple(a.name for a in sig.args if a.base == "Tensor" and not a.is_out)
    if how == "decomposition":
        return tensors
    if how != "formula":
        return ()
    formula = set(db.derivatives[sig.name].inputs)
    return tuple(n for n in tensors if n in formula)


#: ``(argument, label, tensor)`` of each input differentiated (:func:`grad_leaves`)
Picked = list[tuple[str, str, torch.Tensor]]


def grad_leaves(call: Call) -> Picked:
    """``(argument, label, tensor)`` for every floating/complex tensor of ``call`` that the
    autograd check differentiates, in schema order (a ``Tensor[]`` gives ``name[i]`` labels).
    Arguments kept on CPU (0-dim CPU operands) are not differentiated."""
    names = set(grad_args(call.sig))
    out: Picked = []
    for name, value in call.values:
        if name not in names or name in call.on_cpu:
            continue
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, t in items:
            if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
                out.append((name, name if i is None else f"{name}[{i}]", t))
    return out


def upstream_grads(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The upstream gradient for each differentiated output: standard-normal values from a
    generator seeded 0, on CPU (drawn, not ones, so a sign or transpose error shows; the same
    tensors go to CPU and, copied, to the backend)."""
    gen = torch.Generator().manual_seed(0)

    def draw(o: torch.Tensor) -> torch.Tensor:
        if o.is_nested:  # no single shape: one gradient per component, nested alike
            return torch.nested.as_nested_tensor(
                [torch.randn(tuple(c.shape), dtype=o.dtype, generator=gen)
                 for c in o.detach().unbind()], layout=o.layout)
        return torch.randn(tuple(o.shape), dtype=o.dtype, generator=gen)

    return [draw(o) for o in outputs]


def with_leaves(call: Call, leaves: dict[str, torch.Tensor], wrap: Callable[[torch.Tensor], Any]
                 ) -> Call:
    """``call`` with each differentiated tensor replaced by ``wrap(leaf)``."""
    from dataclasses import replace

    values = []
    for name, value in call.values:
        if isinstance(value, list):
            value = [wrap(leaves[f"{name}[{i}]"]) if f"{name}[{i}]" in leaves else v
                     for i, v in enumerate(value)]
        elif name in leaves:
            value = wrap(leaves[name])
        values.append((name, value))
    return replace(call, values=tuple(values))


def grad_outputs(out: Any) -> list[int]:
    """Indices (among the flattened outputs) autograd differentiates: floating/complex tensors
    that require grad (an integer ``indices`` output never does)."""
    return [i for i, o in enumerate(result_leaves(out)) if isinstance(o, torch.Tensor)
            and o.requires_grad and (o.is_floating_point() or o.is_complex())]


@dataclass(frozen=True)
class CpuForward:
    """CPU's forward of a differentiated call, ready for its backward: the leaves that require
    grad (by label, in :func:`grad_leaves` order), the result, the differentiated outputs
    (``idx`` among the flattened result, :func:`grad_outputs`) and their upstream gradients
    (:func:`upstream_grads`)."""

    leaves: dict[str, torch.Tensor]
    out: Any
    idx: list[int]
    outs: list[torch.Tensor]
    ups: list[torch.Tensor]

    def grads(self) -> tuple[torch.Tensor | None, ...]:
        """CPU's backward: each leaf's gradient of :attr:`outs` for :attr:`ups` (``None``
        where a leaf does not reach them); raises what autograd raises."""
        return torch.autograd.grad(self.outs, list(self.leaves.values()), self.ups,
                                   allow_unused=True)


def cpu_forward(call: Call, picked: Picked, run: Callable[[Call], Any]) -> CpuForward:
    """CPU's half of a forward-backward up to the backward, shared by the autograd check and
    the corpus's derived backward calls: a CPU leaf that requires grad for each of ``picked``
    (:func:`grad_leaves`), ``run`` on ``call`` with them (the check's counts and marks it; the
    corpus runs it plainly under its recorder), then the differentiated outputs and their
    upstream gradients (none when ``idx`` is empty: the caller decides what that means).
    ``run``'s exceptions (CPU refusing the call) pass through."""
    leaves = {label: t.detach().clone().requires_grad_() for _, label, t in picked}
    out = run(with_leaves(call, leaves, lambda t: t))
    idx = grad_outputs(out)
    outs = [result_leaves(out)[i] for i in idx]
    return CpuForward(leaves=leaves, out=out, idx=idx, outs=outs, ups=upstream_grads(outs))


def backward_name(sig: OpSignature, outs: list[torch.Tensor]) -> str:
    """``AdaptiveAvgPool2DBackward0 (calls _adaptive_avg_pool2d_backward)`` for messages."""
    from conformance.core.rundb import current

    fns = sorted({o.grad_fn.name() for o in outs if o.grad_fn is not None})
    d = current().derivatives.get(sig.name)
    calls = f" (calls {', '.join(sorted(d.backward_bases))})" if d and d.backward_bases else ""
    return f"the backward of {sig.name}, {'/'.join(fns) or 'no grad_fn'}{calls}"


def _precise_grads(ctx: Context, call: Call, picked: Picked, idx: list[int],
                   ups: list[torch.Tensor]) -> dict[str, Any]:
    """CPU's gradients of ``call`` with every floating/complex tensor argument and upstream
    gradient upcast to float64/complex128 (by label; empty where CPU refuses that call)."""
    def upcast(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dtype in PRECISE:
            return t.detach().to(PRECISE[t.dtype])
        return t

    labels = {label for _, label, _ in picked}
    values = []
    for name, value in call.values:
        if isinstance(value, list):
            value = [v if f"{name}[{i}]" in labels else upcast(v) for i, v in enumerate(value)]
        elif name not in labels:
            value = upcast(value)
        values.append((name, value))
    leaves = {label: upcast(t).requires_grad_() for _, label, t in picked}
    wide = replace(call, values=tuple(values))
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        outs = result_leaves(with_leaves(wide, leaves, lambda t: t).run("cpu"))
        grads = torch.autograd.grad([outs[i] for i in idx], list(leaves.values()),
                                    [upcast(u) for u in ups], allow_unused=True)
    except Exception:  # noqa: BLE001 - CPU refuses the wider call: no reference
        return {}
    return dict(zip(leaves, grads, strict=True))


def within_cpu_error(ctx: Context, call: Call, picked: Picked, idx: list[int],
                      ups: list[torch.Tensor], precise: dict[str, Any], label: str,
                      actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """The backend's gradient ``actual`` of ``label`` is, element by element, within rtol/atol
    plus the tolerance data's ``grad_error_factor`` times CPU's own largest distance from the
    same gradient computed in float64 (``precise``: filled on first need): a gradient sums
    many terms, whose rounding in another order exceeds the forward's rtol/atol where the sum
    cancels. Non-finite elements must match CPU's."""
    factor = ctx.grad_error_factor(call.sig.name, expected.dtype)
    if not factor or expected.dtype not in PRECISE or actual.shape != expected.shape:
        return False
    if not precise:
        precise.update(_precise_grads(ctx, call, picked, idx, ups) or {"": None})
    p = precise.get(label)
    if not isinstance(p, torch.Tensor) or p.dtype != PRECISE[expected.dtype] \
            or p.shape != expected.shape:
        return False
    a, e = readback.plain(dense(actual)), readback.plain(dense(expected))
    a, e = a.to(p.dtype), e.to(p.dtype)

    def finite(t: torch.Tensor) -> torch.Tensor:
        return torch.view_as_real(t).isfinite().all(-1) if t.is_complex() else t.isfinite()

    ok = finite(e) & finite(p)
    if not bool(((a == e) | (a.isnan() & e.isnan()) | ok).all()):
        return False  # a non-finite element that is not CPU's
    if not bool(ok.any()):
        return True
    rtol, atol = ctx.tolerance(call.sig.name, expected.dtype)
    if rtol is None:
        rtol, atol = default_tolerance(expected.dtype)
    cpu_error = float((e - p).abs()[ok].max())
    allowed = rtol * p.abs() + (atol or 0.0) + factor * cpu_error
    return bool(((a - p).abs() <= allowed)[ok].all())


def _cpu_grads_again(ctx: Context, call: Call, picked: Picked, idx: list[int],
                     ups: list[torch.Tensor]) -> dict[str, Any]:
    """CPU's forward and backward of ``call`` once more (a seeded-random overload: the
    generator has moved on, so other random values): each input's gradient by label (``None``
    where CPU raised or gave none)."""
    leaves = {label: t.detach().clone().requires_grad_() for _, label, t in picked}
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    again: tuple[torch.Tensor | None, ...]
    try:
        outs = result_leaves(with_leaves(call, leaves, lambda t: t).run("cpu"))
        again = torch.autograd.grad([outs[i] for i in idx], list(leaves.values()), ups,
                                    allow_unused=True)
    except Exception:  # noqa: BLE001 - CPU raising now where it answered before
        again = (None,) * len(leaves)
    return dict(zip(leaves, again, strict=True))


#: CPU reruns that must all repeat a seeded-random overload's gradient before a value
#: mismatch is the backend's (a small dropout mask repeats by chance: 1/2 per element at p=0.5)
RANDOM_GRAD_RERUNS = 12


def random_grads(ctx: Context, call: Call, picked: Picked, idx: list[int],
                  ups: list[torch.Tensor], grads: tuple[Any, ...], *, reruns: int = 1,
                  only: set[str] | None = None) -> set[str]:
    """Labels of the inputs whose CPU gradient depends on the random draw of a seeded-random
    overload: CPU's forward and backward run again ``reruns`` times and each gradient is
    compared bit for bit with the first (``only``: these labels). Those that vary are noted as
    CPU disagreeing with itself (``cpu_unstable``: their values are not compared)."""
    from conformance.core.readback import result_bits

    first = {label: g for (_, label, _), g in zip(picked, grads, strict=True)
             if g is not None and (only is None or label in only)}
    vary: set[str] = set()
    for _ in range(reruns):
        again = _cpu_grads_again(ctx, call, picked, idx, ups)
        vary |= {label for label, g in first.items()
                 if again[label] is None or result_bits(g) != result_bits(again[label])}
        if vary == set(first):
            break
    if vary:
        ctx.cpu_unstable_calls[f"gradient of {', '.join(sorted(vary))} depends on the random "
                               f"draw [{call.describe()}]"] += 1
    return vary
