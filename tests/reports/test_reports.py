"""Tests of reports/: reading results, pandas tables, exports, the HTML page (without a browser)."""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from pathlib import Path

import pytest

import reports
from conformance.cli import main
from opdb.errors import InputError
from reports import html as rhtml
from reports import ops as rops
from reports import page as rpage
from reports import templating as rtemplating
from reports.results import ResultsWarning, read
from reports.tables import (
    NOT_TESTED,
    column_keys,
    count,
    dtype_cell,
    frame,
    latest,
    overload_table,
    worst,
)

DATA = Path(__file__).parent.parent / "data" / "reports"
SMALL = DATA / "small.jsonl"
COVERAGE = DATA / "coverage-small.json"


def load_names(path: Path = SMALL, coverage: Path | None = None):
    """load() without opdb (fast, deterministic)."""
    df = frame(read(path))
    ann = rops.annotate(df["overload"].unique(), coverage, use_opdb=False)
    return df, ann


def page(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert m, "page data script missing"
    data = json.loads(m.group(1))
    data["strings"] = rhtml.unpack_strings(data)
    return data


# -- reading ----------------------------------------------------------------------------------


def test_read_small_keeps_every_verdict_and_skips_unknown_records():
    res = read(SMALL)
    assert len(res.runs) == 1 and res.runs[0]["seed"] == 1234
    assert [v["overload"] for v in res.verdicts][:3] == ["add.Tensor"] * 3
    assert len(res.verdicts) == 9  # the "progress" record is skipped silently
    assert res.warnings == ()


def test_nonfinite_strings_become_floats():
    res = read(SMALL)
    bc = next(v for v in res.verdicts if v["check"] == "broadcast")
    assert math.isnan(bc["duration_s"])


def test_truncated_last_line_warns_with_file_and_line_and_keeps_the_rest():
    with pytest.warns(ResultsWarning, match=r"truncated\.jsonl:5: truncated record"):
        res = read(DATA / "truncated.jsonl")
    assert len(res.verdicts) == 3
    assert res.warnings and "truncated.jsonl:5:" in res.warnings[0]


def test_malformed_middle_line_is_skipped_not_fatal(tmp_path):
    lines = SMALL.read_text().splitlines()
    lines[3] = lines[3][:40]  # damage line 4 of 11
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.warns(ResultsWarning, match=r"bad\.jsonl:4: malformed record"):
        res = read(bad)
    assert len(res.verdicts) == 8


def test_verdict_without_required_fields_is_skipped_with_warning(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"record": "verdict", "overload": "add.Tensor", "verdict": "pass"}\n'
                 '{"record": "verdict", "overload": "relu", "check": "forward", "verdict": "pass"}\n')
    with pytest.warns(ResultsWarning, match=r"r\.jsonl:1: verdict record without check"):
        res = read(p)
    assert [v["overload"] for v in res.verdicts] == ["relu"]


@pytest.mark.parametrize("content", [b"", b"\n\n", b"not json at all\n", b"\x89PNG\r\n\x1a\n\x00\x00"])
def test_wholly_unreadable_file_is_input_error(tmp_path, content):
    p = tmp_path / "r.jsonl"
    p.write_bytes(content)
    with pytest.warns(ResultsWarning) if content.strip() else _nothing():
        with pytest.raises(InputError, match=r"r\.jsonl"):
            read(p)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_missing_file_and_directory_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="directory"):
        read(tmp_path)
    with pytest.raises(InputError):
        read([])


# -- tables -----------------------------------------------------------------------------------


def test_load_columns_annotations_and_attrs():
    df = reports.load(SMALL, coverage=COVERAGE)
    for col in ("overload", "check", "backend", "verdict", "category", "message", "missing_op",
                "examples", "duration_s", "seed", "torch_version", "repro", "expected", "dtypes",
                "source", "line", "run", "family", "kind", "tags", "status"):
        assert col in df.columns, col
    assert len(df) == 9
    assert df.attrs["annotation"] == "coverage"
    assert df.attrs["runs"][0]["backend"] == "mlu"
    row = df[(df.overload == "add_.Tensor") & (df.check == "forward")].iloc[0]
    assert (row.family, row.kind, row.status, row.line) == ("add", "inplace", "native", 6)
    assert row.tags == ("inplace", "pointwise")
    assert row["dtypes"]["float16"] == {"examples": 9, "cpu_ok": 9, "backend_ok": 9, "agree": 8}


