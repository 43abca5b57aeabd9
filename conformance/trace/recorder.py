"""A dispatch recorder: which aten overloads some Python code calls, how often, and with what.

    from conformance.trace.recorder import Recorder

    with Recorder() as rec:
        loss = model(x).sum()
        with rec.phase("backward"):
            loss.backward()
    r = rec.recording
    r.names()                    # ('convolution', 'native_batch_norm', ..., 'convolution_backward')
    r["addmm"].count             # calls that reached the backend's kernels
    r["addmm"].examples[0]       # CallSpec: (self=float32[4], mat1=float32[2, 16], ...)
    r["addmm"].callers           # frozenset({'linear'}): the composites it was reached through
    r.top["linear"].expands_to   # ('t', 'addmm'): what the composite decomposed into

Every overload is named as torch spells it, the project's one key: ``add.Tensor``, ``relu`` (an
overload whose name is ``default`` is just the base name), ``mylib::op.out`` outside ``aten``.

It records at two levels, because neither alone answers "what does this model need":

``backend``
    What reaches the kernels of a device: a ``TorchDispatchMode``, which sits below Autograd.
    CompositeImplicitAutograd overloads (``linear``, ``conv2d``, ``dropout``) have been
    decomposed before they get there, and are seen only as what they decompose into.
    Overloads named by ``expand`` (e.g. the CompositeExplicitAutograd ones a backend has no
    kernel of its own for) are run through their composite kernel with the recorder still
    active, so what *they* call is recorded too, with the composite as its caller.
``top``
    What the code called, above Autograd: a mode on torch's ``PreDispatch`` key (the slot
    ``torch.export`` uses for its training IR), so ``linear`` is seen as ``linear``. Each top
    call knows which backend-level overloads it reached (``expands_to``).

Per overload it keeps the call count, up to ``max_examples`` distinct argument specs (shapes,
dtypes, strides, scalar arguments, each bound to its schema argument name), the phases it was
called in (a label set with :meth:`Recorder.phase`; calls made by the autograd engine are
``backward`` whatever the label), the autograd nodes that were running, and its callers. With
``keep_calls=True`` every call's spec is kept in order as well (:attr:`Recording.calls`).

The recorder runs the code for real (CPU, meta, any device); it changes no result.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.core.call import typed_leaves

#: Level names.
BACKEND = "backend"


TOP = "top"


#: The phase a call made by the autograd engine (inside a backward node) is always given.
BACKWARD = "backward"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument, without its values."""

    shape: tuple[int, ...]
    dtype: str  # "float32", as opdb.dtypes names it
    stride: tuple[int, ...]
    device: str  # device type: "cpu", "meta", "mlu"
    storage_offset: int = 0

    @property
    def contiguous(self) -> bool:
        expected, step = [], 1
        for size in reversed(self.shape):
            expected.append(step)
            step *= max(size, 1)
        return all(
            size <= 1 or st == ex
            for size, st, ex in zip(self.shape, self.stride, reversed(expected), strict=True)
        )

    def __str__(self) -> str:
        text = f"{self.dtype}[{', '.join(map(str, self.shape))}]"
        if not self.contiguous:
            text += f"(stride {list(self.stride)})"
        if self.storage_offset:
            text += f"(offset {self.storage_offset})"
        return text


#: What an argument is recorded as: a TensorSpec, a tuple of ArgSpecs (int[], Tensor[]), or a
#: plain value (None, bool, int, float, complex, str; dtypes/devices/layouts as their names).
ArgSpec = TensorSpec | tuple | None | bool | int | float | complex | str


