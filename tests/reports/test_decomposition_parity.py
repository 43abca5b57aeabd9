"""The report's "Decompositions: static vs compile" tab: the coverage's static twin (ops a
decomposition calls that the backend lacks) beside the compile check's verdict."""

from __future__ import annotations

import json
from pathlib import Path

from reports import html as rhtml
from reports import ops as rops
from reports import page as rpage
from tests.reports.test_reports import COVERAGE, SMALL, load_names, page


def test_decomposition_parity_puts_the_static_twin_beside_the_compile_verdict(tmp_path: Path):
    lines = SMALL.read_text().splitlines()
    base = json.loads(lines[1])

    def comp(overload: str, verdict: str, missing_op: str | None = None) -> str:
        return json.dumps(dict(base, overload=overload, check="compile", verdict=verdict,
                               category="missing_kernel" if verdict == "unsupported" else None,
                               missing_op=missing_op))

    p = tmp_path / "r.jsonl"
    p.write_text("\n".join([
        *lines[:2],
        comp("logsumexp", "unsupported", "where.self"),  # predicted where.self: agree
        comp("hardswish", "pass"),  # predicted, but the compiled call ran: static only
        comp("relu_", "unsupported", "relu"),  # functionalization, not a decomposition
    ]) + "\n")
    cov = json.loads(COVERAGE.read_text())
    cov["decompositions"] = {
        "compile_backend": "aot_eager_decomp_partition", "table": "inductor",
        "summary": {"decomposed": 4, "traced": 3, "untraced": 1, "needs_missing": 2},
        "rows": [
            {"overload": "logsumexp", "source": "table", "calls": ["exp", "where.self"],
             "missing": ["where.self"]},
            {"overload": "hardswish", "source": "table", "calls": ["clamp_max"],
             "missing": ["clamp_max"]},
            {"overload": "silu", "source": "table", "calls": ["exp"], "missing": []},
            {"overload": "roll", "source": "table", "calls": None, "missing": None},
        ]}
    df, _ = load_names(p, coverage=None)
    ann = rops.annotate(df["overload"].unique(), cov, use_opdb=False)
    data = rpage.page_data(df, ann)
    rows = {r["overload"]: r for r in data["decomposition_parity"]}
    assert list(rows) == ["logsumexp", "hardswish", "relu_"]  # needing a missing op, then found
    assert rows["logsumexp"]["relation"] == rpage.PARITY_AGREE
    assert rows["hardswish"]["relation"] == rpage.PARITY_STATIC_ONLY
    assert rows["relu_"]["relation"] == rpage.PARITY_DYNAMIC_ONLY
    assert data["decompositions"]["table"] == "inductor"
    html = rhtml.render(data)
    assert page(html)["decomposition_parity"] == data["decomposition_parity"]
    assert "Decompositions: static vs compile (3)" in html


def test_no_decompositions_in_the_coverage_means_an_empty_tab():
    df, ann = load_names(coverage=COVERAGE)
    data = rpage.page_data(df, ann)
    assert data["decomposition_parity"] == [] and data["decompositions"] is None
    assert "Decompositions: static vs compile (0)" in rhtml.render(data)
