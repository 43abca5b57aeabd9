"""Items whose check does not apply are recorded at collection, not run
(:mod:`conformance.pytest_plugin.inapplicable`): the same records as before, once, honouring
every filter."""

from __future__ import annotations

import collections
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import conformance.pytest_plugin  # noqa: F401 - imported before pytester's in-process runs
import conformance.pytest_plugin.inapplicable  # noqa: F401
from conformance.checks.registry import CHECKS
from conformance.core.signature import OpSignature
from conformance.engine import EngineSettings, Item, not_applicable, run_check
from conformance.repro.snippet import snippet
from opdb.opdata import load_hints, load_tolerances

QUICK = ("--max-examples", "2", "--hypothesis-db", "none", "-p", "no:cacheprovider")


def _verdicts(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["record"] == "verdict"]


def test_not_applicable_is_the_engines_own_skip(reference):
    """The record written without running is the one running the item earned (timing aside)."""
    import opdb

    db = opdb.load()
    settings = EngineSettings(max_examples=2, database=None)
    hints, tolerances = load_hints(db=db), load_tolerances(db=db)
    for name, check in (("abs", "broadcast"), ("abs.out", "broadcast"),
                        ("sum.dim_IntList", "broadcast")):
        item = Item(OpSignature.of(db[name]), CHECKS[check])
        direct = not_applicable(item, reference, settings=settings, expected="why")
        ran = run_check(item, reference, settings=settings, hints=hints.for_op(name),
                        tolerance_fn=tolerances, repro_fn=lambda c: snippet(c, reference),
                        expected="why")
        assert direct is not None
        a, b = direct.to_json(), ran.to_json()
        a.pop("duration_s"), b.pop("duration_s")
        assert a == b and a["category"] == "not_applicable" and a["expected"] == "why"


def test_recorded_once_with_xdist_and_filters_honoured(tmp_path):
    pytest.importorskip("xdist")

    def run(name: str, *extra: str, checks: str = "forward,promotion,broadcast"
            ) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
        res = tmp_path / f"{name}.jsonl"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "conformance", "--backend",
                               "mlu", "--ops", "abs", "--checks", checks, *QUICK,
                               "--noconftest", "-o", "addopts=", "-q", "--rootdir",
                               str(tmp_path), "--results", str(res), *extra],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        return proc, _verdicts(res)

    _, recs = run("n2", "-n", "2")
    keys = collections.Counter((r["overload"], r["check"]) for r in recs)
    assert set(keys.values()) == {1}  # one record per (overload, check): the controller's
    assert {(o, "broadcast") for o in ("abs", "abs_", "abs.out")} <= set(keys)
    na = [r for r in recs if r["category"] == "not_applicable"]
    assert na and all(r["verdict"] == "skip" and r["message"].startswith(
        "broadcast does not apply: ") for r in na)
    assert not list((tmp_path / ".conformance" / "inflight").glob("*/not-applicable-*"))

    # -k: an item the filter deselects gets no verdict, applicable or not
    _, recs = run("k", "-n", "0", "-k", "forward")
    assert {r["check"] for r in recs} == {"forward"}

    # every selected item inapplicable: a complete run (exit 0), not "no tests collected"
    proc, recs = run("all", "-n", "2", checks="broadcast")
    assert sorted(r["overload"] for r in recs) == ["abs", "abs.out", "abs_"]
    assert "3 (overload, check) pairs the check does not apply to" in proc.stdout


def test_progress_counts_verdicts_written_without_running():
    from conformance.pytest_plugin.inapplicable import NAME, NotApplicable
    from conformance.pytest_plugin.progress import Progress

    written = collections.Counter(skip=3)
    plugin = NotApplicable.__new__(NotApplicable)
    plugin.written = written
    config = types.SimpleNamespace(pluginmanager=types.SimpleNamespace(
        get_plugin=lambda name: plugin if name == NAME else None))
    progress = Progress(io.StringIO(), tty=False, interval=0)
    progress.config = config  # type: ignore[assignment]
    progress.total = 2
    progress.pytest_runtest_logreport(types.SimpleNamespace(
        user_properties=[("conformance_verdict", json.dumps({"verdict": "pass"}))],
        when="call", nodeid="x::forward", passed=True, failed=False))
    line = progress.status()
    # the work done is the items that run (1 of 2), not the records written without running
    # (a full run's third: counted as done, 33% was shown at 7.6% of the work); said apart
    assert line.startswith("1/2 50%") and "pass 1" in line, line
    assert line.endswith("not applicable 3") and "skip" not in line, line
    progress.total = 0  # nothing left to run: every selected item was inapplicable
    progress.done = 0
    progress.counts.clear()
    assert progress.status().startswith("0/0 ?%") and "not applicable 3" in progress.status()
