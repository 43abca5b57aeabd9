"""Nox sessions. All installs go through constraints.txt so torch stays the pinned CPU build."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests", "lint"]
PYTHON = ["3.11"]
CONSTRAINTS = ("-c", "constraints.txt")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the test suite (the README's test command)."""
    session.install(*CONSTRAINTS, "-e", ".[test]")
    session.run("python", "-m", "pytest", "-n", "2", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Ruff and mypy over the packages."""
    session.install(*CONSTRAINTS, "-e", ".[dev]")
    session.run("ruff", "check", ".")
    session.run("mypy", "opdb", "conformance", "reports", "kernels")


@nox.session(python=PYTHON, default=False)
def report(session: nox.Session) -> None:
    """Full conformance run on the reference backend, writing results.jsonl and report.html."""
    session.install(*CONSTRAINTS, "-e", ".[test]")
    session.run(
        "conformance", "run", "--backend", "mlu", "-o", "results.jsonl", "--overwrite",
        "--html", "report.html",
        *session.posargs,
    )


@nox.session(python=PYTHON, default=False)
def cpu_self(session: nox.Session) -> None:
    """CPU against itself on every overload (the oracle must pass its own run: 0 fails)."""
    session.install(*CONSTRAINTS, "-e", ".[test]")
    session.run("conformance", "run", "--backend", "cpu", "-o", "cpu-self.jsonl", "--overwrite",
                *session.posargs)
    session.run("python", "-c", "import json,sys; bad=[r for r in map(json.loads, "
                "open('cpu-self.jsonl')) if r.get('verdict') in ('fail','crash','timeout')]; "
                "[print(r['overload'], r['check'], r['verdict'], r['message'][:160]) for r in bad];"
                " sys.exit(1 if bad else 0)")


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Run every benchmark script in benchmarks/."""
    session.install(*CONSTRAINTS, "-e", ".[test]")
    import pathlib

    for script in sorted(pathlib.Path("benchmarks").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


#: PyTorch/XLA and the torch it is built against: torch_xla 2.9.0 pins torch 2.9.0 in its release
#: notes (its wheel's metadata names no torch), so both are named here.
XLA = ("torch_xla==2.9.0", "torch==2.9.0")
#: Where torch 2.9.0 comes from: its CPU build (PyPI's default build pulls the CUDA libraries,
#: gigabytes that PJRT_DEVICE=CPU never uses), or ``$TORCH_INDEX_URL``. Where that index cannot
#: be reached (a machine that sees only PyPI), PyPI's build: it runs on the CPU just the same.
#: torch_xla itself comes from the package index.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _reachable(url: str, timeout: float = 10.0) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout):  # noqa: S310 - a fixed https URL
            return True
    except OSError:
        return False


@nox.session(python=PYTHON, default=False)
def xla(session: nox.Session) -> None:
    """Full default run on PyTorch/XLA on the CPU (PJRT_DEVICE=CPU), torch_xla in its own venv."""
    # not constraints.txt: it pins the torch this project tests (2.13), which torch_xla 2.9
    # does not run on
    index = os.environ.get("TORCH_INDEX_URL", TORCH_CPU_INDEX)
    if _reachable(index):
        session.install(XLA[1], "--index-url", index)
    else:
        session.log(f"{index} cannot be reached: {XLA[1]} from the package index "
                    f"(its CUDA build, several GB; PJRT_DEVICE=CPU does not use CUDA)")
    session.install(*XLA, "-e", ".")
    session.run("python", "-c", "import torch, torch_xla; print('torch', torch.__version__, "
                "'torch_xla', torch_xla.__version__)")
    session.run("conformance", "run", "--backend", "xla", "-o", "xla.jsonl", "--overwrite",
                "--html", "xla.html", *session.posargs, env={"PJRT_DEVICE": "CPU"})