def test_load_without_opdb_derives_family_from_names(monkeypatch):
    def broken():
        raise ImportError("opdb is being rebuilt")

    monkeypatch.setattr(rops, "_load_opdb", broken)
    df = reports.load(SMALL)
    assert df.attrs["annotation"] == "names"
    assert "opdb unavailable: ImportError" in df.attrs["annotation_note"]
    got = dict(zip(df.overload, zip(df.family, df.kind, strict=True), strict=True))
    assert got["add_.Tensor"] == ("add", "inplace")
    html = rhtml.render(rpage.page_data(df, rops.annotate(df.overload.unique())))
    assert "guessed from overload names" in html and "cannot be counted as not tested" in html
    assert got["add.out"] == ("add", "out")
    assert got["relu"] == ("relu", "functional")


def test_load_with_opdb():
    df = reports.load(SMALL)
    assert df.attrs["annotation"] == "opdb"
    row = df[df.overload == "add_.Tensor"].iloc[0]
    assert (row.family, row.kind) == ("add", "inplace")
    assert "pointwise" in row.tags


@pytest.mark.parametrize("name,family,kind", [
    ("add.Tensor", "add", "functional"), ("add_.Scalar", "add", "inplace"),
    ("add.out", "add", "out"), ("add.Scalar_out", "add", "out"),
    ("__iand__.Tensor", "__and__", "inplace"), ("__and__.Scalar", "__and__", "functional"),
    ("_adaptive_avg_pool2d_backward", "_adaptive_avg_pool2d_backward", "functional"),
    ("relu_", "relu", "inplace"),
])
def test_family_and_kind_from_name(name, family, kind):
    assert (rops.family_from_name(name), rops.kind_from_name(name)) == (family, kind)


def test_names_follow_opdb_rules_and_opdb_wins_where_it_knows():
    """Family by name is opdb.model's rule for every overload torch has; the one thing a name
    cannot say (``out`` overloads named ``grad_input``, ``values``, ...) comes from opdb."""
    db = rops._load_opdb()
    assert all(rops.family_from_name(ov.name) == ov.family for ov in db.overloads)
    in_place = [ov.name for ov in db.overloads if ov.kind == "inplace"]
    assert all(rops.kind_from_name(n) == "inplace" for n in in_place)
    ann = rops.annotate(["nll_loss_backward.grad_input"])
    assert ann.info("nll_loss_backward.grad_input").kind == "out"
    df = reports.load(SMALL, annotate_ops=False)
    table = reports.overload_table(df)  # no annotation columns: opdb's facts, not name guesses
    assert set(table.kind) <= {"functional", "inplace", "out"}
    assert reports.tables.annotations_of(df).source == "opdb"


def test_latest_keeps_last_record_of_a_rerun(tmp_path):
    p = tmp_path / "r.jsonl"
    text = SMALL.read_text()
    rerun = json.loads(text.splitlines()[1])
    rerun["verdict"] = "fail"
    p.write_text(text + json.dumps(rerun) + "\n")
    df = frame(read(p))
    assert len(df) == 10
    cur = latest(df)
    assert len(cur) == 9
    assert cur[(cur.overload == "add.Tensor") & (cur.check == "forward")].verdict.item() == "fail"


def test_worst_and_count_definitions():
    assert worst(["pass", "fail", "unsupported"]) == "fail"
    assert worst(["pass", "skip"]) == "pass"
    assert worst(["skip"]) == NOT_TESTED
    assert worst([]) == NOT_TESTED
    assert worst(["pass", "brand_new_verdict"]) == "brand_new_verdict"
    c = count(["pass", "pass", "fail", "skip"], total=10)
    assert (c.total, c.tested, c.passed, c.not_tested) == (10, 3, 2, 7)
    assert c.pass_rate == pytest.approx(2 / 3) and c.tested_rate == pytest.approx(0.3)
    assert c.by_verdict[NOT_TESTED] == 6 and c.by_verdict["skip"] == 1


def test_overload_table_counts_untested_overloads_from_coverage():
    df, ann = load_names(coverage=COVERAGE)
    universe, text = rpage.universe_of(df, ann)
    t = overload_table(df, ann, universe=universe)
    assert list(t.columns[:5]) == ["overload", "family", "kind", "tags", "status"]
    # columns come from the data: the run header's checks plus "autograd", seen only in a record
    assert column_keys(df) == ["forward", "promotion", "broadcast", "autograd"]
    by = t.set_index("overload")
    assert by.loc["add.Scalar", "verdict"] == NOT_TESTED      # in coverage, never run
    assert by.loc["add.Tensor", "verdict"] == "fail"
    assert by.loc["mul.Tensor", "verdict"] == "crash"
    assert by.loc["add_.Tensor", "promotion"] == "skip"
    assert "sub.Tensor" not in by.index  # out of the run's --ops regex "add|mul|relu"
    assert "matching the run's --ops" in text