def spec_of(value: Any) -> ArgSpec:
    """The spec of one argument value."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(
            shape=tuple(int(s) for s in value.shape),
            dtype=str(value.dtype).removeprefix("torch."),
            stride=tuple(int(s) for s in value.stride()) if value.layout == torch.strided else (),
            device=value.device.type,
            storage_offset=int(value.storage_offset()) if value.layout == torch.strided else 0,
        )
    if isinstance(value, (list, tuple)):
        return tuple(spec_of(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return str(value)
    return str(value)  # device, layout, memory_format, Generator, ...


def _show(spec: ArgSpec) -> str:
    if isinstance(spec, tuple):
        return "[" + ", ".join(_show(s) for s in spec) + "]"
    return str(spec) if isinstance(spec, TensorSpec) else repr(spec)


@dataclass(frozen=True)
class CallSpec:
    """One call's arguments: ``(schema argument name, spec)`` pairs, in schema order for the
    positional ones, then keyword ones as passed."""

    args: tuple[tuple[str, ArgSpec], ...]

    def __getitem__(self, name: str) -> ArgSpec:
        for n, s in self.args:
            if n == name:
                return s
        raise KeyError(name)

    @property
    def tensors(self) -> tuple[TensorSpec, ...]:
        """Every tensor argument's spec (those inside lists too), in order."""
        return typed_leaves(self.args, TensorSpec)

    def __str__(self) -> str:
        return "(" + ", ".join(f"{n}={_show(s)}" for n, s in self.args) + ")"


