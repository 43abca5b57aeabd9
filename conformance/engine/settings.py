"""What the engine is asked to do: :class:`EngineSettings` (how deep and how reproducibly to
search) and :class:`Item` (one overload, one check).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from conformance.checks.check import Check
from conformance.core.signature import OpSignature


@dataclass(frozen=True)
class EngineSettings:
    """How deep and how reproducibly to search."""

    max_examples: int = 10
    #: Checked refills per drawn call (:meth:`Call.refill`): Hypothesis draws the structure
    #: (dtype, shapes, arguments, how values are made) once, the engine checks it with this many
    #: value fills, in the checks that declare ``refills`` (forward); others run each call once.
    #: A refill costs little more than a drawn call's share of drawing, and more refills reach
    #: value bugs fewer drawn calls leave unseen (docs/decisions.md#refills).
    refills: int = 16
    seed: int = 0
    database: str | None = ".conformance/hypothesis"  # None: no example database
    reject_budget: int = 0  # CPU rejections before giving up; 0 = 8 x max_examples (min 40)
    #: recorded calls mixed into the inputs (conformance.inputs.corpus): None = the packaged corpus,
    #: "off" = none, else a corpus file
    corpus: str | None = None
    #: also mix recorded calls into items the schema strategies can feed (one example in
    #: conformance.inputs.corpus.CORPUS_ONE_IN); off: recorded calls only where the schema strategies
    #: find no valid input or cannot draw at all
    corpus_mix: bool = False
    #: search recorded calls alone (the retry of an item whose schema-drawn example killed
    #: CPU, the oracle: :func:`conformance.pytest_plugin.crashes.retry_recorded`)
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
