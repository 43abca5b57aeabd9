"""``conformance coverage --decompositions``: the static twin of the compile check's
``unsupported``/``missing_kernel``, and the two agreeing on an op left out with ``--without``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conformance.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _cache(tmp_path: Path, table: str, names: list[str], device: str = "mlu") -> Path:
    """The decomposition cache for ``table`` on ``device`` holding ``names`` only (the whole
    table takes minutes to trace: the command reads what the cache holds)."""
    import opdb
    from conformance.trace.decompositions import trace_all
    from opdb.decompositions import cache_key, write_cache

    key = cache_key(table, torch.__version__, device)
    write_cache(tmp_path / f"{key}.json", key,
                trace_all(opdb.load(), table, names=names, device=device))
    return tmp_path


def test_static_twin_and_compile_check_name_the_same_missing_op(
        reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``logsumexp`` has its own kernel on mlu, so eager never calls ``where.self``; Inductor's
    decomposition (``aot_eager_decomp_partition``) does (it masks infinite maxima). With
    ``--without where.self`` the coverage table says so, and the compile check is
    ``unsupported`` naming ``where.self``. (An op with a CompositeExplicit kernel, ``clamp_max``
    over ``clamp_max.out``, left out is still served: neither says it is missing.)"""
    import kernels
    from conformance.core.backends import resolve
    from tests.conformance.checks.test_compile_check import _run as run_compile

    cache = _cache(tmp_path, "inductor", ["logsumexp"])
    argv = ["coverage", "--backend", "mlu", "--without", "where.self",
            "--decompositions", "aot_eager_decomp_partition", "--decompositions-cache", str(cache)]
    try:
        rc, out, _ = _run(capsys, [*argv, "--format", "json"])
        assert rc == 0
        dec = json.loads(out)["decompositions"]
        assert (dec["compile_backend"], dec["table"]) == ("aot_eager_decomp_partition", "inductor")
        (row,) = dec["rows"]
        assert row["overload"] == "logsumexp" and row["missing"] == ["where.self"], row
        assert dec["summary"]["needs_missing"] == 1
        rc, out, _ = _run(capsys, argv)
        assert rc == 0
        assert f"logsumexp  decomposes into {len(row['calls'])} ops, 1 missing on mlu: " \
               "where.self" in out, out

        v = run_compile(resolve("mlu", without=("where.self",),
                                compile_backend="aot_eager_decomp_partition"), "logsumexp",
                        max_examples=5)
        assert (v.verdict, v.category, v.missing_op) == \
            ("unsupported", "missing_kernel", "where.self"), v.message
    finally:
        kernels.install(without=())


def test_the_backend_has_what_the_decomposition_calls(
        reference, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = _cache(tmp_path, "core_aten", ["hardswish"])
    rc, out, _ = _run(capsys, ["coverage", "--backend", "mlu", "--decompositions", "core_aten",
                               "--decompositions-cache", str(cache), "--format", "json"])
    assert rc == 0
    (row,) = json.loads(out)["decompositions"]["rows"]
    assert row["missing"] == [] and row["calls"], row


def test_unknown_compile_backend_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(capsys, ["coverage", "--backend", "cpu", "--decompositions", "mine"])
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "no known decomposition table for compile backend 'mine'" in err


def test_coverage_without_the_option_has_no_decompositions(
        capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, ["coverage", "--backend", "cpu", "--format", "json"])
    assert rc == 0 and "decompositions" not in json.loads(out)
