"""Tests of reports.diff and ``conformance diff``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.cli import main
from reports.diff import classify, compare, render_html, render_text
from reports.results import read
from reports.tables import NOT_TESTED, frame

DATA = Path(__file__).parent.parent / "data" / "reports"
BEFORE = DATA / "small.jsonl"
AFTER = DATA / "small-after.jsonl"


@pytest.mark.parametrize("before,after,kind", [
    ("pass", "fail", "regression"), ("pass", "unsupported", "regression"),
    ("pass", "crash", "regression"), ("fail", "pass", "fix"), ("unsupported", "pass", "fix"),
    ("fail", "crash", "changed"), ("unsupported", "fail", "changed"),
    ("pass", "skip", "lost"), ("fail", NOT_TESTED, "lost"), (NOT_TESTED, "fail", "gained"),
    ("skip", "pass", "gained"), ("skip", NOT_TESTED, None), ("pass", "pass", None),
    ("fail", "fail", None),
])
def test_classify(before, after, kind):
    assert classify(before, after) == kind


def diff():
    return compare(frame(read(BEFORE)), frame(read(AFTER)))


def test_compare_small_fixtures():
    d = diff()
    ids = {k: sorted(c.id for c in d.of_kind(k))
           for k in ("regression", "fix", "changed", "lost", "gained")}
    assert ids == {
        "regression": ["add.Tensor[forward]", "relu[forward]"],
        "fix": ["add.Tensor[promotion]", "add.out[forward]"],
        "changed": ["add_.Tensor[forward]"],
        "lost": ["add.Tensor[broadcast]", "mul.Tensor[autograd]"],
        "gained": ["add_.Tensor[promotion]"],
    }
    assert d.regressions == d.of_kind("regression")  # what a gate reads
    assert [s.overload for s in d.newly_supported] == ["add.out"]
    assert [s.overload for s in d.newly_unsupported] == ["relu"]
    assert d.unchanged == 1  # mul.Tensor[forward] crash → crash
    reg = {c.id: c for c in d.regressions}["add.Tensor[forward]"]
    assert reg.after_message.startswith("Tensor-likes are not close!")
    assert reg.after_repro == "import torch\n# after\n"


def test_side_by_side_backends_use_backend_labels(tmp_path):
    cuda = tmp_path / "cuda.jsonl"
    cuda.write_text(AFTER.read_text().replace('"backend": "mlu"', '"backend": "cuda"'))
    d = compare(frame(read(BEFORE)), frame(read(cuda)))
    assert (d.a.label, d.b.label) == ("mlu", "cuda")
    assert len(d.regressions) == 2  # the backend is not part of the key


def test_render_text_lists_sections_and_limits():
    d = diff()
    text = render_text(d)
    assert "Regressions (pass → not passing): 2" in text
    assert re.search(r"add\.Tensor\[forward\]\s+pass → fail/value\s+Tensor-likes are not close!", text)
    assert "Newly unsupported overloads: 1\n  relu  supported → unsupported" in text
    short = render_text(d, limit=1)
    assert "… 1 more" in short


def test_render_html_escapes(tmp_path):
    xss = DATA / "xss.jsonl"
    d = compare(frame(read(BEFORE)), frame(read(xss)))
    html = render_html(d)
    assert "<img" not in html and "window.__pwned" in html  # present, but only as text
    assert len(re.findall(r"<script\b", html)) == 1  # ours
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html


def test_cli_diff_exit_status_and_outputs(tmp_path, capsys):
    assert main(["diff", str(BEFORE), str(AFTER)]) == 0  # regressions do not fail a diff
    out = capsys.readouterr().out
    assert "Regressions (pass → not passing): 2" in out
    assert main(["diff", str(BEFORE), str(AFTER), "--format", "html", "-o",
                 str(tmp_path / "d.html")]) == 0
    assert 'id="n-regression">2<' in (tmp_path / "d.html").read_text()
    assert "2 regressions" in capsys.readouterr().err
    assert main(["diff", str(BEFORE), str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: results file not found" in capsys.readouterr().err
    assert main(["diff", str(BEFORE), str(AFTER), "--limit", "-1"]) == 2


def test_cli_diff_truncated_input_warns(capsys):
    assert main(["diff", str(DATA / "truncated.jsonl"), str(AFTER)]) == 0
    assert "truncated.jsonl:5: truncated record" in capsys.readouterr().err


def test_a_fail_of_another_category_is_a_changed_cell(tmp_path):
    import json

    import reports

    def results(name, category):
        p = tmp_path / name
        p.write_text("".join(json.dumps(r) + "\n" for r in [
            {"record": "run", "backend": "mlu"},
            {"record": "verdict", "overload": "add.Tensor", "check": "promotion",
             "verdict": "fail", "category": category, "message": category},
            {"record": "verdict", "overload": "neg", "check": "forward", "verdict": "fail",
             "category": "value", "message": "m"}]))
        return reports.load(p, annotate_ops=False)

    d = compare(results("a.jsonl", "error_type"), results("b.jsonl", "error_raises"))
    (change,) = d.changes
    assert change.kind == "changed" and change.overload == "add.Tensor"
    assert "add.Tensor[promotion]  fail/error_type → fail/error_raises" in render_text(d)
    assert "fail/error_raises" in render_html(d)
