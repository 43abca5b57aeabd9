"""Backends side by side (reports.crossbackend): the matrix, its flags, ``conformance diff`` of
three files, and the report's section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from reports.crossbackend import lone_dissenter, matrix
from reports.results import read
from reports.tables import frame, latest

CROSS = Path(__file__).parent.parent / "data" / "reports" / "cross"

#: (overload, check) -> verdicts of backends a, b, c
GRID = {
    ("add.Tensor", "forward"): ("pass", "pass", "fail"),  # c alone
    ("mul.Tensor", "forward"): ("fail", "crash", "fail"),  # every backend fails
    ("relu", "forward"): ("pass", "skip", "pass"),  # a skip disagrees with nobody
    ("sub.Tensor", "forward"): ("pass", "unsupported", "fail"),  # differ, nobody alone
    ("neg", "forward"): ("unsupported", "pass", "pass"),  # a alone
}


def _write(tmp_path: Path, backend: str, i: int, seed: int = 0) -> Path:
    lines = [{"record": "run", "backend": backend, "torch_version": "2.13.0", "seed": seed,
              "checks": ["forward"]}]
    for (ov, check), verdicts in GRID.items():
        v = verdicts[i]
        lines.append({"record": "verdict", "overload": ov, "check": check, "backend": backend,
                      "verdict": v, "category": "value" if v == "fail" else None,
                      "message": "", "examples": 1})
    path = tmp_path / f"{backend}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    return [_write(tmp_path, b, i) for i, b in enumerate("abc")]


def test_lone_dissenter_needs_three_outcomes() -> None:
    assert lone_dissenter(["pass", "pass", "fail"], "abc") == "c"
    assert lone_dissenter(["pass", None, "fail"], "abc") is None
    assert lone_dissenter(["pass", "fail"], "ab") is None
    assert lone_dissenter(["pass", "fail", "unsupported"], "abc") is None


def test_matrix_flags_and_totals(files: list[Path]) -> None:
    m = matrix(latest(frame(read([str(f) for f in files]))))
    assert m.backends == ("a", "b", "c")
    flags = {r.overload: (r.lone, r.all_fail, r.differs) for r in m.rows}
    assert flags == {"add.Tensor": ("c", False, True), "mul.Tensor": (None, True, False),
                     "relu": (None, False, False), "sub.Tensor": (None, False, True),
                     "neg": ("a", False, True)}
    totals = {t["backend"]: t for t in m.totals()}
    assert totals["c"]["lone"] == 1 and totals["b"]["lone"] == 0
    assert totals["b"]["verdicts"] == {"pass": 2, "crash": 1, "skip": 1, "unsupported": 1}
    assert totals["b"]["tested"] == 4
    assert m.counts() == {"rows": 5, "differ": 3, "lone": 2, "all_fail": 1}
    assert m.notes == ()


def test_diff_of_three_files(files: list[Path], tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert "3 backends side by side: a, b, c" in out
    assert "only c disagrees" in out and "every backend fails" in out
    assert "relu" not in out  # rows that agree are left out of the text
    other = _write(tmp_path / "..", "d", 0, seed=7)
    assert main(["diff", *map(str, files), str(other), "-o", str(tmp_path / "x.html"),
                 "--format", "html"]) == 0
    page = (tmp_path / "x.html").read_text()
    assert "seeds differ (0, 7)" in page


def test_report_of_real_runs_has_the_section(tmp_path: Path) -> None:
    """cpu, meta and mlu runs of a few ops (tests/data/reports/cross: made by
    ``conformance run --backend B --ops '^add' --max-examples 5 -n 1``)."""
    out = tmp_path / "r.html"
    assert main(["report", *map(str, sorted(CROSS.glob("*.jsonl"))), "-o", str(out)]) == 0
    html = out.read_text()
    assert html.index('id="cross"') < html.index('id="causes"')
    head = html[html.index('id="cross-matrix"'):].split("</thead>")[0]
    assert [b in head for b in ("cpu", "meta", "mlu")] == [True, True, True]


def test_real_runs_meta_alone_and_a_shared_failure() -> None:
    """On the add family, meta alone refuses nothing CPU refuses (error_accepts: no values, so
    no value-dependent validation) and disagrees in 7 rows; add.Scalar_out's promotion check
    fails error_type on meta and mlu alike: the reference's or the harness's, not a backend's.
    cpu (CPU against itself) votes but is never alone."""
    m = matrix(latest(frame(read(sorted(str(p) for p in CROSS.glob("*.jsonl"))))))
    assert m.references == ("cpu",)
    assert {t["backend"]: t["lone"] for t in m.totals()} == {"cpu": 0, "meta": 7, "mlu": 0}
    assert [(r.overload, r.check) for r in m.rows if r.all_fail] == [
        ("add.Scalar_out", "promotion")]
