"""The engine: run one check on one overload with Hypothesis and earn a :class:`Verdict`.

``run_check`` draws calls from the check's strategy, runs each on CPU (the oracle) and on the
backend, and stops at the first disagreement, which Hypothesis then shrinks; the shrunk call
becomes the repro. CPU-rejected examples are not counted. Before every backend call the engine
writes the call about to run to an in-flight file (:class:`Inflight`), so a backend that kills the
process still leaves a verdict behind (the plugin's controller turns it into ``crash``/``timeout``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

import torch

from conformance.backends import Backend
from conformance.checks import Check
from conformance.strategies import Call, NoStrategy, OpSignature, calls
from conformance.verdicts import (
    Abort,
    CheckFailure,
    CpuRejected,
    DtypeTally,
    Failure,
    NotComparable,
    Verdict,
    error_line,
    missing_op_from,
)
from opdb.dtypes import (
    ATEN_TYPE_NAMES,
    CPP_TYPE_NAMES,
    DTYPE_NAMES,
    SCALAR_CONVERSION_NAMES,
    SCALAR_TYPE_NAMES,
)
from opdb.opdata import OpHints
from opdb.outcomes import (
    CPU_DTYPE_GAP,
    CPU_UNSTABLE,
    DEVICE_LOST,
    ERROR_ACCEPTS,
    ERROR_RAISES,
    ERROR_TYPE,
    METADATA_ONLY,
    error_type_owed,
    is_cpu_specific,
    is_dtype_gap,
    is_internal_assert,
)

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:[-+](?:\d+\.?\d*)"
                     r"(?:[eE][-+]?\d+)?j)?(?![\w])")
_LIST = re.compile(r"([\[(])#(?:, ?#)*,?([\])])")
_SPECIAL = re.compile(r"(?<![\w.])-?(?:nan|inf)\b")
#: a dtype as a message spells it (torch's ``float32``/``torch.float32``, c10's ``Float``, the
#: C++ and ATen type names), longest first so ``c10::complex<float>`` is one name
_DTYPE_WORD = re.compile(r"(?<![\w:<])(?:torch\.)?(?:" + "|".join(sorted({
    re.escape(n) for table in (SCALAR_TYPE_NAMES, CPP_TYPE_NAMES, SCALAR_CONVERSION_NAMES,
                               ATEN_TYPE_NAMES) for n in table.values()} | set(DTYPE_NAMES)
    | {"ComplexHalf", "complex32"}, key=len, reverse=True)) + r")(?![\w>])")


def _split_call(message: str) -> tuple[str, str]:
    """``("head", "call")`` of ``"head [call]"`` (the bracket matching the final ``]``)."""
    if not message.endswith("]"):
        return message, ""
    depth = 0
    for i in range(len(message) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(message[i], 0)
        if depth == 0:
            if i > 0 and message[i - 1] == " ":
                return message[:i - 1], message[i + 1:-1]
            return message, ""
    return message, ""


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


def failure_key(category: str | None, message: str, dtypes: Iterable[str] = ()) -> str:
    """A failure's fingerprint: category, message with numbers and shapes normalized, dtype.

    The call in the message's trailing ``[...]`` is dropped (its sizes and values vary from
    example to example); ``dtypes`` (the engine passes the dtype of the call's first tensor)
    stand in for it. A value
    failure keeps only what kind of disagreement it is — which result, and the NaN / infinity
    tokens it shows — not torch.testing's numbers. Dtype names in the message (an out= of dtype
    Int, then Byte: ``but got: Int``) are normalized as numbers are: the lead dtype alone keeps
    failures of different input dtypes apart. Two failures with one key are one bug for the
    engine (searched and shrunk once) and for expected-failure entries (whose ``message`` regex
    still reads the failure's own message, dtype names included).
    """
    head, _ = _split_call(message)
    specials = sorted(set(_SPECIAL.findall(head)))
    if category == "value":
        head = head.split(":", 1)[0].split("=", 1)[0]
        if specials:
            head += " (" + ", ".join(specials) + ")"
    else:
        head = _LIST.sub(r"\1#\2", _NUMBER.sub("#", head))
    head = _DTYPE_WORD.sub("<dtype>", head)
    names = ",".join(sorted(dtypes))
    return f"{category}: {head.strip()}" + (f" {{{names}}}" if names else "")


if sys.version_info < (3, 11):  # pragma: no cover - Hypothesis depends on the backport there
    from exceptiongroup import BaseExceptionGroup

#: Tolerances: (overload, dtype) -> (rtol, atol) or None for torch.testing's dtype defaults.
ToleranceFn = Callable[[str, torch.dtype], tuple[float | None, float | None]]


@dataclass(frozen=True)
class EngineSettings:
    """How deep and how reproducibly to search."""

    max_examples: int = 10
    #: Checked refills per drawn call (:meth:`Call.refill`): Hypothesis draws the structure
    #: (dtype, shapes, arguments, how values are made) once, the engine checks it with this many
    #: value fills, in the checks that declare ``refills`` (forward); others run each call once.
    #: 16, not 8: a refill costs ~1.5 ms against ~1.1 ms for a drawn call's share of drawing
    #: (benchmarks/bench_run.py: 434 checked examples per CPU s at 8, 591 at 16, 623 at 32), and
    #: at 16 the default ops showed mlu bugs 8 left unseen (pow's +-0.5 exponents, add/sub's
    #: unfused alpha).
    refills: int = 16
    seed: int = 0
    database: str | None = ".conformance/hypothesis"  # None: no example database
    reject_budget: int = 0  # CPU rejections before giving up; 0 = 8 x max_examples (min 40)
    #: recorded calls mixed into the inputs (conformance.corpus): None = the packaged corpus,
    #: "off" = none, else a corpus file
    corpus: str | None = None
    #: also mix recorded calls into items the schema strategies can feed (one example in
    #: conformance.corpus.CORPUS_ONE_IN); off: recorded calls only where the schema strategies
    #: find no valid input or cannot draw at all
    corpus_mix: bool = False
    #: search recorded calls alone (the retry of an item whose schema-drawn example killed
    #: CPU, the oracle: :func:`conformance.crashes.retry_recorded`)
    recorded_only: bool = False

    def item_seed(self, overload: str, check: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{overload}:{check}".encode()).digest()
        return int.from_bytes(digest[:8], "little")


#: The in-flight marker's fields that change with every call (:meth:`Inflight.call`).
_CALL_FIELDS = ("call", "side", "source", "repro")


def _json_text(value: str | None) -> bytes:
    """``json.dumps`` of a string or ``None``, without its per-call overhead."""
    return b"null" if value is None else encode_basestring_ascii(value).encode()


class Inflight:
    """The about-to-run marker: one small file per process, rewritten before each backend call.

    Only ``write`` + ``flush`` (no fsync): the kernel keeps the bytes if the process dies.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self.item: dict[str, Any] = {}
        self._fd: int | None = None
        self._size = 0  # bytes the marker file holds (a shorter marker is padded over them)
        self._repro_of: Call | None = None
        self._repro: str | None = None
        self._head = b"{}"  # the item's JSON as of the last start/mark (call fields apart)
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def start(self, nodeid: str, overload: str, check: str) -> None:
        self.item = {"nodeid": nodeid, "overload": overload, "check": check,
                     "started": time.time(), "pid": os.getpid(), "state": "running"}
        self._write()

    def call(self, call: Call, repro: Callable[[Call], str], *, side: str) -> None:
        """Record the call about to run on ``side`` (``cpu`` or the backend's device)."""
        if not self.path:
            return
        self.item["call"] = call.describe()
        self.item["side"] = side
        self.item["source"] = call.source  # a schema draw or a recorded call (corpus)
        # the repro is what a crash verdict carries; an oracle crash is a skip and needs none
        if side != "cpu" and self._repro_of is not call:  # one repro per call (CPU reruns)
            self._repro_of, self._repro = call, repro(call)
        self.item["repro"] = self._repro if side != "cpu" else None
        self._write_call()

    def mark(self, state: str) -> None:
        self.item["state"] = state
        self._write()

    def finish(self) -> None:
        self.item = {}
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # nothing running
            self._size = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write_call(self) -> None:
        """:meth:`_write` for :meth:`call`, which runs before every example on each side: only
        the call's four fields change, so the rest of the item is taken as encoded at the last
        :meth:`start` or :meth:`mark`."""
        fields = b", ".join(b'"%s": %s' % (key.encode(), _json_text(self.item[key]))
                            for key in _CALL_FIELDS)
        head = self._head[:-1]
        self._put(head + (b", " if head != b"{" else b"") + fields + b"}")

    def _write(self) -> None:
        if not self.path:
            return
        self._head = json.dumps({k: v for k, v in self.item.items()
                                 if k not in _CALL_FIELDS}).encode()
        self._put(json.dumps(self.item).encode())

    def _put(self, data: bytes) -> None:
        """Rewrite the marker in place through one open descriptor (no open/rename per call:
        this runs before every example). A shorter marker is padded with spaces over the
        longer one before it (JSON allows trailing whitespace) instead of truncating the
        file: one system call per example, not two."""
        if self._fd is None:
            assert self.path is not None  # callers return early without a marker file
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            self._size = 0
        os.pwrite(self._fd, data.ljust(self._size), 0)
        self._size = max(self._size, len(data))

    @staticmethod
    def read(path: str | os.PathLike[str]) -> dict[str, Any] | None:
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, json.JSONDecodeError):
            return None


