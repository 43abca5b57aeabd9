"""The engine: run one check on one overload with Hypothesis and earn a :class:`Verdict`.

``run_check`` draws calls from the check's strategy, runs each on CPU (the oracle) and on the
backend, and stops at the first disagreement, which Hypothesis then shrinks; the shrunk call
becomes the repro. CPU-rejected examples are not counted. Before every backend call the engine
writes the call about to run to an in-flight file (:class:`Inflight`), so a backend that kills the
process still leaves a verdict behind (the plugin's controller turns it into ``crash``/``timeout``).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from conformance.checks.check import Check
from conformance.compare.context import BINDING, Context, ToleranceFn, binding_only
from conformance.core.backends import Backend
from conformance.core.call import Call
from conformance.core.inflight import Inflight
from conformance.core.signature import NoStrategy, OpSignature
from conformance.core.verdicts import (
    Abort,
    CheckFailure,
    CpuRejected,
    Failure,
    NotComparable,
    Verdict,
    error_line,
)
from conformance.engine.fingerprints import failure_key, lead_dtype
from conformance.inputs.strategies import draw_calls
from opdb.opdata import OpHints
from opdb.outcomes import (
    CPU_DTYPE_GAP,
    CPU_UNSTABLE,
    DEVICE_LOST,
    METADATA_ONLY,
)

if sys.version_info < (3, 11):  # pragma: no cover - Hypothesis depends on the backport there
    from exceptiongroup import BaseExceptionGroup


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
    from conformance.inputs import corpus

    recorded = corpus.for_settings(settings.corpus)
    return recorded is not None and bool(
        corpus.usable_specs(item.sig, hints, item.check.recorded, recorded))


_LOCAL_CONSTANTS_OFF = False  # _no_local_constants ran in this process


def no_local_constants() -> None:
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

    no_local_constants()
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
    from conformance.inputs import corpus

    schema, problem = None, None
    if not corpus_only:
        try:
            schema = draw_calls(sig, hints, check.draw)
        except NoStrategy as exc:
            problem = exc
    recorded = corpus.for_settings(settings.corpus)
    mix = corpus_only or schema is None or settings.corpus_mix
    strategy = schema if recorded is None or not mix else corpus.with_corpus(
        schema, sig, hints, mode=check.recorded, corpus=recorded)
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
                    refused = refills > 1 and BINDING.search(str(refusal)) is None
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
            if state["last"] is None and not ctx.checked and binding_only(ctx.cpu_errors):
                raise Abort("budget", "", "") from None  # every draw binds the same way
            reject()

    def failed_on(call: Call, failure: CheckFailure) -> None:
        key = failure_key(failure.category, failure.message, lead_dtype(call))
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
