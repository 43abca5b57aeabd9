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
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
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
    NotComparable,
    Verdict,
    error_line,
    missing_op_from,
)
from opdb.dtypes import DTYPE_NAMES
from opdb.opdata import OpHints
from opdb.outcomes import CPU_DTYPE_GAP, ERROR_ACCEPTS, ERROR_RAISES, ERROR_TYPE, is_dtype_gap

#: Tolerances: (overload, dtype) -> (rtol, atol) or None for torch.testing's dtype defaults.
ToleranceFn = Callable[[str, torch.dtype], tuple[float | None, float | None]]


@dataclass(frozen=True)
class EngineSettings:
    """How deep and how reproducibly to search."""

    max_examples: int = 10
    seed: int = 0
    database: str | None = ".conformance/hypothesis"  # None: no example database
    reject_budget: int = 0  # CPU rejections before giving up; 0 = 8 x max_examples (min 40)

    def item_seed(self, overload: str, check: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{overload}:{check}".encode()).digest()
        return int.from_bytes(digest[:8], "little")


class Inflight:
    """The about-to-run marker: one small file per process, rewritten before each backend call.

    Only ``write`` + ``flush`` (no fsync): the kernel keeps the bytes if the process dies.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self.item: dict[str, Any] = {}
        self._fd: int | None = None
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
        # the repro is what a crash verdict carries; an oracle crash is a skip and needs none
        self.item["repro"] = repro(call) if side != "cpu" else None
        self._write()

    def mark(self, state: str) -> None:
        self.item["state"] = state
        self._write()

    def finish(self) -> None:
        self.item = {}
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # nothing running

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write(self) -> None:
        """Rewrite the marker in place through one open descriptor (no open/rename per call:
        this runs before every example)."""
        if not self.path:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        data = json.dumps(self.item).encode()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))

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
    tallies: dict[str, _Tally] = field(default_factory=dict)
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

    def run_backend(self, call: Call) -> Any:
        """The backend's answer. Its missing kernel ends the run as ``unsupported``; any other
        error where CPU succeeded is an ``error_raises`` failure (a missing capability)."""
        self.inflight.call(call, self.repro_fn, side=self.backend.device)
        try:
            out = call.run(self.backend.device)
        except Exception as exc:  # noqa: BLE001
            self._unsupported(exc, call)
            raise CheckFailure(ERROR_RAISES, f"raised {error_line(exc)}, but CPU returned a "
                                                 f"result [{call.describe()}]") from None
        self._mark(backend_ok=True)
        return out

    def expect_same_error(self, call: Call, cpu_exc: BaseException) -> None:
        """CPU raised: the backend must raise the same exception type (else ``error_type``);
        returning a result is ``error_accepts`` (missing validation), unless CPU's refusal is only
        its own missing dtype kernel: then the example is not counted and the verdict notes it
        (``cpu_dtype_gap``, informational)."""
        __tracebackhide__ = True
        self.inflight.call(call, self.repro_fn, side=self.backend.device)
        try:
            call.run(self.backend.device)
        except Exception as exc:  # noqa: BLE001
            self._unsupported(exc, call)
            if type(exc) is not type(cpu_exc):
                raise CheckFailure(
                    ERROR_TYPE, f"raised {error_line(exc)}, but should raise "
                    f"{type(cpu_exc).__name__} as CPU does ({error_line(cpu_exc)}) "
                    f"[{call.describe()}]") from None
            return
        self._mark(backend_ok=True)
        if is_dtype_gap(str(cpu_exc)):
            self.cpu_dtype_gaps[error_line(cpu_exc)] += 1
            raise CpuRejected(cpu_exc)
        raise CheckFailure(ERROR_ACCEPTS, f"returned a result, but should raise "
                                             f"{error_line(cpu_exc)} as CPU does "
                                             f"[{call.describe()}]")

    def _unsupported(self, exc: BaseException, call: Call) -> None:
        missing = missing_op_from(exc)
        if missing is not None:
            stop = Abort("unsupported", "missing_kernel",
                         f"no kernel for '{missing[0]}' on {self.backend.name} "
                         f"({error_line(exc)})", missing_op=missing[0])
            stop.call = call
            raise stop from None

    def to_host(self, t: torch.Tensor) -> torch.Tensor:
        if t.is_meta:
            raise NotComparable("tensors on device 'meta' hold no values")
        try:
            return t.cpu()
        except Exception as exc:  # noqa: BLE001
            raise CheckFailure("device", f"copying the result to CPU raised {error_line(exc)}") \
                from None

    def device_inputs(self, call: Call) -> bool:
        return any(isinstance(v, torch.Tensor) and n not in call.on_cpu for n, v in call.values)

    def tolerance(self, overload: str, dtype: torch.dtype) -> tuple[float | None, float | None]:
        return self.tolerance_fn(overload, dtype)

    # -- tallies --------------------------------------------------------------------------
    def _begin(self, call: Call) -> None:
        self._current = (call.tensor_dtypes, [False, False])

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


def run_check(item: Item, backend: Backend, *, settings: EngineSettings, hints: OpHints,
              tolerance_fn: ToleranceFn, repro_fn: Callable[[Call], str],
              inflight: Inflight | None = None, expected: str | None = None) -> Verdict:
    """Run ``item`` against ``backend`` and return the verdict it earned."""
    from hypothesis import HealthCheck, Phase, given, reject, seed
    from hypothesis import settings as hsettings
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Flaky, Unsatisfiable

    inflight = inflight or Inflight(None)
    t0 = time.perf_counter()
    sig, check = item.sig, item.check

    def verdict(v: str, category: str | None, message: str, *, examples: int = 0,
                missing_op: str | None = None, repro: str | None = None,
                ctx: Context | None = None) -> Verdict:
        return Verdict(
            overload=sig.name, check=check.name, backend=backend.name, verdict=v,
            category=category, message=message, missing_op=missing_op, examples=examples,
            duration_s=round(time.perf_counter() - t0, 4), seed=settings.seed,
            torch_version=torch.__version__, repro=repro, expected=expected,
            dtypes=ctx.dtype_tallies() if ctx else {},
        )

    reason = check.applies(sig)
    if reason:
        return verdict("skip", "not_applicable", f"{check.name} does not apply: {reason}")
    try:
        strategy = calls(sig, hints, mode=check.mode)
    except NoStrategy as exc:
        return verdict("skip", "no_strategy", f"no inputs can be drawn: {exc}")

    ctx = Context(backend=backend, sig=sig, hints=hints, tolerance_fn=tolerance_fn,
                  inflight=inflight,
                  repro_fn=repro_fn)
    max_examples = settings.max_examples * check.examples_factor
    budget = settings.reject_budget or max(40, 8 * max_examples)
    state: dict[str, Any] = {"last": None, "rejected": 0}

    def body(call: Call) -> None:
        try:
            check.verify(ctx, call)
        except CpuRejected:
            ctx.end_example(counted=False, agreed=False)
            state["rejected"] += 1
            if state["rejected"] >= budget and state["last"] is None:
                raise Abort("budget", "", "") from None  # not while shrinking a failure
            reject()
        except NotComparable:
            ctx.end_example(counted=True, agreed=False)
            ctx.checked += 1
            ctx.not_comparable += 1
            return
        except CheckFailure as exc:
            ctx.end_example(counted=True, agreed=False)
            ctx.checked += 1
            state["last"] = (call, exc)
            raise
        except Exception as exc:
            ctx.end_example(counted=True, agreed=False)
            state["last"] = (call, exc)
            raise
        ctx.end_example(counted=True, agreed=True)
        ctx.checked += 1

    database = None
    if settings.database:
        database = DirectoryBasedExampleDatabase(settings.database)
    hs = hsettings(max_examples=max_examples, deadline=None, database=database,
                   suppress_health_check=list(HealthCheck), derandomize=False,
                   phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
                   report_multiple_bugs=False, print_blob=False, verbosity=hsettings().verbosity)
    # seed first, settings last: @seed alone would switch the example database off
    test = hs(seed(settings.item_seed(sig.name, check.name))(given(strategy)(body)))
    test._hypothesis_internal_database_key = item.id.encode()  # type: ignore[attr-defined]

    def most_common_cpu_error() -> str:
        if not ctx.cpu_errors:
            return "no example was drawn"
        (line, n), = ctx.cpu_errors.most_common(1)
        total = sum(ctx.cpu_errors.values())
        return f"CPU rejected all {total} examples drawn; most often ({n}x): {line}"

    def failed() -> Verdict | None:
        """The shrunk failure, if the run found one (the last failing call Hypothesis ran)."""
        last = state["last"]
        if last is None or not isinstance(last[1], CheckFailure):
            return None
        call, failure = last
        return verdict("fail", failure.category, failure.message, examples=ctx.checked,
                       repro=repro_fn(call), ctx=ctx)

    try:
        test()
    except Abort as stop:
        if failed() is not None:  # a missing kernel or the budget hit while shrinking
            return failed()  # type: ignore[return-value]
        if stop.verdict == "budget":
            if ctx.checked == 0:
                return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
            # else: fewer valid examples than asked for, all of them agreed: judged below
        else:
            call = stop.call if stop.verdict == "unsupported" else None
            assert call is None or isinstance(call, Call)
            return verdict(stop.verdict, stop.category, stop.message, examples=ctx.checked,
                           missing_op=stop.missing_op, ctx=ctx,
                           repro=repro_fn(call) if call is not None else None)
    except Unsatisfiable:
        return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
    except CheckFailure as exc:
        return failed() or verdict("fail", exc.category, exc.message, examples=ctx.checked,
                                   ctx=ctx)
    except Flaky as exc:
        last = state["last"]
        return verdict("fail", "flaky", f"the failure did not reproduce on replay: "
                       f"{error_line(exc)}", examples=ctx.checked,
                       repro=repro_fn(last[0]) if last else None, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - a harness bug is reported, not raised
        return verdict("skip", "harness_error", f"the harness failed: {error_line(exc)}",
                       examples=ctx.checked, ctx=ctx)
    if failed() is not None:
        return failed()  # type: ignore[return-value]
    if ctx.checked == 0:
        return verdict("skip", "no_valid_inputs", most_common_cpu_error(), ctx=ctx)
    if ctx.not_comparable:
        return verdict("skip", "no_host_values",
                       f"agreed with CPU on {ctx.checked} examples as far as compared, but values "
                       f"could not be compared on {ctx.not_comparable}: {backend.device} tensors "
                       f"hold no values", ctx=ctx, examples=ctx.checked)
    if ctx.cpu_dtype_gaps:
        (line, n), = ctx.cpu_dtype_gaps.most_common(1)
        return verdict("pass", CPU_DTYPE_GAP, f"agreed with CPU on {ctx.checked} examples; "
                       f"also computed {sum(ctx.cpu_dtype_gaps.values())} that CPU refuses only "
                       f"for lack of a dtype kernel (informational; e.g. {n}x {line})",
                       examples=ctx.checked, ctx=ctx)
    return verdict("pass", None, f"agreed with CPU on {ctx.checked} examples",
                   examples=ctx.checked, ctx=ctx)
