"""The :class:`Context` a check's ``verify`` runs through: CPU and backend calls, the
about-to-run marker, per-dtype tallies, and the judgement of refusals (CPU raised: what the
backend owes).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from conformance.core.backends import Backend
from conformance.core.call import Call, brief
from conformance.core.composites import CompositeRun
from conformance.core.inflight import Inflight
from conformance.core.readback import result_bits
from conformance.core.signature import OpSignature
from conformance.core.verdicts import (
    Abort,
    CheckFailure,
    CpuRejected,
    DtypeTally,
    NotComparable,
    error_line,
    missing_op_from,
)
from opdb.dtypes import (
    DTYPE_NAMES,
)
from opdb.opdata import OpHints
from opdb.outcomes import (
    ATEN_COMPOSITE,
    BACKEND_PROPERTY,
    DEVICE_LOST,
    ERROR_ACCEPTS,
    ERROR_RAISES,
    ERROR_TYPE,
    error_type_owed,
    is_cpu_specific,
    is_dtype_gap,
    is_internal_assert,
)


def non_empty(call: Call) -> Call | None:
    """``call`` with each empty input tensor replaced by zeros of its shape with every 0 made
    1 (``out=`` tensors as they are), or ``None`` when some input tensor is not empty (or there
    is none)."""
    outs = {a.name for a in call.sig.args if a.is_out}
    inputs = [x for name, v in call.values if name not in outs
              for x in (v if isinstance(v, list | tuple) else (v,)) if isinstance(x, torch.Tensor)]
    if not inputs or any(t.numel() for t in inputs):
        return None

    def grow(v: Any) -> Any:
        if not isinstance(v, torch.Tensor):
            return v
        return torch.zeros([max(d, 1) for d in v.shape], dtype=v.dtype)

    return replace(call, values=tuple(
        (name, v if name in outs else [grow(x) for x in v] if isinstance(v, list | tuple)
         else grow(v)) for name, v in call.values))


#: Tolerances: (overload, dtype) -> (rtol, atol) or None for torch.testing's dtype defaults.
ToleranceFn = Callable[[str, torch.dtype], tuple[float | None, float | None]]


@dataclass
class Tally:
    examples: int = 0
    cpu_ok: int = 0
    backend_ok: int = 0
    agree: int = 0


@dataclass
class Context:
    """What a check's ``verify`` runs through: the backend, counting, tallies and markers."""

    backend: Backend
    sig: OpSignature
    hints: OpHints
    tolerance_fn: ToleranceFn
    inflight: Inflight
    repro_fn: Callable[[Call], str]
    checked: int = 0
    not_comparable: int = 0
    cpu_errors: Counter[str] = field(default_factory=Counter)
    cpu_dtype_gaps: Counter[str] = field(default_factory=Counter)  # CPU-only dtype refusals
    cpu_unstable_calls: Counter[str] = field(default_factory=Counter)  # CPU unlike itself
    infos: Counter[tuple[str, str]] = field(default_factory=Counter)  # (category, line)
    info_elements: Counter[str] = field(default_factory=Counter)  # category -> elements noted
    metadata_only: int = 0  # agreeing examples whose values a shape-only backend cannot give
    value_errors: Counter[str] = field(default_factory=Counter)  # CPU refusals about values only
    _values_skipped: bool = False
    sources: Counter[str] = field(default_factory=Counter)  # counted examples by Call.source
    _source: str = "hypothesis"
    tallies: dict[str, Tally] = field(default_factory=dict)
    dtype_support: dict[str, str] = field(default_factory=dict)  # the dtypes check's outcomes
    #: how results are compared, by call structure (:func:`conformance.compare.values.comparison_for`)
    comparisons: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    _current: tuple[frozenset[str], list[bool]] | None = None
    #: backend refusals CPU shared (:meth:`expect_same_error`) since the device last worked:
    #: ``(exception, call)`` of each (the first two kept, then the count), probed where it
    #: matters (:meth:`settle_device`)
    _unproven: list[tuple[BaseException, Call | None]] = field(default_factory=list)
    _unproven_n: int = 0
    #: a check's own state across the examples of one item (the compile check's first call,
    #: which a later example's shape follows through one dynamic=True compilation)
    scratch: dict[str, Any] = field(default_factory=dict)

    # -- running --------------------------------------------------------------------------
    def run_cpu(self, call: Call) -> Any:
        """CPU's answer; raises :class:`CpuRejected` (example not counted) if CPU refuses it."""
        out, exc = self.run_cpu_or_error(call)
        if exc is not None:
            raise CpuRejected(exc)
        return out

    def cpu_samples(self, call: Call, n: int,
                    keep: Callable[[Any], Any] | None = None) -> list[Any]:
        """``n`` more CPU answers of a call CPU has answered (seeded-random ops: how far CPU's
        values spread), each as ``keep`` makes it (all of it by default). Reruns: the marker
        names the call already, so it is rewritten at most once a second (its start time is
        the per-call clock of a forked item's parent), and the watchdog sees each rerun as a
        call (its per-call timeout)."""
        tick = self.inflight.on_call
        marked = time.monotonic()
        out = []
        for _ in range(n):
            now = time.monotonic()
            if now - marked > 1.0:
                self.inflight.call(call, self.repro_fn, side="cpu")  # ticks the watchdog too
                marked = now
            elif tick is not None:
                tick()
            got = call.run("cpu")
            out.append(got if keep is None else keep(got))
        return out

    def run_cpu_or_error(self, call: Call) -> tuple[Any, BaseException | None]:
        self.begin_example(call)
        self.inflight.call(call, self.repro_fn, side="cpu")
        try:
            out = call.run("cpu")
        except Exception as exc:  # noqa: BLE001 - CPU's errors are data here
            missing = missing_op_from(exc)
            if missing is not None:
                raise Abort("skip", "cpu_unsupported",
                            f"CPU (the oracle) has no kernel: {error_line(exc)}") from None
            self.cpu_errors[error_line(exc)] += 1
            return None, exc
        self.mark_ok(cpu_ok=True)
        return out, None

    def run_backend(self, call: Call, *, marker: Call | None = None) -> Any:
        """The backend's answer. Its missing kernel ends the run as ``unsupported``; any other
        error where CPU succeeded is an ``error_raises`` failure (a missing capability).
        ``marker``: the call the about-to-run marker (and a crash's repro) names, when ``call``
        holds tensors already on the device (the autograd check's leaves), which a repro cannot
        read back from a backend whose tensors hold no values."""
        self.inflight.call(marker or call, self.repro_fn, side=self.backend.device)
        try:
            out = call.run(self.backend.device)
        except Exception as exc:  # noqa: BLE001
            self.stop_if_unsupported(exc, marker or call)  # the repro reads marker's values
            self.reject_if_vacuous(marker or call)
            if marker is None:
                self.reject_if_composite_disagrees(call, exc, composite_raises=True)
                self.reject_if_refused_under_property(call, exc)
            # described by the marker: ``call`` may hold device tensors that the failed call
            # left unreadable (an in-place op's self on a lazy backend whose graph failed to
            # lower: even its shape raises), the marker the same arguments on CPU
            raise CheckFailure(ERROR_RAISES, f"raised {error_line(exc)}, but CPU returned a "
                                                 f"result [{(marker or call).describe()}]"
                               ) from None
        self.mark_ok(backend_ok=True)
        return out

    def reject_if_vacuous(self, call: Call) -> None:
        """Raise :class:`CpuRejected` (example not counted) when CPU accepted ``call`` only
        because every input tensor is empty: it refuses the same call made non-empty. Asked
        where the backend disagrees with CPU (raises, or answers otherwise).

        CPU's kernels return before their dtype dispatch and argument checks when there is
        nothing to compute (``random_`` of an empty complex tensor, ``geometric_`` of an empty
        bool one, ``_foreach_powsum`` of an empty int64 list answering int64): that answer
        specifies nothing, and a backend that validates first, or answers otherwise, is not
        failed for it (which exception type CPU refuses with is judged on non-empty examples).
        A backend disagreeing with what CPU computes on non-empty inputs still fails."""
        bigger = non_empty(call)
        if bigger is None:
            return
        self.inflight.call(bigger, self.repro_fn, side="cpu")
        try:
            bigger.run("cpu")
        except Exception as refusal:  # noqa: BLE001 - CPU's errors are data here
            self.cpu_errors[f"accepted only empty inputs: {error_line(refusal)}"] += 1
            raise CpuRejected(refusal) from None

    def aten_composite(self, call: Call) -> CompositeRun | None:
        """CPU's answer for ``call`` with ATen's composites where CPU's own kernels override
        them (:mod:`conformance.core.composites`); ``None`` where no overload the call reached
        has both (CPU's answer is the composite's). Asked only where the backend disagreed."""
        from conformance.core.composites import composite_run  # torch dispatch mode: on demand

        cached = self.scratch.get("aten_composite")
        if cached is not None and cached[0] is call:  # asked per result part and again whole
            return cached[1]
        run = composite_run(call, lambda: self.inflight.call(call, self.repro_fn, side="cpu"))
        found = run if run is not None and run.routed else None
        self.scratch["aten_composite"] = (call, found)
        return found

    def terms_scale(self, call: Call, shape: torch.Size,
                    position: tuple[int, int] | None) -> torch.Tensor | None:
        """:func:`conformance.compare.terms.terms_magnitude` of ``call``'s result of ``shape``
        (one more CPU run), kept for the call: a disagreement's arbitration asks it of every
        element-wise agreement it judges (the backend's, CPU's reorderings', the reference's)."""
        from conformance.compare.terms import terms_magnitude

        key = (shape, position)
        cached = self.scratch.get("terms_scale")
        if cached is not None and cached[0] is call and cached[1] == key:
            return cached[2]
        found = terms_magnitude(call, shape, position)
        self.scratch["terms_scale"] = (call, key, found)
        return found

    def reject_if_refused_under_property(self, call: Call, exc: BaseException) -> None:
        """Raise :class:`CpuRejected` (example not counted, ``backend_property`` noted) where
        the backend raised ``exc``, CPU answered, and CPU refuses the call as the backend did
        under a property the backend declares (:func:`~conformance.compare.properties.
        refusal_under`)."""
        from conformance.compare.properties import refusal_under

        prop = refusal_under(self, call, exc)
        if prop is None:
            return
        self.note_info(BACKEND_PROPERTY, f"raised {error_line(exc)}, as CPU does under the "
                                         f"backend's declared {prop!r} "
                                         f"(opdb/data/backend_properties.yaml) "
                                         f"[{call.describe()}]")
        raise CpuRejected(exc)

    def reject_if_composite_disagrees(self, call: Call, exc: BaseException, *,
                                      composite_raises: bool) -> None:
        """Raise :class:`CpuRejected` (example not counted, ``aten_composite`` noted) where the
        backend raised ``exc`` and CPU answered (``composite_raises``), or CPU raised ``exc``
        and the backend answered (not ``composite_raises``), and ATen's composite on CPU does
        what the backend did: CPU's kernel and PyTorch's own composite disagree on whether the
        call is valid, which specifies nothing for a backend."""
        run = self.aten_composite(call)
        if run is None or (run.error is not None) != composite_raises:
            return
        if run.error is not None and type(run.error) is not type(exc):
            return  # the composite raised otherwise: no evidence that the backend did as it
        composites = ", ".join(run.routed)
        what = (f"raised {error_line(exc)} where CPU's kernel returns a result, as ATen's "
                f"composite ({composites}) does" if composite_raises else
                f"returned a result where CPU's kernel raises {error_line(exc)}, as ATen's "
                f"composite ({composites}) does")
        self.note_info(ATEN_COMPOSITE, f"{what} [{call.describe()}]")
        raise CpuRejected(exc)

    def expect_same_error(self, call: Call, cpu_exc: BaseException) -> None:
        """CPU raised: the backend must raise the same exception type (else ``error_type``)
        where that type is owed (:func:`~opdb.outcomes.error_type_owed`: not for a CPU refusal
        that specifies nothing for other backends, nor a backend refusing for lack of its dtype
        kernel); returning a result is ``error_accepts`` (missing validation), unless CPU's
        refusal is only its own missing dtype kernel: then the example is not counted and the
        verdict notes it (``cpu_dtype_gap``, informational). A failed internal assertion on CPU
        (:func:`~opdb.outcomes.is_internal_assert`) is CPU's bug, and a limitation CPU names as
        its own (:func:`~opdb.outcomes.is_cpu_specific`: "not supported on CPU") binds no other
        backend: a backend computing there is not counted. A refusal by the schema binding
        (:func:`binding_refusal`) reached no kernel: the backend is not asked."""
        __tracebackhide__ = True
        if binding_refusal(cpu_exc):
            raise CpuRejected(cpu_exc)
        self.inflight.call(call, self.repro_fn, side=self.backend.device)
        backend_exc: Exception | None = None
        try:
            call.run(self.backend.device)
        except Exception as exc:  # noqa: BLE001
            self.stop_if_unsupported(exc, call, probe=False)
            backend_exc = exc
        else:
            self.mark_ok(backend_ok=True)
        try:
            self.judge_refusal(cpu_exc, backend_exc, call.describe(), values_call=call)
        except CheckFailure:
            self.settle_device()  # a failure is judged on a device known to work
            raise

    def judge_refusal(self, cpu_exc: BaseException, backend_exc: BaseException | None,
                      where: str, *, values_call: Call | None = None,
                      error_type: str = ERROR_TYPE, error_accepts: str = ERROR_ACCEPTS) -> None:
        """CPU raised ``cpu_exc`` on a call (described by ``where``); the backend raised
        ``backend_exc`` (``None``: it returned a result). Judged as :meth:`expect_same_error`
        says, a failure in category ``error_type`` / ``error_accepts`` (a check's own, e.g.
        the out check's per form). ``values_call``: the call, for a shape-only backend's
        question whether CPU's refusal is about values (without it, not asked).

        A refusal by the schema binding (:func:`binding_refusal`) is not counted: the call
        reached no kernel on either side, so the backend raising the same is no agreement."""
        __tracebackhide__ = True
        if binding_refusal(cpu_exc):
            raise CpuRejected(cpu_exc)
        if backend_exc is not None:
            if type(backend_exc) is not type(cpu_exc) and error_type_owed(str(cpu_exc),
                                                                          str(backend_exc)):
                raise CheckFailure(
                    error_type, f"raised {error_line(backend_exc)}, but should raise "
                    f"{type(cpu_exc).__name__} as CPU does ({error_line(cpu_exc)}) [{where}]")
            return
        if is_internal_assert(str(cpu_exc)) or is_cpu_specific(str(cpu_exc)):
            raise CpuRejected(cpu_exc)  # CPU's own bug or limitation: it specifies nothing
        if is_dtype_gap(str(cpu_exc)):
            self.cpu_dtype_gaps[error_line(cpu_exc)] += 1
            raise CpuRejected(cpu_exc)
        if values_call is not None:
            self.reject_if_composite_disagrees(values_call, cpu_exc, composite_raises=False)
        if values_call is not None and not self.backend.host_values \
                and self._error_depends_on_values(values_call):
            # a shape-only backend cannot see values: CPU's refusal is not held against it
            self.value_errors[error_line(cpu_exc)] += 1
            raise CpuRejected(cpu_exc)
        raise CheckFailure(error_accepts, f"returned a result, but should raise "
                                          f"{error_line(cpu_exc)} as CPU does [{where}]")

    def _error_depends_on_values(self, call: Call) -> bool:
        from conformance.compare.shapeonly import error_depends_on_values

        def run_cpu(again: Call) -> Any:
            self.inflight.call(again, self.repro_fn, side="cpu")
            return again.run("cpu")

        return error_depends_on_values(call, run_cpu)

    def values_comparable(self) -> bool:
        """Whether result values can be read back from the backend. A shape-only backend
        (``Backend.host_values`` false) cannot: the current example is then judged on metadata
        only, and the verdict says so (``metadata_only``)."""
        if self.backend.host_values:
            return True
        self._values_skipped = True
        return False

    def stop_if_unsupported(self, exc: BaseException, call: Call | None, *,
                            probe: bool = True) -> None:
        """A backend call raised ``exc``: a missing kernel of the backend ends the run as
        ``unsupported``; a device left unusable ends it as a ``crash`` (:meth:`device_alive`);
        else it returns. The dispatcher's message names a dispatch key: a kernel missing for
        another key (``'CPU'``: a CPU fallback copying back into a CPU ``out=`` through
        ``_copy_from_and_resize``) is the backend refusing the call, judged as any error
        (:meth:`Backend.owns_key`), never a kernel the backend lacks.

        ``probe=False``: a refusal CPU shares (an agreement, the promotion and invalid checks'
        daily bread): the device is probed only where it matters, before a failure is judged
        and at the end of the search (:meth:`settle_device`), or never, once a later backend
        call works. Probed after each such refusal, the tiny op cost 7% of the promotion
        check's time on the reference backend."""
        missing = missing_op_from(exc)
        if missing is not None and self.backend.owns_key(missing[1]):
            stop = Abort("unsupported", "missing_kernel",
                         f"no kernel for '{missing[0]}' on {self.backend.name} "
                         f"({error_line(exc)})", missing_op=missing[0])
            stop.call = call
            raise stop from None
        if probe:
            self.device_alive(exc, call)
            return
        self._unproven_n += 1
        if len(self._unproven) < 2:
            self._unproven.append((exc, call))

    def settle_device(self) -> None:
        """Probe the device if a shared refusal left it unproven (:meth:`stop_if_unsupported`);
        the ``device_lost`` crash where it no longer works."""
        if self._unproven:
            self.device_alive(*self._unproven[0])

    def device_alive(self, exc: BaseException, call: Call | None) -> None:
        """After the backend raised ``exc``: does its device still work? A sticky error (CUDA's
        device-side assert) makes every later call in the process fail, each a false verdict;
        the run ends as a ``crash`` (``device_lost``) and the plugin replaces the process. The
        first refusal since the device last worked (:meth:`settle_device`) is the first call
        it can be blamed on; the message says how many others came before the probe."""
        from conformance.core.backends import device_error

        lost = device_error(self.backend)
        if lost is None:
            self._device_works()
            return
        later = ""
        if self._unproven:
            (exc, call), n = self._unproven[0], self._unproven_n
            if n > 1:
                later = (f"; {n - 1} more refusal(s) came before the device was probed, the "
                         f"next: {error_line(self._unproven[1][0])}")
        stop = Abort("crash", DEVICE_LOST,
                     f"{self.backend.device} was unusable after this call raised "
                     f"{error_line(exc)} (a tiny op then raised {lost}): a sticky device error, "
                     f"every later call in the process would fail{later}")
        stop.call = call
        raise stop from None

    def _device_works(self) -> None:
        """The device answered (a probe, or a backend call): no refusal is unproven."""
        self._unproven.clear()
        self._unproven_n = 0

    def cpu_unstable(self, call: Call, agrees: Callable[[Any], bool], reruns: int = 2) -> bool:
        """Whether CPU disagrees with itself on ``call``: asked only where a value comparison
        failed, by running CPU ``reruns`` more times; ``agrees(answer)`` compares another CPU
        answer with the first as the backend's was compared. Uninitialized results (of empty
        inputs), unseeded randomness and races make the oracle's values unspecified there: the
        example then counts on what CPU does repeat (structure, dtype, shape) and the verdict
        notes it (``cpu_unstable``)."""
        for _ in range(reruns):
            self.inflight.call(call, self.repro_fn, side="cpu")
            try:
                again = call.run("cpu")
            except Exception:  # noqa: BLE001 - CPU raising now where it answered before
                again = None
            if again is None or not agrees(again):
                self.cpu_unstable_calls[call.describe()] += 1
                return True
        return False

    def cpu_varies(self, call: Call, runs: int = 12) -> bool:
        """Whether CPU's answers to ``call`` differ bit for bit (NaN-aware) over ``runs`` runs:
        asked when a failure did not reproduce on replay (``flaky``), to tell an unstable oracle
        from an unstable backend."""
        answers: list[list[Any] | None] = []
        for _ in range(runs):
            self.inflight.call(call, self.repro_fn, side="cpu")
            try:
                answers.append(result_bits(call.run("cpu")))
            except Exception:  # noqa: BLE001
                answers.append(None)
            if len(answers) > 1 and answers[-1] != answers[0]:
                self.cpu_unstable_calls[call.describe()] += 1
                return True
        return False

    def note_info(self, category: str, line: str, elements: int = 0) -> None:
        """A check's informational finding (a category of ``opdb.outcomes.INFO_CATEGORIES``):
        the example still agrees; a ``pass`` carries the category and the most common line,
        and the number of result ``elements`` the findings of that category covered (those of
        ``cpu_imprecise`` and ``value_unspecified``: the count a reader weighs them by)."""
        self.infos[(category, line)] += 1
        self.info_elements[category] += elements

    def to_host(self, t: torch.Tensor) -> torch.Tensor:
        if t.is_meta or not self.backend.host_values:
            raise NotComparable(f"{t.device.type} tensors hold no values")
        # what the tensor reports, read before the copy: a lazy tensor's metadata can change
        # when the copy computes it (torch_xla 2.9: a view's base after set_() of the view)
        shape, dtype = t.shape, t.dtype
        try:
            host = t.cpu()
        except Exception as exc:  # noqa: BLE001
            self.device_alive(exc, None)
            raise CheckFailure("device", f"copying the result to CPU raised {error_line(exc)}") \
                from None
        if t.layout == torch.strided and not t.is_nested \
                and (host.shape != shape or host.dtype != dtype):
            # the tensor's metadata and its values disagree (torch_xla 2.9: a diagonal of a
            # [3, 3, 1] clone under autograd reports [1, 2] and reads back as [3, 0]): nothing
            # read from it can be compared as that tensor, and comparing anyway raises
            reported = brief(torch.empty(shape, dtype=dtype, device="meta"))
            raise CheckFailure("device", f"the result reports {reported}, but copying it to CPU "
                                         f"gave {brief(host)}")
        return host

    def device_inputs(self, call: Call) -> bool:
        return any(isinstance(v, torch.Tensor) and n not in call.on_cpu for n, v in call.values)

    def tolerance(self, overload: str, dtype: torch.dtype) -> tuple[float | None, float | None]:
        return self.tolerance_fn(overload, dtype)

    def scale_ulps(self, overload: str, dtype: torch.dtype) -> int:
        """The tolerance data's ``scale_ulps`` (0 for a plain ``(rtol, atol)`` function)."""
        fn = getattr(self.tolerance_fn, "scale_ulps", None)
        return int(fn(overload, dtype)) if fn is not None else 0

    def scale_kind(self, overload: str, dtype: torch.dtype) -> str:
        """The tolerance data's ``scale`` (``inputs`` for a plain function)."""
        fn = getattr(self.tolerance_fn, "scale_kind", None)
        return str(fn(overload, dtype)) if fn is not None else "inputs"

    def grad_error_factor(self, overload: str, dtype: torch.dtype) -> float:
        """The tolerance data's ``grad_error_factor`` (0 for a plain ``(rtol, atol)`` function)."""
        fn = getattr(self.tolerance_fn, "grad_error_factor", None)
        return float(fn(overload, dtype)) if fn is not None else 0.0

    def nonfinite_unspecified(self, overload: str, dtype: torch.dtype) -> bool:
        """The tolerance data's ``nonfinite: unspecified`` (False for a plain function)."""
        fn = getattr(self.tolerance_fn, "nonfinite_unspecified", None)
        return bool(fn(overload, dtype)) if fn is not None else False

    def nonfinite_inputs_unspecified(self, overload: str, dtype: torch.dtype) -> bool:
        """The tolerance data's ``nonfinite_inputs: unspecified`` (False for a plain function)."""
        fn = getattr(self.tolerance_fn, "nonfinite_inputs_unspecified", None)
        return bool(fn(overload, dtype)) if fn is not None else False

    def arbitrates(self, overload: str, dtype: torch.dtype) -> bool:
        """Whether the tolerance data lets a disagreement be arbitrated against float64 (no
        ``arbitrate: false``; True for a plain function)."""
        fn = getattr(self.tolerance_fn, "arbitrates", None)
        return bool(fn(overload, dtype)) if fn is not None else True

    # -- tallies --------------------------------------------------------------------------
    def begin_example(self, call: Call) -> None:
        self._current = (call.tensor_dtypes, [False, False])
        self._values_skipped = False
        self._source = call.source

    def mark_ok(self, *, cpu_ok: bool = False, backend_ok: bool = False) -> None:
        if backend_ok and self._unproven:  # a backend call that worked: its device works
            self._device_works()
        if self._current is None:
            return
        flags = self._current[1]
        flags[0] = flags[0] or cpu_ok
        flags[1] = flags[1] or backend_ok

    def end_example(self, *, counted: bool, agreed: bool) -> None:
        if self._current is None:
            return
        names, (cpu_ok, backend_ok) = self._current
        self._current = None
        if not counted:
            return
        self.metadata_only += agreed and self._values_skipped
        self.sources[self._source] += 1
        for name in names:
            t = self.tallies.setdefault(name, Tally())
            t.examples += 1
            t.cpu_ok += cpu_ok
            t.backend_ok += backend_ok
            t.agree += agreed

    def dtype_tallies(self) -> dict[str, DtypeTally]:
        return {n: DtypeTally(**vars(self.tallies[n])) for n in DTYPE_NAMES if n in self.tallies}


