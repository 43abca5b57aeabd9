"""The engine's hooks into Hypothesis: what a test case sees and what is left behind."""

from __future__ import annotations

import random

import hypothesis.core as hcore
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.engine.hypothesis_hooks import prng_states_kept_once


def _draws_in_test_cases() -> list[tuple[float, float]]:
    """What each test case of a small Hypothesis test reads from the global PRNGs first."""
    seen: list[tuple[float, float]] = []

    @settings(max_examples=5, database=None)
    @given(st.integers())
    def test(_: int) -> None:
        seen.append((random.random(), float(np.random.random())))
        random.random(), np.random.random()  # consumed: the next case must start over

    test()
    return seen


def test_each_test_case_sees_the_seeded_prngs_as_without_the_hook():
    plain = _draws_in_test_cases()
    with prng_states_kept_once():
        kept = _draws_in_test_cases()
    assert len(set(plain)) == 1
    assert set(kept) == set(plain)


def test_the_prngs_and_hypothesis_are_left_as_found():
    original = hcore.deterministic_PRNG
    random.seed(11)
    np.random.seed(12)
    before = (random.getstate(), np.random.get_state()[1].copy())
    with prng_states_kept_once():
        assert hcore.deterministic_PRNG is not original
        _draws_in_test_cases()
    assert hcore.deterministic_PRNG is original
    assert random.getstate() == before[0]
    assert (np.random.get_state()[1] == before[1]).all()


def test_hypothesis_warning_on_strategies_using_random_is_back_after_the_block():
    import hypothesis.control as hcontrol

    original = hcontrol.deprecate_random_in_strategy
    with prng_states_kept_once():
        assert hcontrol.deprecate_random_in_strategy is not original
    assert hcontrol.deprecate_random_in_strategy is original
