"""``conformance run --resume`` after a real SIGKILL, ``-o`` refusals, and the results-file repair."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.store.results import load_for_resume, repair_tail, resume_mismatch
from opdb.errors import InputError

OPS = "abs|neg"
#: the checks these runs make: resuming is the subject, not which checks run
CHECKS = ("forward", "promotion", "broadcast", "dtypes")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path.cwd()), os.environ.get("PYTHONPATH", "")]), "CI": ""}


def _run(tmp: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance", "run", "--backend", "mlu",
                           "--ops", OPS, "--checks", ",".join(CHECKS), "--max-examples", "3",
                           *args], capture_output=True,
                          text=True, cwd=tmp, env=_env(), timeout=timeout)


def _ids(path: Path) -> list[str]:
    return [f"{r['overload']}::{r['check']}" for r in map(json.loads, path.read_text().splitlines())
            if r["record"] == "verdict"]


def _expected_ids() -> set[str]:
    import re

    import opdb
    rx = re.compile(OPS)
    return {f"{ov.name}::{c}" for ov in opdb.load().overloads
            if any(rx.fullmatch(s) for s in (ov.name, ov.base, ov.family))
            for c in CHECKS}


def _start_run(tmp_path: Path, workers: str, streams: int
               ) -> tuple[subprocess.Popen[str], Path]:
    """``conformance run`` on OPS in its own process group (to be signalled whole)."""
    pytest.importorskip("xdist")
    importlib.import_module("kernels")
    out = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "conformance", "run", "--backend", "mlu", "--ops", OPS,
           "--checks", ",".join(CHECKS), "--max-examples", "3", "-n", workers, "-o", str(out)]
    return subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=streams, stderr=streams,
                            text=True, start_new_session=True), out


def _wait_for_verdicts(proc: subprocess.Popen[Any], out: Path, count: int) -> None:
    """Until ``out`` holds ``count`` verdicts (or the run ends, or 240 s pass)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count('"record": "verdict"') >= count:
            return
        time.sleep(0.05)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_sigkill_mid_run_then_resume(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    proc, out = _start_run(tmp_path, "1", subprocess.DEVNULL)
    try:
        _wait_for_verdicts(proc, out, 5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the controller and its worker, mid-run
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = out.read_text()
    kept = _ids(out) if before.endswith("\n") else _ids(out)[:-1]
    everything = _expected_ids()
    assert 5 <= len(kept) < len(everything), "the kill did not land mid-run"
    assert list((tmp_path / ".conformance" / "inflight").iterdir()), "a killed run keeps its markers"

    # no silent overwrite: refused in one line, exit 2, file untouched; another run's
    # settings are refused too (in this process: these exit before any pytest starts)
    from conformance.cli import main

    common = ["run", "--backend", "mlu", "--ops", OPS, "--checks", ",".join(CHECKS),
              "--max-examples", "3", "-o", str(out)]
    assert main(common) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "--overwrite" in err[0], err
    assert main([*common, "--resume", "--seed", "7"]) == 2
    assert "seed was 0" in capsys.readouterr().err
    assert out.read_text() == before

    resumed = _run(tmp_path, "-n", "0", "-o", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{len(kept)} verdicts on disk are kept" in resumed.stderr
    ids = _ids(out)
    assert len(ids) == len(set(ids)), "a verdict was written twice"
    assert set(ids) == everything
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["record"] for r in records].count("run") == 1 and records[0]["record"] == "run"
    assert ids[:len(kept)] == kept  # what was on disk stays, in place
    assert not (tmp_path / ".conformance" / "inflight").exists()  # a finished run cleans up

    # resuming a finished run runs nothing and succeeds
    done = _run(tmp_path, "-n", "0", "-o", str(out), "--resume")
    assert done.returncode == 0 and _ids(out) == ids


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
def test_sigterm_to_the_group_is_an_interruption_not_crashes(tmp_path: Path) -> None:
    """``timeout`` (or a CI cancel) sends SIGTERM to the whole process group: the run says it
    was interrupted (exit 130), records no crash for the items the workers were running, and
    leaves no in-flight marker for --resume to replay; --resume then finishes the rest."""
    proc, out = _start_run(tmp_path, "2", subprocess.PIPE)
    try:
        _wait_for_verdicts(proc, out, 3)
        os.killpg(proc.pid, signal.SIGTERM)  # the controller and its workers, mid-run
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "--resume" in err, err[-2000:]
    kept = _ids(out)
    assert 3 <= len(kept) < len(_expected_ids()), "the signal did not land mid-run"
    verdicts = [json.loads(line)["verdict"] for line in out.read_text().splitlines()[1:]]
    assert "crash" not in verdicts
    inflight = tmp_path / ".conformance" / "inflight"
    assert not inflight.exists() or not any(p.read_text().strip() for p in inflight.rglob("*.json"))
    resumed = _run(tmp_path, "-n", "0", "-o", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "died" not in resumed.stderr and set(_ids(out)) == _expected_ids()


def test_repair_tail_cuts_only_a_half_written_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    whole = '{"record": "run", "backend": "mlu"}\n{"record": "verdict", "overload": "a"}\n'
    path.write_text(whole + '{"record": "verdict", "overl')
    assert repair_tail(path) == len('{"record": "verdict", "overl')
    assert path.read_text() == whole
    assert repair_tail(path) == 0 and path.read_text() == whole
    path.write_text(whole.rstrip("\n"))  # complete record without its newline: kept
    assert repair_tail(path) == 0 and path.read_text() == whole


def test_load_for_resume_refuses_what_is_not_one_run(tmp_path: Path) -> None:
    run = json.dumps({"record": "run", "backend": "mlu", "seed": 0})
    verdict = json.dumps({"record": "verdict", "overload": "abs", "check": "forward"})
    path = tmp_path / "r.jsonl"
    assert load_for_resume(path) is None  # nothing to continue yet
    path.write_text(f"{run}\n{verdict}\n")
    state = load_for_resume(path)
    assert state is not None and set(state.done) == {"abs::forward"}
    path.write_text(f"{run}\n{verdict}\n{verdict}\n")
    with pytest.raises(InputError, match="recorded twice"):
        load_for_resume(path)
    path.write_text(f"{run}\n{run}\n")
    with pytest.raises(InputError, match="more than one run"):
        load_for_resume(path)
    path.write_text(f"{verdict}\n")
    with pytest.raises(InputError, match="no run record"):
        load_for_resume(path)
    assert resume_mismatch({"seed": 0, "checks": ["a", "b"]}, {"seed": 0, "checks": ["b", "a"]}) \
        is None
    assert "seed" in (resume_mismatch({"seed": 0}, {"seed": 1}) or "")
    # shapes drawn from the menu are other examples; a file from before the menu drew freely
    assert "shapes" in (resume_mismatch({"shapes": "free"}, {"shapes": "fixed"}) or "")
    assert resume_mismatch({}, {"shapes": "free"}) is None
