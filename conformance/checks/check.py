"""The :class:`Check` record: the strategy it draws with, when it applies, how it verifies one
example, and how the engine searches it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.strategies import StrategyFn

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from opdb.opdata import OpHints


@dataclass(frozen=True)
class Check:
    """One check: the strategy it draws with, when it applies, and how it verifies."""

    name: str
    #: the calls it draws (:func:`conformance.inputs.strategies.draw_calls` builds the strategy)
    draw: StrategyFn
    doc: str
    applies: Callable[[OpSignature], str | None]  # reason it does not apply, or None
    verify: Callable[[Context, Call], None]
    examples_factor: float = 1  # examples drawn: round(--max-examples x this), at least 1
    shrink: bool = True  # Hypothesis shrinks a failing example (off where one costs many calls)
    refills: bool = False  # checks EngineSettings.refills value fills per drawn call (values
    #                        are its subject, the call is cheap; see Call.refill)
    #: What makes two drawn calls the same example for this check (None: every draw counts).
    #: Hypothesis' generation repeats and mutates earlier draws, so with this set the engine
    #: skips a call identical to one already checked and draws another in its place.
    identity: Callable[[Call], str] | None = None
    #: Refill ``i`` of a drawn call as this check runs it, given the op's hints (forward: one
    #: refill as views, one with dims in their other spelling, one tiled large).
    prepare: Callable[[Call, int, OpHints], Call] | None = None
    #: Whether an isolated item (``cpu_crashes`` hints) may be forked from the test process. Not
    #: one that backpropagates: torch's autograd engine refuses in a child forked after the
    #: parent ran any backward ("Unable to handle autograd's threading in combination with
    #: fork-based multiprocessing"), which made every such example a CPU refusal; such an item
    #: is forked by the fork server instead (conformance/pytest_plugin/forkserver.py)
    forks: bool = True
    #: Forward calls one drawn example holds (a dtypes sweep: one per dtype). A check whose
    #: draw is a sweep searches for valid inputs as far as the forward check does (its reject
    #: budget of refused calls, 80 at the default depth: 7 sweeps), not 12 times as far: a
    #: refused sweep costs a dozen calls (docs/decisions.md#sweep-reject-budget).
    calls_per_draw: int = 1
    #: The reason the check does not apply to an overload by its hints (per-op data, where the
    #: signature cannot tell: CPU ignoring strides for the noncontiguous check, an argument a
    #: hint relates to another for the invalid check), or None.
    applies_hints: Callable[[OpSignature, OpHints], str | None] | None = None
    #: How recorded calls (:mod:`conformance.inputs.corpus`) feed it: one of the corpus's
    #: ``MODES`` (``forward``, ``autograd``, ``dtypes``), or None where they do not
    recorded: str | None = None