@dataclass
class _Tally:
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
    metadata_only: int = 0  # agreeing examples whose values a shape-only backend cannot give
    value_errors: Counter[str] = field(default_factory=Counter)  # CPU refusals about values only
    _values_skipped: bool = False
    sources: Counter[str] = field(default_factory=Counter)  # counted examples by Call.source
    _source: str = "hypothesis"
    tallies: dict[str, _Tally] = field(default_factory=dict)
    dtype_support: dict[str, str] = field(default_factory=dict)  # the dtypes check's outcomes
    #: how results are compared, by call structure (:func:`conformance.checks.comparison_for`)
    comparisons: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    _current: tuple[frozenset[str], list[bool]] | None = None

    # -- running --------------------------------------------------------------------------
    def run_cpu(self, call: Call) -> Any:
        """CPU's answer; raises :class:`CpuRejected` (example not counted) if CPU refuses it."""
        out, exc = self.run_cpu_or_error(call)
        if exc is not None:
            raise CpuRejected(exc)
        return out

    def cpu_samples(self, call: Call, n: int) -> list[Any]:
        """``n`` more CPU answers (seeded-random ops: how far CPU's values spread)."""
        return [call.run("cpu") for _ in range(n)]

    def run_cpu_or_error(self, call: Call) -> tuple[Any, BaseException | None]:
        self._begin(call)
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
        self._mark(cpu_ok=True)
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
            self._unsupported(exc, marker or call)  # the repro reads marker's values
            self.reject_if_vacuous(marker or call)
            raise CheckFailure(ERROR_RAISES, f"raised {error_line(exc)}, but CPU returned a "
                                                 f"result [{call.describe()}]") from None
        self._mark(backend_ok=True)
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
            self._unsupported(exc, call)
            backend_exc = exc
        else:
            self._mark(backend_ok=True)
        self.judge_refusal(cpu_exc, backend_exc, call.describe(), values_call=call)

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
        if values_call is not None and not self.backend.host_values \
                and self._error_depends_on_values(values_call):
            # a shape-only backend cannot see values: CPU's refusal is not held against it
            self.value_errors[error_line(cpu_exc)] += 1
            raise CpuRejected(cpu_exc)
        raise CheckFailure(error_accepts, f"returned a result, but should raise "
                                          f"{error_line(cpu_exc)} as CPU does [{where}]")

    def _error_depends_on_values(self, call: Call) -> bool:
        from conformance.shapeonly import error_depends_on_values

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

    def _unsupported(self, exc: BaseException, call: Call | None) -> None:
        """A backend call raised ``exc``: a missing kernel ends the run as ``unsupported``; a
        device left unusable ends it as a ``crash`` (:meth:`device_alive`); else it returns."""
        missing = missing_op_from(exc)
        if missing is not None:
            stop = Abort("unsupported", "missing_kernel",
                         f"no kernel for '{missing[0]}' on {self.backend.name} "
                         f"({error_line(exc)})", missing_op=missing[0])
            stop.call = call
            raise stop from None
        self.device_alive(exc, call)

    def device_alive(self, exc: BaseException, call: Call | None) -> None:
        """After the backend raised ``exc``: does its device still work? A sticky error (CUDA's
        device-side assert) makes every later call in the process fail, each a false verdict;
        the run ends as a ``crash`` (``device_lost``) and the plugin replaces the process."""
        from conformance.backends import device_error

        lost = device_error(self.backend)
        if lost is None:
            return
        stop = Abort("crash", DEVICE_LOST,
                     f"{self.backend.device} was unusable after this call raised "
                     f"{error_line(exc)} (a tiny op then raised {lost}): a sticky device error, "
                     f"every later call in the process would fail")
        stop.call = call
        raise stop from None

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
                answers.append(_bits(call.run("cpu")))
            except Exception:  # noqa: BLE001
                answers.append(None)
            if len(answers) > 1 and answers[-1] != answers[0]:
                self.cpu_unstable_calls[call.describe()] += 1
                return True
        return False

    def note_info(self, category: str, line: str) -> None:
        """A check's informational finding (a category of ``opdb.outcomes.INFO_CATEGORIES``):
        the example still agrees; a ``pass`` carries the category and the most common line."""
        self.infos[(category, line)] += 1

    def to_host(self, t: torch.Tensor) -> torch.Tensor:
        if t.is_meta or not self.backend.host_values:
            raise NotComparable(f"{t.device.type} tensors hold no values")
        try:
            return t.cpu()
        except Exception as exc:  # noqa: BLE001
            self.device_alive(exc, None)
            raise CheckFailure("device", f"copying the result to CPU raised {error_line(exc)}") \
                from None

    def device_inputs(self, call: Call) -> bool:
        return any(isinstance(v, torch.Tensor) and n not in call.on_cpu for n, v in call.values)

    def tolerance(self, overload: str, dtype: torch.dtype) -> tuple[float | None, float | None]:
        return self.tolerance_fn(overload, dtype)

    def scale_ulps(self, overload: str, dtype: torch.dtype) -> int:
        """The tolerance data's ``scale_ulps`` (0 for a plain ``(rtol, atol)`` function)."""
        fn = getattr(self.tolerance_fn, "scale_ulps", None)
        return int(fn(overload, dtype)) if fn is not None else 0

    def scale_everywhere(self, overload: str, dtype: torch.dtype) -> bool:
        """The tolerance data's ``scale: all_inputs`` (False for a plain function)."""
        fn = getattr(self.tolerance_fn, "scale_everywhere", None)
        return bool(fn(overload, dtype)) if fn is not None else False

    def grad_error_factor(self, overload: str, dtype: torch.dtype) -> float:
        """The tolerance data's ``grad_error_factor`` (0 for a plain ``(rtol, atol)`` function)."""
        fn = getattr(self.tolerance_fn, "grad_error_factor", None)
        return float(fn(overload, dtype)) if fn is not None else 0.0

    def nonfinite_unspecified(self, overload: str, dtype: torch.dtype) -> bool:
        """The tolerance data's ``nonfinite: unspecified`` (False for a plain function)."""
        fn = getattr(self.tolerance_fn, "nonfinite_unspecified", None)
        return bool(fn(overload, dtype)) if fn is not None else False

    # -- tallies --------------------------------------------------------------------------
    def _begin(self, call: Call) -> None:
        self._current = (call.tensor_dtypes, [False, False])
        self._values_skipped = False
        self._source = call.source

    def _mark(self, *, cpu_ok: bool = False, backend_ok: bool = False) -> None:
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
            t = self.tallies.setdefault(name, _Tally())
            t.examples += 1
            t.cpu_ok += cpu_ok
            t.backend_ok += backend_ok
            t.agree += agreed

    def dtype_tallies(self) -> dict[str, DtypeTally]:
        return {n: DtypeTally(**vars(self.tallies[n])) for n in DTYPE_NAMES if n in self.tallies}


