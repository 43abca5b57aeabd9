"""``opdb.decompositions``: the ops a decomposed overload's compiled graph calls (traced on fake
tensors, functionalized) and which of those a backend lacks; its cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from opdb.decompositions import (
    COMPOSITE_IMPLICIT,
    TABLE,
    Decomposition,
    cache_key,
    decomposed,
    lacking,
    load_table,
    overload_key,
    read_cache,
    summarize,
    table_name,
    trace,
    write_cache,
)
from opdb.dispatch import Status
from opdb.errors import InputError

aten = torch.ops.aten


@pytest.fixture(scope="module")
def core_aten() -> dict:
    return load_table("core_aten")


def test_overload_key_is_the_op_databases_name() -> None:
    assert overload_key(aten.addr.default) == "addr"
    assert overload_key(aten.add.Tensor) == "add.Tensor"
    assert overload_key(torch.ops.prims.convert_element_type.default) == \
        "prims.convert_element_type"
    assert overload_key(len) is None


def test_table_per_compile_backend() -> None:
    assert table_name("aot_eager") == "none" and load_table("none") == {}
    assert table_name("inductor") == table_name("aot_eager_decomp_partition") == "inductor"
    with pytest.raises(InputError, match="no known decomposition table"):
        table_name("my_vendor_compiler")


def test_sources_composite_kernel_or_table(core_aten: dict) -> None:
    got = decomposed(["linear", "addr", "nonzero", "hardswish"], core_aten)
    assert got == {"linear": COMPOSITE_IMPLICIT, "addr": TABLE, "hardswish": TABLE}
    # without a table (aot_eager) only CompositeImplicitAutograd kernels decompose
    assert decomposed(["linear", "addr"], {}) == {"linear": COMPOSITE_IMPLICIT}


def test_trace_names_the_ops_the_graph_calls(core_aten: dict) -> None:
    x = torch.randn(3, 4)
    calls = trace(aten.hardswish.default, [x], {}, core_aten)
    assert {"clamp", "mul.Tensor"} <= set(calls)
    assert "hardswish" not in calls
    # a CompositeImplicitAutograd kernel is traced through with no table at all
    assert "addmm" in trace(aten.linear.default, [x, torch.randn(5, 4), torch.randn(5)], {}, {})


def test_trace_functionalizes_as_aot_autograd_does(core_aten: dict) -> None:
    """In-place and out= forms become their functional ops and a ``copy_``: the compiled
    graph asks the backend for those."""
    x = torch.randn(3, 4)
    assert "copy_" in trace(aten.hardswish_.default, [x], {}, core_aten)
    out = trace(aten.addr.out, [torch.randn(3, 4), torch.randn(3), torch.randn(4)],
                {"out": torch.empty(0)}, core_aten)
    assert "copy_" in out and "addr.out" not in out
    # an in-place CompositeImplicitAutograd op decomposes before it is functionalized, as
    # under AOTAutograd (functionalize alone refuses it)
    assert trace(aten.__iand__.Scalar, [torch.ones(3, dtype=torch.int64), 3], {}, {}) == \
        ("bitwise_and.Scalar", "copy_")


def test_missing_is_what_the_backend_lacks_among_the_calls() -> None:
    d = Decomposition("hardswish", TABLE, ("clamp_max", "clamp_min", "prims.convert_element_type"))
    statuses = {"clamp_max": Status.missing, "clamp_min": Status.native}
    assert d.missing(statuses) == ("clamp_max",)  # another namespace's op is not judged
    # a call the decomposition left alone: the op's own gap is its status, not the twin's
    itself = Decomposition("mm.dtype", TABLE, ("mm.dtype",))
    assert itself.missing({"mm.dtype": Status.missing}) == ()
    untraced = Decomposition("roll", TABLE, None, "not traced: RuntimeError: ...")
    rows = lacking([d, untraced], statuses)
    assert rows[0]["missing"] == ["clamp_max"] and rows[1]["missing"] is None
    assert summarize(rows) == {"decomposed": 2, "traced": 1, "untraced": 1, "needs_missing": 1}


def test_cache_round_trip_and_key(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.json"
    key = cache_key("inductor", torch.__version__)
    decomps = {"hardswish": Decomposition("hardswish", TABLE, ("clamp_max",), example="x"),
               "roll": Decomposition("roll", TABLE, None, "not traced: ...")}
    write_cache(path, key, decomps)
    assert read_cache(path, key) == decomps
    assert read_cache(path, cache_key("inductor", "0.0")) is None  # another torch: traced again
    assert read_cache(tmp_path / "absent.json", key) is None
