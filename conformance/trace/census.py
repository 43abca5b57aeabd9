"""Model census: which overloads a model needs, which of them a backend lacks, and why.

The pieces behind ``conformance trace``:

- :func:`load_target` turns ``FILE.py``, ``FILE.py:NAME``, ``module:callable`` or a saved
  ``torch.export`` program (``.pt2``) into a maker; :func:`build` calls it and checks what it
  returned (a model and its example input, see :class:`Workload`).
- :func:`run_workload` runs forward, backward and (``train``) one optimizer step, under a
  :class:`conformance.trace.recorder.Recorder` when given one.
- :func:`census` classifies every recorded overload with opdb's static coverage for the
  backend's dispatch key, and says why each missing one is needed: called by forward, by the
  optimizer step, or by the backward of a forward op (from derivatives.yaml).
- :func:`confirm` runs the workload on the backend and on CPU and checks the prediction.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import importlib.util
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.core.verdicts import error_line
from conformance.trace.recorder import BACKWARD, TOP, Recorder, Recording
from opdb.errors import InputError

if TYPE_CHECKING:
    from conformance.core.backends import Backend
    from opdb import OpDB


FORWARD = "forward"


OPTIMIZER = "optimizer"


#: Status of an overload outside the ``aten`` namespace (``profiler::...``): not classified.
OTHER = "other"


@dataclass(frozen=True)
class Workload:
    """What ``make()`` returns: ``(model, input)``, ``(model, input, loss)``, or a dict with keys
    ``model``, ``input`` and optionally ``loss`` (output -> scalar tensor) and ``optimizer``
    (parameters -> torch.optim.Optimizer). ``input`` is a tensor or a tuple of positional
    arguments. Without ``loss`` the floating-point outputs are summed."""

    model: Any  # torch.nn.Module
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    loss: Callable[[Any], Any] | None = None
    optimizer: Callable[[Any], Any] | None = None

    def to(self, device: str) -> Workload:
        """A copy on ``device`` (the model deep-copied, so the original is untouched)."""
        from torch.utils._pytree import tree_map

        def move(x: Any) -> Any:
            import torch

            return x.to(device) if isinstance(x, torch.Tensor) else x

        return Workload(
            model=copy.deepcopy(self.model).to(device),
            args=tree_map(move, self.args),
            kwargs=tree_map(move, dict(self.kwargs)),
            loss=self.loss,
            optimizer=self.optimizer,
        )


Maker = Callable[[], Any]


def error_line_in(exc: BaseException, file: str) -> int | None:
    """The innermost line of ``file`` in the traceback of ``exc``."""
    line = None
    want = str(Path(file).resolve())
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) == want:
            line = frame.lineno
    return line


def load_target(target: str) -> tuple[Maker, str]:
    """``(maker, file)`` for a TARGET; ``file`` is where errors point (the file or module).

    Raises InputError for a missing file, a module that fails to import, no ``make``."""
    path, name = target, "make"
    head, sep, tail = target.rpartition(":")
    if sep and head and tail.isidentifier() and not Path(target).exists():
        path, name = head, tail
    if path.endswith(".pt2"):
        if sep and path != target:
            raise InputError("a saved torch.export program takes no ':NAME'", file=path)
        if not Path(path).is_file():
            raise InputError("file not found", file=path)
        return (lambda: _load_exported(path)), path
    if path.endswith(".py") or Path(path).exists():
        if not Path(path).is_file():
            raise InputError("file not found", file=path)
        modname = f"_opconform_target_{Path(path).stem}"
        spec = importlib.util.spec_from_file_location(modname, path)
        if spec is None or spec.loader is None:
            raise InputError("not a Python file", file=path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module
        try:
            spec.loader.exec_module(module)
        except SyntaxError as exc:
            raise InputError(f"SyntaxError: {exc.msg}", file=path, line=exc.lineno) from None
        except Exception as exc:
            raise InputError(f"importing it raised {error_line(exc)}", file=path,
                             line=error_line_in(exc, path)) from None
        where = path
    else:
        if not sep:
            raise InputError(f"TARGET {target!r}: no such file, and not MODULE:CALLABLE")
        try:
            module = importlib.import_module(path)
        except Exception as exc:
            raise InputError(f"TARGET {target!r}: cannot import {path!r}: {error_line(exc)}") \
                from None
        where = getattr(module, "__file__", None) or path
    maker = getattr(module, name, None)
    if maker is None:
        raise InputError(f"defines no {name}() returning (model, example input)", file=where)
    if not callable(maker):
        raise InputError(f"{name} is not callable", file=where)
    return maker, where


def _load_exported(path: str) -> dict[str, Any]:
    import torch

    try:
        ep = torch.export.load(path)
    except Exception as exc:
        raise InputError(f"cannot load the exported program: {error_line(exc)}", file=path) \
            from None
    args, kwargs = ep.example_inputs if ep.example_inputs is not None else ((), {})
    return {"model": ep.module(), "input": tuple(args), "kwargs": dict(kwargs)}


def build(maker: Maker, where: str, *, device: str | None = None, seed: int = 0) -> Workload:
    """Call the maker (seeded; on ``device`` when given, e.g. ``meta``) and check its result."""
    import torch

    torch.manual_seed(seed)
    ctx = torch.device(device) if device else contextlib.nullcontext()
    try:
        with ctx:
            made = maker()
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"make() raised {error_line(exc)}", file=where,
                         line=error_line_in(exc, where)) from None
    wl = _workload(made, where)
    return wl.to(device) if device else wl


def _workload(made: Any, where: str) -> Workload:
    import torch

    loss = optimizer = None
    kwargs: Mapping[str, Any] = {}
    if isinstance(made, Mapping):
        unknown = set(made) - {"model", "input", "kwargs", "loss", "optimizer"}
        if unknown:
            raise InputError(f"make() returned unknown keys {sorted(unknown)} (expected model, "
                             "input, kwargs, loss, optimizer)", file=where)
        if "model" not in made or "input" not in made:
            raise InputError("make() returned a dict without 'model' and 'input'", file=where)
        model, inp = made["model"], made["input"]
        loss, optimizer = made.get("loss"), made.get("optimizer")
        kwargs = made.get("kwargs") or {}
    elif isinstance(made, tuple) and len(made) in (2, 3):
        model, inp = made[0], made[1]
        loss = made[2] if len(made) == 3 else None
    else:
        raise InputError("make() must return (model, example input), (model, input, loss) or "
                         f"a dict; it returned {type(made).__name__}", file=where)
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"make(): the model must be a torch.nn.Module, not "
                         f"{type(model).__name__}", file=where)
    args = tuple(inp) if isinstance(inp, (tuple, list)) else (inp,)
    for name, fn in (("loss", loss), ("optimizer", optimizer)):
        if fn is not None and not callable(fn):
            raise InputError(f"make(): {name} must be callable", file=where)
    return Workload(model=model, args=args, kwargs=dict(kwargs), loss=loss, optimizer=optimizer)


def default_optimizer(device: str) -> Callable[[Any], Any]:
    """SGD with momentum, with the implementation torch.optim picks by default on ``device``
    (the ``foreach`` kernels on the devices torch lists for them, PrivateUse1 included), so a
    trace on CPU or meta calls what the backend will."""
    import torch
    from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

    foreach = device in _get_foreach_kernels_supported_devices()
    return lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=foreach)


@dataclass
class Outcome:
    """What one run of the workload produced (tensors on their device)."""

    outputs: dict[str, Any] = field(default_factory=dict)
    grads: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)  # after the optimizer step
    phase: str = FORWARD  # the phase running (when an exception ended the run)


def _flat_outputs(out: Any) -> dict[str, Any]:
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    leaves, _ = tree_flatten_with_path(out)
    return {
        ("output" + keystr(path)): t for path, t in leaves if isinstance(t, torch.Tensor)
    }


def _loss(wl: Workload, out: Any) -> Any:

    if wl.loss is not None:
        return wl.loss(out)
    terms = [t.sum() for t in _flat_outputs(out).values()
             if t.is_floating_point() and t.requires_grad]
    return sum(terms[1:], terms[0]) if terms else None


def run_workload(wl: Workload, *, train: bool, optimizer_device: str,
                 recorder: Recorder | None = None, outcome: Outcome | None = None,
                 record_forward: Recorder | None = None) -> Outcome:
    """Forward, backward, and with ``train`` one optimizer step. ``recorder`` (already entered)
    labels the phases; ``record_forward`` is entered around the forward only. ``outcome``
    (filled in as the run goes) shows how far it got when it raises."""
    res = outcome if outcome is not None else Outcome()

    def phase(name: str) -> contextlib.AbstractContextManager[None]:
        res.phase = name
        return recorder.phase(name) if recorder is not None else contextlib.nullcontext()

    model = wl.model  # in the mode make() left it in (modules start in training mode)
    with phase(FORWARD), (record_forward or contextlib.nullcontext()):
        out = model(*wl.args, **wl.kwargs)
        res.outputs = _flat_outputs(out)
        loss = _loss(wl, out)
    if loss is None:
        return res  # nothing to differentiate
    res.outputs["loss"] = loss
    params = [p for p in model.parameters() if p.requires_grad]
    with phase(BACKWARD):
        loss.backward()
    res.grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    if train and params:
        make_opt = wl.optimizer or default_optimizer(optimizer_device)
        with phase(OPTIMIZER):
            make_opt(params).step()
        res.params = {n: p.detach() for n, p in model.named_parameters()}
    return res


def trace(wl: Workload, *, train: bool, optimizer_device: str,
          expand: Callable[[str], bool] | None = None, max_examples: int = 3) -> Recording:
    """Run the workload under a recorder (both levels) and return what it recorded.

    When the workload is traced for another device than CPU (``optimizer_device``), the
    CPU-only oneDNN (mkldnn) routes are turned off: composites such as ``lstm`` pick them only
    for CPU tensors (``mkldnn_rnn_layer``), and another backend would never be asked for them."""
    import torch

    with contextlib.ExitStack() as stack:
        if optimizer_device != "cpu":
            with warnings.catch_warnings():  # flags() warns about TF32 on Intel GPUs
                warnings.simplefilter("ignore")
                stack.enter_context(torch.backends.mkldnn.flags(enabled=False))
        rec = stack.enter_context(Recorder(expand=expand, max_examples=max_examples))
        run_workload(wl, train=train, optimizer_device=optimizer_device, recorder=rec)
    return rec.recording


@dataclass(frozen=True)
class Need:
    """One overload the model reached, classified for the backend."""

    name: str
    status: str  # an opdb Status value, "other" (not aten), or "" (no backend given)
    count: int
    phases: tuple[str, ...]
    via: tuple[str, ...]  # the composites it was reached through
    reasons: tuple[str, ...]  # why it is needed (for missing ones)
    examples: tuple[str, ...]  # distinct argument specs, first seen first
    expands_to: tuple[str, ...] = ()  # for a composite: what it decomposed into

    @property
    def missing(self) -> bool:
        return self.status == "missing"

    @property
    def example(self) -> str:
        return self.examples[0] if self.examples else ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "count": self.count,
                "phases": list(self.phases), "via": list(self.via),
                "reasons": list(self.reasons), "examples": list(self.examples),
                "expands_to": list(self.expands_to)}


@dataclass(frozen=True)
class Census:
    backend: str | None
    dispatch_key: str | None
    needs: tuple[Need, ...]  # what reached the backend, in first-call order
    composites: tuple[Need, ...]  # what the model called that decomposed above Autograd
    calls: int

    @property
    def missing(self) -> tuple[Need, ...]:
        return tuple(n for n in self.needs if n.missing)

    def summary(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.needs:
            out[n.status] = out.get(n.status, 0) + 1
        return out


_PHASE_ORDER = (FORWARD, BACKWARD, OPTIMIZER)


def _phases(phases: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(phases, key=lambda p: (_PHASE_ORDER + (p,)).index(p)))


def _reasons(name: str, rec: Recording, db: OpDB) -> tuple[str, ...]:
    r = rec[name]
    out: list[str] = []
    via = f" (via {', '.join(f'`{c}`' for c in sorted(r.callers))})" if r.callers else ""
    if FORWARD in r.phases:
        out.append(f"called by forward{via}")
    if BACKWARD in r.phases:
        forwards = [
            f for f in dict.fromkeys(rec.in_phase(FORWARD) + rec.in_phase(FORWARD, TOP))
            if (d := db.derivatives.get(f)) is not None and name in d.backward_ops
        ]
        if forwards:
            out.extend(f"backward of `{f}` (derivatives.yaml)" for f in forwards)
        else:
            nodes = ", ".join(f"`{n}`" for n in sorted(r.nodes))
            out.append(f"called by backward{f' (autograd node {nodes})' if nodes else ''}{via}")
    if OPTIMIZER in r.phases:
        out.append(f"called by the optimizer step{via}")
    for p in sorted(r.phases - {FORWARD, BACKWARD, OPTIMIZER}):
        out.append(f"called in {p}{via}")
    return tuple(out)


def _statuses(names: list[str], dispatch_key: str | None, db: OpDB) -> dict[str, str]:
    from opdb.dispatch import classify

    aten = [n for n in names if "::" not in n]
    if dispatch_key is None:
        return {n: "" if n in aten else OTHER for n in names}
    got = classify(dispatch_key, aten)
    return {n: str(got[n]) if n in got else OTHER for n in names}


def census(rec: Recording, db: OpDB, backend: Backend | None) -> Census:
    """Classify what the recording reached for ``backend`` (None: just list it)."""
    key = backend.dispatch_key if backend is not None else None
    names = list(dict.fromkeys(rec.names() + rec.names(TOP)))
    status = _statuses(names, key, db)

    def examples(r: Any) -> tuple[str, ...]:
        return tuple(str(e) for e in r.examples)

    needs = []
    for name, r in rec.backend.items():
        st = status[name]
        needs.append(Need(
            name=name, status=st, count=r.count, phases=_phases(r.phases),
            via=tuple(sorted(r.callers)),
            reasons=_reasons(name, rec, db) if st == "missing" else (),
            examples=examples(r), expands_to=r.expands_to,
        ))
    composites = [
        Need(name=name, status=status[name], count=r.count, phases=_phases(r.phases), via=(),
             reasons=(), examples=examples(r), expands_to=r.expands_to)
        for name, r in rec.top.items() if r.decomposed
    ]
    return Census(backend=backend.name if backend else None, dispatch_key=key,
                  needs=tuple(needs), composites=tuple(composites), calls=rec.total_calls())


def expand_for(backend: Backend | None) -> Callable[[str], bool] | None:
    """Overloads to expand while tracing for ``backend``: those it serves only through the
    CompositeExplicitAutogradNonFunctional kernel torchgen generates for a structured op's
    functional and in-place variants (``addmm`` -> ``addmm.out``), so the out= overload they
    call must be there too. Those kernels are the same for every device; hand-written
    CompositeExplicitAutograd kernels are not expanded, as some pick a route by device
    (``_convolution`` calls ``mkldnn_convolution`` on CPU, ``convolution_overrideable`` on
    PrivateUse1)."""
    if backend is None:
        return None
    import torch

    from opdb.dispatch import Status, classify

    cache: dict[str, bool] = {}

    def generated(name: str) -> bool:
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        q = f"aten::{name}"
        return has(q, "CompositeExplicitAutogradNonFunctional") and not has(
            q, "CompositeExplicitAutograd")

    def expand(name: str) -> bool:
        if name not in cache:
            cache[name] = "::" not in name and generated(name) and (
                classify(backend.dispatch_key, [name])[name] is Status.composite_explicit)
        return cache[name]

    return expand


@dataclass(frozen=True)
class Diff:
    name: str
    max_abs: float | None  # None: shapes/dtypes differ or values not comparable
    ok: bool
    message: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "max_abs_diff": self.max_abs, "ok": self.ok,
                "message": self.message}


@dataclass(frozen=True)
class RunCheck:
    """The outcome of ``--run``: did the backend do what the census predicted?"""

    backend: str
    confirmed: bool
    summary: str
    error: str | None = None  # the first failure the backend raised
    phase: str | None = None  # in which phase it raised
    failed_op: str | None = None  # the overload the dispatcher named
    diffs: tuple[Diff, ...] = ()
    unpredicted: tuple[str, ...] = ()  # overloads the backend run reached that the trace did not
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "confirmed": self.confirmed, "summary": self.summary,
                "error": self.error, "phase": self.phase, "failed_op": self.failed_op,
                "diffs": [d.as_json() for d in self.diffs],
                "unpredicted": list(self.unpredicted), "notes": list(self.notes)}


def shared_parameters_note(before: Any, after: Any, device: str) -> str | None:
    """A note when ``module.to(device)`` did not keep parameter sharing (tied weights): torch's
    ``Module._apply`` replaces each Parameter object when the device's tensors are not
    shallow-copy compatible with CPU's, so a tied weight becomes two independent ones."""
    n0, n1 = len(list(before.parameters())), len(list(after.parameters()))
    if n0 == n1:
        return None
    return (f"model.to({device!r}) did not keep parameter sharing: {n0} distinct parameters "
            f"on CPU, {n1} on {device} (tied weights were untied)")