def test_overload_table_from_loaded_frame_alone():
    t = reports.overload_table(reports.load(SMALL, coverage=COVERAGE))
    by = t.set_index("overload")
    assert by.loc["add_.Tensor", "status"] == "native" and by.loc["add_.Tensor", "forward"] == "fail"
    assert by.loc["add.out", "verdict"] == "unsupported"


def test_scope_applies_run_ops_regex():
    names = ["add.Tensor", "add_.Scalar", "addmm", "sub.Tensor", "relu"]
    # like `conformance run --ops`: full match of name, base name or family
    assert rops.scope(names, ["add|relu"]) == ["add.Tensor", "add_.Scalar", "relu"]
    assert rops.scope(names, ["add.Tensor"]) == ["add.Tensor"]
    assert rops.scope(names, ["add_"]) == ["add_.Scalar"]
    assert rops.scope(names, [None, "relu"]) == names


@pytest.mark.parametrize("counts,cls", [
    ((0, 0, 0, 0), "none"), ((5, 5, 5, 5), "agree"), ((3, 0, 0, 3), "both_reject"),
    ((5, 5, 2, 2), "backend_rejects"), ((5, 5, 5, 3), "disagree"),
    ((2, 0, 2, 0), "backend_accepts"),  # complex abs_: CPU raises, the backend returns
])
def test_dtype_cell(counts, cls):
    assert dtype_cell(*counts) == cls


def test_dtype_table_is_long_and_ordered():
    df, _ = load_names()
    t = reports.dtype_table(df)
    sub = t[(t.overload == "add.Tensor") & (t.check == "promotion")]
    assert list(sub.dtype) == ["bool", "int64", "float64", "complex64"]
    assert sub[sub.dtype == "bool"].backend_ok.item() == 1


def test_coverage_errors_name_the_file(tmp_path):
    bad = tmp_path / "cov.json"
    bad.write_text('{"overloads": [\n{"name": 1}]}')
    with pytest.raises(InputError, match=r"cov\.json: overloads\[0\] has no 'name'"):
        rops.read_coverage(bad)
    bad.write_text("{\n\n oops")
    with pytest.raises(InputError, match=r"cov\.json:3: not valid JSON"):
        rops.read_coverage(bad)
    with pytest.raises(InputError, match="not found"):
        rops.read_coverage(tmp_path / "none.json")


# -- HTML page --------------------------------------------------------------------------------


def test_html_autoescape_is_on_for_our_template_extension():
    env = rtemplating.environment()
    t = env.get_template("report.html.j2")
    assert t.environment.autoescape("report.html.j2") is True
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"


def test_page_data_summary_and_details():
    df, ann = load_names(coverage=COVERAGE)
    data = rpage.page_data(df, ann)
    s = data["summary"]["overloads"]
    # universe: coverage names matching add|mul|relu = 6 (sub.Tensor is out of scope)
    assert s["total"] == 6
    assert s["tested"] == 5 and s["passed"] == 1 and s["not_tested"] == 1
    assert data["columns"] == ["forward", "promotion", "broadcast", "autograd"]
    rows = {r[0]: r for r in data["rows"]}
    d = data["details"][rows["add.out"][5][0]]
    assert data["verdicts"][d[0]] == "unsupported"
    assert data["strings"][d[3]] == "add.out"  # missing op
    assert data["summary"]["static"]["missing"] == 2
    json.dumps(data, allow_nan=False)  # strict JSON: no NaN anywhere


def test_report_html_is_self_contained_and_escapes_everything(tmp_path):
    out = tmp_path / "report.html"
    reports.write_html(results=[DATA / "xss.jsonl"], output=out, coverage=None)
    html = out.read_text()
    # nothing loaded from elsewhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "default-src 'none'" in html
    # the only <script> tags are ours: the data blob and the inline code
    assert len(re.findall(r"<script\b", html)) == 2
    assert "<img" not in html and "<svg" not in html  # only escaped forms anywhere
    assert "&lt;script&gt;alert(&#39;b&#39;)&lt;/script&gt;" in html  # escaped in the header
    data = page(html)
    msgs = " ".join(data["strings"])
    assert "<script>window.__pwned=1</script>" in msgs  # kept as text, shown via textContent
    assert any(c.startswith("forward<svg") for c in data["columns"])


