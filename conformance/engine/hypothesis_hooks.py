"""The engine's hooks into Hypothesis, where Hypothesis has no setting for what the engine needs:
draws that depend on the item's seed alone (:func:`no_local_constants`), a shrink budget per
failure (:func:`budgeted_shrinks`, :func:`shrink_budget`), every example searched after a
failure (:func:`search_past_failures`), the PRNGs it manages saved once per item, not once per
test case (:func:`prng_states_kept_once`). Should a Hypothesis release move what they wrap, each
falls back to Hypothesis' own behaviour (slower or order-dependent, never wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_LOCAL_CONSTANTS_OFF = False  # no_local_constants ran in this process


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


_SHRINK_BUDGET_ON = False  # budgeted_shrinks ran in this process


def budgeted_shrinks() -> None:
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
    search_past_failures(runner)


def search_past_failures(runner: Any) -> None:
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


@contextmanager
def shrink_budget(budget: Callable[[Any], Callable[[], bool] | None]) -> Iterator[None]:
    """:data:`_SHRINK_BUDGET` for the item searching inside the block (:func:`budgeted_shrinks`
    reads it), reset however the block ends."""
    global _SHRINK_BUDGET
    _SHRINK_BUDGET = budget
    try:
        yield
    finally:
        _SHRINK_BUDGET = None


@contextmanager
def prng_states_kept_once() -> Iterator[None]:
    """Save and restore the PRNGs Hypothesis manages once for the block, not once per test case.

    Before each test case Hypothesis saves the state of every PRNG it manages (Python's
    ``random``, NumPy's global generator, its own, any ``register_random``'d one), seeds them,
    and restores the saved states after it (``deterministic_PRNG``): ~0.3 ms a test case, NumPy's
    legacy ``get_state``/``set_state`` 70 us each, 6% of an all-checks run's item time
    (docs/decisions.md#engine-speed). Inside the block each test case is still seeded as
    Hypothesis seeds it, so what a test sees is unchanged; the states are saved on entry and
    restored on exit, so nothing outside the block sees a difference either. The engine draws
    from its own seeded generators, so between test cases nothing reads those PRNGs, and
    Hypothesis' copies of Python's ``random`` state before and after drawing each test case's
    arguments (``deprecate_random_in_strategy``, a warning for strategies that use it: ~45 us)
    are skipped inside the block. Should a Hypothesis release move these, its own
    per-test-case handling stands."""
    try:
        import hypothesis.control as hcontrol
        import hypothesis.core as hcore
        from hypothesis.internal import entropy
    except ImportError:  # pragma: no cover
        yield
        return
    original = getattr(hcore, "deterministic_PRNG", None)
    warns = getattr(hcontrol, "deprecate_random_in_strategy", None)
    managed = getattr(entropy, "RANDOMS_TO_MANAGE", None)
    if original is None or managed is None or not hasattr(managed, "data"):  # pragma: no cover
        yield
        return
    import random

    seeded = random.Random(0).getstate()

    @contextmanager
    def seeded_only(seed: int = 0) -> Iterator[None]:
        if seed != 0:  # pragma: no cover - Hypothesis seeds with 0
            with original(seed):
                yield
            return
        for ref in list(managed.data.values()):
            r = ref()
            if r is None:  # pragma: no cover - collected
                continue
            if type(r) is random.Random:
                r.setstate(seeded)
            else:
                r.seed(0)
        yield

    with original(0):  # saves every state (and creates Hypothesis' own PRNG on first use)
        hcore.deterministic_PRNG = seeded_only
        if warns is not None:
            hcontrol.deprecate_random_in_strategy = _not_looked_for  # type: ignore[assignment]
        try:
            yield
        finally:
            hcore.deterministic_PRNG = original
            if warns is not None:
                hcontrol.deprecate_random_in_strategy = warns


@contextmanager
def _not_looked_for(*_: Any) -> Iterator[None]:
    yield


def is_final() -> bool:
    """Hypothesis is replaying a shrunk failure for the report (its last run of it)."""
    from hypothesis.control import current_build_context

    try:
        return bool(current_build_context().is_final)
    except Exception:  # noqa: BLE001 - outside a Hypothesis test
        return False
