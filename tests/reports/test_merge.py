"""``conformance merge``: shard results joined as written; mixed shards refused; overlaps and
holes reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reports
from conformance.cli import main


def header(k: int, n: int = 3, **kw) -> dict:
    return {"record": "run", "backend": "mlu", "torch_version": "2.13.0", "seed": 0,
            "checks": ["forward"], "ops": "add|mul|neg", "started_at": f"2026-11-30T10:0{k}:00",
            "argv": ["conformance", "run", "--shard", f"{k}/{n}"], **kw}


def v(overload: str, verdict: str = "pass", **kw) -> dict:
    return {"record": "verdict", "overload": overload, "check": "forward", "backend": "mlu",
            "verdict": verdict, "message": "m", **kw}


def shard(tmp_path: Path, name: str, records: list[dict]) -> str:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(p)


def test_merge_joins_shards_keeping_records_as_written(tmp_path, capsys):
    a = shard(tmp_path, "0.jsonl", [header(0), v("add.Tensor", vendor_field=[1, 2]),
                                    {"record": "note", "text": "unknown record type"}])
    b = shard(tmp_path, "1.jsonl", [header(1), v("mul.Tensor", "fail", category="value")])
    c = shard(tmp_path, "2.jsonl", [header(2), v("neg")])
    out = tmp_path / "all.jsonl"
    assert main(["merge", a, b, c, "-o", str(out)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["record"] for r in recs] == ["run", "note", "verdict", "verdict", "verdict"]
    run = recs[0]
    assert run["started_at"] == "2026-11-30T10:00:00"
    assert [m["shard"] for m in run["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert recs[2]["vendor_field"] == [1, 2]
    df = reports.load(str(out), annotate_ops=False)
    assert sorted(df.overload) == ["add.Tensor", "mul.Tensor", "neg"]
    err = capsys.readouterr().err
    assert "wrote" in err and "overlapping" not in err and "no file for shard" not in err


@pytest.mark.parametrize("field,value", [("torch_version", "2.14.0"), ("backend", "cuda"),
                                         ("seed", 7)])
def test_mixed_shards_are_refused_unless_allowed(tmp_path, capsys, field, value):
    a = shard(tmp_path, "0.jsonl", [header(0, 2), v("add.Tensor")])
    b = shard(tmp_path, "1.jsonl", [header(1, 2, **{field: value}), v("neg")])
    out = tmp_path / "all.jsonl"
    assert main(["merge", a, b, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"conformance merge: error: {b}:1: {field} ")
    assert "--allow-mixed" in err[0] and not out.exists()
    assert main(["merge", a, b, "-o", str(out), "--allow-mixed"]) == 0
    merged = json.loads(out.read_text().splitlines()[0])["merged_from"]
    assert merged[1][field] == value


def test_overlaps_and_holes_are_reported(tmp_path, capsys):
    a = shard(tmp_path, "0.jsonl", [header(0, 4), v("add.Tensor"), v("mul.Tensor")])
    b = shard(tmp_path, "1.jsonl", [header(1, 4), v("mul.Tensor", "fail", category="value")])
    out = tmp_path / "all.jsonl"
    assert main(["merge", a, b, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 overlapping items (1 with different verdicts; the later record is kept)" in err
    assert f"mul.Tensor::forward: {a}:3 and {b}:2" in err
    assert "no file for shard(s) 2/4, 3/4" in err
    assert "items of the run's scope have no verdict" in err and "add.out::forward" in err
    recs = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert [(r["overload"], r["verdict"]) for r in recs] == [("add.Tensor", "pass"),
                                                             ("mul.Tensor", "fail")]


def test_merge_refuses_bad_input(tmp_path, capsys):
    a = shard(tmp_path, "0.jsonl", [header(0, 1), v("add.Tensor")])
    out = tmp_path / "all.jsonl"
    out.write_text("old\n")
    assert main(["merge", a, "-o", str(out)]) == 2
    assert main(["merge", a, "-o", a, "--overwrite"]) == 2
    assert main(["merge", str(tmp_path / "none.jsonl"), "-o", str(tmp_path / "x.jsonl")]) == 2
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    assert main(["merge", str(junk), "-o", str(tmp_path / "y.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("conformance merge: ") for line in err)
    assert sum("error:" in line for line in err) == 4
