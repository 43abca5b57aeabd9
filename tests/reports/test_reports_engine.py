"""reports against what the engine really writes: `conformance run ... --html` on a few overloads.

The engine (conformance/) is built in parallel; these tests skip, saying why, until
`conformance run` exists. They run it in a subprocess, as a user would.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import CHROMIUM, Chromium, available

import reports
import reports.ops
from reports import html as rhtml
from reports import page as rpage
from reports.diff import compare
from reports.results import ResultsWarning

try:
    import conformance.commands.run  # noqa: F401
except ImportError as exc:  # pragma: no cover - only while the engine is being built
    pytest.skip(f"conformance run not available yet: {exc}", allow_module_level=True)

OPS = r"abs|relu|add\.Tensor"
# A vendor-like backend from the engine's test data whose add.Tensor ignores alpha: the run is
# guaranteed a real, engine-earned failure (and its repro) without relying on a kernel bug in mlu.
BACKEND = "privateuse1:buggy_alpha"
ENGINE_DATA = Path(__file__).parent.parent / "data" / "engine"


@pytest.fixture(scope="module")
def engine_run(tmp_path_factory):
    """One engine run shared by every xdist worker (the first to take the lock runs it)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this session's directory, shared by its workers
    d = base / "reports-engine-run"
    d.mkdir(exist_ok=True)
    results, html, done = d / "results.jsonl", d / "report.html", d / "done"
    with open(d / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            root = Path(__file__).parent.parent.parent
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(ENGINE_DATA), str(root), os.environ.get("PYTHONPATH", "")])}
            proc = subprocess.run(
                [sys.executable, "-m", "conformance", "run", "--backend", BACKEND, "--ops", OPS,
                 "-n", "0", "--max-examples", "10", "-o", str(results), "--html", str(html)],
                cwd=d, capture_output=True, text=True, timeout=180, env=env,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            done.write_text("ok")
    return results, html


def test_run_html_matches_the_results_file(engine_run):
    results, html = engine_run
    records = [json.loads(line) for line in results.read_text().splitlines()]
    verdicts = [r for r in records if r["record"] == "verdict"]
    assert verdicts, "the engine wrote no verdicts"
    data = json.loads(html.read_text().split('id="report-data">', 1)[1].split("</script>", 1)[0])
    data["strings"] = rhtml.unpack_strings(data)
    # every overload the run selected is a row, and nothing else (same --ops semantics)
    assert sorted(r[0] for r in data["rows"]) == sorted({v["overload"] for v in verdicts})
    # every verdict record is one detail, verdict for verdict
    assert len(data["details"]) == len(verdicts)
    by_cell = {(v["overload"], v["check"]): v["verdict"] for v in verdicts}
    cols = data["columns"]
    for row in data["rows"]:
        for j, d in enumerate(row[5]):
            if d >= 0:
                assert data["verdicts"][data["details"][d][0]] == by_cell[(row[0], cols[j])]
    n_tested = len({v["overload"] for v in verdicts if v["verdict"] != "skip"})
    assert data["summary"]["overloads"]["tested"] == n_tested


def test_load_and_exports_of_a_real_run(engine_run, tmp_path):
    results, _ = engine_run
    df = reports.load(results)
    assert set(df.verdict) <= {"pass", "fail", "unsupported", "skip", "crash", "timeout"}
    assert (df.family == df.overload.str.replace(r"_?(\..*)?$", "", regex=True)).all()
    failing = df[df.verdict == "fail"]
    assert ("add.Tensor", "forward") in set(zip(failing.overload, failing.check, strict=True))
    assert failing.repro.notna().all() and (failing.message.str.len() > 0).all()
    assert compare(df, df).changes == ()
    from conformance.cli import main

    assert main(["report", str(results), "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["verdicts"]) == len(df)


def test_crash_mid_write_keeps_what_was_written(engine_run, tmp_path):
    results, _ = engine_run
    raw = results.read_bytes()
    cut = tmp_path / "crashed.jsonl"
    cut.write_bytes(raw[: len(raw) - 40])  # the last record half-written
    n_lines = raw.count(b"\n")
    with pytest.warns(ResultsWarning, match=rf"crashed\.jsonl:{n_lines}: truncated record"):
        df = reports.load(cut, annotate_ops=False)
    assert len(df) == n_lines - 2  # the run header and the damaged line are not verdicts


@pytest.mark.browser
@pytest.mark.skipif(not available(), reason=f"headless chromium not found at {CHROMIUM} (apt-get install chromium, or set OPCONFORM_CHROMIUM)")
def test_real_report_in_browser(engine_run):
    _, html = engine_run
    artifacts = Path(__file__).parent.parent.parent / "test-artifacts"
    with Chromium() as browser:
        page = browser.open(html)
        page.wait_for("window.__report && window.__report.ready")
        page.click(".grid-row:not(.group) .cell.v-fail")
        page.wait_for("getComputedStyle(document.getElementById('drawer')).transform === 'none'")
        repro = page.eval("document.getElementById('repro').textContent")
        assert repro.startswith("import torch") and "import buggy_alpha" in repro
        page.screenshot(artifacts / "report-engine.png")
        assert page.errors() == []


def test_real_static_coverage(engine_run, tmp_path):
    results, _ = engine_run
    cov = tmp_path / "coverage.json"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "coverage", "--backend", "mlu", "-o", str(cov),
         "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(cov.read_text())
    df = reports.load(results, coverage=cov)
    status = {o["name"]: o["status"] for o in doc["overloads"]}
    assert (df.status == df.overload.map(status)).all()
    data = rpage.page_data(df, reports.ops.annotate(df.overload.unique(), cov))
    assert len(data["missing_variants"]) == len(doc["missing_variants"])
    assert len(data["missing_backward"]) == len(doc["missing_backward"])
    assert sum(data["summary"]["static"].values()) == len(data["rows"])
