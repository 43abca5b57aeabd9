"""The report's dtype matrix drawn from the ``dtypes`` check's per-dtype outcomes, and the
per-backend list of dtypes CPU supports that the backend refuses (HTML, JSON, CSV)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reports
from conformance.cli import main
from reports import ops as rops
from reports import page as rpage
from reports.results import read
from reports.tables import dtype_gaps, frame

DATA = Path(__file__).parent.parent / "data" / "reports"
DTYPES = DATA / "dtypes.jsonl"


def _loaded():
    df = frame(read(DTYPES))
    return df, rops.annotate(df["overload"].unique(), None, use_opdb=False)


def test_dtype_support_is_read_and_old_records_have_none():
    df, _ = _loaded()
    by = {(o, c): s for o, c, s in zip(df["overload"], df["check"], df["dtype_support"],
                                       strict=True)}
    assert by[("neg", "forward")] == {}  # written without the field
    assert by[("neg", "dtypes")]["int16"] == "refused"


def test_dtype_gaps_table_lists_refused_pairs_in_dtype_order():
    df, _ = _loaded()
    gaps = dtype_gaps(df)
    assert list(gaps.itertuples(index=False, name=None)) == [("mlu", "neg", "uint8"),
                                                             ("mlu", "neg", "int16")]


def test_an_overload_refused_at_every_dtype_is_unsupported_not_a_gap(tmp_path):
    lines = DTYPES.read_text().splitlines()
    rec = json.loads(lines[-1])
    rec.update(overload="sin", verdict="unsupported", category="missing_kernel",
               dtype_support={"bool": "cpu_rejects", "float32": "refused", "float64": "refused"})
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([*lines, json.dumps(rec)]) + "\n")
    gaps = dtype_gaps(frame(read(path)))
    assert set(gaps["overload"]) == {"neg"}


def test_page_data_carries_outcomes_per_cell_and_the_gaps():
    df, ann = _loaded()
    data = rpage.page_data(df, ann)
    assert [o for o, _ in data["dtype_outcomes"]][:3] == ["differs", "refused", "raises"]
    assert data["dtype_gaps"] == [{"backend": "mlu", "overload": "neg",
                                   "dtypes": ["uint8", "int16"]}]
    rows = {r[0]: r for r in data["rows"]}
    col = data["columns"].index("dtypes")
    det = data["details"][rows["neg"][5][col]]
    support = {data["dtypes"][d]: data["dtype_outcomes"][o][0] for d, o in det[12]}
    assert support["int16"] == "refused" and support["bool"] == "cpu_rejects"
    fwd = data["details"][rows["neg"][5][data["columns"].index("forward")]]
    assert fwd[12] == []  # the forward check's cells fall back to its tallies
    json.dumps(data, allow_nan=False)


def test_html_has_the_gaps_tab(tmp_path):
    out = tmp_path / "r.html"
    reports.write_html([DTYPES], out)
    html = out.read_text()
    assert 'data-tab="gaps">Dtype gaps (1)</button>' in html


def test_json_and_csv_exports_carry_the_gaps(tmp_path, capsys):
    import pandas as pd

    assert main(["report", str(DTYPES), "--format", "json", "-o", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["dtype_gaps"] == [{"backend": "mlu", "overload": "neg", "dtypes": ["uint8", "int16"]}]
    neg = next(v for v in doc["verdicts"] if v["overload"] == "neg" and v["check"] == "dtypes")
    assert neg["dtype_support"]["uint8"] == "refused"

    assert main(["report", str(DTYPES), "--format", "csv", "-o", str(tmp_path / "r.csv")]) == 0
    csv = pd.read_csv(tmp_path / "r.csv", keep_default_na=False)
    row = csv[(csv.overload == "neg") & (csv.check == "dtypes")].iloc[0]
    assert row.dtype_gaps == "uint8,int16"
    assert json.loads(row.dtype_support)["float64"] == "ok"
    assert set(csv[csv.check == "forward"].dtype_gaps) == {""}


@pytest.mark.browser
def test_browser_dtype_cells_follow_the_dtypes_check(tmp_path):
    chromium = pytest.importorskip("chromium")
    if not chromium.available():
        pytest.skip("headless chromium not found")
    from test_browser import READY, mark_cell

    out = tmp_path / "r.html"
    reports.write_html([DTYPES], out)
    with chromium.Chromium(width=1440, height=900) as browser:
        page = browser.open(out)
        page.wait_for(READY)
        page.click("button[data-tab=dtypes]")
        mark_cell(page, "neg", "int16")
        assert page.eval("document.getElementById('target').className") == "cell d-backend_rejects"
        assert page.eval("document.getElementById('target').textContent") == "refused"
        page.eval("document.getElementById('target').removeAttribute('id')")
        mark_cell(page, "exp", "float64")
        assert page.eval("document.getElementById('target').textContent") == "differs"
        page.click("#target")
        page.wait_for("document.getElementById('drawer').classList.contains('open')")
        assert "dtypes checkdiffers" in page.eval("document.getElementById('d-body').textContent")
        page.click("button[data-tab=gaps]")
        text = page.eval("document.getElementById('view-list').textContent")
        assert "neg" in text and "uint8, int16" in text
        assert page.errors() == []
