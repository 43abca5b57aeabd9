"""Crash attribution: a process that dies in a backend call is replayed before it is blamed,
and ``-n 0`` never dies silently."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.pytest_plugin.crashes import exit_outcome, judge, one_side

DATA = Path(__file__).parent.parent.parent / "data" / "engine"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(DATA), str(Path.cwd()), os.environ.get("PYTHONPATH", "")]), "CI": ""}


def _forked_run(tmp_path: Path, crashes: str, backend: str, ops: str, checks: str
                ) -> tuple[str, list[dict]]:
    """A -n 0 plugin run of fixture backend ``backend`` whose hints name ``crashes`` as
    ``cpu_crashes`` (its items forked): pytest's stdout and the verdict records, in order."""
    importlib.import_module("kernels")
    hints = tmp_path / "hints.yaml"
    hints.write_text(f"ops:\n  - names: ['{crashes}']\n    cpu_crashes: true\n")
    out = tmp_path / "r.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conformance", "--backend",
         f"privateuse1:{backend}", "--ops", ops, "--checks", checks, "--max-examples", "3",
         "--hypothesis-db", "none", "-p", "no:cacheprovider", "-n", "0", "--hints", str(hints),
         "--results", str(out), "--rootdir", str(tmp_path), "-q"],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=600)
    return done.stdout, [r for r in map(json.loads, out.read_text().splitlines())
                         if r["record"] == "verdict"]


def test_judge_follows_who_crashes_alone() -> None:
    assert judge({"cpu": "ok", "backend": "crashed (SIGSEGV)"})[:2] == ("crash", None)
    # both die alone: the oracle's call kills a process too, so it is not the backend's
    verdict, category, tail = judge({"cpu": "crashed (SIGABRT)", "backend": "crashed (SIGSEGV)"})
    assert (verdict, category) == ("skip", "cpu_crashed") and "both calls kill" in tail
    verdict, category, tail = judge({"cpu": "crashed (SIGABRT)", "backend": "ok"})
    assert (verdict, category) == ("skip", "cpu_crashed") and "not attributed" in tail
    verdict, _, tail = judge({"cpu": "ok", "backend": "ok"})
    assert verdict == "crash" and "depended on what ran before" in tail
    # the same, for an op whose CPU the hints say kills or corrupts its process on some inputs
    verdict, category, tail = judge({"cpu": "ok", "backend": "ok"}, cpu_crashes=True)
    assert (verdict, category) == ("skip", "cpu_crashed") and "hints: cpu_crashes" in tail
    assert judge({"cpu": "ok", "backend": "crashed (SIGSEGV)"}, cpu_crashes=True)[0] == "crash"
    assert judge(None) == ("crash", None, "")
    assert exit_outcome(-11) == "crashed (SIGSEGV)" and exit_outcome(0) == "ok" and exit_outcome(1) == "ok"
    assert exit_outcome(None) == "timeout" and exit_outcome(134) == "crashed (exit status 134)"


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
    importlib.import_module("kernels")
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