@dataclass(frozen=True)
class Item:
    """What one test item checks: an overload signature and a check."""

    sig: OpSignature
    check: Check

    @property
    def id(self) -> str:
        return f"{self.sig.name}::{self.check.name}"


#: How an item's failures are matched to expected-failure entries: a reason string for the whole
#: item (every failure expected), or ``(category, message) -> reason | None`` (one entry matches
#: one failure fingerprint), or ``None``.
ExpectedFn = Callable[[str, str], "str | None"]

#: Distinct failures searched and shrunk separately per item; further ones are recorded with the
#: last call that showed them, unshrunk.
MAX_DISTINCT = 8
#: A check with an identity (Check.identity) redraws a repeated call at most this many times
#: per example asked for, then checks repeats (an op with few distinct calls).
REPEAT_FACTOR = 2
#: Refills that move to another dtype tried on a drawn call CPU refused, before it is thrown
#: away (:func:`_run_once`): an op CPU computes in half of the twelve dtypes takes one of three
#: others with probability 0.94.
RESCUE_TRIES = 3

#: Checked examples Hypothesis' shrinker may spend on a failure an expected-failure entry already
#: matches (its fingerprint, or the whole item): its first passes (trivial spans, deleting
#: choices) make most of a repro's reduction; the rest of a full shrink (hundreds of examples,
#: and 200 more without progress before it gives up) is spent on known bugs. Counted in checked
#: examples, not shrinker calls: a candidate that passes runs every value refill (8 in the
#: ``forward`` check), so the 60 calls allowed before cost up to 480 examples per fingerprint,
#: and the failing items' shrinks took half of a 1/16 shard's forward-check time (23 of 47 s;
#: 3 s with this budget, the same 11 fails). A new failure is shrunk in full. A count, not a
#: time: same seed, same repro.
EXPECTED_SHRINK_EXAMPLES = 60


