"""The pytest plugin as a user runs it (pytester), and ``conformance run``."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torchgen.model  # noqa: F401,E402

# pytester's in-process runs drop modules first imported inside them; torch cannot be imported
# twice in one process, so everything the plugin imports is imported here first.
import conformance.checks.registry  # noqa: F401,E402
import conformance.engine.search  # noqa: F401,E402
import conformance.pytest_plugin  # noqa: F401,E402 - the plugin and every module it imports
import conformance.repro.common  # noqa: F401,E402
import conformance.store.expectations  # noqa: F401,E402
import conformance.store.results  # noqa: F401,E402
import opdb  # noqa: F401,E402

try:
    import kernels

    kernels.registered()  # loads every kernel module now, outside the in-process runs
except ImportError:  # pragma: no cover
    pass

DATA = Path(__file__).parent.parent.parent / "data" / "engine"
QUICK = ("--max-examples", "3", "--hypothesis-db", "none", "-p", "no:cacheprovider")


def _records(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # every line valid JSON


def _verdicts(path: Path) -> dict[str, dict]:
    return {f"{r['overload']}::{r['check']}": r for r in _records(path) if r["record"] == "verdict"}


def test_inert_without_backend(pytester):
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("-p", "conformance")
    result.assert_outcomes(passed=1)


def test_items_ids_results_file_and_k(pytester):
    res = pytester.path / "r.jsonl"
    result = pytester.runpytest("--backend", "cpu", "--ops", "add|abs", "--results", str(res),
                                "--checks", "forward,promotion,broadcast,dtypes", "-v", *QUICK)
    result.stdout.fnmatch_lines(["*add.Tensor::promotion PASSED*",
                                 "conformance: * pairs the check does not apply to were recorded "
                                 "as skip (not_applicable) without running"])
    assert "abs::broadcast" not in result.stdout.str()  # not an item: see test_not_applicable
    assert result.ret == 0
    records = _records(res)
    assert records[0]["record"] == "run" and records[0]["backend"] == "cpu"
    verdicts = _verdicts(res)
    assert {"add.Tensor::forward", "add.Tensor::promotion", "add.Tensor::broadcast",
            "add_.Tensor::forward", "add.out::forward", "abs::forward"} <= set(verdicts)
    v = verdicts["add.Tensor::promotion"]
    assert v["verdict"] == "pass" and v["examples"] > 0 and v["torch_version"]
    assert v["dtypes"] and all(set(t) == {"examples", "cpu_ok", "backend_ok", "agree"}
                               for t in v["dtypes"].values())
    assert verdicts["abs::broadcast"]["category"] == "not_applicable"
    # cpu against cpu: no fails anywhere (the false-positive test)
    assert not [k for k, r in verdicts.items() if r["verdict"] == "fail"]

    result = pytester.runpytest("--backend", "cpu", "--ops", "add", "-k", "promotion", *QUICK)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 4 and "failed" not in outcomes
    assert "deselected" in outcomes


def test_fail_x_lf_junitxml_and_repro(pytester, monkeypatch):
    importlib.import_module("kernels")
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    res = pytester.path / "r.jsonl"
    junit = pytester.path / "junit.xml"
    try:
        # the example database under the rootdir (the default), as a user's reruns have it:
        # --lf and -x replay the shrunk failure instead of shrinking it again
        args = ("--backend", "privateuse1:buggy_alpha", "--ops", r"add\.Tensor|add\.Scalar|sub",
                "--checks", "forward", "-p", "cacheprovider", "--max-examples", "5")
        result = pytester.runpytest_subprocess(*args, "--results", str(res), "--junitxml",
                                               str(junit))
        result.stdout.fnmatch_lines(["*FAILED add.Tensor::forward - [[]value[]]*"])
        fails = [k for k, r in _verdicts(res).items() if r["verdict"] == "fail"]
        assert "add.Tensor::forward" in fails
        rec = _verdicts(res)["add.Tensor::forward"]
        assert rec["category"] == "value" and "import buggy_alpha" in rec["repro"]
        assert 'testcase classname="add.Tensor" name="forward"' in junit.read_text() or \
            "add.Tensor::forward" in junit.read_text() or 'name="add.Tensor::forward"' in \
            junit.read_text()
        # --lf reruns only what failed
        result = pytester.runpytest_subprocess(*args, "--lf")
        outcomes = result.parseoutcomes()
        assert outcomes.get("failed") == len(fails) and "passed" not in outcomes
        # -x stops at the first failure
        result = pytester.runpytest_subprocess(*args, "-x", "-p", "no:cacheprovider")
        assert result.parseoutcomes().get("failed") == 1
    finally:
        pass


def test_expected_failures_file(pytester, monkeypatch):
    importlib.import_module("kernels")
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    xf = pytester.path / "xf.yaml"
    xf.write_text("- id: add.Tensor::forward\n  reason: alpha is ignored (known)\n"
                  "- id: nosuchop.Tensor::forward\n  reason: stale\n")
    res = pytester.path / "r.jsonl"
    try:
        result = pytester.runpytest_subprocess("--backend", "privateuse1:buggy_alpha", "--ops", r"add\.Tensor",
                                    "--checks", "forward", "--expected-failures", str(xf),
                                    "--results", str(res), "-rxX", *QUICK)
        outcomes = result.parseoutcomes()
        assert outcomes.get("xfailed") == 1 and "failed" not in outcomes
        result.stdout.fnmatch_lines(["*nosuchop.Tensor::forward*matches no overload*"])
        rec = _verdicts(res)["add.Tensor::forward"]
        assert rec["verdict"] == "fail" and rec["expected"] == "alpha is ignored (known)"
    finally:
        pass


def test_stale_expected_failure_is_xpass_and_strict_makes_it_an_error(pytester, monkeypatch):
    """An expected-failure entry whose item now passes: XPASS, listed with the entry to delete,
    recorded (pass + expected reason); an error under --strict-expectations."""
    importlib.import_module("kernels")
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    xf = pytester.path / "xf.yaml"
    xf.write_text("- id: add.Tensor::forward\n  reason: alpha is ignored (known)\n"
                  "- id: sub.Tensor::forward\n  reason: fixed long ago\n")
    args = ("--backend", "privateuse1:buggy_alpha", "--ops", r"add\.Tensor|sub\.Tensor",
            "--checks", "forward", "--expected-failures", str(xf), *QUICK)
    res = pytester.path / "r.jsonl"
    result = pytester.runpytest_subprocess(*args, "--results", str(res))
    outcomes = result.parseoutcomes()
    assert outcomes.get("xfailed") == 1 and outcomes.get("xpassed") == 1
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*expected failures that now pass (xpass)*",
                                 f"sub.Tensor::forward: delete the entry at {xf}:3*"])
    assert result.stdout.str().count("delete the entry at") == 1
    rec = _verdicts(res)["sub.Tensor::forward"]
    assert rec["verdict"] == "pass" and rec["expected"] == "fixed long ago"

    strict = pytester.runpytest_subprocess(*args, "--strict-expectations", "--results",
                                           str(pytester.path / "s.jsonl"))
    outcomes = strict.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("xfailed") == 1
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["*sub.Tensor::forward*XPASS(strict)*"])


def test_bad_options_are_usage_errors(pytester, tmp_path):
    result = pytester.runpytest("--backend", "cpu", "--checks", "forward,bogus", *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown check 'bogus'*"])
    bad = tmp_path / "xf.yaml"
    bad.write_text("- id: add.Tensor::forward\n  reasn: typo\n")
    result = pytester.runpytest("--backend", "cpu", "--expected-failures", str(bad), *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{bad}:1: unknown key 'reasn'*"])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(DATA), str(Path.cwd()), os.environ.get("PYTHONPATH", "")]), "CI": ""}


def test_xdist_results_complete_with_crash_and_timeout(tmp_path):
    """-n 2: the file holds one record per item; a segfaulting kernel and a hanging kernel
    each cost one item, recorded as crash / timeout with the call that was running."""
    pytest.importorskip("xdist")
    importlib.import_module("kernels")
    res = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "conformance", "--backend",
           "privateuse1:crashy_segfault", "--ops", "abs|neg|add", "--checks", "forward",
           "--results", str(res), "-n", "2", "--conformance-timeout", "20", *QUICK,
           "--rootdir", str(tmp_path), "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    verdicts = _verdicts(res)
    assert verdicts["abs::forward"]["verdict"] == "crash", proc.stdout[-2000:]
    assert "torch.ops.aten.abs.default" in verdicts["abs::forward"]["repro"]
    # attributed by replaying the call alone, each side in a fresh process
    assert verdicts["abs::forward"]["replay"] == {"cpu": "ok", "backend": "crashed (SIGSEGV)"}
    assert "killed by SIGSEGV" in verdicts["abs::forward"]["message"]
    # where it died: the backend's side run once more, under gdb where it is on PATH (its
    # native frames), else with faulthandler (the kernel's Python frame)
    assert verdicts["abs::forward"]["frames_by"] in ("gdb", "faulthandler")
    assert verdicts["abs::forward"]["frames"], verdicts["abs::forward"]
    if verdicts["abs::forward"]["frames_by"] == "faulthandler":
        assert any("crashy_segfault.py" in f for f in verdicts["abs::forward"]["frames"])
    assert verdicts["add.Tensor::forward"]["verdict"] == "pass"
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids or proc.returncode == 1
    n_items = len(verdicts)
    assert n_items == len({r for r in verdicts}) and n_items >= 8

    res2 = tmp_path / "h.jsonl"
    cmd2 = [*cmd]
    cmd2[cmd2.index("privateuse1:crashy_segfault")] = "privateuse1:crashy_hang"
    cmd2[cmd2.index(str(res))] = str(res2)
    cmd2[cmd2.index("--ops") + 1] = r"neg|abs|add\.Tensor"
    cmd2[cmd2.index("--conformance-timeout") + 1] = "5"
    cmd2[cmd2.index("-n") + 1] = "1"
    # as `conformance run` does: a loaded machine may time out more than the two hung items,
    # and xdist's default (4 restarts for -n 1) would then end the run early
    cmd2 += ["--max-worker-restart", "1000"]
    proc = subprocess.run(cmd2, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    verdicts = _verdicts(res2)
    assert "add.Tensor::forward" in verdicts, (proc.stdout[-3000:], proc.stderr[-3000:])
    # neg sleeps (GIL free: the watchdog thread fires); abs spins in C holding the GIL (the
    # faulthandler backstop ends the worker; the controller sees how long it ran)
    assert verdicts["neg::forward"]["verdict"] == "timeout", verdicts["neg::forward"]
    assert verdicts["abs::forward"]["verdict"] == "timeout", verdicts["abs::forward"]
    assert verdicts["add.Tensor::forward"]["verdict"] == "pass"  # the run went on


def _crashes_hint(tmp_path: Path, names: str) -> Path:
    path = tmp_path / "hints.yaml"
    path.write_text(f"ops:\n  - names: [{names}]\n    cpu_crashes: true\n")
    return path


def test_only_host_memory_backends_are_forked():
    from conformance.core.backends import BUILTIN, resolve

    assert resolve("cpu").fork_safe and resolve("meta").fork_safe and resolve("mlu").fork_safe
    # a forked child cannot use the parent's CUDA/XPU/MPS/XLA state: those items stay in-process
    assert not any(BUILTIN[name].fork_safe for name in ("cuda", "xpu", "mps", "xla"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_cpu_crashes_items_run_in_a_forked_child(tmp_path):
    """An overload the hints mark ``cpu_crashes`` runs each item in a forked child: a process
    killed there costs the child, not the run (here in-process, -n 0, where it would end the
    whole run), and the verdicts are what a dead xdist worker's would be: a crash replayed and
    pinned on the backend, an oracle's death a skip/cpu_crashed, a hang a timeout."""
    importlib.import_module("kernels")
    res = tmp_path / "r.jsonl"
    base = [sys.executable, "-m", "pytest", "-p", "conformance", "--checks", "forward",
            "-n", "0", *QUICK, "--rootdir", str(tmp_path), "-q"]
    cmd = [*base, "--backend", "privateuse1:crashy_segfault", "--ops", "abs|neg",
           "--hints", str(_crashes_hint(tmp_path, "'abs*', 'neg*'")), "--results", str(res)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    verdicts = _verdicts(res)
    assert set(verdicts) >= {"abs::forward", "abs_::forward", "neg::forward", "neg.out::forward"}, \
        (proc.stdout[-2000:], proc.stderr[-2000:])
    rec = verdicts["abs::forward"]
    assert rec["verdict"] == "crash", rec
    assert rec["replay"] == {"cpu": "ok", "backend": "crashed (SIGSEGV)"}
    assert "a forked child of the test process, killed by SIGSEGV" in rec["message"]
    assert "torch.ops.aten.abs.default" in rec["repro"]
    assert verdicts["neg::forward"]["verdict"] == "pass"  # the process lived on

    oracle = tmp_path / "cpu.jsonl"
    cmd = [*base, "--backend", "privateuse1:crashy_cpu_abs", "--ops", "abs",
           "--hints", str(_crashes_hint(tmp_path, "'abs*'")), "--results", str(oracle)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    rec = _verdicts(oracle)["abs::forward"]
    assert (rec["verdict"], rec["category"]) == ("skip", "cpu_crashed"), proc.stdout[-2000:]
    assert "CPU (the oracle) crashed the process (a forked child" in rec["message"]

    hung = tmp_path / "h.jsonl"
    # only forked items here: an in-process item past the timeout ends the whole -n 0 run (a
    # loaded machine took add.Tensor::forward past 5 s)
    cmd = [*base, "--backend", "privateuse1:crashy_hang", "--ops", "neg",
           "--conformance-timeout", "10", "--hints", str(_crashes_hint(tmp_path, "'neg*'")),
           "--results", str(hung)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    verdicts = _verdicts(hung)
    assert "neg::forward" in verdicts, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert verdicts["neg::forward"]["verdict"] == "timeout", verdicts["neg::forward"]
    assert "timeout; process ended" in verdicts["neg::forward"]["message"]
    assert verdicts["neg.out::forward"]["verdict"] == "pass"  # the run went on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_autograd_items_are_not_forked(tmp_path):
    """torch's autograd engine refuses to backpropagate in a child forked after its parent ran
    a backward ("Unable to handle autograd's threading in combination with fork-based
    multiprocessing"): a cpu_crashes overload's autograd item forked after relu's ran
    in-process drew only that refusal (no_valid_inputs). It runs in-process, as it did."""
    importlib.import_module("kernels")
    res = tmp_path / "r.jsonl"
    cmd = [sys.executable, "-m", "pytest", "-p", "conformance", "--checks", "autograd",
           "-n", "0", *QUICK, "--rootdir", str(tmp_path), "-q", "--backend", "mlu",
           "--ops", "relu|tanh", "--hints", str(_crashes_hint(tmp_path, "'tanh*'")),
           "--results", str(res)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    verdicts = _verdicts(res)
    assert verdicts["relu::autograd"]["verdict"] == "pass", (proc.stdout[-2000:],)
    rec = verdicts["tanh::autograd"]
    assert rec["verdict"] == "pass" and rec["examples"] > 0, rec["message"]


def test_conformance_run_cli(tmp_path):
    out = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--backend", "cpu", "--ops", "mul|where",
         "--checks", "forward,promotion,broadcast,dtypes", "--max-examples", "3", "-n", "0",
         "-o", str(out)],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr  # no progress line when piped
    assert "promotion" in proc.stdout and "pass" in proc.stdout
    assert f"results: {out}" in proc.stdout
    verdicts = _verdicts(out)
    assert verdicts and all(r["verdict"] in ("pass", "skip") for r in verdicts.values())
    bad = subprocess.run([sys.executable, "-m", "conformance", "run", "--backend", "cpu",
                          "--ops", "(unclosed"], capture_output=True, text=True,
                         cwd=tmp_path, env=_env(), timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("conformance run: error: --ops: invalid regular")


def test_shards_partition_the_items(pytester):
    def ids(*extra: str) -> set[str]:
        result = pytester.runpytest("--backend", "cpu", "--ops", "mul|abs", "--collect-only",
                                    "-q", *extra, *QUICK)
        return {line for line in result.outlines if "::" in line and " " not in line}

    every = ids()
    a, b = ids("--shard", "0/2"), ids("--shard", "1/2")
    assert every and a and b and not (a & b) and a | b == every
    # balanced by a previous run's durations: still a partition, the same one every time
    durations = pytester.path / "prev.jsonl"
    durations.write_text("\n".join(json.dumps(
        {"record": "verdict", "overload": i.split("::")[0], "check": i.split("::")[1],
         "duration_s": 5.0 if i.startswith("mul") else 0.1}) for i in sorted(every)) + "\n")
    by_time = [ids("--shard", f"{k}/3", "--shard-durations", str(durations)) for k in range(3)]
    assert set().union(*by_time) == every and sum(map(len, by_time)) == len(every)
    assert by_time[0] == ids("--shard", "0/3", "--shard-durations", str(durations))
    result = pytester.runpytest("--backend", "cpu", "--shard", "2/2", *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_progress_line_and_summary(tmp_path):
    import io
    import types

    from conformance.pytest_plugin.progress import Progress, summarize

    stream = io.StringIO()
    progress = Progress(stream, tty=True)
    progress.total = 2
    for verdict in ("pass", "fail"):
        rec = json.dumps({"verdict": verdict})
        progress.pytest_runtest_logreport(types.SimpleNamespace(
            user_properties=[("conformance_verdict", rec)], when="call", nodeid="x::forward",
            passed=verdict == "pass", failed=verdict == "fail"))
    shown = stream.getvalue()
    assert "\r[2/2 100%" in shown and "fail 1" in shown and "/s" in shown and "ETA" in shown
    # not a terminal (a CI log): plain status lines, at most one per interval, no \r
    log = io.StringIO()
    progress = Progress(log, tty=False, interval=3600)
    progress.total = 3
    for verdict in ("pass", "fail"):
        rec = json.dumps({"verdict": verdict, "expected": "known" if verdict == "pass" else None})
        progress.pytest_runtest_logreport(types.SimpleNamespace(
            user_properties=[("conformance_verdict", rec)], when="call", nodeid="x::forward",
            passed=True, failed=False))
    assert log.getvalue() == ""  # the interval has not passed
    progress.interval = 0
    progress.draw("x")
    line = log.getvalue()
    assert line.startswith("conformance: 2/3 67%") and line.endswith("\n") and "\r" not in line
    assert "xpass 1" in line and "fail 1" in line and "ETA" in line

    res = tmp_path / "r.jsonl"
    res.write_text("\n".join(json.dumps(r) for r in [
        {"record": "run", "backend": "mlu", "device": "mlu", "seed": 0},
        {"record": "verdict", "overload": "a.T", "check": "forward", "verdict": "fail",
         "category": "dtype"},
        {"record": "verdict", "overload": "a.T", "check": "promotion", "verdict": "pass"},
        {"record": "verdict", "overload": "b", "check": "forward", "verdict": "unsupported",
         "missing_op": "b"},
        {"record": "verdict", "overload": "c", "check": "forward", "verdict": "pass",
         "expected": "was broken"}]) + "\n")
    text = summarize(res, html="r.html")
    assert "xpass: 1 expected failure(s) now pass (stale entries): c::forward" in text
    assert "forward/dtype" in text and "results: " in text and "report:  r.html" in text
    assert "unsupported: 1 verdicts, 1 missing kernels" in text