_FAKE_REPRO = """import os, signal

def call(device):
    return None

def show(device):
    if device in {crashes!r}:
        os.kill(os.getpid(), signal.SIGSEGV)
show("cpu")
show('mlu')
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("crashes", "verdict", "recorded"), [
    (["mlu"], "crash", True), (["cpu"], "skip", True), ([], None, False)])
def test_settle_orphan_records_only_what_a_fresh_process_reproduces(
        tmp_path: Path, crashes: list[str], verdict: str | None, recorded: bool) -> None:
    """What a resumed run does with the marker a dead run left: replay, then record or not."""
    from conformance.pytest_plugin.crashes import settle_orphan

    results = tmp_path / "r.jsonl"
    run = {"record": "run", "backend": "privateuse1:x", "device": "mlu", "seed": 0,
           "torch_version": "t", "run_id": "r1"}
    results.write_text(json.dumps(run) + "\n")
    marker = tmp_path / "main.json"
    marker.write_text(json.dumps({"nodeid": "abs::forward", "overload": "abs",
                                  "check": "forward", "state": "running", "side": "mlu",
                                  "call": "abs(float32[2])", "started": 1.0,
                                  "repro": _FAKE_REPRO.format(crashes=crashes)}))
    said: list[str] = []
    rec = settle_orphan(marker, results, cwd=tmp_path, say=said.append)
    assert said[0] == "conformance run: the process died while running abs::forward: " \
                      "abs(float32[2]) on mlu"
    lines = results.read_text().splitlines()
    if recorded:
        assert rec is not None and rec["verdict"] == verdict and len(lines) == 2
        assert json.loads(lines[1])["replay"] == {
            "cpu": "crashed (SIGSEGV)" if "cpu" in crashes else "ok",
            "backend": "crashed (SIGSEGV)" if "mlu" in crashes else "ok"}
    else:
        assert rec is None and len(lines) == 1 and "not recorded" in said[-1]
    assert marker.read_text() == ""  # settled once: a second resume does not replay again
    assert settle_orphan(marker, results, cwd=tmp_path, say=said.append) is None
    if not recorded:
        # the resumed run died on the same item again: now it is recorded, as a crash
        marker.write_text(json.dumps({"overload": "abs", "check": "forward", "state": "running",
                                      "side": "mlu", "call": "abs(float32[2])",
                                      "repro": _FAKE_REPRO.format(crashes=crashes)}))
        rec = settle_orphan(marker, results, cwd=tmp_path, say=said.append)
        assert rec is not None and rec["verdict"] == "crash" and "twice" in rec["message"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_settle_orphan_explains_a_crash_by_its_replayed_signal(tmp_path: Path) -> None:
    """The -n 0 sentinel's crash record is matched against the expected failures: an entry whose
    message names the signal the replay saw explains it; one naming another signal does not."""
    from conformance.pytest_plugin.crashes import main, settle_orphan
    from conformance.store.expectations import load_expectations

    xf = tmp_path / "xf.yaml"
    xf.write_text("- id: abs::forward\n  message: SIGABRT\n  reason: aborts\n"
                  "- id: abs::forward\n  message: SIGSEGV\n  reason: segfaults\n")
    results = tmp_path / "r.jsonl"
    run = {"record": "run", "backend": "b", "device": "mlu", "seed": 0, "run_id": "r1"}
    marker = tmp_path / ".conformance" / "inflight" / "r1" / "main.json"
    marker.parent.mkdir(parents=True)
    state = json.dumps({"overload": "abs", "check": "forward", "state": "running",
                        "side": "mlu", "call": "abs(float32[2])", "started": 1.0,
                        "repro": _FAKE_REPRO.format(crashes=["mlu"])})
    results.write_text(json.dumps(run) + "\n")
    marker.write_text(state)
    rec = settle_orphan(marker, results, cwd=tmp_path, expectations=load_expectations(xf))
    assert rec is not None and rec["verdict"] == "crash" and rec["expected"] == "segfaults"
    # the sentinel itself, as `conformance run -n 0` starts it: the file is its third argument
    results.write_text(json.dumps(run) + "\n")
    marker.write_text(state)
    stdin, sys.stdin = sys.stdin, __import__("io").StringIO("")
    try:
        assert main([str(results), str(tmp_path), str(xf)]) == 0
    finally:
        sys.stdin = stdin
    assert json.loads(results.read_text().splitlines()[1])["expected"] == "segfaults"


def test_settle_orphan_in_a_cpu_call_needs_a_second_death(tmp_path: Path) -> None:
    """A run killed from outside while CPU ran is not CPU's crash; dying there twice is."""
    from conformance.pytest_plugin.crashes import settle_orphan

    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"record": "run", "backend": "b", "device": "mlu"}) + "\n")
    marker = tmp_path / "main.json"
    state = json.dumps({"overload": "abs", "check": "forward", "state": "running", "side": "cpu",
                        "call": "abs(float32[2])"})
    marker.write_text(state)
    assert settle_orphan(marker, results, cwd=tmp_path) is None
    marker.write_text(state)
    rec = settle_orphan(marker, results, cwd=tmp_path)
    assert rec is not None and (rec["verdict"], rec["category"]) == ("skip", "cpu_crashed")