#: CPU refusals, all of one argument-binding error and no example accepted, after which an
#: item stops searching (``no_valid_inputs``). The dispatcher's schema check ("Expected a value
#: of type 'List[Tensor]' for argument 'out3' but instead found type 'Tensor'") is decided by
#: the Python types the strategy gives the arguments, not by their values: after this many
#: refusals of one such line every further draw is refused alike (the full run's dtypes items
#: drew 480 such calls each, 97 of them: ~90 s of item time).
BINDING_REJECTS = 100
_BINDING = re.compile(r"Expected a value of type '.+' for argument '\w+' but instead found type")


def binding_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is the dispatcher's schema binding refusing the arguments' Python types,
    before any kernel of any backend runs."""
    return _BINDING.search(str(exc)) is not None


def _binding_only(errors: Counter[str]) -> bool:
    """Every CPU refusal so far is one argument-binding error, at least BINDING_REJECTS times."""
    if len(errors) != 1:
        return False
    ((line, n),) = errors.items()
    return n >= BINDING_REJECTS and _BINDING.search(line) is not None


class _Distinct(CheckFailure):
    """Base of the per-fingerprint failure classes: Hypothesis tells bugs apart by exception type
    and location, so each fingerprint raises its own subclass from one line."""


def run_check(item: Item, backend: Backend, *, settings: EngineSettings, hints: OpHints,
              tolerance_fn: ToleranceFn, repro_fn: Callable[[Call], str],
              inflight: Inflight | None = None,
              expected: str | ExpectedFn | None = None) -> Verdict:
    """Run ``item`` against ``backend`` and return the verdict it earned.

    The search does not stop at the first failure: every *distinct* failure (by
    :func:`failure_key`) is kept, shrunk on its own (Hypothesis' ``report_multiple_bugs``, one
    exception class per fingerprint), and listed in ``Verdict.failures``. The verdict's own
    category, message and repro are the primary failure's: the first one no expected-failure
    entry matches, else the first one.

    Inputs come from the schema strategies (with recorded calls, :mod:`conformance.corpus`,
    mixed in when ``settings.corpus_mix``); when that finds no input CPU accepts and the overload
    has recorded calls, the search runs again on those alone (``Verdict.sources`` counts
    examples by source). An overload the schema strategies cannot draw for at all is searched on
    its recorded calls.
    """
    from dataclasses import replace

    kwargs = dict(settings=settings, hints=hints, tolerance_fn=tolerance_fn, repro_fn=repro_fn,
                  inflight=inflight, expected=expected)
    if settings.recorded_only:
        return _run_once(item, backend, corpus_only=True, **kwargs)  # type: ignore[arg-type]
    first = _run_once(item, backend, **kwargs)  # type: ignore[arg-type]
    if first.verdict != "skip" or first.category != "no_valid_inputs" \
            or not has_corpus(item, settings, hints):
        return first
    again = _run_once(item, backend, corpus_only=True, **kwargs)  # type: ignore[arg-type]
    took = round(first.duration_s + again.duration_s, 4)
    if again.verdict == "skip" and again.category == "no_valid_inputs":
        return replace(first, duration_s=took, message=f"{first.message}; on recorded calls "
                       f"alone: {again.message}")
    return replace(again, duration_s=took)


def not_applicable(item: Item, backend: Backend, *, settings: EngineSettings,
                   hints: OpHints | None = None, expected: str | None = None) -> Verdict | None:
    """The ``skip``/``not_applicable`` verdict of an item whose check does not apply to its
    overload (``Check.applies``; with ``hints``, also ``Check.applies_hints``: per-op data), or
    None when it applies. Decided without running anything, so the plugin records these
    verdicts at collection; ``expected`` is the reason of a whole-item expected-failure entry
    naming the item."""
    reason = item.check.applies(item.sig)
    if not reason and hints is not None and item.check.applies_hints is not None:
        reason = item.check.applies_hints(hints)
    if not reason:
        return None
    return Verdict(
        overload=item.sig.name, check=item.check.name, backend=backend.name, verdict="skip",
        category="not_applicable", message=f"{item.check.name} does not apply: {reason}",
        examples=0, duration_s=0.0, seed=settings.seed, torch_version=torch.__version__,
        expected=expected)


def has_corpus(item: Item, settings: EngineSettings, hints: OpHints) -> bool:
    """Whether ``item`` has recorded calls to search (:mod:`conformance.corpus`)."""
    from conformance import corpus

    recorded = corpus.for_settings(settings.corpus)
    return recorded is not None and bool(
        corpus.usable_specs(item.sig, hints, item.check.mode, recorded))


_LOCAL_CONSTANTS_OFF = False  # _no_local_constants ran in this process


def _no_local_constants() -> None:
    """Make Hypothesis' draws a function of the item's seed alone.

    Hypothesis (6.13x and later) draws, 1 time in 20, constants collected from the source of
    every non-library module loaded so far: which modules those are depends on what the
    process imported before (the vendor's backend module, other tests in an xdist worker), so
    the same seed gave different examples, hence different verdicts, from one process to the
    next (``exp::dtypes`` checked 3 examples in one worker and 4 alone). Its library-wide
    constants stay. There is no setting for this, so the provider's hook is replaced; should a
    Hypothesis release move it, draws are as before (order-dependent, never wrong).
    """
    global _LOCAL_CONSTANTS_OFF
    if _LOCAL_CONSTANTS_OFF:
        return
    _LOCAL_CONSTANTS_OFF = True
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover
        return
    if hasattr(providers, "Constants") and hasattr(providers, "_get_local_constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty
        # pools a Hypothesis test before the first item drew from (a conftest's, a warm-up's)
        # hold the local constants of that moment: dropped, recomputed from the hook above
        cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
        if cache is not None and hasattr(cache, "clear"):
            cache.clear()


#: The shrink budget of the item searching now (set around its Hypothesis run):
#: ``(interesting example) -> a test "is the budget spent?" (asked after every shrinker call),
#: or None for no limit``.
_SHRINK_BUDGET: Callable[[Any], Callable[[], bool] | None] | None = None
_SHRINK_BUDGET_ON = False  # _budgeted_shrinks ran in this process


def _budgeted_shrinks() -> None:
    """Let :data:`_SHRINK_BUDGET` bound how many examples Hypothesis' shrinker runs per failure.

    Hypothesis has no setting for it (only a process-wide 5-minute limit for all failures
    together), so the runner's ``new_shrinker`` is wrapped: a shrinker whose target has a budget
    stops (Hypothesis' own ``StopShrinking``, what ends a shrink that stalls) once the budget
    says it is spent, keeping the smallest failing example found so far. Should a Hypothesis
    release move these, every failure is shrunk in full (slower, never wrong).
    """
    global _SHRINK_BUDGET_ON
    if _SHRINK_BUDGET_ON:
        return
    _SHRINK_BUDGET_ON = True
    try:
        from hypothesis.internal.conjecture import engine as hengine
        from hypothesis.internal.conjecture import shrinker as hshrinker
    except ImportError:  # pragma: no cover
        return
    runner = getattr(hengine, "ConjectureRunner", None)
    stop = getattr(hshrinker, "StopShrinking", None)
    original = getattr(runner, "new_shrinker", None)
    if runner is None or stop is None or original is None:  # pragma: no cover
        return

    def new_shrinker(self: Any, initial: Any, *args: Any, **kwargs: Any) -> Any:
        shrinker = original(self, initial, *args, **kwargs)
        spent = _SHRINK_BUDGET(initial) if _SHRINK_BUDGET is not None else None
        check = getattr(shrinker, "check_calls", None)
        if spent is None or check is None:
            return shrinker

        def check_calls() -> None:
            check()
            if spent():
                raise stop

        shrinker.check_calls = check_calls
        return shrinker

    runner.new_shrinker = new_shrinker
    _search_past_failures(runner)


def _search_past_failures(runner: Any) -> None:
    """Keep drawing all ``max_examples`` calls after a failure (issue 9's "every distinct
    failure"). Hypothesis ends its search once the calls since the latest failure outnumber
    those before it (``should_generate_more``: at twice the call that found the last bug):
    an item whose known failure shows on its third call was searched for ten calls, not its
    thirty, so a new bug in an overload that already fails for a documented reason went unseen
    (a float64 0-dim operand promoting add.Tensor's float32, behind float16's complex32 gap).
    While one of our items runs (:data:`_SHRINK_BUDGET` set) the runner decides as if no
    failure had been found: max_examples, the invalid-draw limit and an exhausted search tree
    still end it. Should a Hypothesis release rename these, its own rule stands."""
    original = getattr(runner, "should_generate_more", None)
    if original is None:  # pragma: no cover
        return

    def should_generate_more(self: Any) -> bool:
        found = getattr(self, "interesting_test_cases", None)
        counts = [getattr(self, n, None) for n in ("call_count", "invalid_test_cases",
                                                    "overrun_test_cases")]
        ints = [c for c in counts if isinstance(c, int)]
        if _SHRINK_BUDGET is None or not isinstance(found, dict) or not found or len(ints) < 3:
            return bool(original(self))
        # failing calls count towards max_examples (Hypothesis counts only passing ones as
        # valid: an item failing every call would search until its timeout)
        calls, invalid, overrun = ints
        if calls - invalid - overrun >= self.settings.max_examples:
            return False
        self.interesting_test_cases = {}
        try:
            return bool(original(self))
        finally:
            self.interesting_test_cases = found

    runner.should_generate_more = should_generate_more


def _run_once(item: Item, backend: Backend, *, settings: EngineSettings, hints: OpHints,
              tolerance_fn: ToleranceFn, repro_fn: Callable[[Call], str],
              inflight: Inflight | None = None,
              expected: str | ExpectedFn | None = None, corpus_only: bool = False) -> Verdict:
    """One search of :func:`run_check`: schema strategies with recorded calls mixed in, or
    (``corpus_only``) recorded calls alone."""
    from hypothesis import HealthCheck, Phase, given, reject, seed
    from hypothesis import settings as hsettings
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Flaky, Unsatisfiable

    _no_local_constants()
    _budgeted_shrinks()

    inflight = inflight or Inflight(None)
    t0 = time.perf_counter()
    sig, check = item.sig, item.check

    def expectation(category: str, message: str) -> str | None:
        if expected is None or isinstance(expected, str):
            return expected
        return expected(category, message)

    def verdict(v: str, category: str | None, message: str, *, examples: int = 0,
                missing_op: str | None = None, repro: str | None = None,
                ctx: Context | None = None, failures: tuple[Failure, ...] = (),
                reason: str | None = None) -> Verdict:
        if v == "fail" and not failures and category is not None:
            reason = expectation(category, message)
        elif v != "fail":
            reason = expected if isinstance(expected, str) else None
        return Verdict(
            overload=sig.name, check=check.name, backend=backend.name, verdict=v,
            category=category, message=message, missing_op=missing_op, examples=examples,
            duration_s=round(time.perf_counter() - t0, 4), seed=settings.seed,
            torch_version=torch.__version__, repro=repro, expected=reason,
            dtypes=ctx.dtype_tallies() if ctx else {}, failures=failures,
            dtype_support=dict(ctx.dtype_support) if ctx else {},
            sources=dict(ctx.sources) if ctx else {},
        )

    skipped = not_applicable(item, backend, settings=settings, hints=hints,
                             expected=expected if isinstance(expected, str) else None)
    if skipped is not None:
        return skipped
    from conformance import corpus

    schema, problem = None, None
    if not corpus_only:
        try:
            schema = calls(sig, hints, mode=check.mode)
        except NoStrategy as exc:
            problem = exc
    recorded = corpus.for_settings(settings.corpus)
    mix = corpus_only or schema is None or settings.corpus_mix
    strategy = schema if recorded is None or not mix else corpus.with_corpus(
        schema, sig, hints, mode=check.mode, corpus=recorded)
    if strategy is None:
        return verdict("skip", "no_strategy", f"no inputs can be drawn: {problem}")

    ctx = Context(backend=backend, sig=sig, hints=hints, tolerance_fn=tolerance_fn,
                  inflight=inflight,
                  repro_fn=repro_fn)
    max_examples = max(1, round(settings.max_examples * check.examples_factor))
    budget = settings.reject_budget or max(40, 8 * max_examples)
    if check.calls_per_draw > 1 and not settings.reject_budget:  # a sweep searches as far as
        # the forward check does: its budget of refused calls, in draws of that many calls
        budget = -(-max(40, 8 * settings.max_examples) // check.calls_per_draw)
    state: dict[str, Any] = {"last": None, "rejected": 0, "repeats": 0}
    # fingerprint -> (last call that showed it, its CheckFailure); insertion order = discovery
    found: dict[str, tuple[Call, CheckFailure]] = {}
    origin: dict[str, str] = {}
    classes: dict[str, type[_Distinct]] = {}
    final: list[str] = []

    def distinct(key: str) -> type[_Distinct]:
        if key not in classes:
            if len(classes) >= MAX_DISTINCT:
                return classes.setdefault("", type("_DistinctOther", (_Distinct,), {}))
            classes[key] = type(f"_Distinct{len(classes)}", (_Distinct,), {"key": key})
        return classes[key]

    seen: set[str] = set()  # identities of the calls checked (Check.identity)

    def body(drawn: Call) -> None:
        if check.identity is not None and state["last"] is None:
            ident = check.identity(drawn)
            if ident in seen and state["repeats"] < max_examples * REPEAT_FACTOR:
                state["repeats"] += 1
                reject()  # a repeat of a checked call: draw another (bounded: few-call ops)
            seen.add(ident)
        fills: tuple[Any, ...] = getattr(drawn, "fills", ())  # a dtypes sweep has none
        refills = settings.refills if check.refills and fills else 1
        failure: tuple[Call, CheckFailure] | None = None
        # CPU refused the drawn call (i = 0): for its dtype, most often (mean of integers,
        # clamp of complex). Up to RESCUE_TRIES of the refills that move to another dtype are
        # tried, and once CPU takes one (`rescue`), the refills that would keep the drawn dtype
        # move to that one. Such draws (half of all, on bench_run's ops) were thrown away, each
        # costing a draw; a draw no refill rescues is rejected as before.
        zero_refused = refused = False
        rescue: str | None = None
        tries = 0
        for i in range(refills):
            move: str | None = None
            scheduled = drawn.refill_dtype(i) if i else None
            if refused:  # odd refills try their own dtype, even ones the rescuing one
                move = scheduled or rescue
                if move is None:
                    continue  # it would keep the refused dtype
                if rescue is None:
                    if tries >= RESCUE_TRIES:
                        break
                    tries += 1
            # a scheduled move keeps its forced specials by category (values.MOVED_HEADLINE)
            call = drawn.refill(i, dtype=None if move == scheduled else move) if i else drawn
            if i and check.prepare is not None:
                call = check.prepare(call, i)
            try:
                check.verify(ctx, call)
            except CpuRejected as refusal:
                ctx.end_example(counted=False, agreed=False)
                if i == 0:
                    zero_refused = True
                    refused = refills > 1 and _BINDING.search(str(refusal)) is None
                    if refused:
                        continue
                    break
                continue  # CPU refused these values (or this dtype): the next refill
            except NotComparable:
                ctx.end_example(counted=True, agreed=False)
                ctx.checked += 1
                ctx.not_comparable += 1
                return
            except CheckFailure as exc:
                ctx.end_example(counted=True, agreed=False)
                ctx.checked += 1
                call = exc.call or call  # the call that showed it (one of a dtypes sweep)
                state["last"] = failure = (call, exc)
                rescue = rescue or move
                break
            except Exception as exc:
                ctx.end_example(counted=True, agreed=False)
                state["last"] = (call, exc)
                raise
            else:
                ctx.end_example(counted=True, agreed=True)
                ctx.checked += 1
            if refused and rescue is None:
                rescue = move
        if failure is not None:
            failed_on(*failure)
        if zero_refused and rescue is None:
            state["rejected"] += 1
            if state["rejected"] >= budget and state["last"] is None:
                raise Abort("budget", "", "") from None  # not while shrinking a failure
            if state["last"] is None and not ctx.checked and _binding_only(ctx.cpu_errors):
                raise Abort("budget", "", "") from None  # every draw binds the same way
            reject()

    def failed_on(call: Call, failure: CheckFailure) -> None:
        key = failure_key(failure.category, failure.message, _lead_dtype(call))
        found.pop(key, None)
        origin.setdefault(key, call.source)  # the source that found it (shrinking may move it)
        found[key] = (call, failure)  # the latest call showing it: after shrinking, the minimal
        if _is_final():
            final.append(key)  # Hypothesis replays the shrunk failures simplest first
        raise distinct(key)(failure.category, failure.message)  # outside `except`: no context

    database = None
    if settings.database:
        database = DirectoryBasedExampleDatabase(settings.database)
    hs = hsettings(max_examples=max_examples, deadline=None, database=database,
                   suppress_health_check=list(HealthCheck), derandomize=False,
                   phases=(Phase.explicit, Phase.reuse, Phase.generate)
                   + ((Phase.shrink,) if check.shrink else ()),
                   report_multiple_bugs=True, print_blob=False, verbosity=hsettings().verbosity)
    # seed first, settings last: @seed alone would switch the example database off
    test = hs(seed(settings.item_seed(sig.name, check.name))(given(strategy)(body)))
    db_key = f"{item.id}::corpus" if corpus_only else item.id
    test._hypothesis_internal_database_key = db_key.encode()  # type: ignore[attr-defined]

    def most_common_cpu_error() -> str:
        if not ctx.cpu_errors:
            return "no example was drawn"
        (line, n), = ctx.cpu_errors.most_common(1)
        total = sum(ctx.cpu_errors.values())
        return f"CPU rejected all {total} examples drawn; most often ({n}x): {line}"

    def failed(flaky: str | None = None) -> Verdict | None:
        """The failures the run found, each with its shrunk call, primary first."""
        if not found:
            return None
        records = []
        for key, (call, failure) in found.items():
            records.append(Failure(
                category=failure.category, message=failure.message, key=key,
                repro=repro_fn(call), expected=expectation(failure.category, failure.message),
                dtypes=tuple(sorted(call.tensor_dtypes)), source=origin.get(key, call.source)))
        # new failures first; then in Hypothesis' report order (simplest shrunk example first)
        rank = {k: i for i, k in enumerate(dict.fromkeys(final))}
        records.sort(key=lambda f: (f.expected is not None, rank.get(f.key, len(rank))))
        first = records[0]
        if flaky is not None:
            return verdict("fail", "flaky", flaky, examples=ctx.checked, repro=first.repro,
                           ctx=ctx, failures=tuple(records),
                           reason=expectation("flaky", flaky))
        return verdict("fail", first.category, first.message, examples=ctx.checked,
                       repro=first.repro, ctx=ctx, failures=tuple(records),
                       reason=first.expected)

    def shrink_budget(example: Any) -> Callable[[], bool] | None:
        """For a failure every entry it stands for is expected for (the fingerprints past
        MAX_DISTINCT share one class): spent once the shrink has checked
        :data:`EXPECTED_SHRINK_EXAMPLES` examples; else None (shrunk in full)."""
        origin = getattr(example, "interesting_origin", None)
        cls = getattr(origin, "exc_type", None)
        if not (isinstance(cls, type) and issubclass(cls, _Distinct)):
            return None
        key = getattr(cls, "key", None)
        keys = [key] if key is not None else [k for k in found if k not in classes]
        failures = [found[k][1] for k in keys if k in found]
        if failures and all(expectation(f.category, f.message) for f in failures):
            start = ctx.checked
            return lambda: ctx.checked - start >= EXPECTED_SHRINK_EXAMPLES
        return None

    global _SHRINK_BUDGET
    try:
        _SHRINK_BUDGET = shrink_budget
        try:
            test()
        finally:
            _SHRINK_BUDGET = None
    except Abort as stop:
        if found and stop.category != DEVICE_LOST:  # a missing kernel or the budget hit while
            # shrinking (a lost device is said even then: the process must end)
            return failed()  # type: ignore[return-value]
        if stop.verdict == "budget":
            if ctx.checked == 0:
                return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
            # else: fewer valid examples than asked for, all of them agreed: judged below
        else:
            call = stop.call if stop.verdict in ("unsupported", "crash") else None
            assert call is None or isinstance(call, Call)
            return verdict(stop.verdict, stop.category, stop.message, examples=ctx.checked,
                           missing_op=stop.missing_op, ctx=ctx,
                           repro=repro_fn(call) if call is not None else None)
    except Unsatisfiable:
        return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
    except Flaky as exc:
        last = state["last"]
        calls_seen = [c for c, _ in found.values()] or ([last[0]] if last else [])
        again = _fails_again(ctx, check, calls_seen) if "nondeterministic_seeded" in sig.tags \
            else None
        if again is not None:  # seeded-random: replay draws other values; a rerun failed again
            call, failure = again
            return verdict("fail", failure.category, failure.message, examples=ctx.checked,
                           repro=repro_fn(call), ctx=ctx,
                           reason=expectation(failure.category, failure.message))
        if calls_seen and all(ctx.cpu_varies(c) for c in calls_seen):
            # not the backend: CPU itself gives another answer each time (uninitialized memory)
            return verdict("pass", CPU_UNSTABLE, f"agreed with CPU except where CPU disagreed "
                           f"with itself ({len(calls_seen)} call(s) whose failure did not "
                           f"reproduce: CPU's values vary from run to run there; e.g. "
                           f"{calls_seen[0].describe()})", examples=ctx.checked, ctx=ctx)
        message = f"the failure did not reproduce on replay: {error_line(exc)}"
        if found:
            return failed(flaky=message)  # type: ignore[return-value]
        return verdict("fail", "flaky", message, examples=ctx.checked,
                       repro=repro_fn(last[0]) if last else None, ctx=ctx)
    except (CheckFailure, BaseExceptionGroup) as exc:
        if found and _only_check_failures(exc):
            return failed()  # type: ignore[return-value]
        if isinstance(exc, CheckFailure):
            return verdict("fail", exc.category, exc.message, examples=ctx.checked, ctx=ctx)
        return verdict("skip", "harness_error", f"the harness failed: {error_line(exc)}",
                       examples=ctx.checked, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - a harness bug is reported, not raised
        return verdict("skip", "harness_error", f"the harness failed: {error_line(exc)}",
                       examples=ctx.checked, ctx=ctx)
    if found:
        return failed()  # type: ignore[return-value]
    if ctx.checked == 0:
        return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
    if ctx.not_comparable:
        return verdict("skip", "no_host_values",
                       f"agreed with CPU on {ctx.checked} examples as far as compared, but values "
                       f"could not be compared on {ctx.not_comparable}: {backend.device} tensors "
                       f"hold no values", ctx=ctx, examples=ctx.checked)
    if ctx.metadata_only:
        note = ""
        if ctx.value_errors:
            (line, n), = ctx.value_errors.most_common(1)
            note = (f"; {sum(ctx.value_errors.values())} examples CPU refused for their values "
                    f"alone were not counted (e.g. {n}x {line})")
        return verdict("pass", METADATA_ONLY, f"agreed with CPU on {ctx.checked} examples on "
                       f"metadata only (structure, device, dtype, shape, errors); values not "
                       f"compared on {ctx.metadata_only}: {backend.device} tensors hold no "
                       f"values{note}", examples=ctx.checked, ctx=ctx)
    if ctx.cpu_unstable_calls:
        (line, n), = ctx.cpu_unstable_calls.most_common(1)
        return verdict("pass", CPU_UNSTABLE, f"agreed with CPU on {ctx.checked} examples; on "
                       f"{sum(ctx.cpu_unstable_calls.values())} of them CPU disagreed with "
                       f"itself (values unspecified there: structure, dtype and shape compared; "
                       f"e.g. {line})", examples=ctx.checked, ctx=ctx)
    if ctx.cpu_dtype_gaps:
        (line, n), = ctx.cpu_dtype_gaps.most_common(1)
        return verdict("pass", CPU_DTYPE_GAP, f"agreed with CPU on {ctx.checked} examples; "
                       f"also computed {sum(ctx.cpu_dtype_gaps.values())} that CPU refuses only "
                       f"for lack of a dtype kernel (informational; e.g. {n}x {line})",
                       examples=ctx.checked, ctx=ctx)
    if ctx.infos:
        ((category, line), n), = ctx.infos.most_common(1)
        return verdict("pass", category, f"agreed with CPU on {ctx.checked} examples; "
                       f"{sum(ctx.infos.values())} informational finding(s) ({category}), e.g. "
                       f"{n}x {line}", examples=ctx.checked, ctx=ctx)
    return verdict("pass", None, f"agreed with CPU on {ctx.checked} examples",
                   examples=ctx.checked, ctx=ctx)


def _bits(out: Any) -> list[Any]:
    """A comparable snapshot of a result: per leaf, dtype, shape and raw bytes (so NaN == NaN
    and -0.0 != 0.0)."""
    from torch.utils._pytree import tree_flatten

    from conformance import readback

    snap: list[Any] = []
    for leaf in tree_flatten(out)[0]:
        if not isinstance(leaf, torch.Tensor):
            snap.append(repr(leaf))
            continue
        kind = readback.form(leaf)
        for _, part in readback.parts(leaf.detach()):  # nested components, batched values
            t = readback.plain(part)  # conj/neg bits resolved (numpy() refuses them)
            if t.layout != torch.strided or t.is_meta:
                snap.append((str(t.dtype), tuple(t.shape), kind))
                continue
            t = t.contiguous().reshape(-1)
            raw = t.view(torch.uint8) if t.numel() and t.dtype != torch.bool \
                else t.to(torch.uint8)
            snap.append((str(t.dtype), tuple(part.shape), kind, readback.bits(part),
                         bytes(raw.numpy().tobytes())))
    return snap


def _lead_dtype(call: Call) -> tuple[str, ...]:
    """The dtype of the call's first tensor argument (``self`` as a rule): the dtype a failure
    is filed under (one bug seen with several partner dtypes is still one failure)."""
    for _, value in call.values:
        for t in value if isinstance(value, list | tuple) else (value,):
            if isinstance(t, torch.Tensor):
                return (str(t.dtype).removeprefix("torch."),)
    return ()


def _is_final() -> bool:
    """Hypothesis is replaying a shrunk failure for the report (its last run of it)."""
    from hypothesis.control import current_build_context

    try:
        return bool(current_build_context().is_final)
    except Exception:  # noqa: BLE001 - outside a Hypothesis test
        return False


#: Seeded-random overloads: how often a failing call whose failure Hypothesis could not replay
#: is checked again (its values are new each time) before the failure is called flaky.
SEEDED_RERUNS = 3


def _fails_again(ctx: Context, check: Check, calls: list[Call]
                 ) -> tuple[Call, CheckFailure] | None:
    """A seeded-random overload's failure that Hypothesis could not replay (CPU's and the
    backend's samples differ on every run, so CPU varying says nothing about the backend): the
    first of ``calls`` that fails its check again within :data:`SEEDED_RERUNS` runs."""
    for call in calls:
        for _ in range(SEEDED_RERUNS):
            try:
                check.verify(ctx, call)
            except CheckFailure as failure:
                return call, failure
            except Exception:  # noqa: BLE001 - refused or not comparable now: not this call
                break
    return None


def _only_check_failures(exc: BaseException) -> bool:
    """``exc`` is a CheckFailure or a group holding only CheckFailures (what distinct failures
    end with); anything else (a harness exception next to them) is reported as such."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only_check_failures(e) for e in exc.exceptions)
    return isinstance(exc, CheckFailure)
