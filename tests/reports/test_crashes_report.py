"""Crashes grouped by their top frames (issue 25, 5c): reports.tables.crash_table, the page's
panel and the exports; opdb.fingerprints.crash_key."""

from __future__ import annotations

import json
from pathlib import Path

import reports
from conformance.cli import main
from opdb.fingerprints import crash_key, is_system_frame
from reports import html as rhtml
from reports import ops as rops
from reports import page as rpage
from reports.results import read
from reports.tables import CRASH_COLUMNS, crash_table, frame

#: a resize that memcpys onto device pages, under two different ops
RESIZE = ["__memmove_avx_unaligned_erms (libc.so.6)", "at::native::resize_bytes_cpu (libtorch_cpu.so)",
          "vendor::resize_ (libvendor.so)", "vendor::copy_ (libvendor.so)",
          "at::_ops::copy_::call (libtorch_cpu.so)"]
#: a conjugate-copy recursion
CONJ = ["vendor::conj_copy (libvendor.so)", "at::_ops::_conj_copy::call (libtorch_cpu.so)",
        "vendor::conj_copy (libvendor.so)", "at::_ops::_conj_copy::call (libtorch_cpu.so)"]


def crash(overload: str, frames: list[str] | None, *, check: str = "forward",
          repro: str = "r" * 50, by: str | None = "gdb") -> dict:
    rec = {"record": "verdict", "overload": overload, "check": check, "backend": "privateuse1:v",
           "verdict": "crash", "category": None, "repro": repro,
           "message": "the process running it died (xdist worker gw0, killed by SIGSEGV); "
                      "replayed alone in fresh processes: backend crashed (SIGSEGV), CPU ok"}
    if frames is not None:
        rec["frames"], rec["frames_by"] = frames, by
    return rec


def write(tmp_path: Path, records: list[dict]) -> Path:
    p = tmp_path / "r.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return p


def test_crash_key_is_the_first_frames_that_are_not_the_systems() -> None:
    assert crash_key(RESIZE) == ("at::native::resize_bytes_cpu (libtorch_cpu.so) < "
                                 "vendor::resize_ (libvendor.so) < vendor::copy_ (libvendor.so)")
    assert is_system_frame("raise (libc.so.6)") and is_system_frame("?? (libffi.so.8)")
    assert is_system_frame("_PyEval_EvalFrameDefault (ceval.c)")
    assert not is_system_frame("__call__ (_ops.py:1243)")
    assert crash_key([]) == ""


def test_crashes_of_two_root_causes_are_two_rows(tmp_path: Path) -> None:
    """Five crash verdicts, two root causes found by their frames, one crash without frames
    (a file from before the field): three rows, the biggest cause first, no frames last."""
    p = write(tmp_path, [
        crash("index_copy", RESIZE), crash("index_put", RESIZE, repro="short"),
        crash("resize_", RESIZE, check="out"), crash("conj_physical", CONJ),
        crash("sgn", None),
        {"record": "verdict", "overload": "abs", "check": "forward", "verdict": "pass"}])
    df = reports.load(p, annotate_ops=False)
    table = crash_table(df)
    assert list(table.columns) == list(CRASH_COLUMNS)
    assert list(table["crashes"]) == [3, 1, 1]
    top = table.iloc[0]
    assert top["cause"] == crash_key(RESIZE) and top["frames_by"] == "gdb"
    assert top["overload_names"] == ("index_copy", "index_put", "resize_")
    assert top["checks"] == ("forward", "out") and top["frames"] == tuple(RESIZE)
    assert (top["repro"], top["repro_overload"]) == ("short", "index_put")
    assert table.iloc[1]["cause"] == crash_key(CONJ)
    assert table.iloc[2]["cause"] == "" and table.iloc[2]["overload_names"] == ("sgn",)


def test_no_crash_gives_an_empty_table_with_the_columns(tmp_path: Path) -> None:
    p = write(tmp_path, [{"record": "verdict", "overload": "abs", "check": "forward",
                          "verdict": "pass"}])
    table = crash_table(reports.load(p, annotate_ops=False))
    assert len(table) == 0 and list(table.columns) == list(CRASH_COLUMNS)


def test_the_page_lists_crashes_by_their_frames_and_escapes_them(tmp_path: Path) -> None:
    p = write(tmp_path, [crash("index_copy", RESIZE), crash("index_put", RESIZE),
                         crash("sgn", ["<script>x</script> (libvendor.so)"])])
    df = frame(read(p))
    data = rpage.page_data(df, rops.annotate(df.overload.unique(), use_opdb=False))
    assert [c["crashes"] for c in data["crashes"]] == [2, 1]
    html = rhtml.render(data)
    body = html.split("<main>", 1)[1]
    assert body.index('id="crashes"') < body.index('id="summary"')
    assert "Crashes by top frames" in html and "vendor::resize_ (libvendor.so)" in html
    assert "<script>x</script> (libvendor.so)" not in body.split('id="report-data"')[0]
    no_crash = write(tmp_path, [{"record": "verdict", "overload": "abs", "check": "forward",
                                 "verdict": "pass"}])
    df = frame(read(no_crash))
    html = rhtml.render(rpage.page_data(df, rops.annotate(df.overload.unique(), use_opdb=False)))
    assert 'id="crashes"' not in html


def test_exports_carry_the_crashes(tmp_path: Path, capsys) -> None:
    import pandas as pd

    p = write(tmp_path, [crash("index_copy", RESIZE), crash("conj_physical", CONJ)])
    assert main(["report", str(p), "--format", "json", "-o", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["cause"] for c in doc["crashes"]] == [crash_key(RESIZE), crash_key(CONJ)]
    verdict = next(v for v in doc["verdicts"] if v["overload"] == "index_copy")
    assert verdict["frames"] == RESIZE and verdict["frames_by"] == "gdb"
    assert main(["report", str(p), "--format", "csv", "--table", "crashes",
                 "-o", str(tmp_path / "c.csv")]) == 0
    c = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert list(c.columns) == list(CRASH_COLUMNS)
    assert json.loads(c.loc[0, "frames"]) == RESIZE and c.loc[0, "overload_names"] in (
        "index_copy", "conj_physical")
    assert main(["report", str(p), "--format", "csv", "-o", str(tmp_path / "v.csv")]) == 0
    v = pd.read_csv(tmp_path / "v.csv", keep_default_na=False)
    assert json.loads(v[v.overload == "index_copy"].iloc[0]["frames"]) == RESIZE
