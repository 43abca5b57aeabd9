"""The HTML report in a real browser: headless Chromium driven over the DevTools protocol.

Screenshots go to test-artifacts/ (gitignored) for people and CI to look at.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from chromium import CHROMIUM, Chromium, available

import reports

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not available(),
        reason=f"headless chromium not found at {CHROMIUM} (apt-get install chromium, or set OPCONFORM_CHROMIUM)",
    ),
]

DATA = Path(__file__).parent.parent / "data" / "reports"
ARTIFACTS = Path(__file__).parent.parent.parent / "test-artifacts"
READY = "window.__report && window.__report.ready"
DRAWER_OPEN = ("document.getElementById('drawer').classList.contains('open') && "
               "getComputedStyle(document.getElementById('drawer')).transform === 'none'")


@pytest.fixture(scope="module")
def browser():
    with Chromium(width=1440, height=900) as b:
        yield b


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "small.html"
    reports.write_html([DATA / "small.jsonl"], out, DATA / "coverage-small.json")
    return out


@pytest.fixture(scope="module")
def synthetic_report(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    sys.path.insert(0, str(DATA))
    try:
        import synth
    finally:
        sys.path.remove(str(DATA))
    results, coverage = synth.generate(str(d), n_overloads=600, seed=5)
    out = d / "report.html"
    reports.write_html([results], out, coverage)
    return out


def mark_cell(page, overload: str, column: str) -> None:
    """Give the matrix cell (overload, column) the id #target (test-only) so it can be clicked."""
    js = """(function(ov, col){
      var heads = Array.from(document.querySelectorAll('#head > div')).map(function(h){return h.textContent;});
      var j = heads.indexOf(col);
      var rows = document.querySelectorAll('#spacer .grid-row:not(.group)');
      for (var i = 0; i < rows.length; i++) {
        if (rows[i].children[0].textContent === ov) { rows[i].children[j].id = 'target'; return true; }
      }
      return false;
    })""" + f"({json.dumps(overload)}, {json.dumps(column)})"
    assert page.eval(js), f"no cell for {overload} / {column}"


