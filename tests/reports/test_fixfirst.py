"""Fix these first: a census of workloads joined with a results file (reports.fixfirst and
``conformance report --census``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from reports.fixfirst import rank, read_census
from reports.results import read
from reports.tables import frame, latest

DATA = Path(__file__).parent.parent / "data" / "reports"
SMALL = DATA / "small.jsonl"  # add.Tensor promotion fail, add.out unsupported, mul.Tensor crash


def _doc(target: str, calls: dict[str, int], missing: tuple[str, ...] = ()) -> dict:
    """A workload as `conformance trace --format json` writes it (the fields read here)."""
    return {"target": target, "backend": "mlu", "overloads": [
        {"name": n, "status": "missing" if n in missing else "native", "count": c}
        for n, c in calls.items()], "composites": []}


@pytest.fixture
def census(tmp_path: Path) -> Path:
    path = tmp_path / "census.json"
    path.write_text(json.dumps({"workloads": [
        _doc("examples/resnet.py", {"add.Tensor": 40, "mul.Tensor": 2, "relu": 9,
                                    "_adaptive_avg_pool2d_backward": 1},
             missing=("_adaptive_avg_pool2d_backward",)),
        _doc("examples/bert.py", {"add.Tensor": 30, "mul.Tensor": 12,
                                  "_adaptive_avg_pool2d_backward": 1},
             missing=("_adaptive_avg_pool2d_backward",)),
        _doc("examples/lstm_lm.py", {"add.Tensor": 5, "_adaptive_avg_pool2d_backward": 2},
             missing=("_adaptive_avg_pool2d_backward",)),
        _doc("examples/mlp.py", {"relu": 3}),
    ]}))
    return path


def test_ranked_by_workloads_blocked_then_calls(census: Path) -> None:
    workloads = read_census([str(census)])
    assert [w.name for w in workloads] == ["resnet.py", "bert.py", "lstm_lm.py", "mlp.py"]
    blockers = rank(workloads, latest(frame(read(SMALL))))
    assert [(b.overload, len(b.workloads), b.calls) for b in blockers] == [
        ("add.Tensor", 3, 75), ("_adaptive_avg_pool2d_backward", 3, 4), ("mul.Tensor", 2, 14)]
    # add.out is unsupported and add_.Tensor fails, but no workload calls them: not ranked;
    # relu passes everywhere
    first = blockers[0]
    assert first.why == ("promotion: fail (dtype)",)
    assert blockers[1].why == ("missing (static coverage)",)
    assert blockers[1].sentence().startswith(
        "_adaptive_avg_pool2d_backward blocks 3 of 4 workloads")
    assert set(blockers[2].why) == {"forward: crash", "autograd: timeout"}


def test_report_opens_on_fix_first(census: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(SMALL), "--census", str(census), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Fix these first (3 overloads" in err
    assert "  add.Tensor blocks 3 of 4 workloads" in err
    html = out.read_text()
    assert html.index('id="fix-first"') < html.index('id="causes"')
    assert "<code>_adaptive_avg_pool2d_backward</code> blocks <b>3 of 4</b>" in html
    # without a census: no such section, the page ranks families as before
    assert main(["report", str(SMALL), "-o", str(out)]) == 0
    assert 'id="fix-first"' not in out.read_text()


def test_bad_census_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"target": "x.py"}))
    assert main(["report", str(SMALL), "--census", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "census" in err
