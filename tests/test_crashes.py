"""Crash attribution: a process that dies in a backend call is replayed before it is blamed,
and ``-n 0`` never dies silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.crashes import _outcome, judge, one_side

DATA = Path(__file__).parent / "data" / "engine"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(DATA), str(Path.cwd()), os.environ.get("PYTHONPATH", "")]), "CI": ""}


def test_judge_follows_who_crashes_alone() -> None:
    assert judge({"cpu": "ok", "backend": "crashed (SIGSEGV)"})[:2] == ("crash", None)
    assert judge({"cpu": "crashed (SIGABRT)", "backend": "crashed (SIGSEGV)"})[0] == "crash"
    verdict, category, tail = judge({"cpu": "crashed (SIGABRT)", "backend": "ok"})
    assert (verdict, category) == ("skip", "cpu_crashed") and "not attributed" in tail
    verdict, _, tail = judge({"cpu": "ok", "backend": "ok"})
    assert verdict == "crash" and "depended on what ran before" in tail
    assert judge(None) == ("crash", None, "")
    assert _outcome(-11) == "crashed (SIGSEGV)" and _outcome(0) == "ok" and _outcome(1) == "ok"
    assert _outcome(None) == "timeout" and _outcome(134) == "crashed (exit status 134)"


def test_one_side_keeps_the_snippet_and_runs_one_device() -> None:
    snippet = "import torch\ndef call(device):\n    return 1\n\ndef show(device):\n" \
              "    print(device)\nshow(\"cpu\")\nshow('mlu')\n"
    assert one_side(snippet, "mlu").splitlines()[-1] == "show('mlu')"
    assert "show(\"cpu\")" not in one_side(snippet, "mlu")
    assert "def show(device):" in one_side(snippet, "cpu")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_n0_death_is_said_attributed_to_the_oracle_and_resumed(tmp_path: Path) -> None:
    """In-process (-n 0) the process dies in the backend's neg, but CPU's neg corrupted it:
    the run says what was running (faulthandler + the marker), the replay finds CPU's call
    kills a fresh process and the backend's does not, the verdict is skip/cpu_crashed, and
    --resume finishes the rest without running neg::forward again."""
    pytest.importorskip("kernels")
    out = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "conformance", "run", "--backend", "privateuse1:crashy_oracle",
           "--ops", "neg", "--checks", "forward", "--max-examples", "3", "-n", "0",
           "-o", str(out)]
    died = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=400)
    assert died.returncode != 0
    err = died.stderr
    assert "Fatal Python error: Aborted" in err  # faulthandler: the stack of the death
    assert "conformance run: the process died while running neg::forward: neg(" in err, err
    assert "recorded neg::forward as skip (cpu_crashed)" in err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    rec = records[-1]
    assert (rec["overload"], rec["check"], rec["verdict"], rec["category"]) == \
        ("neg", "forward", "skip", "cpu_crashed")
    assert rec["replay"] == {"cpu": "crashed (SIGABRT)", "backend": "ok"}

    resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, cwd=tmp_path,
                             env=_env(), timeout=400)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    ids = [f"{r['overload']}::{r['check']}" for r in
           map(json.loads, out.read_text().splitlines()) if r["record"] == "verdict"]
    assert sorted(ids) == ["neg.out::forward", "neg::forward", "neg_::forward"]