def call_spec(func: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> CallSpec:
    """Bind a call of ``func`` (an OpOverload) to its schema's argument names."""
    names = [a.name for a in func._schema.arguments]
    pairs = [
        (names[i] if i < len(names) else f"arg{i}", spec_of(v)) for i, v in enumerate(args)
    ]
    pairs += [(k, spec_of(v)) for k, v in kwargs.items()]
    return CallSpec(tuple(pairs))


def overload_key(func: Any) -> str:
    """``aten::add.Tensor`` -> ``add.Tensor``; ``aten::relu`` (default overload) -> ``relu``;
    other namespaces keep their prefix (``mylib::op.out``)."""
    schema = func._schema
    name = schema.name.removeprefix("aten::")
    return f"{name}.{schema.overload_name}" if schema.overload_name else name


@dataclass(frozen=True)
class OpRecord:
    """What was recorded for one overload at one level."""

    name: str
    count: int
    examples: tuple[CallSpec, ...]
    phases: frozenset[str]
    #: Composites (at either level) this overload was reached through; empty when it was
    #: called directly.
    callers: frozenset[str] = frozenset()
    #: Overloads this one's calls reached one level down, in first-seen order: at the top
    #: level, what reached the backend (itself when it was not decomposed); at the backend
    #: level, what an expanded composite called.
    expands_to: tuple[str, ...] = ()
    #: Autograd nodes (``AdaptiveAvgPool2DBackward0``) running while it was called.
    nodes: frozenset[str] = frozenset()

    @property
    def decomposed(self) -> bool:
        """Whether its calls reached other overloads one level down and never itself."""
        return bool(self.expands_to) and self.name not in self.expands_to


@dataclass(frozen=True)
class Call:
    """One call, kept with ``keep_calls=True``."""

    level: str
    name: str
    spec: CallSpec
    phase: str
    caller: str | None


@dataclass(frozen=True)
class Recording:
    """What a :class:`Recorder` saw. ``backend`` and ``top`` map overload names to records in
    first-call order."""

    backend: Mapping[str, OpRecord]
    top: Mapping[str, OpRecord]
    calls: tuple[Call, ...] = ()

    def __getitem__(self, name: str) -> OpRecord:
        return self.backend[name]

    def __contains__(self, name: object) -> bool:
        return name in self.backend

    def names(self, level: str = BACKEND) -> tuple[str, ...]:
        return tuple(self._level(level))

    def total_calls(self, level: str = BACKEND) -> int:
        return sum(r.count for r in self._level(level).values())

    def in_phase(self, phase: str, level: str = BACKEND) -> tuple[str, ...]:
        """Overloads called (at least once) in ``phase``."""
        return tuple(n for n, r in self._level(level).items() if phase in r.phases)

    def _level(self, level: str) -> Mapping[str, OpRecord]:
        if level == BACKEND:
            return self.backend
        if level == TOP:
            return self.top
        raise ValueError(f"unknown level {level!r} (expected {BACKEND!r} or {TOP!r})")


@dataclass
class _Acc:
    count: int = 0
    examples: list[CallSpec] = field(default_factory=list)
    phases: set[str] = field(default_factory=set)
    callers: set[tuple[str, str]] = field(default_factory=set)  # (level, name)
    expands_to: dict[str, None] = field(default_factory=dict)
    nodes: set[str] = field(default_factory=set)

    def freeze(self, name: str, callers: frozenset[str]) -> OpRecord:
        return OpRecord(
            name=name, count=self.count, examples=tuple(self.examples),
            phases=frozenset(self.phases), callers=callers,
            expands_to=tuple(self.expands_to), nodes=frozenset(self.nodes),
        )


class Recorder:
    """Context manager recording the overloads called inside it (see the module docstring).

    ``top``: also record above Autograd (needs torch's PreDispatch mode slot to be free).
    ``expand``: predicate on an overload name; a backend-level call it accepts is run through
    the overload's CompositeExplicitAutograd kernel so that what it calls is recorded too.
    ``max_examples``: distinct argument specs kept per overload. ``keep_calls``: keep every
    call's spec, in order. ``phase``: the initial phase label. ``on_call``: called as
    ``on_call(level, name, func, args, kwargs)`` for every recorded call, with the argument values
    themselves (e.g. to read value ranges, which specs do not keep), before the call runs.
    """

    def __init__(
        self,
        *,
        top: bool = True,
        expand: Callable[[str], bool] | None = None,
        max_examples: int = 3,
        keep_calls: bool = False,
        phase: str = "forward",
        on_call: Callable[[str, str, Any, tuple[Any, ...], Mapping[str, Any]], None]
        | None = None,
    ) -> None:
        if max_examples < 0:
            raise ValueError("max_examples must be 0 or more")
        self.top = top
        self.expand = expand
        self.max_examples = max_examples
        self.keep_calls = keep_calls
        self._phase = phase
        self.on_call = on_call
        self._acc: dict[str, dict[str, _Acc]] = {BACKEND: {}, TOP: {}}
        self._calls: list[Call] = []
        self._local = threading.local()
        self._stack: contextlib.ExitStack | None = None

    # -- labels ---------------------------------------------------------------

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Label the calls made inside the block (``forward``, ``optimizer``, ...)."""
        before, self._phase = self._phase, name
        try:
            yield
        finally:
            self._phase = before

    @property
    def recording(self) -> Recording:
        """A snapshot of what was recorded so far."""
        def composite(level: str, name: str) -> bool:
            # a top-level call that reached itself was not decomposed (what else it reached,
            # e.g. autograd's detach of a saved result, is not "through" it); backend-level
            # callers are always expanded composites
            return level == BACKEND or name not in self._acc[TOP][name].expands_to

        return Recording(**{  # type: ignore[arg-type]
            level: {
                n: a.freeze(n, frozenset(c for lv, c in a.callers if composite(lv, c)))
                for n, a in self._acc[level].items()
            }
            for level in (BACKEND, TOP)
        }, calls=tuple(self._calls))

    # -- context --------------------------------------------------------------

    def __enter__(self) -> Recorder:
        import torch
        from torch._dispatch.python import enable_python_dispatcher
        from torch.utils._python_dispatch import _pop_mode, _push_mode

        stack = contextlib.ExitStack()
        stack.enter_context(_backend_mode_class()(self))
        if self.top:
            from torch._ops import _len_torch_dispatch_stack_pre_dispatch

            if _len_torch_dispatch_stack_pre_dispatch():
                stack.close()
                raise RuntimeError(
                    "Recorder(top=True) needs torch's PreDispatch mode slot, which another "
                    "mode (torch.export / make_fx pre-dispatch tracing) holds; use top=False"
                )
            # The Python dispatcher only routes calls to the PreDispatch mode; the mode turns
            # it off for the call itself, so every kernel and decomposition below is C++'s.
            stack.enter_context(enable_python_dispatcher())
            _push_mode(_top_mode_class()(self))
            stack.callback(_pop_mode, torch._C.DispatchKey.PreDispatch)
        self._stack = stack
        return self

    def __exit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    # -- recording (called by the modes) --------------------------------------

    def callers(self) -> list[tuple[str, str]]:
        stack = getattr(self._local, "callers", None)
        if stack is None:
            stack = self._local.callers = []
        return stack

    @contextlib.contextmanager
    def as_caller(self, level: str, name: str) -> Iterator[None]:
        stack = self.callers()
        stack.append((level, name))
        try:
            yield
        finally:
            stack.pop()

    def note_call(self, level: str, func: Any, args: tuple[Any, ...],
              kwargs: Mapping[str, Any]) -> str:
        import torch

        name = overload_key(func)
        acc = self._acc[level].get(name)
        if acc is None:
            acc = self._acc[level][name] = _Acc()
        acc.count += 1
        node = torch._C._current_autograd_node()
        phase = BACKWARD if node is not None else self._phase
        acc.phases.add(phase)
        if node is not None:
            acc.nodes.add(node.name())
        callers = self.callers()
        caller = callers[-1] if callers else None
        if caller is not None:
            self._acc[caller[0]][caller[1]].expands_to.setdefault(name, None)
            acc.callers.add(caller)
        if self.max_examples or self.keep_calls:
            spec = call_spec(func, args, kwargs)
            if len(acc.examples) < self.max_examples and spec not in acc.examples:
                acc.examples.append(spec)
            if self.keep_calls:
                self._calls.append(
                    Call(level, name, spec, phase, caller[1] if caller else None)
                )
        if self.on_call is not None:
            self.on_call(level, name, func, args, kwargs)
        return name


_MODE_CLASSES: dict[str, type] = {}


def _backend_mode_class() -> type:
    """The TorchDispatchMode recording what reaches the kernels (built on first use so that
    importing this module does not import torch)."""
    if BACKEND in _MODE_CLASSES:
        return _MODE_CLASSES[BACKEND]
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from conformance.core.composites import composite_key  # torch: on first use

    class BackendLevel(TorchDispatchMode):
        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self.recorder = recorder

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: Mapping[str, Any] | None = None) -> Any:
            kwargs = kwargs or {}
            rec = self.recorder
            name = rec.note_call(BACKEND, func, args, kwargs)
            key = composite_key(name)
            if key != "CompositeImplicitAutograd" and not (
                key is not None and rec.expand is not None and rec.expand(name)
            ):
                key = None
            if key is None or (BACKEND, name) in rec.callers():
                # not a composite to expand, or one whose kernel calls itself (detach)
                return func(*args, **kwargs)
            # Run the composite kernel with this mode active again: what it calls is recorded
            # with ``name`` as the caller. (A CompositeImplicitAutograd overload only gets here
            # when Autograd was skipped, e.g. under inference_mode.)
            with rec.as_caller(BACKEND, name), self:
                return func._op_dk(getattr(torch._C.DispatchKey, key), *args, **kwargs)

    _MODE_CLASSES[BACKEND] = BackendLevel
    return BackendLevel


def _top_mode_class() -> type:
    """The PreDispatch mode recording what the code called, above Autograd.

    torch accepts only its own mode types on the PreDispatch key; SchemaCheckMode's slot is the
    one meant for eager runs on real inputs, so the mode subclasses it (and none of its checks
    run: ``__torch_dispatch__`` is replaced)."""
    if TOP in _MODE_CLASSES:
        return _MODE_CLASSES[TOP]
    import torch
    from torch._dispatch.python import no_python_dispatcher
    from torch._subclasses.schema_check_mode import SchemaCheckMode

    class TopLevel(SchemaCheckMode):
        def __init__(self, recorder: Recorder) -> None:
            super().__init__()
            self._dispatch_key = torch._C.DispatchKey.PreDispatch
            self.recorder = recorder

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                               kwargs: Mapping[str, Any] | None = None) -> Any:
            kwargs = kwargs or {}
            if not isinstance(func, torch._ops.OpOverload):
                with no_python_dispatcher():
                    return func(*args, **kwargs)
            rec = self.recorder
            name = rec.note_call(TOP, func, args, kwargs)
            with rec.as_caller(TOP, name), no_python_dispatcher():
                return func(*args, **kwargs)

    _MODE_CLASSES[TOP] = TopLevel
    return TopLevel


def record(fn: Callable[[], Any], **options: Any) -> tuple[Any, Recording]:
    """Call ``fn()`` under a :class:`Recorder` (``options`` are its keyword arguments); return
    ``(result, recording)``."""
    with Recorder(**options) as rec:
        result = fn()
    return result, rec.recording
