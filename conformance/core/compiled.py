"""A call run through ``torch.compile`` (:class:`CompiledCall`), and what compiling it takes:
a fresh function per compilation, Dynamo's settings that keep failures visible, the frames it
compiled, and fake-tensor propagation of a call alone.
"""

from __future__ import annotations

import contextlib
import itertools
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.core.call import Call, settle, written_parts


@dataclass
class Frames:
    """How many frames Dynamo compiled through a :func:`compiled` function (recompiles
    included): counted by the compiler backend it hands each graph to."""

    count: int = 0


@dataclass(frozen=True)
class CompiledCall(Call):
    """A :class:`Call` run as ``torch.compile(fn, fullgraph=True, backend=compiler,
    dynamic=dynamic)(tensors)`` where ``fn`` makes the call (tensor arguments are the compiled
    function's inputs, everything else its constants). ``first``: with ``dynamic``, a call the
    same compiled function ran before this one (another shape), so that this one is its second
    shape; its repro runs both."""

    compiler: str = "aot_eager"
    dynamic: bool = False
    first: Call | None = field(default=None, compare=False)

    def run(self, device: str) -> Any:
        """The compiled call's answer on ``device`` (compiled afresh: nothing cached)."""
        return self.run_counted(device, Frames())

    def run_counted(self, device: str, frames: Frames) -> Any:
        """:meth:`run`, the frames compiled counted into ``frames``; with :attr:`first`, that
        call runs first through the same compiled function (its answer is not returned)."""
        fn = compiled(self.compiler, dynamic=self.dynamic, frames=frames)
        if self.first is not None:
            run_through(fn, self.first, device)
        return run_through(fn, self, device)


def run_through(fn: Callable[..., Any], call: Call, device: str) -> Any:
    """``call`` on ``device`` through the compiled ``fn`` (:func:`compiled`): its tensors (and
    tensor lists) are the inputs, the rest constants; an overload returning nothing answers
    with what it wrote (:func:`~conformance.core.call.written_parts`), as :meth:`Call.run`."""
    args, kwargs = call.split(device)
    given = dict(call.values)
    placed = dict(zip([a.name for a in call.sig.args if a.name in given],
                      [*args, *kwargs.values()], strict=False))
    out = settle(device, fn(call.sig.packet, args, kwargs))
    if not call.written:
        return out
    return settle(device, tuple(value for _, value in written_parts(call.sig, placed)))


_SERIAL = itertools.count()


def _invoke(op: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return op(*args, **kwargs)


def compiled(compiler: str, *, dynamic: bool, frames: Frames) -> Callable[..., Any]:
    """``torch.compile`` of a function that calls ``op(*args, **kwargs)``, on a fresh code
    object: Dynamo caches compiled frames per code object, so one shared function would reuse
    (and eventually exceed the recompile limit of) every earlier item's graphs, and after the
    limit run eagerly without a word. Called inside :func:`visible_failures`."""
    # a new code object: a cache of its own; and a name of its own, since Dynamo keeps what it
    # learnt of a frame's shapes (automatic dynamic, PGO) by file, line and name, not object:
    # a shared name made each compilation depend on the ones before it
    name = f"compiled_call_{next(_SERIAL)}"
    code = _invoke.__code__.replace(co_name=name)
    fn = types.FunctionType(code, _invoke.__globals__, name)
    backend = torch._dynamo.lookup_backend(compiler)

    def counting(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        frames.count += 1
        return backend(gm, example_inputs)

    counting.__name__ = compiler  # what Dynamo's errors call the backend

    compiled_fn = torch.compile(fn, fullgraph=True, backend=counting, dynamic=dynamic)

    def call(op: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        with visible_failures():
            return compiled_fn(op, args, kwargs)

    return call


@contextlib.contextmanager
def visible_failures() -> Iterator[None]:
    """Dynamo's settings under which a failure to compile is raised, never hidden: errors not
    suppressed (vendors have shipped with ``suppress_errors = True``, which falls back to eager
    and hides exactly what the compile check looks for), and the recompile limit an error
    rather than a silent return to eager."""
    import torch._dynamo

    with torch._dynamo.config.patch(suppress_errors=False, fail_on_recompile_limit_hit=True):
        yield


def fake_run(call: Call, device: str) -> Any:
    """``call``'s answer under fake-tensor propagation for ``device``: its tensors placed on
    ``device``, then turned into fake tensors, the overload run in a ``FakeTensorMode`` (as
    Dynamo and AOTAutograd trace it). Metadata only (shape, dtype, device)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    args, kwargs = call.split(device)
    mode = FakeTensorMode()

    def fake(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return mode.from_tensor(v)
        if isinstance(v, list) and any(isinstance(x, torch.Tensor) for x in v):
            return [fake(x) for x in v]
        return v

    fargs = [fake(a) for a in args]
    fkwargs = {k: fake(v) for k, v in kwargs.items()}
    with mode:
        return call.sig.packet(*fargs, **fkwargs)


#: Compiler backends that generate code per device (Inductor): they need a code generator
#: registered for the device under test.
CODEGEN_COMPILERS = frozenset({"inductor"})


def missing_codegen(compiler: str, device: str) -> str | None:
    """Why ``compiler`` cannot compile for ``device`` (``None``: it can, or needs no codegen).
    Inductor looks its device's code generator up by name and, without one, raises
    ``KeyError: 'mlu'`` on every compiled call: as many identical fails as items, where the
    answer is one fact about the run (torch registers cpu, cuda, xpu and mps; a vendor module
    registers its own with ``register_backend_for_device`` when it is imported)."""
    if compiler not in CODEGEN_COMPILERS:
        return None
    from torch._inductor.codegen.common import get_scheduling_for_device, init_backend_registration

    init_backend_registration()
    if get_scheduling_for_device(device) is not None:
        return None
    return (f"Inductor has no code generator for device {device!r} (a backend registers one "
            f"with torch._inductor.codegen.common.register_backend_for_device); "
            f"--compile-backend aot_eager compiles without codegen")
