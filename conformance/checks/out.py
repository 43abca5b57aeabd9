"""The ``out`` check: what an ``out=`` overload does with the tensors it is given, against CPU.

Every example draws the op's inputs as the ``forward`` check does (plain values) and judges
them in every *form* in which the ``out=`` tensors can be given (:data:`FORMS`, listed per call
by :func:`forms_for`: both resize directions, a dtype CPU refuses and one it casts into). The
shapes come from CPU's own answer to the call with empty outs (the probe, run once per call);
the out tensors of each form are then built alike on CPU and on the backend
(:func:`make_outs`), the call runs on both, and the backend must do what CPU does:

* ``fresh`` / ``sized`` — empty outs, or outs of the right shape holding a fill value: the
  result is written into them (``out_not_written``) and the very same objects are returned
  (``out_identity``); values, dtype and shape as ``forward`` compares them.
* ``resize`` — non-empty outs of the wrong shape: resized as CPU resizes them, with CPU's
  "An output with one or more elements was resized" warning where CPU gives it (``out_resize``).
* ``dtype`` — one out of another of the twelve dtypes: refused with CPU's exception type where
  CPU refuses, accepted and cast as CPU casts where CPU accepts (``out_dtype``).
* ``device`` — outs on CPU for a call on the backend (the call must have tensor inputs on the
  device): refused; a backend whose own ``out=`` kernel takes them fails, one that reaches torch's
  composite ``out=`` wrapper (a copy into ``out``) must write CPU's values into them
  (``out_device``). On a CPU backend the form is ``sized``.
* ``view`` — outs that are strided views (every other element of a larger base): written
  through to the base, the base's other elements untouched, as on CPU (``out_view``).

Overloads with a ``Tensor[]`` out (``_foreach_*``, ``unbind_copy``) do not apply: their length
depends on the inputs in ways the schema does not say.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from conformance.checks.check import Check
from conformance.compare.outputs import result_leaves
from conformance.core.call import Call, settle
from conformance.core.signature import OpSignature
from conformance.core.verdicts import Abort, CheckFailure, CpuRejected, error_line, missing_op_from
from conformance.inputs.out_forms import (
    OutCall,
    OutForm,
    effective_kind,
    forms_for,
    make_outs,
    out_calls,
    out_names,
    warnings_seen,
    with_form,
)
from opdb.dtypes import (
    dtype_name,
    torch_dtype,
)
from opdb.outcomes import (
    ERROR_ACCEPTS,
    ERROR_RAISES,
    ERROR_TYPE,
    OUT_DEVICE,
    OUT_DTYPE,
    OUT_IDENTITY,
    OUT_NOT_WRITTEN,
    OUT_RESIZE,
    OUT_VIEW,
)

if TYPE_CHECKING:
    from conformance.compare.context import Context



#: The out check draws this share of ``--max-examples`` calls (4 of 10) and judges each in
#: four out forms (out_forms.forms_for: one CPU probe, then CPU and the backend per form): most
#: draws are refused by CPU, and the reject budget follows the examples asked for
#: (docs/decisions.md#variants-per-call).
OUT_FACTOR = 0.4


#: What a disagreement in each form is filed under (a plain wrong value or shape in ``fresh``/
#: ``sized`` keeps ``compare_outputs``' own category, as the forward check files it).
_CATEGORY = {"fresh": None, "sized": None, "resize": OUT_RESIZE, "dtype": OUT_DTYPE,
             "device": OUT_DEVICE, "view": OUT_VIEW}


_RESIZED = "was resized since it had shape"  # at::native::resize_output's warning


#: Elements a seeded-random op's out= needs before "it still holds what it was given" is
#: evidence that the kernel did not write it: a random result can equal the old contents
#: (randint_like into a 0-dim bool out: one time in two; an all-checks run failed
#: randint_like.low_dtype_out so, and passed it on the next run). With 20 elements a
#: two-valued result coincides once in a million.
SEEDED_WRITE_EVIDENCE = 20


def out_applies(sig: OpSignature) -> str | None:
    if sig.kind != "out" or not out_names(sig):
        return "not an out= overload"
    lists = [a.name for a in sig.args if a.is_out and a.is_list]
    if lists:
        return (f"its out= argument '{lists[0]}' is a Tensor[] whose length depends on the inputs "
                f"(the schema does not say how)")
    return None


class _Slot:
    """Stands for the ``i``-th out= tensor in a call's arguments until the outs are built."""

    def __init__(self, i: int) -> None:
        self.i = i