def test_report_loads_and_screenshot(browser, synthetic_report):
    page = browser.open(synthetic_report)
    page.wait_for(READY)
    assert page.eval("window.__report.rows") == 600
    assert page.eval("document.getElementById('count').textContent") == "showing 600 of 600 overloads"
    # lazily rendered: far fewer DOM rows than overloads
    assert 10 < page.eval("document.querySelectorAll('#spacer .grid-row').length") < 200
    assert page.errors() == []
    png = page.screenshot(ARTIFACTS / "report.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_search_box_filters_rows(browser, synthetic_report):
    page = browser.open(synthetic_report)
    page.wait_for(READY)
    page.type("#search", "add")
    shown = page.eval("window.__report.shown()")
    assert 0 < shown < 600
    names = page.eval("Array.from(document.querySelectorAll('#spacer .grid-row:not(.group) .name'))"
                      ".map(function(e){return e.textContent;})")
    assert names and all("add" in n for n in names)
    assert page.eval("document.getElementById('count').textContent") == f"showing {shown} of 600 overloads"
    # regex search, then a broken regex is flagged, not thrown
    page.eval("document.getElementById('search').value = ''")
    page.type("#search", "/^_add_relu\\./")
    names = page.eval("Array.from(document.querySelectorAll('#spacer .name')).map(function(e){return e.textContent;})")
    assert names and all(n.startswith("_add_relu.") for n in names)
    page.eval("document.getElementById('search').value = ''")
    page.type("#search", "/(/")
    assert page.eval("document.getElementById('count').textContent") == "invalid regex"
    assert page.errors() == []


def test_cell_click_shows_message_and_repro(browser, small_report):
    page = browser.open(small_report)
    page.wait_for(READY)
    mark_cell(page, "add.Tensor", "promotion")
    page.click("#target")
    page.wait_for(DRAWER_OPEN)  # slid in: buttons are where they will stay
    assert page.eval("document.getElementById('d-title').textContent") == "add.Tensor"
    body = page.eval("document.getElementById('d-body').textContent")
    assert "out.dtype=float32, but should be float64 [add.Tensor(int64, float64)]" in body
    repro = page.eval("document.getElementById('repro').textContent")
    assert repro.startswith("import torch\na = torch.tensor([1], dtype=torch.int64)")
    browser.send("Browser.grantPermissions",
                 {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    page.click("#copy-repro")
    label = page.wait_for("document.getElementById('copy-repro').textContent !== 'Copy' && "
                          "document.getElementById('copy-repro').textContent")
    assert label == "Copied"
    assert page.eval("navigator.clipboard.readText()", await_promise=True) == repro
    page.screenshot(ARTIFACTS / "report-drawer.png")
    # the unsupported cell names the missing op
    page.eval("document.getElementById('target').removeAttribute('id')")
    mark_cell(page, "add.out", "forward")
    page.click("#target")
    assert "missing opadd.out" in page.eval("document.getElementById('d-body').textContent")
    assert page.errors() == []


def test_filters_and_dtype_matrix(browser, small_report):
    page = browser.open(small_report)
    page.wait_for(READY)
    page.eval("var s=document.getElementById('f-verdict'); s.value='1'; "
              "s.dispatchEvent(new Event('change'))")  # verdicts[1] == "fail" (overall)
    assert page.eval("window.__report.shown()") == 2
    names = page.eval("Array.from(document.querySelectorAll('#spacer .name')).map(function(e){return e.textContent;})")
    assert names == ["add.Tensor", "add_.Tensor"]  # an expected failure is still a failure
    page.click("button[data-tab=dtypes]")
    heads = page.eval("Array.from(document.querySelectorAll('#head > div')).map(function(h){return h.textContent;})")
    assert heads[-12:] == list(reports.DTYPES)
    page.eval("var s=document.getElementById('f-verdict'); s.value=''; s.dispatchEvent(new Event('change'))")
    mark_cell(page, "add.Tensor", "bool")
    assert page.eval("document.getElementById('target').className") == "cell d-backend_rejects"
    page.click("#target")
    page.wait_for(DRAWER_OPEN)
    body = page.eval("document.getElementById('d-body').textContent")
    assert "backend rejects what CPU accepts" in body and "promotion" in body
    page.screenshot(ARTIFACTS / "report-dtypes.png")
    assert page.errors() == []


def test_script_in_results_renders_as_text(browser, tmp_path):
    out = tmp_path / "xss.html"
    reports.write_html([DATA / "xss.jsonl"], out)
    page = browser.open(out)
    page.wait_for(READY)
    page.type("#search", "add.Tensor")  # opdb may list every overload; bring this one into view
    mark_cell(page, "add.Tensor", "forward")
    page.click("#target")
    page.wait_for(DRAWER_OPEN)
    body = page.eval("document.getElementById('d-body').textContent")
    assert "<script>window.__pwned=1</script> & <b>bold</b>" in body
    assert "<img src=x onerror=\"window.__pwned=3\">" in body
    assert page.eval("document.querySelector('#d-body b') === null")
    page.click("#d-close")
    page.click("button[data-tab=runs]")
    assert page.eval("typeof window.__pwned") == "undefined"
    assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
    assert page.errors() == []


def test_view_is_kept_in_the_url_hash(browser, small_report):
    page = browser.open(small_report.as_uri() + "#q=add&verdict=fail&open=add.Tensor/promotion")
    page.wait_for(READY)
    assert page.eval("window.__report.shown()") == 2  # add.Tensor, add_.Tensor
    assert page.eval("document.getElementById('search').value") == "add"
    page.wait_for(DRAWER_OPEN)
    assert "out.dtype=float32" in page.eval("document.getElementById('d-body').textContent")
    page.click("#d-close")
    assert page.eval("location.hash") == "#q=add&verdict=fail"
    page.click("button[data-tab=dtypes]")
    assert page.eval("location.hash") == "#tab=dtypes&q=add&verdict=fail"
    # names that are not in this report are ignored, not errors
    page = browser.open(small_report.as_uri() + "#tab=nope&tag=nope&open=nope/nope")
    page.wait_for(READY)
    assert page.eval("window.__report.shown()") == 6
    assert page.errors() == []


def test_diff_page_filters(browser, tmp_path):
    from reports.diff import compare, render_html
    from reports.results import read
    from reports.tables import frame

    d = compare(frame(read(DATA / "small.jsonl")), frame(read(DATA / "small-after.jsonl")))
    out = tmp_path / "diff.html"
    out.write_text(render_html(d), encoding="utf-8")
    page = browser.open(out)
    assert page.eval("document.getElementById('count').textContent") == "10 of 10 rows"
    page.type("#search", "relu")
    assert page.eval("document.getElementById('count').textContent") == "2 of 10 rows"
    page.screenshot(ARTIFACTS / "diff.png")
    assert page.errors() == []


def test_sorting_by_a_check_column(browser, small_report):
    page = browser.open(small_report)
    page.wait_for(READY)
    names = "Array.from(document.querySelectorAll('#spacer .name')).map(function(e){return e.textContent;})"
    heads = page.eval("Array.from(document.querySelectorAll('#head > div')).map(function(h){return h.textContent;})")
    col = heads.index("promotion") + 1
    page.click(f"#head > div:nth-child({col})")
    got = page.eval(names)
    assert got[:2] == ["add.Tensor", "add_.Tensor"]  # fail, then skip, then not tested
    assert page.eval("document.querySelectorAll('#spacer .grid-row.group').length") == 0
    heads = page.eval("Array.from(document.querySelectorAll('#head > div')).map(function(h){return h.textContent;})")
    page.click(f"#head > div:nth-child({heads.index('promotion') + 1})")  # again: descending
    assert page.eval(names)[-2:] == ["add_.Tensor", "add.Tensor"]
    assert page.errors() == []


def test_backward_tab_shows_static_beside_autograd(browser, small_report):
    page = browser.open(small_report.as_uri() + "#tab=backward")
    page.wait_for(READY)
    text = page.eval("document.getElementById('view-list').textContent")
    # coverage-small predicts mul.Tensor's backward missing; the run's autograd item timed out
    assert "static: missing backward ops" in text and "mul.Tensor" in text
    assert "timeout" in text and "inconclusive" in text
    assert page.errors() == []


def test_decompositions_tab_shows_static_twin_beside_compile(browser, tmp_path):
    cov = json.loads((DATA / "coverage-small.json").read_text())
    cov["decompositions"] = {
        "compile_backend": "inductor", "table": "inductor",
        "summary": {"decomposed": 1, "traced": 1, "untraced": 0, "needs_missing": 1},
        "rows": [{"overload": "add.Tensor", "source": "table", "calls": ["where.self"],
                  "missing": ["where.self"]}]}
    out = tmp_path / "r.html"
    reports.write_html([DATA / "small.jsonl"], out, cov)
    page = browser.open(out.as_uri() + "#tab=decomp")
    page.wait_for(READY)
    text = page.eval("document.getElementById('view-list').textContent")
    assert "static: missing ops of its decomposition" in text and "where.self" in text, text
    assert "compile backend inductor" in text and "no compile verdict" in text, text
    assert page.errors() == []


def test_page_opens_on_the_by_cause_view_and_a_cause_expands(browser, tmp_path):
    """Issue 25, 6(f): one bug in many overloads is one line, first on the page; it opens on
    its overloads (links to their cells) and its shortest repro."""
    sys.path.insert(0, str(DATA))
    try:
        import synth
    finally:
        sys.path.remove(str(DATA))
    out = tmp_path / "causes.html"
    reports.write_html([synth.write_causes(str(tmp_path / "causes.jsonl"))], out)
    page = browser.open(out)
    page.wait_for(READY)
    # the first section, in view without scrolling, and above the summary cards
    assert page.eval("document.querySelector('main > section').id") == "causes"
    assert page.eval("document.getElementById('causes').getBoundingClientRect().top") < 200
    assert page.eval("document.querySelectorAll('#cause-list details.cause').length") == 4
    first = "#cause-list details.cause:first-child"
    summary = page.eval(f"document.querySelector('{first} > summary').textContent")
    assert "12 failures in 8 overloads" in summary and "complex128" in summary
    assert "out values differ from CPU" in summary and "new" in summary
    page.click(f"{first} > summary")
    page.wait_for(f"document.querySelector('{first}').open && document.querySelector('{first} .c-body') !== null")
    links = page.eval(f"Array.from(document.querySelectorAll('{first} a.c-ov')).map(function(a){{return a.textContent;}})")
    assert links == sorted(synth.IMAG_OPS)
    repro = page.eval(f"document.querySelector('{first} pre.repro').textContent")
    assert repro.startswith("import torch\ntorch.ops.aten.sin  #") and "x = 1" not in repro
    page.screenshot(ARTIFACTS / "report-causes.png")
    # an overload opens its cell, on the failure of this cause (mul.Tensor has two)
    page.click(f"{first} li:nth-child(5) a.c-ov")
    page.wait_for(DRAWER_OPEN)
    assert page.eval("document.getElementById('d-title').textContent") == "mul.Tensor"
    hit = page.eval("document.querySelector('#d-body details.failure.hit').textContent")
    assert "value: out values differ from CPU {complex128}" in hit
    page.click("#d-close")
    # the drawer slides out (a 0.12 s transition) over the toolbar: a click lands on it until then
    page.wait_for("document.getElementById('drawer').getBoundingClientRect().left >= innerWidth")
    # and the cause lists its overloads in the matrix
    page.click(f"{first} .c-body h4 button")
    assert page.eval("window.__report.shown()") == 8
    assert not page.eval("document.getElementById('cause-chip').hidden")
    assert "cause=1" in page.eval("location.hash")
    page.click("#cause-chip-clear")
    assert page.eval("window.__report.shown()") > 8
    # the filter box narrows the list
    page.type("#cause-search", "float16")
    assert page.eval("document.querySelectorAll('#cause-list details.cause').length") == 1
    assert page.eval("document.getElementById('cause-count').textContent") == (
        "showing 1 of 1 matching (4 causes in all)")
    assert page.errors() == []


def test_backends_side_by_side_filters(browser, tmp_path):
    """cpu, meta and mlu runs of the add family (tests/data/reports/cross) on one page: the
    filters for "only meta disagrees" and "every backend fails", and the per-backend totals."""
    out = tmp_path / "cross.html"
    reports.write_html(sorted((DATA / "cross").glob("*.jsonl")), out)
    page = browser.open(out)
    page.wait_for(READY)

    def show(value: str) -> list[str]:
        page.eval(f"var s = document.getElementById('cross-filter'); s.value = {json.dumps(value)};"
                  " s.dispatchEvent(new Event('change'))")
        return page.eval("Array.from(document.querySelectorAll('#cross-matrix tbody tr'))"
                         ".filter(function(r){return !r.hidden;})"
                         ".map(function(r){return r.children[0].textContent + ' ' + "
                         "r.children[1].textContent;})")

    assert len(show("all")) == 24
    only_meta = show("only:meta")
    assert len(only_meta) == 7 and "add.Tensor promotion" in only_meta
    assert show("only:mlu") == [] and show("only:cpu") == []
    assert show("allfail") == ["add.Scalar_out promotion"]
    assert page.eval("document.getElementById('cross-count').textContent") == "1 of 24 rows"
    lone = page.eval("Array.from(document.querySelectorAll('#cross-totals tbody tr'))"
                     ".map(function(r){return r.dataset.backend + ':' + "
                     "r.querySelector('.lone-count').textContent;})")
    assert lone == ["cpu:0", "meta:7", "mlu:0"]
    show("only:meta")
    page.eval("document.getElementById('cross').scrollIntoView()")
    page.screenshot(ARTIFACTS / "report-cross.png")
    assert page.errors() == []
