"""The search: one check on one overload with Hypothesis, fingerprints of distinct failures,
the verdict ladder and the hooks into Hypothesis. May import checks, repro, compare, inputs and
core.

The public face: :func:`run_check` (an item's verdict), :func:`not_applicable`,
:class:`EngineSettings`, :class:`Item`, :func:`failure_key`.
"""

from conformance.engine.fingerprints import failure_key
from conformance.engine.search import has_corpus, not_applicable, run_check
from conformance.engine.settings import EngineSettings, Item

__all__ = ["EngineSettings", "Item", "failure_key", "has_corpus", "not_applicable", "run_check"]