def test_report_columns_follow_the_data(tmp_path):
    p = tmp_path / "r.jsonl"
    lines = SMALL.read_text().splitlines()
    rec = json.loads(lines[1])
    rec.update(check="noncontiguous_strided_v9", verdict="fail")
    p.write_text("\n".join([*lines, json.dumps(rec)]) + "\n")
    df, ann = load_names(p)
    data = rpage.page_data(df, ann)
    assert data["columns"][-1] == "noncontiguous_strided_v9"
    assert "noncontiguous_strided_v9" in rhtml.render(data)


def test_multiple_backends_get_separate_columns(tmp_path):
    p = tmp_path / "cuda.jsonl"
    p.write_text(SMALL.read_text().replace('"backend": "mlu"', '"backend": "cuda"'))
    df = frame(read([SMALL, p]))
    assert "mlu:forward" in column_keys(df) and "cuda:forward" in column_keys(df)


# -- CLI --------------------------------------------------------------------------------------


def test_cli_report_html(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(SMALL), "--coverage", str(COVERAGE), "-o", str(out)]) == 0
    html = out.read_text()
    assert "Passed ÷ tested" in html and "Tested ÷ total" in html
    assert "1 not tested" in html
    xtab = html.split('id="static-by-verdict"', 1)[1].split("</table>", 1)[0]
    # native: add.Tensor fail, add_.Tensor fail, mul.Tensor crash; missing: add.out unsup, relu pass
    assert re.search(r"native</td><td>0</td><td>2</td><td>0</td><td>1</td>", xtab)
    assert re.search(r"missing</td><td>1</td><td>0</td><td>1</td>", xtab)
    assert "wrote" in capsys.readouterr().err