@pytest.mark.parametrize("workers", ["1", "0"])
def test_a_sticky_device_error_ends_the_process_not_the_run(tmp_path: Path, workers: str) -> None:
    """index_select leaves the device unusable: its verdict is a crash (device_lost) with a
    repro; with a worker, the process is replaced and mul.Tensor (after it) is judged in a fresh
    one and passes; alone (-n 0), the session stops and --resume finishes the rest."""
    importlib.import_module("kernels")
    out = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "conformance", "run", "--backend", "privateuse1:sticky_device",
           "--ops", "index_select|mul.Tensor", "--checks", "forward", "--max-examples", "10",
           "-n", workers, "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=400)
    if workers == "0":
        assert "unusable" in done.stderr + done.stdout, done.stderr[-2000:]
        resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True,
                                 cwd=tmp_path, env=_env(), timeout=400)
        assert resumed.returncode in (0, 1), resumed.stderr[-2000:]
    recs = {(r["overload"], r["check"]): r for r in map(json.loads, out.read_text().splitlines())
            if r.get("record") == "verdict"}
    lost = recs[("index_select", "forward")]
    assert (lost["verdict"], lost["category"]) == ("crash", "device_lost"), lost
    assert "unusable" in lost["message"] and "index_select(" in lost["repro"]
    assert recs[("mul.Tensor", "forward")]["verdict"] == "pass", recs[("mul.Tensor", "forward")]


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_oracle_death_on_a_schema_draw_is_retried_on_recorded_calls(tmp_path: Path) -> None:
    """CPU's smooth_l1_loss_backward kills the worker on the first schema-drawn example, before
    the item's recorded calls were tried: the controller searches those alone in a fresh process
    and the item earns their verdict, saying what killed CPU first; without recorded calls
    (--corpus off) the oracle's death stays a cpu_crashed skip, not a verdict on the backend."""
    importlib.import_module("kernels")
    out = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "conformance", "run", "--backend",
           "privateuse1:crashy_schema_oracle", "--ops", "smooth_l1_loss_backward", "--checks",
           "forward", "--max-examples", "3", "-n", "1", "-o", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rec = {r["overload"]: r for r in map(json.loads, out.read_text().splitlines())
           if r["record"] == "verdict"}["smooth_l1_loss_backward"]
    assert rec["verdict"] == "pass" and rec["examples"] > 0, rec["message"]
    assert rec["sources"] == {"corpus": rec["examples"]}
    assert "after CPU (the oracle) crashed the process on a schema-drawn example " \
           "(smooth_l1_loss_backward(" in rec["message"]

    off = subprocess.run([*cmd, "--corpus", "off", "--overwrite", "--ops",
                          "smooth_l1_loss_backward", "--pytest-args", "-k 'not grad_input'"],
                         capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=600)
    assert off.returncode == 0, off.stderr[-3000:]
    recs = [r for r in map(json.loads, out.read_text().splitlines()) if r["record"] == "verdict"]
    assert [(r["overload"], r["verdict"], r["category"]) for r in recs] == [
        ("smooth_l1_loss_backward", "skip", "cpu_crashed")], recs
    assert "retried" not in recs[0]["message"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_items_oracle_death_is_retried_in_another_forked_child(tmp_path: Path) -> None:
    """The same oracle death in an item the hints fork (``cpu_crashes``): the process that
    forked it is intact, so the recorded calls are searched in another forked child of it, not
    in a fresh pytest process; the verdict is the same: earned on the recorded calls, saying
    what killed CPU first, and a -n 0 run lives on to the next item."""
    stdout, records = _forked_run(tmp_path, "smooth_l1_loss_backward*", "crashy_schema_oracle",
                                  "smooth_l1_loss_backward|neg", "forward")
    recs = {r["overload"]: r for r in records}
    rec = recs.get("smooth_l1_loss_backward")
    assert rec is not None, stdout[-3000:]
    assert rec["verdict"] == "pass" and rec["examples"] > 0, rec["message"]
    assert rec["sources"] == {"corpus": rec["examples"]}
    assert "after CPU (the oracle) crashed the process on a schema-drawn example " \
           "(smooth_l1_loss_backward(" in rec["message"]
    assert recs["neg"]["verdict"] == "pass"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_an_autograd_item_that_kills_cpu_dies_in_a_child_of_the_fork_server(
        tmp_path: Path) -> None:
    """An autograd item of a ``cpu_crashes`` overload cannot be forked from a process that has
    backpropagated (torch's autograd engine refuses in such a child): it runs in a child of the
    fork server, forked before the process's first backward. Here ``abs::autograd`` backpropagates
    first, CPU's ``neg`` kills any process that calls it on a tensor requiring grad, and a -n 0
    run lives on: ``neg::autograd`` is the oracle's death in a forked child (a skip, not held
    against the backend) and ``neg_::autograd`` after it earns its pass in the same process."""
    stdout, records = _forked_run(tmp_path, "neg", "crashy_grad_oracle", "abs|neg", "autograd")
    recs = [r for r in records if r["category"] != "not_applicable"]
    assert [r["overload"] for r in recs] == ["abs", "abs_", "neg", "neg_"], stdout[-3000:]
    got = {r["overload"]: (r["verdict"], r["category"]) for r in recs}
    assert got["abs"] == got["neg_"] == ("pass", None), recs
    assert got["neg"] == ("skip", "cpu_crashed"), recs
    assert "a forked child of the test process" in recs[2]["message"], recs[2]["message"]


def test_a_death_the_replay_puts_down_to_the_oracle_is_retried_on_recorded_calls() -> None:
    """dead_record of a death in a backend call: where the replay gives it to the oracle
    (``cpu_crashed``), the item's recorded calls are searched as for the oracle's own death;
    a backend's crash is kept as it is."""
    from conformance.pytest_plugin.records import dead_record

    class FakeState:
        timeout = None

        def __init__(self, category: str | None) -> None:
            self.category, self.retried = category, []

        def crash_record(self, marker: dict, message: str) -> dict:
            return {"verdict": "skip" if self.category else "crash", "category": self.category,
                    "message": message}

        def retry_recorded(self, marker: dict, rec: dict, retry: object = None) -> dict:
            self.retried.append(rec)
            return {**rec, "verdict": "pass"}

    marker = {"side": "backend", "call": "_fft_c2r.out(...)", "state": "running"}
    oracle = FakeState("cpu_crashed")
    assert dead_record(oracle, marker, who="gw0", code=-6, ended="")["verdict"] == "pass"
    assert len(oracle.retried) == 1
    backend = FakeState(None)
    assert dead_record(backend, marker, who="gw0", code=-6, ended="")["verdict"] == "crash"
    assert not backend.retried
