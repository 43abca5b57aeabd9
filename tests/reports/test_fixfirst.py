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
        _doc("examples/mlp.py", {"relu": 3, "add_.Tensor": 1}),
    ]}))
    return path


def test_ranked_by_workloads_blocked_then_calls(census: Path) -> None:
    workloads = read_census([str(census)])
    assert [w.name for w in workloads] == ["resnet.py", "bert.py", "lstm_lm.py", "mlp.py"]
    blockers = rank(workloads, latest(frame(read(SMALL))))
    assert [(b.overload, len(b.workloads), b.calls) for b in blockers] == [
        ("add.Tensor", 3, 75), ("_adaptive_avg_pool2d_backward", 3, 4), ("mul.Tensor", 2, 14),
        ("add_.Tensor", 1, 1)]
    # add.out is unsupported, but no workload calls it: not ranked; relu passes everywhere;
    # add_.Tensor's failure is expected: it still blocks mlp.py, and says so
    first = blockers[0]
    assert first.why == ("promotion: fail (dtype)",)
    assert blockers[1].why == ("missing (static coverage)",)
    assert blockers[1].sentence().startswith(
        "_adaptive_avg_pool2d_backward blocks 3 of 4 workloads")
    assert set(blockers[2].why) == {"forward: crash", "autograd: timeout"}
    assert blockers[3].why == ("forward: fail (value) [expected]",)


def test_report_opens_on_fix_first(census: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(SMALL), "--census", str(census), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Fix these first (4 overloads" in err
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


def test_a_failure_at_dtypes_the_workload_does_not_use_does_not_block(tmp_path: Path) -> None:
    """mm fails only at complex128 (its failures' call dtypes); embedding_backward's dtypes
    check refuses int32: a float32 workload is blocked by neither, a complex one by mm."""
    results = tmp_path / "r.jsonl"
    fail = {"category": "value", "message": "differ", "key": "k", "repro": None,
            "expected": None, "dtypes": ["complex128"]}
    lines = [
        {"record": "run", "backend": "mlu", "checks": ["forward", "dtypes"]},
        {"record": "verdict", "overload": "mm", "check": "forward", "backend": "mlu",
         "verdict": "fail", "category": "value", "message": "differ", "examples": 3,
         "failures": [fail]},
        {"record": "verdict", "overload": "embedding_backward", "check": "dtypes",
         "backend": "mlu", "verdict": "unsupported", "category": "missing_kernel",
         "message": "", "examples": 3, "dtype_support": {"int32": "refused", "int64": "ok"}},
    ]
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    census = tmp_path / "c.json"

    def need(name: str, spec: str) -> dict:
        return {"name": name, "status": "native", "count": 2, "examples": [spec]}

    census.write_text(json.dumps({"workloads": [
        {"target": "f32.py", "overloads": [need("mm", "(self=float32[2, 4], mat2=float32[4, 3])"),
                                           need("embedding_backward",
                                                "(grad=float32[2, 8], indices=int64[2])")]},
        {"target": "cplx.py", "overloads": [need("mm", "(self=complex128[2, 2], "
                                                        "mat2=complex128[2, 2])")]},
        {"target": "unknown.py", "overloads": [{"name": "mm", "status": "native", "count": 1}]},
    ]}))
    blockers = rank(read_census([str(census)]), latest(frame(read(str(results)))))
    assert [(b.overload, b.workloads) for b in blockers] == [("mm", ("cplx.py", "unknown.py"))]
    assert blockers[0].why == ("forward: fail (value) at complex128",)
