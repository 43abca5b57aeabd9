"""What a backend's declared properties (:attr:`~conformance.core.backends.Backend.assumes`,
``opdb/data/backend_properties.yaml``) make a legitimate answer, asked only where a value
comparison failed: each concerned property is one more CPU answer (:class:`Alternate`) that an
element of the backend's result may agree with instead of CPU's plain one
(:func:`conformance.compare.arbitration.classify`, noted as ``backend_property``).

- ``flush`` (``ftz``): CPU's answer for the call with every subnormal floating input flushed to
  (signed) zero, its subnormal results flushed too: what a device with FTZ and DAZ computes at
  the op's boundary; and the same under CPU's own flush-to-zero mode, where a device flushes
  every instruction (subnormal intermediates inside a kernel too).
- ``tf32``: CPU's answer for the call with float32/complex64 inputs rounded to TF32 (10 mantissa
  bits, round to nearest even): the products a TF32 matrix unit forms, accumulated in float32.
- ``tolerance`` (``half_accumulation``): CPU's own answer, within the property's ``rtol`` of the
  result's largest magnitude (a narrow accumulator's error grows with the running sum).

Only a declared property is honoured: an undeclared one is a fail, and the run's probe
(:mod:`conformance.core.probes`) suggests the flag.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from conformance.core.call import Call
from opdb.dtypes import COMPLEX, FLOATING, dtype_name
from opdb.properties import BackendProperty, properties

if TYPE_CHECKING:
    from conformance.compare.context import Context


@dataclass(frozen=True)
class Alternate:
    """An answer a declared property makes legitimate: ``answer`` (CPU's, of the expected
    result's shape and dtype), and ``atol`` where the property is honoured by a tolerance
    around it (``None``: the comparison's own)."""

    prop: str
    answer: torch.Tensor
    atol: float | None = None


def flush_subnormals(t: torch.Tensor) -> torch.Tensor:
    """``t`` with its subnormal elements (of each part, for complex) replaced by signed zeros."""
    if t.is_complex():
        return torch.view_as_complex(flush_subnormals(torch.view_as_real(t.resolve_conj())))
    tiny = torch.finfo(t.dtype).tiny
    return torch.where(t.abs() < tiny, t * 0, t)


def round_tf32(t: torch.Tensor) -> torch.Tensor:
    """A float32 (or complex64) ``t`` rounded to TF32's 10 mantissa bits, to nearest even;
    infinities and NaNs as they are (a finite value past TF32's largest becomes an infinity, as
    in float32)."""
    if t.is_complex():
        return torch.view_as_complex(round_tf32(torch.view_as_real(t.resolve_conj())))
    if t.dtype != torch.float32:
        return t
    bits = t.contiguous().view(torch.int32)
    rounded = ((bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF).view(torch.float32)
    return torch.where(t.isfinite(), rounded, t)


#: How each ``honoured`` kind changes a floating/complex tensor argument, and its results.
_INPUTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "flush": flush_subnormals, "tf32": round_tf32}
_RESULTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"flush": flush_subnormals}


def _mapped(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> tuple[Any, bool]:
    """``value`` with ``fn`` applied to each floating/complex strided tensor in it."""
    if isinstance(value, torch.Tensor):
        if not (value.is_floating_point() or value.is_complex()) or value.is_meta \
                or value.layout != torch.strided or value.is_nested:
            return value, False
        new = fn(value.detach())
        return new, not torch.equal(new, value)  # NaNs count as changed: one more CPU call
    if isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
        parts = [_mapped(v, fn) for v in value]
        return type(value)(p[0] for p in parts), any(p[1] for p in parts)
    return value, False


def transformed(call: Call, fn: Callable[[torch.Tensor], torch.Tensor]) -> Call | None:
    """``call`` with ``fn`` applied to its floating/complex tensor arguments; ``None`` where
    that changes nothing (CPU's answer would be the same)."""
    values, changed = [], False
    for name, value in call.values:
        value, moved = _mapped(value, fn)
        changed = changed or moved
        values.append((name, value))
    return replace(call, values=tuple(values)) if changed else None


def _concerned(ctx: Context, call: Call, expected: torch.Tensor) -> Iterator[BackendProperty]:
    """The declared properties that concern ``expected``: by its dtype, or, for an integral or
    bool result computed from floating inputs (frexp's exponent, a pooling's indices, a
    factorization's info code), by theirs: a device that flushes its inputs decides those too."""
    known = properties()
    dtypes = {dtype_name(expected.dtype)}
    if not (expected.is_floating_point() or expected.is_complex()):
        dtypes |= {name for name in call.tensor_dtypes if name in FLOATING + COMPLEX}
    for name in sorted(ctx.backend.assumes):
        prop = known.get(name)
        if prop is not None and any(prop.concerns(call.sig.base, d) for d in dtypes):
            yield prop



def _cpu_answer(ctx: Context, call: Call, pick: Callable[[Any], Any],
                flushing: bool = False) -> Any:
    """CPU's answer for ``call`` (the part :func:`pick` takes), under the about-to-run marker (a
    crash there is CPU's); with ``flushing``, under CPU's own flush-to-zero mode
    (``torch.set_flush_denormal``), ``None`` where this CPU has none. ``None`` where CPU refuses
    the call: no second answer."""
    ctx.inflight.call(call, ctx.repro_fn, side="cpu")
    if not flushing:
        try:
            return pick(call.run("cpu"))
        except Exception:  # noqa: BLE001 - CPU refuses the changed call
            return None
    # the mode is the calling thread's own: the kernel must not hand rows to pool threads
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    if not torch.set_flush_denormal(True):
        torch.set_num_threads(threads)
        return None
    try:
        return pick(call.run("cpu"))
    except Exception:  # noqa: BLE001 - CPU refuses the call
        return None
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)


def _answers(ctx: Context, prop: BackendProperty, call: Call, expected: torch.Tensor,
             pick: Callable[[Any], Any]) -> Iterator[Any]:
    """The answers one property makes legitimate, before its results' own treatment. ``flush``
    gives two: the op on flushed inputs (a device that flushes at each op's boundary), and the
    op under CPU's own flush-to-zero mode (a device that flushes every instruction: a
    subnormal intermediate inside the kernel, such as a norm's squares, becomes zero too, and
    an answer divided by it is no longer CPU's)."""
    changed = transformed(call, _INPUTS[prop.honoured])
    # the inputs are as the property leaves them: CPU's own answer
    yield expected if changed is None else _cpu_answer(ctx, changed, pick)
    if prop.honoured == "flush":
        yield _cpu_answer(ctx, changed or call, pick, flushing=True)


def alternates(ctx: Context, call: Call, expected: torch.Tensor,
               pick: Callable[[Any], Any]) -> list[Alternate]:
    """The answers the backend's declared properties make legitimate for ``expected`` (CPU's
    answer, the part :func:`pick` takes from a whole answer of ``call``), each computed on CPU;
    none where the backend declares nothing that concerns this op and dtype."""
    found = []
    for prop in _concerned(ctx, call, expected):
        if prop.honoured == "tolerance" and (expected.is_floating_point()
                                             or expected.is_complex()):
            scale = float(expected.detach().abs().nan_to_num(0, 0, 0).max()) \
                if expected.numel() else 0.0
            found.append(Alternate(prop.name, expected, prop.rtol[dtype_name(expected.dtype)]
                                   * scale))
            continue
        after = _RESULTS.get(prop.honoured)
        for answer in _answers(ctx, prop, call, expected, pick):
            if not isinstance(answer, torch.Tensor) or answer.shape != expected.shape \
                    or answer.dtype != expected.dtype:
                continue
            floating = answer.is_floating_point() or answer.is_complex()
            found.append(Alternate(prop.name, after(answer) if after and floating else answer))
    return found


def refusal_under(ctx: Context, call: Call, exc: BaseException) -> str | None:
    """The declared property (its name) under which CPU refuses ``call`` as the backend did
    (an exception of ``exc``'s type): a matrix whose subnormal entries a flushing device reads
    as zeros is singular there (``linalg_solve`` raises). ``None`` where no declared property
    makes CPU refuse. Asked only where the backend raised and CPU answered."""
    if not ctx.backend.assumes:
        return None
    known = properties()
    for name in sorted(ctx.backend.assumes):
        prop = known.get(name)
        if prop is None or prop.honoured not in _INPUTS \
                or not any(prop.concerns(call.sig.base, d) for d in call.tensor_dtypes):
            continue
        changed = transformed(call, _INPUTS[prop.honoured])
        if changed is None:
            continue
        ctx.inflight.call(changed, ctx.repro_fn, side="cpu")
        try:
            changed.run("cpu")
        except Exception as refusal:  # noqa: BLE001 - the refusal is the answer asked for
            if type(refusal) is type(exc):
                return prop.name
    return None