def _run(call: Call, device: str, outs: list[torch.Tensor]) -> Any:
    """``call`` with its inputs placed on ``device`` and the given out= tensors."""
    names = out_names(call.sig)
    slotted = replace(call, values=tuple((n, _Slot(names.index(n)) if n in names else v)
                                         for n, v in call.values))
    args, kwargs = slotted.split(device)
    args = [outs[a.i] if isinstance(a, _Slot) else a for a in args]
    kwargs = {k: outs[v.i] if isinstance(v, _Slot) else v for k, v in kwargs.items()}
    return settle(device, (call.sig.packet(*args, **kwargs), outs))[0]  # lazy: computed now


def _describe(call: Call, form: OutForm, n_outs: int) -> str:
    text = call.describe()
    return f"{text} with {form.describe(n_outs)}" if form.kind != "fresh" else text


@dataclass
class Side:
    """One side's run: the outs it was given, their bases and initial state, what came back."""

    outs: list[torch.Tensor]
    bases: list[torch.Tensor]
    before: list[torch.Tensor]
    result: Any = None
    error: BaseException | None = None
    warned: bool = False


def _side(kind: str, shapes: list[tuple[int, ...]], dtypes: list[torch.dtype], device: str,
          form: OutForm, *, host_values: bool = True) -> Side:
    """One side's outs; ``before`` is their bases' initial state on CPU, or (``host_values``
    false: a shape-only backend, whose tensors cannot be read back) their metadata only."""
    outs, bases = make_outs(kind, shapes, dtypes, device,
                            alt=torch_dtype(form.dtype) if form.dtype else None,
                            index=form.index, grow=form.grow)
    readable = host_values or device == "cpu" or kind == "device"  # device: the outs are on CPU
    return Side(outs, bases, [(b.detach().cpu() if readable else b.detach()).clone()
                               for b in bases])


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bytes (an out left as it was given, fill value and all)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    def raw(t: torch.Tensor) -> torch.Tensor:  # fresh dense storage: a byte view always works
        return torch.empty(t.numel(), dtype=t.dtype).copy_(t.detach().reshape(-1)).view(
            torch.uint8)

    return torch.equal(raw(a), raw(b))


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """CPU's answer in one out form agrees with its answer in another (dtype-default
    tolerances: a strided out may change the order a CPU kernel accumulates in)."""
    try:
        torch.testing.assert_close(a, b, equal_nan=True, check_stride=False)
    except AssertionError:
        return False
    return True


def _fresh_probe(ctx: Context, call: Call) -> tuple[Side, list[tuple[int, ...]]]:
    """CPU with empty outs of the drawn dtypes (counted, marked): the result shapes."""
    names = out_names(call.sig)
    drawn = dict(call.values)
    dtypes = [drawn[n].dtype for n in names]
    side = Side([torch.empty(0, dtype=d) for d in dtypes], [], [])
    side.bases, side.before = side.outs, [o.clone() for o in side.outs]
    ctx.begin_example(call)
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    try:
        with warnings_seen() as seen:
            side.result = _run(call, "cpu", side.outs)
    except Exception as exc:  # noqa: BLE001 - CPU's errors are data here
        if missing_op_from(exc) is not None:
            raise Abort("skip", "cpu_unsupported",
                        f"CPU (the oracle) has no kernel: {error_line(exc)}") from None
        ctx.cpu_errors[error_line(exc)] += 1
        raise CpuRejected(exc) from None
    side.warned = any(_RESIZED in w for w in seen)
    ctx.mark_ok(cpu_ok=True)
    return side, [tuple(o.shape) for o in side.outs]


def run_side(ctx: Context, call: Call, side: Side, device: str, *, cpu: bool) -> None:
    ctx.inflight.call(call, ctx.repro_fn, side="cpu" if cpu else ctx.backend.device)
    try:
        with warnings_seen() as seen:
            side.result = _run(call, device, side.outs)
    except Exception as exc:  # noqa: BLE001 - both sides' errors are data here
        if cpu and missing_op_from(exc) is not None:
            raise Abort("skip", "cpu_unsupported",
                        f"CPU (the oracle) has no kernel: {error_line(exc)}") from None
        if not cpu:
            ctx.stop_if_unsupported(exc, call)  # a missing kernel: unsupported, naming it
        side.error = exc
        return
    side.warned = any(_RESIZED in w for w in seen)
    if not cpu:
        ctx.mark_ok(backend_ok=True)


def verify_out(ctx: Context, call: Call) -> None:
    """The backend does with the out= tensors what CPU does (module docstring): a drawn call
    in every form of :func:`forms_for` (an :class:`OutCall` in its own form only). CPU's probe
    with empty outs refusing the call refuses the example; a form CPU refuses otherwise is
    passed over; the first failing form ends the example (the failure names that form's call)."""
    __tracebackhide__ = True
    probe, shapes = _fresh_probe(ctx, call)
    dtypes = [o.dtype for o in probe.outs]
    if isinstance(call, OutCall):
        _verify_form(ctx, call, probe, shapes, dtypes, fresh_ok=None)
        return
    fresh_ok: bool | None = None
    for form in forms_for(call, dtypes):
        one = with_form(call, form)
        if form.kind == "device" and effective_kind(one, ctx.backend) != "device":
            continue  # a CPU backend, or no input on the device: it would be `sized` again
        try:
            _verify_form(ctx, one, probe, shapes, dtypes, fresh_ok=fresh_ok)
        except CpuRejected:
            continue
        except CheckFailure as exc:
            exc.call = exc.call or one
            raise
        if form.kind == "fresh":
            fresh_ok = True


