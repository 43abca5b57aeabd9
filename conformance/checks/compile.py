"""The ``compile`` check: the drawn call survives ``torch.compile(fullgraph=True)`` on the
backend and agrees with the same call in eager on the device, and with CPU.

Each example goes through the layers a compiled call goes through, and a failure names the one
that broke (docs/compile.md):

1. eager on the device against CPU (the ``forward`` check's question: where it already differs,
   the compiled result is held to eager's, and a pass notes ``eager_differs``);
2. fake-tensor (meta) propagation for the device: raising, or another shape, dtype or device
   than the device's own kernel gives, is ``compile_fake``;
3. ``torch.compile(fn, fullgraph=True, backend=Backend.compile_backend)`` run on the device: a
   graph break is ``compile_trace``, a kernel the compiled graph needs and the backend lacks
   (functionalization turns ``relu_`` into ``relu``; a decomposition calls core ATen ops eager
   never did) is ``unsupported``/``missing_kernel`` naming that op, any other error
   ``compile_raises``; a result other than eager's is ``value``/``dtype``/``shape``;
4. once per item, ``dynamic=True`` over two examples (a second shape): more frames compiled
   than on CPU is ``recompile``.

A layer that fails on CPU too is torch's limitation, not the backend's: fake propagation
raising on CPU as well is passed over, and torch.compile failing on CPU too ends the item as
``skip``/``cpu_compile_fails``. Compiling is slow: few examples per item
(:data:`EXAMPLES_FACTOR`), no shrinking, no refills, and one example per (dtypes, ranks,
constants) class (:func:`compile_identity`); the check is not in the default set
(``--checks compile``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from conformance.checks.check import Check
from conformance.checks.forward import sized_outs
from conformance.compare.outputs import compare_outputs, result_leaves
from conformance.core.call import Call, as_kind, written
from conformance.core.compiled import CompiledCall, Frames, fake_run
from conformance.core.signature import OpSignature
from conformance.core.verdicts import Abort, CheckFailure, error_line, missing_op_from
from conformance.inputs.strategies import forward_calls
from opdb.outcomes import (
    COMPILE_FAKE,
    COMPILE_RAISES,
    COMPILE_TRACE,
    CPU_COMPILE_DIFFERS,
    CPU_COMPILE_FAILS,
    EAGER_DIFFERS,
    RECOMPILE,
)

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from opdb.opdata import OpHints

#: Examples per item: round(--max-examples x this), at least 1 (two at the default 10): each
#: costs a compilation (docs/decisions.md#compile-cost).
EXAMPLES_FACTOR = 0.2


def compile_calls(sig: OpSignature, hints: OpHints) -> Any:
    """The forward check's calls, shapes drawn largest first: with two examples an item, an
    empty tensor (Hypothesis' simplest shape) would make one of them say little."""
    return forward_calls(sig, hints, large_first=True)


def compile_applies(sig: OpSignature) -> str | None:
    return None


def compile_identity(call: Call) -> str:
    """The class an example stands for: dtypes and ranks of its tensors, its other arguments
    (the compiled function's constants). One compilation per class (the engine redraws a
    repeat): another size of the same class only exercises Dynamo's shape handling, which the
    dynamic=True pair asks about once."""
    def kind(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"{v.dtype}:{v.dim()}"
        if isinstance(v, list | tuple):
            return "[" + ",".join(kind(x) for x in v) + "]"
        return repr(v)

    return ";".join(f"{name}={kind(v)}" for name, v in call.values)


def verify_compile(ctx: Context, call: Call) -> None:
    """The layers of a compiled call, in the order it meets them (the module's docstring)."""
    __tracebackhide__ = True
    call = written(call)  # an overload returning nothing: what it wrote is its result
    if call.sig.kind == "out":  # Dynamo refuses an out= it would have to resize (on CPU too)
        call = sized_outs(call, ctx.run_cpu(call)) or call
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    eager = ctx.run_backend(call)
    eager_off = _disagreement(ctx, call, expected, eager, values=not seeded)
    static = as_kind(call, CompiledCall, compiler=ctx.backend.compile_backend)
    if not call.written:
        _check_fake(ctx, static, expected, eager, eager_off)
    actual = _run_compiled(ctx, static)
    _judge(ctx, static, expected, eager, actual, eager_off, values=not seeded)
    _dynamic_pair(ctx, call, values=not seeded)


def _disagreement(ctx: Context, call: Call, expected: Any, actual: Any, *,
                  values: bool) -> CheckFailure | None:
    try:
        compare_outputs(ctx, call, expected, actual, values=values)
    except CheckFailure as exc:
        return exc
    return None


def _metadata(out: Any) -> list[Any]:
    """What fake propagation promises of a result: per leaf, a tensor's shape, dtype and
    device type (a non-tensor leaf: its type)."""
    return [(tuple(x.shape), x.dtype, x.device.type) if isinstance(x, torch.Tensor)
            else type(x).__name__ for x in result_leaves(out)]


def _meta_text(meta: list[Any]) -> str:
    return ", ".join(f"{str(m[1]).removeprefix('torch.')}{list(m[0])} on {m[2]}"
                     if isinstance(m, tuple) else m for m in meta)


def _check_fake(ctx: Context, call: CompiledCall, expected: Any, eager: Any,
                eager_off: CheckFailure | None) -> None:
    """Fake-tensor propagation for the device agrees with the device's kernel on shape, dtype
    and device (Inductor sizes its buffers by it; a wrong one is a wrong result there)."""
    __tracebackhide__ = True
    device = ctx.backend.device
    ctx.inflight.call(call, ctx.repro_fn, side=device)
    try:
        fake = fake_run(call, device)
    except Exception as exc:  # noqa: BLE001 - the layer's error is the finding
        try:
            fake_run(call, "cpu")
        except Exception:  # noqa: BLE001 - torch's limitation (data-dependent output)
            return
        raise CheckFailure(COMPILE_FAKE, f"fake-tensor propagation on {device} raised "
                                         f"{error_line(exc)}, but on cpu it computes "
                                         f"[{call.describe()}]", call=call) from None
    got, want = _metadata(fake), _metadata(eager)
    if got == want:
        return
    if eager_off is not None and _same_but_device(got, _metadata(expected)):
        return  # the device's kernel is off (the forward check's finding), fake is right
    if not _same_but_device(_metadata(fake_run(call, "cpu")), _metadata(expected)):
        return  # the op's meta kernel disagrees with CPU as well: torch's, not the device's
    raise CheckFailure(COMPILE_FAKE, f"fake-tensor propagation on {device} gives "
                                     f"{_meta_text(got)}, but the device's kernel returns "
                                     f"{_meta_text(want)} [{call.describe()}]", call=call)


def _no_device(m: Any) -> Any:
    return m[:2] if isinstance(m, tuple) else m


def _same_but_device(a: list[Any], b: list[Any]) -> bool:
    return [_no_device(m) for m in a] == [_no_device(m) for m in b]


def _exceptions(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (Dynamo wraps the one that broke)."""
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return out


def _missing_kernel(exc: BaseException) -> str | None:
    """The overload a compiled call's error says the backend has no kernel for, if any (the
    dispatcher's words, wherever in the chain Dynamo wrapped them)."""
    for e in _exceptions(exc):
        found = missing_op_from(e if isinstance(e, NotImplementedError)
                                else NotImplementedError(str(e)))
        if found is not None:
            return found[0]
    return None


def layer_of(exc: BaseException) -> str:
    """The fail category of a compiled call's error: the layer that raised it."""
    from torch._dynamo.exc import TorchRuntimeError, Unsupported
    from torch._subclasses import fake_tensor

    fake_errors = (TorchRuntimeError, fake_tensor.DataDependentOutputException,
                   fake_tensor.DynamicOutputShapeException,
                   fake_tensor.UnsupportedOperatorException,
                   fake_tensor.UnsupportedFakeTensorException)
    chain = _exceptions(exc)
    if any(isinstance(e, Unsupported) for e in chain):
        return COMPILE_TRACE
    if any(isinstance(e, fake_errors) for e in chain):
        return COMPILE_FAKE
    return COMPILE_RAISES


def _run_compiled(ctx: Context, call: CompiledCall, frames: Frames | None = None) -> Any:
    """The compiled call's answer on the device; its error judged by the layer that raised."""
    __tracebackhide__ = True
    device = ctx.backend.device
    ctx.inflight.call(call, ctx.repro_fn, side=device)
    try:
        return call.run_counted(device, frames or Frames())
    except Exception as exc:  # noqa: BLE001 - the layer's error is the finding
        _compile_failed(ctx, call, exc)
        raise  # unreachable: _compile_failed raises


def _compile_failed(ctx: Context, call: CompiledCall, exc: BaseException) -> None:
    __tracebackhide__ = True
    device, how = ctx.backend.device, _how(call)
    missing = _missing_kernel(exc)
    if missing is not None:
        stop = Abort("unsupported", "missing_kernel",
                     f"{how} needs '{missing}', which {ctx.backend.name} has no kernel for "
                     f"(eager {call.sig.name} computes: functionalization or a decomposition "
                     f"calls it) [{call.describe()}]", missing_op=missing)
        stop.call = call
        raise stop from None
    ctx.device_alive(exc, call)
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        call.run("cpu")
    except Exception as cpu_exc:  # noqa: BLE001 - torch.compile's own limitation
        raise Abort("skip", CPU_COMPILE_FAILS, f"{how} fails on CPU too: "
                                               f"{_error(cpu_exc)}") from None
    raise CheckFailure(layer_of(exc), f"{how} raised {_error(exc)}, but eager on {device} "
                                      f"and the compiled call on cpu compute "
                                      f"[{call.describe()}]", call=call) from None


def _error(exc: BaseException) -> str:
    """A compiled call's error as messages show it: a compiler backend's own error, not
    Dynamo's wrapper around it (``BackendCompilerFailed: backend='inductor' raised:``)."""
    inner = getattr(exc, "inner_exception", None)
    return error_line(inner if isinstance(inner, BaseException) else exc)


def _how(call: CompiledCall) -> str:
    dynamic = ", dynamic=True" if call.dynamic else ""
    return f"torch.compile(fullgraph=True, backend={call.compiler!r}{dynamic})"


def _judge(ctx: Context, call: CompiledCall, expected: Any, eager: Any, actual: Any,
           eager_off: CheckFailure | None, *, values: bool) -> None:
    """The compiled result against CPU's; where eager on the device already differs from CPU,
    against eager's (the compile check's question is what compiling changed).

    Where eager on the device agrees with CPU, a compiled result identical to eager's agrees
    too: the eager comparison already weighed what CPU leaves open (its arbitration, ATen's
    composite), which the compiled call, compared afresh, would not get (native_layer_norm.out
    of [-inf]: CPU's mean NaN, the composite's and mlu's -inf, compiled mlu -inf). Identical,
    not within a tolerance: a compiled relu twice eager's passed the tolerance on subnormals.
    A compiled result that differs from eager CPU's as the same compiled call on CPU does is
    torch.compile's change (cumprod_backward of bool compiles to int64 on every device), not
    the backend's: informational."""
    __tracebackhide__ = True
    off = _disagreement(ctx, call, expected, actual, values=values)
    if off is None:
        return
    device = ctx.backend.device
    if eager_off is None:
        if _same_results(eager, actual, values=values, exact=True):
            return
        if _compiled_on_cpu_alike(ctx, call, actual, values=values):
            ctx.note_info(CPU_COMPILE_DIFFERS, f"compiled on {device} and on cpu alike: "
                                               f"{off.message}")
            return
        raise CheckFailure(off.category, f"compiled ({_how(call)}): {off.message}; eager on "
                                         f"{device} agrees with CPU", call=call)
    if _same_results(eager, actual, values=values):
        ctx.note_info(EAGER_DIFFERS, f"eager on {device} differs from CPU "
                                     f"({eager_off.category}); compiled agrees with eager")
        return
    raise CheckFailure(off.category, f"compiled ({_how(call)}): {off.message}; eager on "
                                     f"{device} differs from CPU too, otherwise", call=call)


def _compiled_on_cpu_alike(ctx: Context, call: CompiledCall, actual: Any, *,
                           values: bool) -> bool:
    """Whether the device's compiled answer agrees with the same compiled call's on CPU, as
    the forward check compares (its exactness classes: a tolerance alone let a compiled result
    twice CPU's pass where both were subnormal); CPU's compiled call raising: not alike."""
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        on_cpu = call.run("cpu")
    except Exception:  # noqa: BLE001 - compiled on CPU raised: not torch.compile's answer
        return False
    return _disagreement(ctx, call, on_cpu, actual, values=values) is None


def _same_results(a: Any, b: Any, *, values: bool, exact: bool = False) -> bool:
    """Whether two answers on the device agree: structure, shape, dtype and (``values``)
    values within the dtype's default tolerance (``exact``: equal), NaNs equal."""
    x, y = result_leaves(a), result_leaves(b)
    if len(x) != len(y):
        return False
    for p, q in zip(x, y, strict=True):
        if isinstance(p, torch.Tensor) != isinstance(q, torch.Tensor):
            return False
        if not isinstance(p, torch.Tensor):
            if values and p != q:
                return False
            continue
        if p.shape != q.shape or p.dtype != q.dtype:
            return False
        if values:
            try:
                qc, pc = q.cpu(), p.cpu()
            except Exception:  # noqa: BLE001 - unreadable (mlu's complex32): the comparisons
                return False  # that follow read it through the context and say why
            try:
                tol = 0.0 if exact else None  # None: the dtype's default tolerance
                torch.testing.assert_close(qc, pc, equal_nan=True, rtol=tol, atol=tol)
            except AssertionError:
                return False
    return True


def _dynamic_pair(ctx: Context, call: Call, *, values: bool) -> None:
    """Once per item: the first example checked, then this one (a second shape), through one
    ``dynamic=True`` compilation, its frames counted against the same pair's on CPU. Kept
    by ``describe()`` so that a replay of the failing example runs the same pair again."""
    __tracebackhide__ = True
    scratch = ctx.scratch
    first = scratch.setdefault("compile_first", call)
    if first is call or scratch.setdefault("compile_second", call.describe()) != \
            call.describe():
        return
    pair = as_kind(call, CompiledCall, compiler=ctx.backend.compile_backend, dynamic=True,
                   first=first)
    cpu_frames = Frames()
    ctx.inflight.call(pair, ctx.repro_fn, side="cpu")
    try:  # CPU first: a pair CPU cannot compile says nothing of the backend
        pair.run_counted("cpu", cpu_frames)
    except Exception:  # noqa: BLE001 - torch's limitation with dynamic shapes
        return
    frames = Frames()
    actual = _run_compiled(ctx, pair, frames)
    expected = ctx.run_cpu(call)
    eager = ctx.run_backend(call)
    _judge(ctx, pair, expected, eager, actual,
           _disagreement(ctx, call, expected, eager, values=values), values=values)
    if frames.count > cpu_frames.count and _frames(pair, ctx.backend.device) > cpu_frames.count:
        raise CheckFailure(RECOMPILE, f"{_how(pair)} compiled {frames.count} frames on "
                                      f"{ctx.backend.device} for {first.describe()} then "
                                      f"{call.describe()}, {cpu_frames.count} on cpu", call=pair)


def _frames(pair: CompiledCall, device: str) -> int:
    """The frames ``pair`` compiles on ``device`` run again afresh: Dynamo does some things
    once per process (the first unspecialized float of a kind), so a count is held against
    the backend only where it repeats."""
    frames = Frames()
    pair.run_counted(device, frames)
    return frames.count


CHECK = Check("compile", compile_calls, "torch.compile on the device agrees with eager and CPU",
              compile_applies, verify_compile, examples_factor=EXAMPLES_FACTOR, shrink=False,
              identity=compile_identity, forks=True, recorded="forward")
