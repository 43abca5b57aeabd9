"""Items whose check does not apply are recorded at collection, not run.

Whether a check applies to an overload is decided from its signature alone (``Check.applies``):
``broadcast`` on an op not tagged pointwise, ``promotion`` on an op without operands, ... About
3,700 of a full run's 12,400 items are such ``skip``/``not_applicable`` verdicts. Running each
through pytest (and an xdist worker) only to declare it a skip cost as much per item as the
protocol costs any item, for nothing. This plugin object takes them out of the run after every
other plugin has selected the items (``-k``, ``-m``, ``--deselect``, ``--lf``, ``--shard``,
``--resume``), so an item a filter excludes gets no verdict either, and writes their verdict
records (the engine's :func:`conformance.engine.not_applicable`: same record, category and
message as a run item's) to the results file:

- in a lone process (``-n 0``, plain ``pytest``) straight away;
- with xdist, each worker collects (the controller does not) and leaves its records in the run's
  in-flight folder (``not-applicable-<worker>.jsonl``); the controller reads them when that
  worker's collection arrives and writes each once (the results writer keeps one record per
  (overload, check), as for every verdict). Every worker collects the same items, so a worker
  restarted after a crash adds nothing.

The progress line (:mod:`conformance.pytest_plugin.progress`) says their count apart from the
work done (the items that run); the run summary and the report count them as before; ``--collect-only`` lists them as items and writes nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.pytest_plugin.items import ConformanceItem
from conformance.pytest_plugin.records import json_safe

if TYPE_CHECKING:
    from conformance.pytest_plugin.session import State


NAME = "conformance-not-applicable"


class NotApplicable:
    """The plugin object (registered by the conformance plugin next to its state)."""

    def __init__(self, state: State) -> None:
        self.state = state
        #: verdicts this process wrote without running an item, by verdict (all ``skip``)
        self.written: Counter[str] = Counter()

    def _file(self, worker: str) -> Path:
        return self.state.inflight_dir / f"not-applicable-{worker}.jsonl"

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> Generator[None, None, None]:
        yield  # every other plugin's selection first: a deselected item gets no verdict
        if config.option.collectonly:
            return
        from conformance.engine import not_applicable

        state = self.state
        keep: list[pytest.Item] = []
        records: list[dict[str, Any]] = []
        for node in items:
            if isinstance(node, ConformanceItem):
                whole = state.expectations.for_item(node.item.id)
                hints = state.hints.for_op(node.item.sig.name) \
                    if node.item.check.applies_hints is not None else None
                verdict = not_applicable(node.item, state.backend, settings=state.settings,
                                         hints=hints, expected=whole.reason if whole else None)
                if verdict is not None:
                    records.append(json_safe(verdict.to_json()))
                    continue
            keep.append(node)
        if not records:
            return
        items[:] = keep
        if state.is_worker:  # the controller writes them (pytest_xdist_node_collection_finished)
            from reports.files import write_text

            target = self._file(state.worker)
            target.parent.mkdir(parents=True, exist_ok=True)
            # atomically, whole before this worker reports its collection
            write_text(target, "".join(json.dumps(r) + "\n" for r in records))
            return
        self._record(records)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """xdist controller: a worker collected; write the verdicts it decided without running."""
        wid = getattr(getattr(node, "gateway", None), "id", None)
        if not wid:
            return
        try:
            text = self._file(str(wid)).read_text(encoding="utf-8")
        except OSError:
            return  # nothing was inapplicable in this worker's selection
        self._record([json.loads(line) for line in text.splitlines() if line.strip()])

    def _record(self, records: list[dict[str, Any]]) -> None:
        for rec in records:
            if self.state.record(rec):
                self.written[rec["verdict"]] += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Every selected item was decided without running: that is a completed run, not
        pytest's "no tests collected" (exit 5)."""
        if (self.written and not self.state.is_worker
                and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        n = sum(self.written.values())
        if n and not self.state.is_worker:
            terminalreporter.write_line(
                f"conformance: {n} (overload, check) pairs the check does not apply to were "
                f"recorded as skip (not_applicable) without running")


def direct_counts(config: pytest.Config) -> Counter[str]:
    """Verdicts written without running an item (for the progress line), by verdict."""
    plugin = config.pluginmanager.get_plugin(NAME)
    return plugin.written if isinstance(plugin, NotApplicable) else Counter()