#: CPU refusals, all of one argument-binding error and no example accepted, after which an
#: item stops searching (``no_valid_inputs``). The dispatcher's schema check ("Expected a value
#: of type 'List[Tensor]' for argument 'out3' but instead found type 'Tensor'") is decided by
#: the Python types the strategy gives the arguments, not by their values: after this many
#: refusals of one such line every further draw is refused alike
#: (docs/decisions.md#binding-rejects).
BINDING_REJECTS = 100


BINDING = re.compile(r"Expected a value of type '.+' for argument '\w+' but instead found type")


def binding_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is the dispatcher's schema binding refusing the arguments' Python types,
    before any kernel of any backend runs."""
    return BINDING.search(str(exc)) is not None


#: Drawn calls CPU refused, every one with the same error line and none accepted, after which
#: an item stops (``no_valid_inputs``): twenty diverse draws meeting one refusal is a fact of the
#: strategy for this overload (a shape rule, an argument it cannot draw), not bad luck; a refusal
#: that depends on the draw (a dtype, a size) shows more than one line. Measured on a 1/10 shard
#: of all eight checks: no item that found a valid call had seen one line over 10 draws first;
#: the items stopped so saved 1,040 of their draws (docs/decisions.md#binding-rejects).
SAME_REFUSAL_DRAWS = 20


def one_refusal(errors: Counter[str], rejected: int) -> bool:
    """Every one of ``rejected`` (at least SAME_REFUSAL_DRAWS) drawn calls CPU refused with
    the one error line ``errors`` holds."""
    return rejected >= SAME_REFUSAL_DRAWS and len(errors) == 1


def binding_only(errors: Counter[str]) -> bool:
    """Every CPU refusal so far is one argument-binding error, at least BINDING_REJECTS times."""
    if len(errors) != 1:
        return False
    ((line, n),) = errors.items()
    return n >= BINDING_REJECTS and BINDING.search(line) is not None