def _verify_form(ctx: Context, call: OutCall, probe: Side, shapes: list[tuple[int, ...]],
                 dtypes: list[torch.dtype], *, fresh_ok: bool | None) -> None:
    """Judge ``call``'s own form against CPU's ``probe`` (CPU with empty outs). ``fresh_ok``:
    the same inputs with empty outs agreed already (a failure is then the form's), or ``None``
    (not known: asked on a failure)."""
    __tracebackhide__ = True
    form = call.form
    kind = effective_kind(call, ctx.backend)
    if kind != form.kind:
        form = OutForm(kind)
    if kind == "fresh":
        cpu = probe
    else:
        cpu = _side(kind, shapes, dtypes, "cpu", form)
        run_side(ctx, call, cpu, "cpu", cpu=True)
    dev = _side(kind, shapes, dtypes, ctx.backend.device, form,
                host_values=ctx.backend.host_values)
    run_side(ctx, call, dev, ctx.backend.device, cpu=False)
    try:
        _judge(ctx, call, kind, form, probe, cpu, dev)
    except CheckFailure:
        if kind != "fresh" and not fresh_ok:
            plain = _fresh_failure(ctx, call, probe, shapes, dtypes)
            if plain is not None:  # not the form's doing: it fails with empty outs too
                raise plain from None
        raise


def _fresh_failure(ctx: Context, call: Call, probe: Side, shapes: list[tuple[int, ...]],
                   dtypes: list[torch.dtype]) -> CheckFailure | None:
    """The failure the backend shows for the same inputs with empty outs (the forward check's
    kind of failure: a wrong value, a refusal), or ``None`` when it agrees with CPU there."""
    dev = _side("fresh", shapes, dtypes, ctx.backend.device, OutForm(),
                host_values=ctx.backend.host_values)
    run_side(ctx, call, dev, ctx.backend.device, cpu=False)
    try:
        _judge(ctx, call, "fresh", OutForm(), probe, probe, dev)
    except CheckFailure as exc:
        return exc
    return None


