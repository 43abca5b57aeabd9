"""The pytest plugin (entry point ``pytest11: conformance``): options, the session's state,
items, fork isolation and the watchdog, crash attribution, the progress line and collection-time
verdicts. May import store, engine, checks, repro, compare, inputs and core.

This module is the plugin pytest registers: it re-exports the module-level hooks, which pytest
finds by name here (a new hook in ``hooks`` or ``options`` is a new line below). Inside the
package imports run one way: ``hooks`` -> ``inapplicable`` -> ``items`` -> ``session``,
``isolation``, ``watchdog`` -> ``records``; ``session`` also imports ``options`` and ``crashes``;
``progress`` imports ``records`` and ``inapplicable``; ``crashes`` imports ``backtraces``;
``options``, ``records`` and ``backtraces`` import no sibling.

Without ``--backend NAME`` the plugin does nothing. With it the session gains one test item per
(overload, check), id ``add.Tensor::promotion``; ``-k``, ``-x``, ``--lf``, ``--junitxml`` and
``-n`` (pytest-xdist) work on them as on any test. Verdict records go to ``--results FILE``
(JSONL), written by one process only — the xdist controller, or the lone process — from the
reports the items produce, so the file is complete and valid with ``-n``. Workers also keep an
about-to-run file per process; when a worker dies (segfault, or the watchdog firing on a hung
call) the controller turns that file into a ``crash`` or ``timeout`` verdict for the item that
was running.
"""

from conformance.pytest_plugin.hooks import (
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_configure_node,
    pytest_report_header,
    pytest_unconfigure,
)
from conformance.pytest_plugin.options import pytest_addoption

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_report_header",
    "pytest_unconfigure",
]
