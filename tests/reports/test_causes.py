"""The by-cause view: failures grouped by fingerprint across overloads and checks
(reports.tables.failure_table / cause_table, the page data, the exports)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import reports
from conformance.cli import main
from opdb.errors import InputError
from opdb.fingerprints import failure_key, split_key
from reports import export as rexport
from reports import html as rhtml
from reports import ops as rops
from reports import page as rpage
from reports.results import read
from reports.tables import CAUSE_COLUMNS, cause_table, failure_table, frame

DATA = Path(__file__).parent.parent / "data" / "reports"
sys.path.insert(0, str(DATA))
try:
    import synth
finally:
    sys.path.remove(str(DATA))

IMAG = "value: out values differ from CPU {complex128}"


@pytest.fixture(scope="module")
def causes_file(tmp_path_factory) -> Path:
    return Path(synth.write_causes(str(tmp_path_factory.mktemp("causes") / "causes.jsonl")))


def write(tmp_path: Path, records: list[dict]) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return p


def fail(overload: str, check: str = "forward", *, failures: list[dict] | None = None,
         category: str = "value", message: str = "m", backend: str = "mlu",
         expected: str | None = None) -> dict:
    rec = {"record": "verdict", "overload": overload, "check": check, "backend": backend,
           "verdict": "fail", "category": category, "message": message, "repro": "r",
           "expected": expected}
    if failures is not None:
        rec["failures"] = failures
    return rec


def entry(message: str, *, category: str = "value", dtypes=("float32",), repro: str = "r",
          expected: str | None = None, key: str | None = "default") -> dict:
    return {"category": category, "message": message, "repro": repro, "expected": expected,
            "dtypes": list(dtypes),
            "key": failure_key(category, message, dtypes[:1]) if key == "default" else key}


# -- the long table: one row per failure --------------------------------------------------------


def test_failure_table_has_one_row_per_distinct_failure_of_fail_verdicts(causes_file):
    f = failure_table(frame(read(causes_file)))
    # 8 + 4 complex128, the second failure of mul.Tensor, 2 expected float16, the old record
    assert len(f) == 16
    assert set(f.columns) >= {"backend", "overload", "check", "key", "category", "message",
                              "repro", "expected", "dtypes", "derived_key"}
    assert not {"relu", "cumsum", "sort"} & set(f.overload)  # pass, unsupported, crash
    mul = f[(f.overload == "mul.Tensor") & (f.check == "forward")]
    assert list(mul.category) == ["value", "dtype"]  # the verdict's order: primary first
    assert mul.iloc[1]["dtypes"] == ("int64", "float64")


def test_failure_table_reads_the_latest_record_of_a_cell(tmp_path):
    p = write(tmp_path, [fail("abs", failures=[entry("out values differ from CPU: x")]),
                         {**fail("abs"), "verdict": "pass", "failures": []}])
    assert len(failure_table(frame(read(p)))) == 0


def test_old_records_fall_back_to_the_verdicts_own_category_and_message(tmp_path):
    """Files from before ``failures``: one failure per fail verdict, keyed by the engine's
    own normalization, so the same bug in two overloads is still one cause."""
    p = write(tmp_path, [
        fail("tan", category="shape", message="out.shape=(2, 3), but should be (3,) [tan(float32[3])]"),
        fail("atan", category="shape", message="out.shape=(4,), but should be (1, 1) [atan(float64[1])]"),
        # a fail whose list is empty is read the same way
        fail("sinh", category="shape", message="out.shape=(1,), but should be (2,) [sinh(int64[2])]",
             failures=[]),
    ])
    f = failure_table(frame(read(p)))
    assert f.derived_key.all()
    assert set(f.key) == {"shape: out.shape=(#), but should be (#)"}
    c = cause_table(frame(read(p)))
    assert len(c) == 1
    assert (c.failures[0], c.overloads[0], c.overload_names[0]) == (3, 3, ("tan", "atan", "sinh"))
    assert c["dtypes"][0] == ()  # only the call knew the dtypes


def test_old_small_file_reads(tmp_path):
    c = cause_table(reports.load(DATA / "small.jsonl", annotate_ops=False))
    assert list(c.category) == ["dtype", "value"]  # the new one first, then the expected one
    assert list(c.new) == [1, 0] and list(c.expected) == [0, 1]
    assert c.reason[1].startswith("known: float16 accumulates")


def test_a_failure_without_key_is_keyed_like_the_engine_keys_it(tmp_path):
    msg = "out values differ from CPU: Expected 1 but got 2 [abs(float32[2])]"
    p = write(tmp_path, [fail("abs", failures=[entry(msg, key=None)]),
                         fail("neg", failures=[entry(msg.replace("abs", "neg"))])])
    f = failure_table(frame(read(p)))
    assert list(f.derived_key) == [True, False]
    assert f.key.nunique() == 1 and f.key[0] == "value: out values differ from CPU {float32}"


def test_a_dtypes_check_failure_keeps_its_subject_after_the_dtype():
    """``at float32: out values differ ...``: the subject is what follows the dtype, so two
    overloads losing NaNs at some dtype are one cause titled by what differs, not "at <dtype>"."""
    key = failure_key("value", "at float32: out values differ from CPU: Mismatched elements: "
                               "1 / 4 (nan) [abs(float32[4])]", ["float32"])
    assert key == "value: at <dtype>: out values differ from CPU (nan) {float32}"
    other = failure_key("value", "at float64: out values differ from CPU: Mismatched elements: "
                                 "3 / 9 (nan) [neg(float32[9])]", ["float32"])
    assert other == key


def test_the_engine_keys_with_the_same_function():
    from conformance.engine import failure_key as engine_key

    assert engine_key is failure_key


# -- the by-cause table ---------------------------------------------------------------------------


def test_one_bug_in_many_overloads_is_one_cause(causes_file):
    c = cause_table(frame(read(causes_file)))
    assert list(c.columns) == list(CAUSE_COLUMNS)
    top = c.iloc[0]
    assert top.key == IMAG and top.category == "value"
    assert (top.failures, top.overloads, top.new, top.expected) == (12, 8, 12, 0)
    assert top.checks == ("forward", "noncontiguous")
    assert top["dtypes"] == ("complex128",)
    assert top.overload_names == synth.IMAG_OPS
    assert top.message.startswith("out values differ from CPU: Expected (1+2j) but got (1+0j)")
    assert top.message.endswith("[abs(complex128[2])]")  # the first failure's, as written
    # the shortest repro, and where it comes from
    assert (top.repro_overload, top.repro_check) == ("sin", "forward")
    assert top.repro == min((r for r in failure_table(frame(read(causes_file))).query(
        "key == @IMAG").repro), key=len)


def test_causes_sorted_new_first_then_by_size(causes_file):
    c = cause_table(frame(read(causes_file)))
    assert list(zip(c.category, c.new, c.failures, strict=True)) == [
        ("value", 12, 12), ("dtype", 1, 1), ("shape", 1, 1), ("value", 0, 2)]
    known = c.iloc[-1]
    assert known.reason == synth.KNOWN_REASON and known.overload_names == ("exp2", "expm1")


def test_sort_prefers_more_new_failures_then_size_then_overloads(tmp_path):
    a = "out values differ from CPU: a"
    b = "out.shape=(1,), but should be (2,)"
    d = "out.dtype=float32, but should be float64"
    p = write(tmp_path, [
        # a: 3 failures, 1 new; b: 2 failures both new, in one overload; d: 2 new in 2 overloads
        fail("x", failures=[entry(a, expected="k")]), fail("y", failures=[entry(a, expected="k")]),
        fail("z", failures=[entry(a)]),
        fail("x", "noncontiguous", failures=[entry(b, category="shape")]),
        fail("x", "out", failures=[entry(b, category="shape")]),
        fail("y", "out", failures=[entry(d, category="dtype")]),
        fail("z", "out", failures=[entry(d, category="dtype")]),
    ])
    c = cause_table(frame(read(p)))
    assert list(c.category) == ["dtype", "shape", "value"]
    assert list(c.new) == [2, 2, 1] and list(c.overloads) == [2, 1, 3]


def test_partly_expected_cause_counts_both(tmp_path):
    msg = "out values differ from CPU: Expected nan but got 0"
    p = write(tmp_path, [fail(o, failures=[entry(msg + f" [{o}(float32[1])]",
                                                 expected="k" if o != "c" else None)])
                         for o in ("a", "b", "c")])
    c = cause_table(frame(read(p)))
    assert len(c) == 1 and (c.new[0], c.expected[0], c.reason[0]) == (1, 2, "k")


def test_same_key_on_two_backends_is_two_causes(tmp_path):
    msg = "out values differ from CPU: x [abs(float32[1])]"
    p = write(tmp_path, [fail("abs", failures=[entry(msg)]),
                         fail("abs", failures=[entry(msg)], backend="cuda")])
    c = cause_table(frame(read(p)))
    assert sorted(c.backend) == ["cuda", "mlu"] and set(c.failures) == {1}


def test_no_failures_gives_an_empty_table_with_the_columns(tmp_path):
    p = write(tmp_path, [{"record": "verdict", "overload": "abs", "check": "forward",
                          "verdict": "pass"}])
    c = cause_table(frame(read(p)))
    assert len(c) == 0 and list(c.columns) == list(CAUSE_COLUMNS)


def test_split_key():
    assert split_key(IMAG, "value") == ("out values differ from CPU", ("complex128",))
    assert split_key("shape: out.shape=(#)", "shape") == ("out.shape=(#)", ())
    assert split_key("x: y {int64,float32}") == ("x: y", ("int64", "float32"))


# -- the page -----------------------------------------------------------------------------------


def page_of(path: Path) -> dict:
    df = frame(read(path))
    return rpage.page_data(df, rops.annotate(df.overload.unique(), use_opdb=False))


def test_page_data_lists_causes_with_their_cells(causes_file):
    data = page_of(causes_file)
    s = data["strings"]
    summary = data["summary"]["causes"]
    assert summary == {"causes": 4, "new_causes": 3, "failures": 16, "new": 14, "expected": 2,
                       "overloads": 11, "verdicts": 15, "crash": 1, "timeout": 0,
                       "unsupported": 1}
    top = data["causes"][0]
    assert s[top["key"]] == IMAG and s[top["title"]] == "out values differ from CPU"
    assert top["lead"] == ["complex128"] and top["category"] == "value"
    assert top["repro_at"] == ["sin", "forward"]
    members = dict(top["members"])
    assert sorted(members) == sorted(synth.IMAG_OPS)
    assert members["abs"] == [["forward", 1], ["noncontiguous", 1]]
    assert members["add.Tensor"] == [["forward", 1]]
    known = data["causes"][-1]
    assert dict(known["members"])["exp2"] == [["forward", 0]]
    assert s[known["reason"]] == synth.KNOWN_REASON


def test_a_verdict_with_several_failures_lists_them_for_its_drawer(causes_file):
    data = page_of(causes_file)
    s = data["strings"]
    rows = {r[0]: r for r in data["rows"]}
    fwd = data["columns"].index("forward")
    mul = data["details"][rows["mul.Tensor"][5][fwd]]
    assert [s[f[0]] for f in mul[13]] == [IMAG, "dtype: out.dtype=<dtype>, but should be <dtype> {int64}"]
    assert data["details"][rows["abs"][5][fwd]][13] == []  # one failure: the verdict's own


def test_html_opens_on_the_by_cause_view(causes_file, tmp_path):
    out = tmp_path / "r.html"
    reports.write_html([causes_file], out)
    html = out.read_text()
    body = html.split("<main>", 1)[1]
    assert body.index('id="causes"') < body.index('id="summary"') < body.index('id="tabs"')
    assert "<b>16</b> failures in <b>11</b> overloads come from <b>4</b> distinct causes" in html
    assert "No failures." not in html


def test_html_says_so_plainly_when_nothing_failed(tmp_path):
    p = write(tmp_path, [{"record": "verdict", "overload": "abs", "check": "forward",
                          "verdict": "pass"},
                         {"record": "verdict", "overload": "sort", "check": "forward",
                          "verdict": "crash", "message": "died"}])
    df = frame(read(p))
    html = rhtml.render(rpage.page_data(df, rops.annotate(df.overload.unique(), use_opdb=False)))
    assert '<p class="lede" id="no-failures"><b>No failures.</b> No check failed on any overload' in html
    assert "1 crash, 0 timeout, 0 unsupported" in html
    assert 'id="cause-list"' not in html


# -- exports ------------------------------------------------------------------------------------


def test_json_export_carries_the_causes(causes_file, capsys):
    assert main(["report", str(causes_file), "--format", "json", "-o", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["key"] for c in doc["causes"]][0] == IMAG
    top = doc["causes"][0]
    assert top["checks"] == ["forward", "noncontiguous"] and top["reason"] is None
    assert top["overload_names"] == list(synth.IMAG_OPS)
    assert doc["summary"]["causes"]["causes"] == 4
    mul = next(v for v in doc["verdicts"] if v["overload"] == "mul.Tensor" and v["check"] == "forward")
    assert [f["category"] for f in mul["failures"]] == ["value", "dtype"]


def test_csv_causes_table_and_the_verdict_tables_failures(causes_file, tmp_path, capsys):
    import pandas as pd

    assert main(["report", str(causes_file), "--format", "csv", "--table", "causes",
                 "-o", str(tmp_path / "c.csv")]) == 0
    c = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert list(c.columns) == list(CAUSE_COLUMNS)
    assert c.loc[0, "overload_names"] == ",".join(synth.IMAG_OPS)
    assert (c.loc[0, "failures"], c.loc[0, "overloads"], c.loc[0, "checks"]) == (
        12, 8, "forward,noncontiguous")
    assert main(["report", str(causes_file), "--format", "csv", "-o", str(tmp_path / "v.csv")]) == 0
    v = pd.read_csv(tmp_path / "v.csv", keep_default_na=False)
    mul = v[(v.overload == "mul.Tensor") & (v.check == "forward")].iloc[0]
    assert [f["key"] for f in json.loads(mul.failures)][0] == IMAG
    pytest.importorskip("pyarrow")
    assert main(["report", str(causes_file), "--format", "parquet", "--table", "causes",
                 "-o", str(tmp_path / "c.pq")]) == 0
    assert pd.read_parquet(tmp_path / "c.pq").key.iloc[0] == IMAG


@pytest.mark.parametrize("fmt", ["html", "json"])
def test_table_is_for_csv_and_parquet(causes_file, tmp_path, capsys, fmt):
    assert main(["report", str(causes_file), "--format", fmt, "--table", "causes",
                 "-o", str(tmp_path / "x")]) == 2
    assert "--table is for --format csv or parquet" in capsys.readouterr().err
    with pytest.raises(InputError, match="unknown table"):
        rexport.check_table("csv", "nope")


def test_a_fail_without_category_is_still_a_cause(tmp_path):
    rec = fail("abs", message="something odd [abs(float32[1])]")
    rec["category"] = None
    p = write(tmp_path, [rec])
    c = cause_table(frame(read(p)))
    assert list(c.key) == ["None: something odd"] and c.failures[0] == 1
    data = page_of(p)
    assert data["causes"][0]["category"] is None
    json.dumps(data, allow_nan=False)  # strict JSON: no NaN from pandas' missing strings