def _judge(ctx: Context, call: Call, kind: str, form: OutForm, probe: Side, cpu: Side,
           dev: Side) -> None:
    """Raise the first disagreement of the backend's run ``dev`` with CPU's ``cpu``."""
    from conformance.compare.outputs import compare_outputs

    names = out_names(call.sig)
    n = len(names)
    where = _describe(call, form, n)
    category = _CATEGORY[kind]

    # -- refusals (judged as every check judges them: Context.judge_refusal)
    if cpu.error is not None:
        ctx.judge_refusal(cpu.error, dev.error, where, error_type=category or ERROR_TYPE,
                          error_accepts=category or ERROR_ACCEPTS)
        return
    if dev.error is not None:
        if kind == "device":
            return  # refused, as it should be
        raise CheckFailure(category or ERROR_RAISES,
                           f"raised {error_line(dev.error)}, but CPU returned a result "
                           f"[{where}]")
    if kind == "device" and _own_kernel(ctx, call.sig.name):
        raise CheckFailure(OUT_DEVICE, f"accepted out= on cpu for a call on "
                                       f"{ctx.backend.device}: its own out= kernel should "
                                       f"refuse it, as CPU's do (\"Expected out tensor to have "
                                       f"device ...\") [{where}]")

    # -- the outs were written (before anything else: a kernel that returns a new tensor); a
    # shape-only backend's outs cannot be read, so there the returned objects and the outs'
    # metadata below are what is judged
    seeded = "nondeterministic_seeded" in call.sig.tags
    if ctx.hints.values and (kind == "device" or ctx.values_comparable()):
        for i in range(n):
            if seeded and cpu.bases[i].numel() < SEEDED_WRITE_EVIDENCE:
                continue  # a random result can equal what the out held: no evidence either way
            if not _same(cpu.before[i], cpu.bases[i].detach()):
                after = dev.bases[i].detach() if kind == "device" else \
                    ctx.to_host(dev.bases[i].detach())  # device: the outs are on CPU
                if _same(dev.before[i], after):
                    label = "out" if n == 1 else f"{names[i]}"
                    shown = f"{dtype_name(after.dtype)}{list(after.shape)}"
                    raise CheckFailure(
                        {"view": OUT_VIEW, "device": OUT_DEVICE}.get(kind, OUT_NOT_WRITTEN),
                        f"{label} was not written: it still holds what it was given "
                        f"({shown}), but CPU wrote the result into it [{where}]")

    # -- the very same objects are returned
    got, exp = result_leaves(dev.result), result_leaves(cpu.result)
    if len(got) != len(exp):
        raise CheckFailure(OUT_IDENTITY, f"returned {len(got)} values, but should return "
                                         f"{len(exp)} as CPU does [{where}]")
    for i, e in enumerate(exp):
        j = next((k for k, o in enumerate(cpu.outs) if e is o), None)
        if j is not None and got[i] is not dev.outs[j]:
            what = type(got[i]).__name__ if not isinstance(got[i], torch.Tensor) else \
                "a new tensor"
            raise CheckFailure(OUT_IDENTITY, f"returned {what} as result {i}, not the out= "
                                             f"tensor '{names[j]}' it was given (CPU returns "
                                             f"that very object) [{where}]")

    # -- the resize warning where CPU gives it (for a wrong-sized out: elsewhere CPU's own
    # composite kernels sometimes warn about their intermediate results)
    if kind == "resize" and cpu.warned != dev.warned:
        said = "gave no" if cpu.warned else "gave a"
        raise CheckFailure(OUT_RESIZE, f"{said} warning on resizing a non-empty out=, "
                                       f"but CPU {'does' if cpu.warned else 'does not'} "
                                       f"[{where}]")

    # -- shapes, dtypes, values (through the base for views)
    if kind == "view" and ctx.hints.values and not seeded and not all(
            _close(b.select(-1, 1), p) for b, p in zip(cpu.bases, probe.outs, strict=True)):
        # CPU's own kernel writes a strided out otherwise than a fresh one (as if it were
        # contiguous: _softmax.out): the oracle has no answer for views of this call
        ctx.cpu_unstable_calls[f"{where}: CPU's result through the view differs from its "
                               f"result in an empty out="] += 1
        return
    if kind == "view":
        exp_t = [b.select(-1, 1) for b in cpu.bases]
        got_t = [b.detach().select(-1, 1) for b in dev.bases]  # read back through the base
    elif kind == "device":  # accepted by torch's composite out= wrapper: CPU's values in them
        _compare_on_cpu(ctx, call, cpu.outs, dev.outs, where, values=not seeded)
        return
    else:
        exp_t, got_t = list(cpu.outs), list(dev.outs)
    try:
        compare_outputs(ctx, call, tuple(exp_t), tuple(got_t), values=not seeded)
    except CheckFailure as exc:
        if category is None:
            raise
        from opdb.fingerprints import split_call

        raise CheckFailure(category, f"{split_call(exc.message)[0]} [{where}]") from None
    if kind == "view" and ctx.values_comparable():  # the base's other elements are untouched
        for i in range(n):
            rest_e = cpu.bases[i].select(-1, 0)
            rest_a = ctx.to_host(dev.bases[i].detach()).select(-1, 0)
            if not _same(rest_e, rest_a):
                raise CheckFailure(OUT_VIEW, f"wrote outside the view: the base's other "
                                             f"elements changed, but CPU leaves them [{where}]")


def _compare_on_cpu(ctx: Context, call: Call, exp: list[torch.Tensor], got: list[torch.Tensor],
                    where: str, *, values: bool) -> None:
    """Outs on CPU that a backend call wrote (the ``device`` form): dtype, shape and values as
    CPU's own outs (no device to compare: they are where they were given)."""
    from conformance.compare.values import assert_values

    for i, (e, a) in enumerate(zip(exp, got, strict=True)):
        label = "out" if len(exp) == 1 else f"out[{i}]"
        if (a.dtype, tuple(a.shape)) != (e.dtype, tuple(e.shape)):
            raise CheckFailure(OUT_DEVICE, f"{label} on cpu became {dtype_name(a.dtype)}"
                                           f"{list(a.shape)}, but CPU's is {dtype_name(e.dtype)}"
                                           f"{list(e.shape)} [{where}]")
        if values and ctx.hints.values:
            try:
                assert_values(ctx, call, label, where, a.detach(), e)
            except CheckFailure as exc:
                raise CheckFailure(OUT_DEVICE, exc.message) from None


_OWN: dict[tuple[str, str], bool] = {}


def _own_kernel(ctx: Context, name: str) -> bool:
    """Whether the backend registers its own kernel for ``name`` (not torch's composite)."""
    from opdb.dispatch import Status, classify

    key = (ctx.backend.dispatch_key, name)
    if key not in _OWN:
        _OWN[key] = classify(ctx.backend.dispatch_key, [name])[name] == Status.native
    return _OWN[key]


CHECK = Check("out", out_calls, "out= tensors written, returned, resized, cast, refused as CPU",
              out_applies, verify_out, examples_factor=OUT_FACTOR)
