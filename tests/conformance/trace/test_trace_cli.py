"""``conformance trace`` as a user runs it: the examples, the acceptance case, bad input."""

from __future__ import annotations

import importlib
import json
import textwrap
from pathlib import Path

import pytest

from conformance.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent.parent.parent / "examples"
POOL_BWD = "_adaptive_avg_pool2d_backward"


@pytest.fixture()
def reference():
    """The full reference backend again after each test (a test may leave ops out)."""
    kernels = importlib.import_module("kernels")
    kernels.install(without=())
    yield
    kernels.install(without=())


def _trace(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    rc = main(["trace", *argv, "--format", "json"])
    out = capsys.readouterr()
    return rc, json.loads(out.out), out.err


def _target(tmp_path: Path, body: str, name: str = "model.py") -> str:
    path = tmp_path / name
    path.write_text("import torch\nfrom torch import nn\n\n" + textwrap.dedent(body))
    return str(path)


def test_acceptance_resnet_without_adaptive_pool_backward(reference, capsys) -> None:
    rc, doc, _ = _trace(capsys, str(EXAMPLES / "resnet.py"), "--backend", "mlu",
                        "--without", POOL_BWD, "--run")
    assert rc == 1
    assert doc["missing"] == [{"name": POOL_BWD,
                               "reasons": ["backward of `_adaptive_avg_pool2d` (derivatives.yaml)"]}]
    run = doc["run"]
    assert run["confirmed"] and run["failed_op"] == POOL_BWD and run["phase"] == "backward"
    by_name = {o["name"]: o for o in doc["overloads"]}
    assert by_name["_adaptive_avg_pool2d"]["via"] == ["adaptive_avg_pool2d"]
    assert by_name["addmm"]["status"] == "native"
    assert {"name": "linear"} .items() <= next(
        c for c in doc["composites"] if c["name"] == "linear").items()


def test_acceptance_table(reference, capsys) -> None:
    rc = main(["trace", str(EXAMPLES / "resnet.py"), "--backend", "mlu", "--without", POOL_BWD])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"1 missing overload(s) on mlu:\n  {POOL_BWD}: backward of `_adaptive_avg_pool2d`" in out
    assert out.count("MISSING") == 1


@pytest.mark.parametrize("example", ["resnet.py", "bert.py", "lstm_lm.py"])
def test_examples_pass_run_on_the_full_reference_backend(reference, capsys, example) -> None:
    rc, doc, _ = _trace(capsys, str(EXAMPLES / example), "--backend", "mlu", "--run", "--train")
    assert doc["missing"] == [] and rc == 0, doc["run"]
    run = doc["run"]
    assert run["confirmed"] and run["error"] is None
    names = {d["name"] for d in run["diffs"]}
    assert {"output", "loss"} <= names
    assert any(n.startswith("grad ") for n in names) and any(n.startswith("param ") for n in names)
    assert all(d["ok"] and d["max_abs_diff"] is not None for d in run["diffs"])


def test_forward_and_optimizer_reasons(reference, capsys, tmp_path) -> None:
    target = _target(tmp_path, """
        def make():
            return nn.Sequential(nn.Linear(4, 3), nn.ReLU()), torch.randn(2, 4)
    """)
    # without its own addmm, mlu serves addmm through torchgen's composite, which calls addmm.out
    rc, doc, _ = _trace(capsys, target, "--backend", "mlu", "--without", "addmm", "--run")
    assert rc == 0 and doc["run"]["confirmed"]
    assert {"name": "addmm", "status": "composite_explicit"}.items() <= next(
        o for o in doc["overloads"] if o["name"] == "addmm").items()
    # ... so a missing addmm.out behind it is found
    rc, doc, _ = _trace(capsys, target, "--backend", "mlu", "--without", "addmm,addmm.out",
                        "--run")
    assert rc == 1
    assert doc["missing"] == [{"name": "addmm.out",
                               "reasons": ["called by forward (via `addmm`)"]}]
    assert doc["run"]["confirmed"] and doc["run"]["phase"] == "forward"
    assert doc["run"]["failed_op"] == "addmm.out"
    # the optimizer step: SGD picks the foreach kernels on mlu (not on CPU), so the trace for
    # mlu asks for them
    for backend, op in (("mlu", "_foreach_add_.List"), ("cpu", "add_.Tensor")):
        rc, doc, _ = _trace(capsys, target, "--backend", backend, "--train")
        assert rc == 0
        step = next(o for o in doc["overloads"] if o["name"] == op)
        assert step["phases"] == ["optimizer"]


def test_run_reports_a_wrong_kernel(reference, capsys, tmp_path, monkeypatch) -> None:
    # a vendor-like backend whose relu doubles its result
    (tmp_path / "trace_buggy_relu.py").write_text(textwrap.dedent("""
        import kernels
        from kernels.registry import kernel

        _relu = kernel("relu")
        kernels.install(overrides={"relu": lambda self: _relu(self) * 2})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    target = _target(tmp_path, """
        def make():
            return nn.Sequential(nn.Linear(4, 3), nn.ReLU()), torch.randn(2, 4)
    """)
    rc, doc, _ = _trace(capsys, target, "--backend", "privateuse1:trace_buggy_relu", "--run")
    assert rc == 1 and doc["missing"] == []
    run = doc["run"]
    assert not run["confirmed"] and "differ from CPU" in run["summary"]
    bad = {d["name"] for d in run["diffs"] if not d["ok"]}
    assert "output" in bad and all(d["max_abs_diff"] > 0 for d in run["diffs"] if not d["ok"])


def test_no_backend_lists_only(capsys, tmp_path) -> None:
    target = _target(tmp_path, """
        def build():
            return nn.Linear(4, 3), torch.randn(2, 4)
    """)
    rc, doc, _ = _trace(capsys, f"{target}:build")
    assert rc == 0 and doc["backend"] is None and doc["missing"] == []
    addmm = next(o for o in doc["overloads"] if o["name"] == "addmm")
    assert addmm["status"] == "" and addmm["count"] == 1 and addmm["phases"] == ["forward"]
    assert addmm["examples"][0].startswith("(self=float32[3], mat1=float32[2, 4]")
    rc, doc, _ = _trace(capsys, f"{target}:build", "--examples", "0")
    assert all(o["examples"] == [] for o in doc["overloads"])


def test_meta_trace_matches(reference, capsys) -> None:
    rc, doc, _ = _trace(capsys, str(EXAMPLES / "resnet.py"), "--backend", "mlu", "--meta",
                        "--without", POOL_BWD)
    assert rc == 1 and doc["traced_on"] == "meta"
    assert [m["name"] for m in doc["missing"]] == [POOL_BWD]
    assert "float32[2, 16, 4, 4]" in json.dumps(doc["overloads"])


def test_module_callable_and_exported_program(capsys, tmp_path, monkeypatch) -> None:
    import torch

    monkeypatch.syspath_prepend(str(tmp_path))
    _target(tmp_path, """
        def make():
            return nn.Sequential(nn.Linear(4, 3), nn.ReLU()), torch.randn(2, 4)
    """, name="tracemod_fixture.py")
    rc, doc, _ = _trace(capsys, "tracemod_fixture:make")
    assert rc == 0 and "addmm" in {o["name"] for o in doc["overloads"]}

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    ep = torch.export.export(model, (torch.randn(2, 4),))
    torch.export.save(ep, tmp_path / "m.pt2")
    rc, doc, _ = _trace(capsys, str(tmp_path / "m.pt2"))
    assert rc == 0
    names = {o["name"] for o in doc["overloads"]}
    assert {"addmm", "relu", "threshold_backward"} <= names


@pytest.mark.parametrize(("body", "message"), [
    ("x = 1\n", "defines no make()"),
    ("def make():\n    raise ValueError('no weights here')\n",
     ":5: make() raised ValueError: no weights here"),
    ("def make():\n    return 3\n", "make() must return"),
    ("def make():\n    return (lambda x: x), torch.ones(1)\n", "must be a torch.nn.Module"),
    ("def make(:\n", "SyntaxError"),
])
def test_bad_targets_are_one_line_errors(capsys, tmp_path, body, message) -> None:
    target = _target(tmp_path, body)
    rc = main(["trace", target])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith(f"conformance trace: error: {target}")
    assert message in err


def test_missing_file_and_options(capsys, tmp_path) -> None:
    for argv, message in (
        ([str(tmp_path / "nope.py")], "nope.py: file not found"),
        (["no_such_module_xyz:make"], "cannot import 'no_such_module_xyz'"),
        ([str(EXAMPLES / "resnet.py"), "--run"], "--run needs --backend"),
        ([str(EXAMPLES / "resnet.py"), "--backend", "nosuch"], "unknown backend"),
    ):
        rc = main(["trace", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and message in err, err


def test_forward_that_raises_is_bad_input(capsys, tmp_path) -> None:
    target = _target(tmp_path, """
        class Broken(nn.Module):
            def forward(self, x):
                return x @ torch.ones(5, 5)

        def make():
            return Broken(), torch.ones(2, 3)
    """)
    rc = main(["trace", target])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"{target}:7: the workload raised on CPU while tracing: RuntimeError" in err


def test_check_runs_the_parity_engine_on_the_models_overloads(reference, capsys, tmp_path) -> None:
    target = _target(tmp_path, """
        def make():
            return nn.ReLU(), torch.randn(3)
    """)
    results = tmp_path / "r.jsonl"
    rc = main(["trace", target, "--backend", "mlu", "--check", "-n", "0", "--max-examples", "2",
               "-o", str(results)])
    out = capsys.readouterr().out
    assert rc == 0, out
    verdicts = [json.loads(line) for line in results.read_text().splitlines()]
    tested = {v["overload"] for v in verdicts if v["record"] == "verdict"}
    assert "relu" in tested
    assert all(v["verdict"] in ("pass", "skip") for v in verdicts if v["record"] == "verdict")


def test_untied_parameters_are_noted() -> None:
    import torch

    from conformance.trace.census import shared_parameters_note

    def tied() -> torch.nn.Module:
        m = torch.nn.Module()
        m.e, m.d = torch.nn.Embedding(4, 2), torch.nn.Linear(2, 4)
        m.d.weight = m.e.weight
        return m

    m = tied()
    assert shared_parameters_note(m, m, "cpu") is None
    untied = tied()
    untied.d.weight = torch.nn.Parameter(untied.e.weight.detach().clone())
    note = shared_parameters_note(m, untied, "mlu")
    assert note == ("model.to('mlu') did not keep parameter sharing: 2 distinct parameters on "
                    "CPU, 3 on mlu (tied weights were untied)")


def test_several_targets_make_a_census(reference, capsys, tmp_path) -> None:
    linear = _target(tmp_path, """
        def make():
            return nn.Linear(4, 3), torch.randn(2, 4)
    """, name="linear.py")
    rc, doc, _ = _trace(capsys, linear, str(EXAMPLES / "resnet.py"), "--backend", "mlu",
                        "--without", POOL_BWD)
    assert rc == 1  # resnet lacks the pool backward
    assert [w["target"] for w in doc["workloads"]] == [linear, str(EXAMPLES / "resnet.py")]
    assert [m["name"] for m in doc["workloads"][1]["missing"]] == [POOL_BWD]
    assert doc["workloads"][0]["missing"] == []
    assert main(["trace", linear, linear, "--run", "--backend", "mlu"]) == 2
    assert "--run takes one TARGET" in capsys.readouterr().err
