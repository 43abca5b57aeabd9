"""The search: run one check on one overload with Hypothesis and earn a :class:`Verdict`.

``run_check`` draws calls from the check's strategy, runs each on CPU (the oracle) and on the
backend, and stops at the first disagreement, which Hypothesis then shrinks; the shrunk call
becomes the repro. CPU-rejected examples are not counted. Before every backend call the engine
writes the call about to run to an in-flight file (:class:`Inflight`), so a backend that kills the
process still leaves a verdict behind (the plugin's controller turns it into ``crash``/``timeout``).
One search is a :class:`Search`, whose steps are its methods.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import HealthCheck, Phase, given, reject, seed
from hypothesis import settings as hsettings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import Flaky, Unsatisfiable

from conformance.checks.check import Check
from conformance.compare.context import (
    Context,
    ToleranceFn,
    binding_only,
    binding_refusal,
    one_refusal,
)
from conformance.core.backends import Backend
from conformance.core.call import Call
from conformance.core.inflight import Inflight
from conformance.core.signature import NoStrategy
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
from conformance.engine.hypothesis_hooks import (
    budgeted_shrinks,
    is_final,
    no_local_constants,
    prng_states_kept_once,
    shrink_budget,
)
from conformance.engine.ladder import climb
from conformance.engine.settings import EngineSettings, ExpectedFn, Item
from conformance.inputs import corpus
from conformance.inputs.shape_menus import fixed_shapes
from conformance.inputs.strategies import draw_calls
from opdb.opdata import OpHints
from opdb.outcomes import CPU_UNSTABLE, DEVICE_LOST

if sys.version_info < (3, 11):  # pragma: no cover - Hypothesis depends on the backport there
    from exceptiongroup import BaseExceptionGroup


#: Distinct failures searched and shrunk separately per item; further ones are recorded with the
#: last call that showed them, unshrunk.
MAX_DISTINCT = 8


#: A check with an identity (Check.identity) redraws a repeated call at most this many times
#: per example asked for, then checks repeats (an op with few distinct calls).
REPEAT_FACTOR = 2


#: Refills that move to another dtype tried on a drawn call CPU refused, before it is thrown
#: away (:meth:`Search.check_refills`): an op CPU computes in half of the twelve dtypes takes one of three
#: others with probability 0.94.
RESCUE_TRIES = 3


#: Checked examples Hypothesis' shrinker may spend on a failure an expected-failure entry already
#: matches (its fingerprint, or the whole item): its first passes (trivial spans, deleting
#: choices) make most of a repro's reduction; the rest of a full shrink (hundreds of examples,
#: and 200 more without progress before it gives up) is spent on known bugs. Counted in checked
#: examples, not shrinker calls: a candidate that passes runs every value refill
#: (docs/decisions.md#expected-shrink-budget). A new failure is shrunk in full. A count, not a
#: time: same seed, same repro.
EXPECTED_SHRINK_EXAMPLES = 60


#: Checked examples the shrinker may spend on any failure where the backend compiles per shape
#: (:attr:`~conformance.core.backends.Backend.compiles_per_shape`): every shape a shrink tries
#: that the item has not drawn yet is a compile (seconds each on XLA), and the shape menu
#: (:mod:`conformance.inputs.shape_menus`) leaves few smaller shapes to shrink toward anyway. An
#: expected failure gets a third of it. A count, not a time: same seed, same repro
#: (docs/decisions.md#per-shape-mode).
PER_SHAPE_SHRINK_EXAMPLES = 60


#: The signature of every item's Hypothesis test body, ``body(drawn)``, built once: Hypothesis
#: reads its test's signature on each run, and ``inspect.signature`` of a new function costs
#: ~0.8 ms an item (1.2% of a full run's samples) where a ``__signature__`` is read at once.
_BODY_SIGNATURE = inspect.Signature(
    [inspect.Parameter("drawn", inspect.Parameter.POSITIONAL_OR_KEYWORD)])


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

    Inputs come from the schema strategies (with recorded calls, :mod:`conformance.inputs.corpus`,
    mixed in when ``settings.corpus_mix``); when that finds no input CPU accepts and the overload
    has recorded calls, the search runs again on those alone (``Verdict.sources`` counts
    examples by source). An overload the schema strategies cannot draw for at all is searched on
    its recorded calls.
    """
    from dataclasses import replace

    kwargs = dict(settings=settings, hints=hints, tolerance_fn=tolerance_fn, repro_fn=repro_fn,
                  inflight=inflight, expected=expected)
    if settings.recorded_only:
        return Search(item, backend, corpus_only=True, **kwargs).run()  # type: ignore[arg-type]
    first = Search(item, backend, **kwargs).run()  # type: ignore[arg-type]
    if first.verdict != "skip" or first.category != "no_valid_inputs" \
            or not has_corpus(item, settings, hints):
        return first
    again = Search(item, backend, corpus_only=True, **kwargs).run()  # type: ignore[arg-type]
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
        reason = item.check.applies_hints(item.sig, hints)
    if not reason:
        return None
    return Verdict(
        overload=item.sig.name, check=item.check.name, backend=backend.name, verdict="skip",
        category="not_applicable", message=f"{item.check.name} does not apply: {reason}",
        examples=0, duration_s=0.0, seed=settings.seed, torch_version=torch.__version__,
        expected=expected)


