"""The report opens on where to look, at 1400 px: families ranked by what fails, every column
readable, a legend in view, expected failures legible, per-dtype totals."""

from __future__ import annotations

import json

import pytest
from chromium import CHROMIUM, Chromium, available
from test_browser import ARTIFACTS, DATA, READY, mark_cell

import reports
from opdb import outcomes
from reports.page import family_rank

HEADS = "Array.from(document.querySelectorAll('#head > div')).map(function(h){return h.textContent;})"
NAMES = "Array.from(document.querySelectorAll('#spacer .grid-row:not(.group) .name')).map(function(e){return e.textContent;})"
GROUPS = "Array.from(document.querySelectorAll('#spacer .grid-row.group > div')).map(function(e){return e.firstChild.textContent;})"
#: header labels cut off (ellipsis) or columns pushed out of the matrix's view
CLIPPED = """(function(){
  var s = document.getElementById('view-matrix'), r = s.getBoundingClientRect(), bad = [];
  document.querySelectorAll('#head > div').forEach(function(h){
    var b = h.getBoundingClientRect();
    if (h.scrollWidth > h.clientWidth || b.right > r.right + 0.5) bad.push(h.textContent);
  });
  return bad;
})()"""


def test_family_rank_weighs_fails_by_severity_then_unsupported_then_name():
    strings = ["value", "error_type", "why"]
    fam = {"a.x": "a", "b.x": "b", "c.x": "c", "d.x": "d", "e.x": "e", "e.y": "e"}
    cells = {
        "a.x": [("fail", 1, -1)],                       # cosmetic: severity 1
        "b.x": [("fail", 0, -1)],                       # wrong values: 3
        "c.x": [("unsupported", -1, -1)] * 2,           # no fail, 2 unsupported
        "d.x": [("fail", 0, 2), ("pass", -1, -1)],      # only an expected (known) fail
        "e.x": [("pass", -1, -1)], "e.y": [("crash", -1, -1)],  # a crash weighs 3
    }
    rank = family_rank(fam, cells, strings)
    assert sorted(rank, key=rank.get) == ["b", "e", "a", "c", "d"]
    assert outcomes.severity("error_type") == 1 and outcomes.severity("value") == 3


def in_browser(test):
    """Marks a test that drives headless Chromium (skipped where there is none)."""
    skip = pytest.mark.skipif(not available(), reason=f"headless chromium not found at {CHROMIUM}")
    return pytest.mark.browser(skip(test))


@pytest.fixture(scope="module")
def browser():
    with Chromium(width=1400, height=900) as b:
        yield b


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory):
    """The small results plus verdicts for eight checks (names as long as real ones)."""
    d = tmp_path_factory.mktemp("wide")
    lines = (DATA / "small.jsonl").read_text(encoding="utf-8").splitlines()
    extra = []
    for line in lines:
        rec = json.loads(line)
        if rec.get("record") == "verdict" and rec["check"] == "forward":
            for check in ("out", "inplace", "noncontiguous", "dtypes"):
                extra.append(json.dumps({**rec, "check": check}))
    (d / "wide.jsonl").write_text("\n".join(lines + extra) + "\n", encoding="utf-8")
    out = d / "wide.html"
    reports.write_html([d / "wide.jsonl"], out, DATA / "coverage-small.json")
    return out


@in_browser
def test_families_open_ranked_by_what_fails(browser, wide_report):
    page = browser.open(wide_report)
    page.wait_for(READY)
    groups = page.eval(GROUPS)
    # mul: a crash and a timeout (3 + 3 per check); add: a dtype fail; relu: passes
    assert groups.index("mul") < groups.index("add") < groups.index("relu"), groups
    stats = page.eval("document.querySelector('#spacer .grid-row.group .fam-stats').textContent")
    assert "severity-weighted" in stats
    assert page.errors() == []


@in_browser
@pytest.mark.parametrize("tab", ["matrix", "dtypes"])
@pytest.mark.parametrize("group", [True, False])
def test_every_column_readable(browser, wide_report, tab, group):
    page = browser.open(wide_report.as_uri() + f"#tab={tab}" + ("" if group else "&group=0"))
    page.wait_for(READY)
    heads = page.eval(HEADS)
    if tab == "dtypes":
        assert heads[-12:] == list(reports.DTYPES)
    else:
        assert {"noncontiguous", "promotion", "autograd", "Overall"} <= set(heads)
    assert page.eval(CLIPPED) == []
    if tab == "dtypes" and group:
        page.screenshot(ARTIFACTS / "report-1400-dtypes.png")
    assert page.errors() == []


@in_browser
def test_expected_failure_has_its_own_style_legend_and_reason(browser, wide_report):
    page = browser.open(wide_report)
    page.wait_for(READY)
    mark_cell(page, "add_.Tensor", "forward")
    cell = page.eval("(function(e){return [e.className, e.textContent, e.title];})"
                     "(document.getElementById('target'))")
    assert cell[0] == "cell x-fail" and cell[1] == "xfail"
    assert "known: float16 accumulates in float16 (xfail data)" in cell[2]
    color = page.eval("getComputedStyle(document.getElementById('target')).color")
    assert color != "rgb(255, 255, 255)"  # not white text on a striped red
    legend = page.eval("document.getElementById('legend').textContent")
    assert "xfail" in legend and "xpass" in legend
    assert page.eval("document.querySelector('#legend i.x-fail') !== null")


@in_browser
def test_legend_stays_in_view(browser, wide_report):
    page = browser.open(wide_report)
    page.wait_for(READY)
    page.eval("window.scrollTo(0, document.body.scrollHeight)")
    top = page.eval("document.getElementById('legend').getBoundingClientRect().top")
    assert 0 <= top < 900
    page.eval("window.scrollTo(0, 0)")


@in_browser
def test_dtype_matrix_has_per_dtype_totals(browser, wide_report):
    page = browser.open(wide_report.as_uri() + "#tab=dtypes")
    page.wait_for(READY)
    assert page.eval("document.getElementById('totals').hidden") is False
    cells = page.eval("Array.from(document.querySelectorAll('#totals .cell.tot'))"
                      ".map(function(e){return e.textContent;})")
    assert len(cells) == 12
    # add.Tensor's promotion refuses bool on the backend: one overload not agreeing
    bool_total = cells[list(reports.DTYPES).index("bool")]
    assert bool_total.startswith("1 / "), cells
    page.click("button[data-tab=matrix]")
    assert page.eval("document.getElementById('totals').hidden") is True
    assert page.errors() == []
