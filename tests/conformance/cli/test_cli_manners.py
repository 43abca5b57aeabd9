"""The command line as a new user meets it: help that names things, defaults that agree,
bad input refused in one line before any work starts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main

REPORTS = Path(__file__).parent.parent.parent / "data" / "reports"


def test_run_help_names_every_check_from_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.checks.registry import CHECKS

    with pytest.raises(SystemExit) as exc:
        main(["run", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name, check in CHECKS.items():
        assert f"  {name}" in out and check.doc in out
    assert "--resume" in out and "--overwrite" in out and "--durations" in out
    # --checks' help says the default the run uses (it said "all of them" while four ran)
    from conformance.checks.registry import DEFAULT_CHECKS

    default = ",".join(DEFAULT_CHECKS)
    flat = "".join(out.split())  # argparse wraps the option's help (inside the list, too)
    assert flat.count(f"default:{default}") == 2, out  # the option's help, the list's title
    assert "all of them" not in out and len(DEFAULT_CHECKS) < len(CHECKS)


def test_plugin_checks_help_names_the_default_checks() -> None:
    """The plugin's ``--checks`` (``pytest --backend``) names the same default."""
    import argparse

    import conformance.pytest_plugin.options as options
    from conformance.checks.registry import DEFAULT_CHECKS

    seen: dict[str, str] = {}

    class Group:
        def addoption(self, *names: str, **kw: object) -> None:
            seen[names[0]] = str(kw.get("help"))

    parser = argparse.Namespace(getgroup=lambda *a, **k: Group())
    options.pytest_addoption(parser)  # type: ignore[arg-type]
    assert seen["--checks"].endswith(f"(default: {','.join(DEFAULT_CHECKS)})")


@pytest.mark.parametrize("shard", ["3/2", "2/2", "1/0", "a/b", "1-2"])
def test_bad_shard_refused_in_one_line_before_pytest(shard: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--backend", "cpu",
                           "--shard", shard], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("conformance run: error: --shard must be K/N")
    assert proc.stdout == ""


def test_durations_needs_shard_and_a_results_file(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "cpu", "--durations", str(REPORTS / "small.jsonl"),
                 "-o", str(tmp_path / "r.jsonl")]) == 2
    assert "needs --shard" in capsys.readouterr().err
    assert main(["run", "--backend", "cpu", "--shard", "0/2", "--durations",
                 str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "r.jsonl")]) == 2
    assert "nope.jsonl: --durations: file not found" in capsys.readouterr().err


def test_resume_and_overwrite_exclude_each_other(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "cpu", "--resume", "--overwrite",
                 "-o", str(tmp_path / "r.jsonl")]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_report_reads_what_run_writes_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report"]) == 2  # nothing there yet: one line naming the file
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "results.jsonl" in err[0]
    shutil.copy(REPORTS / "small.jsonl", tmp_path / "results.jsonl")
    assert main(["report"]) == 0
    assert (tmp_path / "report.html").stat().st_size > 0


@pytest.mark.parametrize(("args", "message"), [
    (["--checks", ","], "--checks: no check named"),
    (["--checks", "forward,nope"], "--checks: unknown check 'nope'"),
    (["--html", "/nonexistent-dir/r.html"], "--html: directory '/nonexistent-dir' does not exist"),
    (["-o", "/nonexistent-dir/r.jsonl"], "-o: directory '/nonexistent-dir' does not exist"),
])
def test_run_refuses_bad_input_before_running(args: list[str], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--backend", "cpu", "-o", str(tmp_path / "r.jsonl"), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "r.jsonl").exists()


def test_progress_counts_a_dead_worker_as_the_verdict_the_controller_settled() -> None:
    """A worker death the replay pins on CPU is a ``cpu_crashed`` skip: the status line must not
    count it as a crash (the controller hook runs first and attaches the settled record)."""
    import io
    import json
    from types import SimpleNamespace

    from conformance.pytest_plugin.progress import Progress

    progress = Progress(io.StringIO(), tty=False)
    rec = {"overload": "neg", "check": "forward", "verdict": "skip", "category": "cpu_crashed"}
    dead = SimpleNamespace(when="???", nodeid="neg::forward", passed=False, failed=True,
                           user_properties=[("conformance_verdict", json.dumps(rec))])
    progress.pytest_runtest_logreport(dead)  # type: ignore[arg-type]
    assert progress.counts == {"skip": 1}
    unsettled = SimpleNamespace(when="???", nodeid="add::forward", passed=False, failed=True,
                                user_properties=[])
    progress.pytest_runtest_logreport(unsettled)  # type: ignore[arg-type]
    assert progress.counts == {"skip": 1, "crash": 1}


def test_run_takes_its_own_hints_and_tolerances_files(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``--hints``/``--tolerances`` are validated before the run (file:line) and passed on."""
    bad = tmp_path / "hints.yaml"
    bad.write_text("ops:\n  - names: [no_such_overload.Tensor]\n    max_side: 2\n")
    argv = ["run", "--backend", "cpu", "-o", str(tmp_path / "r.jsonl"), "--hints", str(bad)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "hints.yaml:2" in err[0] and "no_such_overload" in err[0], err
    assert main(["run", "--backend", "cpu", "-o", str(tmp_path / "r.jsonl"),
                 "--tolerances", str(tmp_path / "missing.yaml")]) == 2
    assert "--tolerances: file not found" in capsys.readouterr().err
    tol = tmp_path / "tol.yaml"
    tol.write_text("- names: [abs]\n  dtypes: [float32]\n  rtol: 0.5\n  atol: 0.5\n"
                   "  reason: a test\n")
    from conformance.cli import build_parser
    from conformance.commands.run import pytest_argv

    args = build_parser().parse_args(["run", "--backend", "cpu", "--hints", str(bad),
                                      "--tolerances", str(tol)])
    argv = pytest_argv(args, 0, str(tmp_path))
    assert argv[argv.index("--hints") + 1] == str(bad)
    assert argv[argv.index("--tolerances") + 1] == str(tol)
    assert "--assert=plain" in argv  # every worker start would rewrite the plugins' modules