def test_cli_report_warns_on_damage_and_exit_2_on_missing(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(DATA / "truncated.jsonl"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"conformance report: warning: .*truncated\.jsonl:5: truncated record", err)
    assert "truncated.jsonl:5" in out.read_text()  # the page says so too
    assert main(["report", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "missing.jsonl: results file not found" in err


def test_cli_report_csv_json_parquet(tmp_path, capsys):
    import pandas as pd

    assert main(["report", str(SMALL), "--coverage", str(COVERAGE), "--format", "csv",
                 "-o", str(tmp_path / "r.csv")]) == 0
    csv = pd.read_csv(tmp_path / "r.csv")
    assert len(csv) == 9 and {"family", "status", "dtypes"} <= set(csv.columns)
    assert json.loads(csv.loc[0, "dtypes"])["float32"]["agree"] == 12

    assert main(["report", str(SMALL), "--format", "json", "-o", "-"]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert doc["format"] == "opconform-report" and len(doc["verdicts"]) == 9
    bc = next(v for v in doc["verdicts"] if v["check"] == "broadcast")
    assert bc["duration_s"] is None  # NaN → null
    assert doc["summary"]["overloads"]["tested"] >= 1

    pytest.importorskip("pyarrow")
    assert main(["report", str(SMALL), "--format", "parquet", "-o", str(tmp_path / "r.pq")]) == 0
    pq = pd.read_parquet(tmp_path / "r.pq")
    assert len(pq) == 9 and pq.overload.iloc[0] == "add.Tensor"


def test_cli_parquet_without_pyarrow_is_one_line_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(["report", str(SMALL), "--format", "parquet", "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("conformance report: error: --format parquet needs pyarrow: "
                   "pip install 'opconform[parquet]'")


def test_cli_report_unwritable_output_is_input_error(tmp_path, capsys):
    assert main(["report", str(SMALL), "-o", str(tmp_path / "no" / "such" / "dir.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_synthetic_generator_full_run_renders(tmp_path):
    sys.path.insert(0, str(DATA))
    try:
        import synth
    finally:
        sys.path.remove(str(DATA))
    results, coverage = synth.generate(str(tmp_path), n_overloads=300, seed=3)
    out = tmp_path / "r.html"
    reports.write_html([results], out, coverage)
    data = page(out.read_text())
    assert len(data["rows"]) == 300
    assert data["summary"]["overloads"]["not_tested"] > 0
    assert data["columns"] == list(synth.CHECKS)
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_reports_never_import_the_engine(tmp_path):
    import subprocess

    code = (
        "import sys, reports, reports.diff, reports.export\n"
        f"reports.write_html([{str(SMALL)!r}], {str(tmp_path / 'r.html')!r}, {str(COVERAGE)!r})\n"
        "bad = sorted(m for m in sys.modules if m == 'conformance' or m.startswith(('conformance.', 'kernels')))\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-1500:]


def test_results_with_only_a_run_header(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(SMALL.read_text().splitlines()[0] + "\n")
    df, ann = load_names(p, coverage=COVERAGE)
    data = rpage.page_data(df, ann)
    assert data["summary"]["overloads"]["tested"] == 0
    assert data["summary"]["overloads"]["not_tested"] == 6
    assert data["columns"] == ["forward", "promotion", "broadcast"]


def test_write_html_accepts_a_coverage_dict(tmp_path):
    cov = json.loads(COVERAGE.read_text())
    out = tmp_path / "r.html"
    reports.write_html(results=[SMALL], output=out, coverage=cov)
    html = out.read_text()
    assert 'id="static-by-verdict"' in html and "Missing variants (1)" in html
    with pytest.raises(InputError, match="no 'overloads' list"):
        reports.write_html(results=[SMALL], output=out, coverage={"backend": "mlu"})


def test_report_shows_failures_by_kind(tmp_path):
    """The three error kinds (and the informational dtype-gap passes) each get a row, most
    severe first, with counts per check."""
    run = {"record": "run", "backend": "mlu", "checks": ["forward", "promotion"], "ops": None}
    recs = [run] + [
        {"record": "verdict", "overload": o, "check": c, "verdict": v, "category": cat,
         "message": "m"}
        for o, c, v, cat in [("add.Tensor", "forward", "fail", "error_raises"),
                             ("add.Tensor", "promotion", "fail", "error_type"),
                             ("sub.Tensor", "promotion", "fail", "error_type"),
                             ("mul.Tensor", "promotion", "fail", "error_accepts"),
                             ("threshold", "promotion", "pass", "cpu_dtype_gap"),
                             ("neg", "forward", "pass", None)]]
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    df = reports.load(p)
    kinds = rpage.page_data(df, rops.annotate(df.overload.unique()))["summary"]["fail_kinds"]
    assert [k["category"] for k in kinds] == ["error_raises", "error_accepts", "error_type",
                                              "cpu_dtype_gap"]
    assert kinds[2]["counts"] == {"promotion": 2} and kinds[3]["informational"]
    html = rhtml.render(rpage.page_data(df, rops.annotate(df.overload.unique())))
    assert 'id="fail-kinds"' in html and "missing validation" in html


def test_backward_parity_puts_static_prediction_beside_the_autograd_verdict(tmp_path):
    """Issue 10.4: per forward, what coverage predicted (missing_backward) and what the autograd
    check found, with how they relate."""
    lines = SMALL.read_text().splitlines()
    base = json.loads(lines[1])

    def auto(overload: str, verdict: str, missing_op: str | None = None) -> str:
        rec = dict(base, overload=overload, check="autograd", verdict=verdict,
                   category="missing_kernel" if verdict == "unsupported" else None,
                   missing_op=missing_op)
        return json.dumps(rec)

    p = tmp_path / "r.jsonl"
    p.write_text("\n".join([
        *lines[:2],
        auto("add.Tensor", "unsupported", "mul.Tensor"),  # predicted mul.Tensor: agree
        auto("relu", "unsupported", "threshold_backward"),  # not predicted: dynamic only
        auto("add_.Tensor", "unsupported", "add_.Tensor"),  # its own forward missing: not listed
    ]) + "\n")
    cov = json.loads(COVERAGE.read_text())
    cov["missing_backward"] = [{"forward": "add.Tensor", "missing": ["mul.Tensor"]},
                               {"forward": "mul.Tensor", "missing": ["mul.Tensor"]},
                               {"forward": "relu", "missing": []}]
    df, ann = load_names(p, coverage=None)
    ann = rops.annotate(df["overload"].unique(), cov, use_opdb=False)
    data = rpage.page_data(df, ann)
    rows = {r["forward"]: r for r in data["backward_parity"]}
    assert rows["add.Tensor"]["relation"] == rpage.PARITY_AGREE
    assert rows["add.Tensor"]["missing_op"] == "mul.Tensor"
    assert rows["mul.Tensor"]["relation"] == rpage.PARITY_NOT_TESTED
    assert rows["mul.Tensor"]["verdict"] is None
    assert rows["relu"]["relation"] == rpage.PARITY_DYNAMIC_ONLY
    assert "add_.Tensor" not in rows
    # the page carries it and renders the tab
    html = rhtml.render(data)
    assert page(html)["backward_parity"] == data["backward_parity"]
    assert "static vs autograd (3)" in html


def test_backward_parity_static_only_when_the_backward_ran():
    df, ann = load_names(coverage=COVERAGE)
    cur = df.copy()
    cur.loc[(cur.overload == "mul.Tensor") & (cur.check == "autograd"), "verdict"] = "pass"
    rows = rpage.backward_parity(cur, ann)
    assert [(r["forward"], r["relation"]) for r in rows] == [("mul.Tensor", rpage.PARITY_STATIC_ONLY)]