def _diff(name: str, got: Any, want: Any) -> Diff:
    import torch

    got = got.detach().cpu()
    want = want.detach()
    try:
        torch.testing.assert_close(got, want)
        ok, msg = True, ""
    except AssertionError as exc:
        ok, msg = False, str(exc).strip().splitlines()[0]
    if got.shape != want.shape or got.dtype != want.dtype:
        return Diff(name, None, ok, msg)
    if got.numel() == 0:
        return Diff(name, 0.0, ok, msg)
    if want.is_floating_point() or want.is_complex():
        delta = (got.to(torch.complex128 if want.is_complex() else torch.float64)
                 - want.to(torch.complex128 if want.is_complex() else torch.float64)).abs()
        both_nan = got.isnan() & want.isnan() if not want.is_complex() else None
        if both_nan is not None:
            delta = delta.masked_fill(both_nan, 0.0)
        return Diff(name, float(delta.max()), ok, msg)
    return Diff(name, float((got.long() - want.long()).abs().max()), ok, msg)


def confirm(wl: Workload, backend: Backend, predicted: frozenset[str], traced: frozenset[str],
            *, train: bool) -> RunCheck:
    """Run ``wl`` (built on CPU) on CPU and, from the same initial state, on the backend."""
    from conformance.core.verdicts import error_line, missing_op_from

    device = backend.device
    on_backend = wl.to(device)
    note = shared_parameters_note(wl.model, on_backend.model, device)
    notes = (note,) if note else ()
    want = run_workload(wl.to("cpu"), train=train, optimizer_device="cpu")
    got = Outcome()
    error: BaseException | None = None
    # Only the forward is recorded on the backend: that is where decompositions depend on the
    # device. (A dispatch mode active while the autograd engine's device thread raises aborts
    # the process in torch 2.13.)
    rec = Recorder(top=False, max_examples=0)
    try:
        run_workload(on_backend, train=train, optimizer_device=device, outcome=got,
                     record_forward=rec)
    except Exception as exc:  # the backend's first failure: what --run is here to see
        error = exc
    unpredicted = tuple(n for n in rec.recording.names() if n not in traced)
    name = backend.name
    if error is not None:
        missing = missing_op_from(error)
        failed = missing[0] if missing else None
        line = error_line(error)
        if failed is not None and failed in predicted:
            summary = (f"confirmed: the first failure on {name} ({got.phase}) is the predicted "
                       f"missing `{failed}`")
            ok = True
        elif predicted:
            summary = (f"NOT confirmed: the first failure on {name} ({got.phase}) is not one "
                       f"of the predicted missing overloads: {line}")
            ok = False
        else:
            summary = f"NOT confirmed: nothing was predicted missing, but {name} raised " \
                      f"({got.phase}): {line}"
            ok = False
        return RunCheck(name, ok, summary, error=line, phase=got.phase, failed_op=failed,
                        unpredicted=unpredicted, notes=notes)
    diffs = [_diff(k, got.outputs[k], v) for k, v in want.outputs.items() if k in got.outputs]
    diffs += [_diff(f"grad {k}", got.grads[k], v) for k, v in want.grads.items()
              if k in got.grads]
    diffs += [_diff(f"param {k} after step", got.params[k], v) for k, v in want.params.items()
              if k in got.params]
    lost = [k for k in (*want.outputs, *want.grads) if k not in got.outputs and
            k not in got.grads]
    diffs += [Diff(k, None, False, f"{name} produced no {k}") for k in lost]
    bad = [d for d in diffs if not d.ok]
    if predicted:
        summary = (f"NOT confirmed: {len(predicted)} overload(s) predicted missing, but the "
                   f"workload ran on {name} without error")
        ok = False
    elif bad:
        summary = (f"NOT confirmed: {len(bad)} of {len(diffs)} outputs/gradients differ from "
                   f"CPU beyond torch.testing tolerance")
        ok = False
    else:
        steps = "forward, backward" + (" and the optimizer step" if train else "")
        summary = (f"confirmed: {steps} ran on {name}; {len(diffs)} outputs/gradients match "
                   "CPU within torch.testing tolerance")
        ok = True
    return RunCheck(name, ok, summary, diffs=tuple(diffs), unpredicted=unpredicted, notes=notes)
