"""``conformance baseline`` and ``conformance gate`` on synthetic results: exit codes, the
line-preserving update, JUnit XML (parsed back) and the markdown summary."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import main
from reports import baseline as bl

RUN = {"record": "run", "backend": "mlu", "device": "mlu", "torch_version": "2.13.0",
       "seed": 0, "checks": ["forward", "promotion"], "ops": None}


def verdict(overload: str, check: str, v: str, category: str | None = None, **kw) -> dict:
    return {"record": "verdict", "overload": overload, "check": check, "backend": "mlu",
            "verdict": v, "category": category, "message": kw.pop("message", f"{v} msg"),
            "repro": kw.pop("repro", "import torch\n# repro" if v == "fail" else None), **kw}


BASE_RUN = [
    verdict("add.Tensor", "forward", "pass"),
    verdict("add.Tensor", "promotion", "fail", "error_type"),
    verdict("mul.Tensor", "forward", "pass"),
    verdict("mul.Tensor", "promotion", "pass"),
    verdict("neg", "forward", "fail", "value", expected="float16 rounds twice"),
    verdict("neg", "promotion", "skip", "no_valid_inputs"),
]


def write(path: Path, records: list[dict], run: dict | None = None) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in [run or RUN, *records]) + "\n")
    return path


def changed(records: list[dict], overload: str, check: str, **new) -> list[dict]:
    out = []
    for r in records:
        if (r["overload"], r["check"]) == (overload, check):
            r = {**r, **new}
        out.append(r)
    return out


@pytest.fixture()
def base(tmp_path):
    res = write(tmp_path / "base.jsonl", BASE_RUN)
    out = tmp_path / "parity-baseline.yaml"
    assert main(["baseline", str(res), "-o", str(out)]) == 0
    return out


def gate(tmp_path, base, records, *extra, run=None):
    res = write(tmp_path / "now.jsonl", records, run)
    return main(["gate", "--baseline", str(base), str(res), *extra])


def test_baseline_file_reads_back_with_reasons(base):
    b = bl.read(base)
    assert b.backend == "mlu" and b.torch_version == "2.13.0"
    assert b.entries[("add.Tensor", "forward", None)].state == bl.State("pass")
    neg = b.entries[("neg", "forward", None)]
    assert neg.state == bl.State("fail", "value", "expected failure: float16 rounds twice")
    assert base.read_text().splitlines()[neg.line - 1].strip().startswith("forward:")


def test_gate_passes_on_the_same_run(tmp_path, base, capsys):
    assert gate(tmp_path, base, BASE_RUN) == 0
    assert "PASSED" in capsys.readouterr().out


def test_regression_pass_to_fail_exits_1_with_message_and_repro(tmp_path, base, capsys):
    now = changed(BASE_RUN, "mul.Tensor", "forward", verdict="fail", category="value",
                  message="values differ [mul.Tensor(float32[2])]", repro="import torch\nBOOM")
    assert gate(tmp_path, base, now) == 1
    out = capsys.readouterr().out
    assert "mul.Tensor::forward: pass → fail/value" in out
    assert "values differ [mul.Tensor(float32[2])]" in out and "BOOM" in out


@pytest.mark.parametrize("verdict_,category", [("unsupported", "missing_kernel"),
                                               ("crash", None), ("timeout", None),
                                               ("skip", "no_valid_inputs")])
def test_every_way_of_losing_a_pass_is_a_regression(tmp_path, base, verdict_, category):
    now = changed(BASE_RUN, "add.Tensor", "forward", verdict=verdict_, category=category)
    assert gate(tmp_path, base, now) == 1


def test_worse_category_exits_1_same_or_better_does_not(tmp_path, base, capsys):
    worse = changed(BASE_RUN, "add.Tensor", "promotion", category="error_raises")
    assert gate(tmp_path, base, worse) == 1
    assert "fail/error_type → fail/error_raises" in capsys.readouterr().out
    better = changed(BASE_RUN, "neg", "forward", category="error_type")  # value → cosmetic
    assert gate(tmp_path, base, better) == 0
    crash = changed(BASE_RUN, "neg", "forward", verdict="crash", category=None)
    assert gate(tmp_path, base, crash) == 1


def test_unexpected_pass_reported_and_fails_only_with_strict(tmp_path, base, capsys):
    now = changed(BASE_RUN, "neg", "forward", verdict="pass", category=None)
    assert gate(tmp_path, base, now) == 0
    out = capsys.readouterr().out
    line = bl.read(base).entries[("neg", "forward", None)].line
    assert f"delete line {line} of {base}" in out
    assert gate(tmp_path, base, now, "--strict") == 1


def test_missing_entry_in_scope_is_a_regression_out_of_scope_is_not(tmp_path, base, capsys):
    dropped = [r for r in BASE_RUN if r["overload"] != "mul.Tensor"]
    assert gate(tmp_path, base, dropped) == 1
    assert "mul.Tensor::forward: pass → not run" in capsys.readouterr().out
    narrow = {**RUN, "ops": "add|neg"}  # a run restricted by --ops: mul is outside its scope
    assert gate(tmp_path, base, dropped, run=narrow) == 0


def test_new_failure_not_in_baseline_exits_1(tmp_path, base):
    assert gate(tmp_path, base, [*BASE_RUN, verdict("sub.Tensor", "forward", "fail",
                                                    "value")]) == 1
    assert gate(tmp_path, base, [*BASE_RUN, verdict("sub.Tensor", "forward", "pass")]) == 0


def test_ignore_category(tmp_path, base, capsys):
    now = changed(BASE_RUN, "mul.Tensor", "promotion", verdict="fail", category="error_type")
    assert gate(tmp_path, base, now) == 1
    assert gate(tmp_path, base, now, "--ignore", "error_type") == 0
    assert "ignored 1 (error_type)" in capsys.readouterr().out
    assert gate(tmp_path, base, now, "--ignore", "no_such_category") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("conformance gate: error: --ignore: unknown")


def test_unmatched_entry_warns_with_file_and_line(tmp_path, base, capsys):
    text = base.read_text() + "  no_such_op.Tensor:\n    forward: pass\n"
    base.write_text(text)
    line = len(text.splitlines()) - 1
    rc = gate(tmp_path, base, BASE_RUN, run={**RUN, "ops": "add|mul|neg"})
    err = capsys.readouterr().err
    assert rc == 0
    assert f"warning: {base}:{line}: 'no_such_op.Tensor' matches no overload" in err


@pytest.mark.parametrize("text,where,what", [
    ("opconform_baseline: 1\nentries:\n  add.Tensor:\n    forward: passs\n", 4,
     "unknown verdict 'passs'"),
    ("opconform_baseline: 1\nentries:\n  add.Tensor:\n    forward: {verdict: fail, "
     "reasn: x}\n", 4, "unknown key 'reasn'"),
    ("opconform_baseline: 1\nbakend: mlu\n", 2, "unknown key 'bakend'"),
    ("entries: {}\n", 1, "no 'opconform_baseline: 1' key"),
    ("opconform_baseline: 1\nentries:\n  add.Tensor:\n    forward: pass\n    forward: pass\n",
     5, "duplicate entry add.Tensor::forward"),
    ("opconform_baseline: 1\nentries: [\n", 3, "malformed YAML"),
])
def test_bad_baseline_is_one_line_exit_2(tmp_path, capsys, text, where, what):
    bad = tmp_path / "b.yaml"
    bad.write_text(text)
    res = write(tmp_path / "r.jsonl", BASE_RUN)
    assert main(["gate", "--baseline", str(bad), str(res)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"conformance gate: error: {bad}:{where}: "), err
    assert what in err[0]


def test_bad_results_and_missing_baseline_exit_2(tmp_path, base, capsys):
    assert main(["gate", "--baseline", str(tmp_path / "none.yaml"),
                 str(write(tmp_path / "r.jsonl", BASE_RUN))]) == 2
    assert main(["gate", "--baseline", str(base), str(tmp_path / "none.jsonl")]) == 2
    other = write(tmp_path / "cuda.jsonl", [{**r, "backend": "cuda"} for r in BASE_RUN],
                  {**RUN, "backend": "cuda"})
    assert main(["gate", "--baseline", str(base), str(other)]) == 2
    assert "baseline is for backend 'mlu'" in capsys.readouterr().err


def test_junit_xml_parses_and_names_each_failure(tmp_path, base):
    now = changed(BASE_RUN, "mul.Tensor", "forward", verdict="fail", category="value",
                  message="values <differ> & more", repro="import torch\nx = 1 < 2")
    now = changed(now, "neg", "forward", verdict="pass", category=None)
    junit = tmp_path / "gate.xml"
    assert gate(tmp_path, base, now, "--junitxml", str(junit), "--strict") == 1
    root = ET.parse(junit).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases) == 6
    failed = {(c.get("classname"), c.get("name")): c.find("failure") for c in cases
              if c.find("failure") is not None}
    assert set(failed) == {("gate.forward", "mul.Tensor"), ("gate.forward", "neg")}
    assert int(suite.get("failures")) == 2
    reg = failed[("gate.forward", "mul.Tensor")]
    assert reg.get("type") == "regression" and "values <differ> & more" in reg.text
    assert "x = 1 < 2" in reg.text
    assert failed[("gate.forward", "neg")].get("type") == "unexpected_pass"
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert int(suite.get("skipped")) == len(skipped) == 2  # known error_type + the skip


def test_markdown_summary_is_appended(tmp_path, base):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    now = changed(BASE_RUN, "mul.Tensor", "forward", verdict="fail", category="value",
                  message="a | b", repro="import torch")
    assert gate(tmp_path, base, now, "--summary", str(summary)) == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n## ❌ Op parity gate: failed")
    assert "| `mul.Tensor` | forward | pass | fail/value |" in text
    assert "a \\| b" in text and "```python" in text


# -- baseline --update: line-preserving merge ---------------------------------------------------
def test_update_keeps_reasons_comments_and_order(tmp_path, base, capsys):
    lines = base.read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if "promotion: {verdict: fail" in ln)
    lines[i] = lines[i].replace('reason: ""', 'reason: "torch raises TypeError, we RuntimeError"')
    lines[i] += "  # tracked in #42"
    j = next(i for i, ln in enumerate(lines) if ln.strip() == "neg:")
    lines.insert(j, "  # neg: float16 goes through float32 twice")
    base.write_text("\n".join(lines) + "\n")
    before = base.read_text()

    now = changed(BASE_RUN, "add.Tensor", "promotion", category="error_raises")  # reason kept
    now = changed(now, "mul.Tensor", "forward", verdict="fail", category="value")  # new reason
    now = changed(now, "neg", "forward", verdict="pass", category=None)
    now = [r for r in now if r["overload"] != "mul.Tensor" or r["check"] != "promotion"]
    now += [verdict("abs", "forward", "fail", "value"), verdict("mul.Tensor", "broadcast", "pass"),
            verdict("zeros_like", "forward", "pass")]
    res = write(tmp_path / "now.jsonl", now, {**RUN, "torch_version": "2.14.0"})
    assert main(["baseline", str(res), "-o", str(base), "--update"]) == 0
    after = base.read_text()
    b = bl.read(base)
    assert b.torch_version == "2.14.0"
    st = b.entries[("add.Tensor", "promotion", None)].state
    assert st == bl.State("fail", "error_raises", "torch raises TypeError, we RuntimeError")
    assert "# tracked in #42" in after.splitlines()[b.entries[("add.Tensor", "promotion",
                                                                None)].line - 1]
    assert b.entries[("neg", "forward", None)].state == bl.State("pass")
    assert b.entries[("mul.Tensor", "promotion", None)].state == bl.State("pass")  # kept
    assert b.entries[("mul.Tensor", "forward", None)].state.verdict == "fail"
    assert b.entries[("mul.Tensor", "broadcast", None)].state == bl.State("pass")
    assert "  # neg: float16 goes through float32 twice\n  neg:" in after
    names = [ln.strip()[:-1] for ln in after.splitlines()
             if ln.startswith("  ") and not ln.startswith("    ") and ln.strip().endswith(":")]
    assert names == ["abs", "add.Tensor", "mul.Tensor", "neg", "zeros_like"]
    # lines of entries that did not change are byte-identical
    unchanged = [ln for ln in before.splitlines() if "add.Tensor" in ln or "forward: pass" in ln]
    for ln in unchanged:
        assert ln in after
    # a second update with the same results changes nothing
    assert main(["baseline", str(res), "-o", str(base), "--update"]) == 0
    assert base.read_text() == after
    # entries the results did not reach are kept (a partial run must not erase the baseline)
    assert gate(tmp_path, base, now, run={**RUN, "torch_version": "2.14.0"}) == 1
    now.append(verdict("mul.Tensor", "promotion", "pass"))
    assert gate(tmp_path, base, now, "--strict", run={**RUN, "torch_version": "2.14.0"}) == 0


def test_baseline_refuses_to_overwrite_and_update_needs_a_file(tmp_path, base, capsys):
    res = write(tmp_path / "r.jsonl", BASE_RUN)
    assert main(["baseline", str(res), "-o", str(base)]) == 2
    assert "exists; --update" in capsys.readouterr().err
    assert main(["baseline", str(res), "-o", str(tmp_path / "new.yaml"), "--update"]) == 2
    assert main(["baseline", str(res), "-o", str(base), "--overwrite"]) == 0


def test_dtype_keyed_records_nest_under_their_check(tmp_path):
    recs = [verdict("add.Tensor", "dtypes", "pass", dtype="float32"),
            verdict("add.Tensor", "dtypes", "fail", "value", dtype="float16"),
            verdict("add.Tensor", "forward", "pass")]
    res = write(tmp_path / "r.jsonl", recs)
    out = tmp_path / "b.yaml"
    assert main(["baseline", str(res), "-o", str(out)]) == 0
    b = bl.read(out)
    assert b.entries[("add.Tensor", "dtypes", "float16")].state.category == "value"
    assert "    dtypes:\n      float32: pass\n      float16: {verdict: fail" in out.read_text()
    assert main(["gate", "--baseline", str(out), str(res)]) == 0
    worse = write(tmp_path / "w.jsonl", changed(recs[:1], "add.Tensor", "dtypes",
                                                verdict="crash") + recs[1:])
    assert main(["gate", "--baseline", str(out), str(worse)]) == 1


def test_update_prune_deletes_only_unreached_entries_in_scope(tmp_path, base, capsys):
    text = base.read_text().replace("  neg:\n", "  # about neg\n  neg:\n")
    base.write_text(text)
    now = [r for r in BASE_RUN if r["overload"] != "neg" and
           (r["overload"], r["check"]) != ("mul.Tensor", "promotion")]
    narrow = {**RUN, "ops": "add|mul"}  # neg is outside this run's scope: kept
    res = write(tmp_path / "now.jsonl", now, narrow)
    assert main(["baseline", str(res), "-o", str(base), "--update", "--prune"]) == 0
    b = bl.read(base)
    assert ("mul.Tensor", "promotion", None) not in b.entries
    assert ("mul.Tensor", "forward", None) in b.entries and ("neg", "forward", None) in b.entries
    assert "1 pruned" in capsys.readouterr().err
    res = write(tmp_path / "all.jsonl", [r for r in BASE_RUN if r["overload"] != "neg"])
    assert main(["baseline", str(res), "-o", str(base), "--update", "--prune"]) == 0
    after = base.read_text()
    assert "neg" not in after.replace("# about neg", "") and "# about neg" in after
    assert set(bl.read(base).entries) == {bl.key_of(r) for r in BASE_RUN
                                          if r["overload"] != "neg"}
    assert main(["gate", "--baseline", str(base), str(res)]) == 0
    assert main(["baseline", str(res), "-o", str(tmp_path / "x.yaml"), "--prune"]) == 2


def test_reports_and_ci_modules_import_neither_torch_nor_the_engine():
    import subprocess
    import sys

    code = ("import sys, reports, reports.gate, reports.baseline, reports.merge, reports.diff, "
            "reports.export, reports.html; bad = [m for m in ('torch', 'conformance') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