def has_corpus(item: Item, settings: EngineSettings, hints: OpHints) -> bool:
    """Whether ``item`` has recorded calls to search (:mod:`conformance.inputs.corpus`)."""
    recorded = corpus.for_settings(settings.corpus)
    return recorded is not None and bool(
        corpus.usable_specs(item.sig, hints, item.check.recorded, recorded))


class Search:
    """One search of :func:`run_check`: schema strategies with recorded calls mixed in, or
    (``corpus_only``) recorded calls alone. :meth:`run` is its steps: the strategy, the
    Hypothesis test over :meth:`check_drawn`, then how the test ended decides the verdict."""

    def __init__(self, item: Item, backend: Backend, *, settings: EngineSettings,
                 hints: OpHints, tolerance_fn: ToleranceFn, repro_fn: Callable[[Call], str],
                 inflight: Inflight | None = None, expected: str | ExpectedFn | None = None,
                 corpus_only: bool = False) -> None:
        self.item, self.backend, self.settings, self.hints = item, backend, settings, hints
        self.tolerance_fn, self.repro_fn, self.expected = tolerance_fn, repro_fn, expected
        self.corpus_only = corpus_only
        self.inflight = inflight or Inflight(None)
        self.sig, self.check = item.sig, item.check
        self.t0 = time.perf_counter()
        self.ctx: Context | None = None
        check = self.check
        self.max_examples = max(1, round(settings.max_examples * check.examples_factor))
        self.budget = settings.reject_budget or max(40, 8 * self.max_examples)
        if check.calls_per_draw > 1 and not settings.reject_budget:  # a sweep searches as far
            # as the forward check does: its budget of refused calls, in draws of that many calls
            self.budget = -(-max(40, 8 * settings.max_examples) // check.calls_per_draw)
        #: the last call that failed or raised (and its exception): shrinking is under way
        self.last: tuple[Call, BaseException] | None = None
        self.rejected = 0  # drawn calls CPU refused (every refill of them)
        self.repeats = 0  # repeated calls redrawn (Check.identity)
        #: fingerprint -> (last call that showed it, its CheckFailure); insertion order =
        #: discovery
        self.found: dict[str, tuple[Call, CheckFailure]] = {}
        self.origin: dict[str, str] = {}  # fingerprint -> the source that found it
        self.classes: dict[str, type[_Distinct]] = {}
        self.final: list[str] = []  # fingerprints in Hypothesis' report order
        self.seen: set[str] = set()  # identities of the calls checked (Check.identity)

    # -- the steps ---------------------------------------------------------------------------
    def run(self) -> Verdict:
        no_local_constants()
        budgeted_shrinks()
        skipped = not_applicable(self.item, self.backend, settings=self.settings,
                                 hints=self.hints, expected=self.whole_item_reason())
        if skipped is not None:
            return skipped
        strategy, problem = self.strategy()
        if strategy is None:
            return self.verdict("skip", "no_strategy", f"no inputs can be drawn: {problem}")
        self.ctx = Context(backend=self.backend, sig=self.sig, hints=self.hints,
                           tolerance_fn=self.tolerance_fn, inflight=self.inflight,
                           repro_fn=self.repro_fn)
        test = self.hypothesis_test(strategy)
        try:
            with shrink_budget(self.shrink_budget), prng_states_kept_once(), \
                    fixed_shapes(self.backend.compiles_per_shape):
                test()
        except Abort as stop:
            ended = self.aborted(stop)
            if ended is not None:
                return ended
        except Unsatisfiable:
            return self.device_lost() or self.verdict(
                "skip", "no_valid_inputs", self.most_common_cpu_error(), ctx=self.ctx)
        except Flaky as exc:
            return self.device_lost() or self.flaky(exc)
        except (CheckFailure, BaseExceptionGroup) as exc:
            return self.device_lost() or self.raised(exc)
        except Exception as exc:  # noqa: BLE001 - a harness bug is reported, not raised
            return self.harness_error(exc)
        return self.device_lost() or self.judged()  # no verdict on a device left unproven

    def device_lost(self) -> Verdict | None:
        """The ``device_lost`` crash where a shared refusal left the device unproven and it no
        longer works (:meth:`Context.settle_device`), else ``None``."""
        try:
            self.context.settle_device()
        except Abort as stop:
            return self.aborted(stop)
        return None

    def strategy(self) -> tuple[Any, NoStrategy | None]:
        """The strategy searched (``None`` when nothing can be drawn) and why the schema
        strategies could not draw, if they could not."""
        schema, problem = None, None
        if not self.corpus_only:
            try:
                schema = draw_calls(self.sig, self.hints, self.check.draw)
            except NoStrategy as exc:
                problem = exc
        recorded = corpus.for_settings(self.settings.corpus)
        mix = self.corpus_only or schema is None or self.settings.corpus_mix
        if recorded is None or not mix:
            return schema, problem
        return corpus.with_corpus(schema, self.sig, self.hints, mode=self.check.recorded,
                                  corpus=recorded), problem

    def hypothesis_test(self, strategy: Any) -> Callable[[], None]:
        """The Hypothesis test over :meth:`check_drawn`: seeded by the item, its example database
        keyed by the item's id, every distinct failure reported."""
        settings, check = self.settings, self.check
        database = None
        if settings.database:
            database = DirectoryBasedExampleDatabase(settings.database)
        hs = hsettings(max_examples=self.max_examples, deadline=None, database=database,
                       suppress_health_check=list(HealthCheck), derandomize=False,
                       phases=(Phase.explicit, Phase.reuse, Phase.generate)
                       + ((Phase.shrink,) if check.shrink else ()),
                       report_multiple_bugs=True, print_blob=False,
                       verbosity=hsettings().verbosity)

        def body(drawn: Call) -> None:
            self.check_drawn(drawn)

        body.__signature__ = _BODY_SIGNATURE  # type: ignore[attr-defined]
        # seed first, settings last: @seed alone would switch the example database off
        test = hs(seed(settings.item_seed(self.sig.name, check.name))(given(strategy)(body)))
        db_key = f"{self.item.id}::corpus" if self.corpus_only else self.item.id
        if self.backend.compiles_per_shape:  # its examples are drawn otherwise (shape menus)
            db_key = f"{db_key}::fixed-shapes"
        test._hypothesis_internal_database_key = db_key.encode()  # type: ignore[attr-defined]
        return test  # type: ignore[no-any-return]

    # -- one drawn call ----------------------------------------------------------------------
    def check_drawn(self, drawn: Call) -> None:
        """Check one drawn call (and its value refills); raise its failure for Hypothesis, or
        reject it where CPU refused every refill."""
        self.skip_repeat(drawn)
        fills: tuple[Any, ...] = getattr(drawn, "fills", ())  # a dtypes sweep has none
        refills = self.settings.refills if self.check.refills and fills else 1
        failure, zero_refused, rescue = self.check_refills(drawn, refills)
        if failure is not None:
            self.failed_on(*failure)
        if zero_refused and rescue is None:
            self.rejected += 1
            ctx = self.context
            if self.rejected >= self.budget and self.last is None:
                raise Abort("budget", "", "") from None  # not while shrinking a failure
            if self.last is None and not ctx.checked and (
                    binding_only(ctx.cpu_errors) or one_refusal(ctx.cpu_errors, self.rejected)):
                raise Abort("budget", "", "") from None  # every draw refused the same way
            reject()

    def skip_repeat(self, drawn: Call) -> None:
        """A repeat of a checked call (``Check.identity``) is redrawn, a bounded number of times
        (an op with few distinct calls), and not while a failure is shrunk."""
        check = self.check
        if check.identity is None or self.last is not None:
            return
        ident = check.identity(drawn)
        if ident in self.seen and self.repeats < self.max_examples * REPEAT_FACTOR:
            self.repeats += 1
            reject()  # a repeat of a checked call: draw another
        self.seen.add(ident)

    def check_refills(self, drawn: Call, refills: int
                      ) -> tuple[tuple[Call, CheckFailure] | None, bool, str | None]:
        """Check ``drawn``'s refills: ``(failure found, CPU refused the drawn call, the dtype
        that rescued it)``.

        CPU refused the drawn call (i = 0): for its dtype, most often (mean of integers, clamp of
        complex). Up to RESCUE_TRIES of the refills that move to another dtype are tried, and
        once CPU takes one (``rescue``), the refills that would keep the drawn dtype move to that
        one. Such draws (half of all, on bench_run's ops) were thrown away, each costing a draw;
        a draw no refill rescues is rejected as before."""
        check, ctx = self.check, self.context
        failure: tuple[Call, CheckFailure] | None = None
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
                call = check.prepare(call, i, ctx.hints)
            try:
                check.verify(ctx, call)
            except CpuRejected as refusal:
                ctx.end_example(counted=False, agreed=False)
                if i == 0:
                    zero_refused = True
                    refused = refills > 1 and not binding_refusal(refusal)
                    if refused:
                        continue
                    break
                continue  # CPU refused these values (or this dtype): the next refill
            except NotComparable:
                ctx.end_example(counted=True, agreed=False)
                ctx.checked += 1
                ctx.not_comparable += 1
                return None, False, None  # judged on what was compared (no_host_values)
            except CheckFailure as exc:
                ctx.end_example(counted=True, agreed=False)
                ctx.checked += 1
                call = exc.call or call  # the call that showed it (one of a dtypes sweep)
                self.last = failure = (call, exc)
                rescue = rescue or move
                break
            except Exception as exc:
                ctx.end_example(counted=True, agreed=False)
                self.last = (call, exc)
                raise
            else:
                ctx.end_example(counted=True, agreed=True)
                ctx.checked += 1
            if refused and rescue is None:
                rescue = move
        return failure, zero_refused, rescue

    def failed_on(self, call: Call, failure: CheckFailure) -> None:
        """Keep ``failure`` by its fingerprint and raise it as that fingerprint's own exception
        class, which is how Hypothesis tells distinct bugs apart."""
        key = failure_key(failure.category, failure.message, lead_dtype(call))
        self.found.pop(key, None)
        self.origin.setdefault(key, call.source)  # the source that found it (shrinking may
        # move it)
        self.found[key] = (call, failure)  # the latest call showing it: after shrinking, the
        # minimal
        if is_final():
            self.final.append(key)  # Hypothesis replays the shrunk failures simplest first
        raise self.distinct(key)(failure.category, failure.message)  # outside `except`: no
        # context

    def distinct(self, key: str) -> type[_Distinct]:
        classes = self.classes
        if key not in classes:
            if len(classes) >= MAX_DISTINCT:
                return classes.setdefault("", type("_DistinctOther", (_Distinct,), {}))
            classes[key] = type(f"_Distinct{len(classes)}", (_Distinct,), {"key": key})
        return classes[key]

    def shrink_budget(self, example: Any) -> Callable[[], bool] | None:
        """For a failure every entry it stands for is expected for (the fingerprints past
        MAX_DISTINCT share one class): spent once the shrink has checked
        :data:`EXPECTED_SHRINK_EXAMPLES` examples; else None (shrunk in full). Where the backend
        compiles per shape, every failure has a budget: :data:`PER_SHAPE_SHRINK_EXAMPLES`, a
        third of it for an expected one."""
        interesting = getattr(example, "interesting_origin", None)
        cls = getattr(interesting, "exc_type", None)
        if not (isinstance(cls, type) and issubclass(cls, _Distinct)):
            return None
        key = getattr(cls, "key", None)
        found = self.found
        keys = [key] if key is not None else [k for k in found if k not in self.classes]
        failures = [found[k][1] for k in keys if k in found]
        expected = bool(failures) and all(self.expectation(f.category, f.message)
                                          for f in failures)
        if self.backend.compiles_per_shape:
            budget = PER_SHAPE_SHRINK_EXAMPLES // 3 if expected else PER_SHAPE_SHRINK_EXAMPLES
        elif expected:
            budget = EXPECTED_SHRINK_EXAMPLES
        else:
            return None
        ctx = self.context
        start = ctx.checked
        return lambda: ctx.checked - start >= budget

    # -- how the search ended ----------------------------------------------------------------
    def aborted(self, stop: Abort) -> Verdict | None:
        """The verdict of a search a check or the budget stopped; ``None`` where it still goes
        to the ladder (the budget hit after some examples, all of which agreed)."""
        ctx = self.context
        if self.found and stop.category != DEVICE_LOST:  # a missing kernel or the budget hit
            # while shrinking (a lost device is said even then: the process must end)
            return self.failed()
        if stop.verdict == "budget":
            if ctx.checked == 0:
                return self.verdict("skip", "no_valid_inputs", self.most_common_cpu_error(),
                                    ctx=ctx)
            return None  # fewer valid examples than asked for, all of them agreed
        call = stop.call if stop.verdict in ("unsupported", "crash") else None
        assert call is None or isinstance(call, Call)
        return self.verdict(stop.verdict, stop.category, stop.message, examples=ctx.checked,
                            missing_op=stop.missing_op, ctx=ctx,
                            repro=self.repro_fn(call) if call is not None else None)

    def flaky(self, exc: BaseException) -> Verdict:
        """A failure Hypothesis could not replay: a seeded-random op's rerun, CPU unlike itself,
        or ``flaky``."""
        ctx, found, last = self.context, self.found, self.last
        calls_seen = [c for c, _ in found.values()] or ([last[0]] if last else [])
        again = _fails_again(ctx, self.check, calls_seen) \
            if "nondeterministic_seeded" in self.sig.tags else None
        if again is not None:  # seeded-random: replay draws other values; a rerun failed again
            call, failure = again
            return self.verdict("fail", failure.category, failure.message, examples=ctx.checked,
                                repro=self.repro_fn(call), ctx=ctx,
                                reason=self.expectation(failure.category, failure.message))
        if calls_seen and all(ctx.cpu_varies(c) for c in calls_seen):
            # not the backend: CPU itself gives another answer each time (uninitialized memory)
            return self.verdict(
                "pass", CPU_UNSTABLE, f"agreed with CPU except where CPU disagreed with itself "
                f"({len(calls_seen)} call(s) whose failure did not reproduce: CPU's values vary "
                f"from run to run there; e.g. {calls_seen[0].describe()})", examples=ctx.checked,
                ctx=ctx)
        message = f"the failure did not reproduce on replay: {error_line(exc)}"
        if found:
            return self.failed(flaky=message)
        return self.verdict("fail", "flaky", message, examples=ctx.checked,
                            repro=self.repro_fn(last[0]) if last else None, ctx=ctx)

    def raised(self, exc: BaseException) -> Verdict:
        """The test raised failures (one, or a group of distinct ones) or something else.

        Every failure the search kept counts, whatever else the group holds: Hypothesis reports
        each distinct exception it met (``Hypothesis found 10 distinct failures``: the
        fingerprints' classes and, say, one example where the harness raised), and one
        exception of another kind next to them made the whole item a ``harness_error`` skip,
        real failures with it. The other exceptions are named in the verdict's message."""
        ctx = self.context
        failures, others = _leaves(exc)
        if self.found and failures:
            verdict = self.failed()
            if not others:
                return verdict
            from dataclasses import replace

            return replace(verdict, message=f"{verdict.message} (the harness also raised on "
                           f"{len(others)} other example(s): {error_line(others[0])})")
        if isinstance(exc, CheckFailure):
            return self.verdict("fail", exc.category, exc.message, examples=ctx.checked, ctx=ctx)
        return self.harness_error(others[0] if others and len(others) == 1 else exc)

    def harness_error(self, exc: BaseException) -> Verdict:
        return self.verdict("skip", "harness_error", f"the harness failed: {error_line(exc)}",
                            examples=self.context.checked, ctx=self.context)

    def judged(self) -> Verdict:
        """The verdict of a search that ran its course: its failures, else the ladder."""
        ctx = self.context
        if self.found:
            return self.failed()
        if ctx.checked == 0:
            return self.verdict("skip", "no_valid_inputs", self.most_common_cpu_error(), ctx=ctx)
        verdict, category, message = climb(ctx, self.backend.device)
        return self.verdict(verdict, category, message, examples=ctx.checked, ctx=ctx)

    def failed(self, flaky: str | None = None) -> Verdict:
        """The failures the run found, each with its shrunk call, primary first."""
        ctx = self.context
        records = []
        for key, (call, failure) in self.found.items():
            records.append(Failure(
                category=failure.category, message=failure.message, key=key,
                repro=self.repro_fn(call),
                expected=self.expectation(failure.category, failure.message),
                dtypes=tuple(sorted(call.tensor_dtypes)),
                source=self.origin.get(key, call.source)))
        # new failures first; then in Hypothesis' report order (simplest shrunk example first)
        rank = {k: i for i, k in enumerate(dict.fromkeys(self.final))}
        records.sort(key=lambda f: (f.expected is not None, rank.get(f.key, len(rank))))
        first = records[0]
        if flaky is not None:
            return self.verdict("fail", "flaky", flaky, examples=ctx.checked, repro=first.repro,
                                ctx=ctx, failures=tuple(records),
                                reason=self.expectation("flaky", flaky))
        return self.verdict("fail", first.category, first.message, examples=ctx.checked,
                            repro=first.repro, ctx=ctx, failures=tuple(records),
                            reason=first.expected)

    # -- records -----------------------------------------------------------------------------
    @property
    def context(self) -> Context:
        assert self.ctx is not None, "the search has not started"
        return self.ctx

    def most_common_cpu_error(self) -> str:
        errors = self.context.cpu_errors
        if not errors:
            return "no example was drawn"
        (line, n), = errors.most_common(1)
        return f"CPU rejected all {sum(errors.values())} examples drawn; most often ({n}x): {line}"

    def whole_item_reason(self) -> str | None:
        """The reason of a whole-item expected-failure entry naming this item, if any."""
        return self.expected if isinstance(self.expected, str) else None

    def expectation(self, category: str, message: str) -> str | None:
        expected = self.expected
        if expected is None or isinstance(expected, str):
            return expected
        return expected(category, message)

    def verdict(self, v: str, category: str | None, message: str, *, examples: int = 0,
                missing_op: str | None = None, repro: str | None = None,
                ctx: Context | None = None, failures: tuple[Failure, ...] = (),
                reason: str | None = None) -> Verdict:
        if v == "fail" and not failures and category is not None:
            reason = self.expectation(category, message)
        elif v != "fail":
            reason = self.whole_item_reason()
        return Verdict(
            overload=self.sig.name, check=self.check.name, backend=self.backend.name, verdict=v,
            category=category, message=message, missing_op=missing_op, examples=examples,
            duration_s=round(time.perf_counter() - self.t0, 4), seed=self.settings.seed,
            torch_version=torch.__version__, repro=repro, expected=reason,
            dtypes=ctx.dtype_tallies() if ctx else {}, failures=failures,
            dtype_support=dict(ctx.dtype_support) if ctx else {},
            sources=dict(ctx.sources) if ctx else {},
        )


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


def _leaves(exc: BaseException) -> tuple[list[CheckFailure], list[BaseException]]:
    """The exceptions ``exc`` stands for, groups opened (Hypothesis' group of distinct failures,
    a ``FlakyFailure`` around the failure it could not replay): the check failures, and the
    others."""
    if isinstance(exc, BaseExceptionGroup):
        failures: list[CheckFailure] = []
        others: list[BaseException] = []
        for e in exc.exceptions:
            f, o = _leaves(e)
            failures += f
            others += o
        return failures, others
    if isinstance(exc, CheckFailure):
        return [exc], []
    return [], [exc]
