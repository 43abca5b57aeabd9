"""Kernels by table: ``register_rows``/``bind``, the one dtype refusal, dtype facts from
``opdb.dtypes``, and what the backend refuses because it cannot represent it (sparse results)."""

from __future__ import annotations

import functools

import pytest
import torch

import kernels
from kernels import _semantics, registry
from opdb import dtypes as opdb_dtypes


@pytest.fixture(autouse=True)
def _installed() -> None:
    kernels.install()


def test_bind_passes_schema_arguments_by_name_with_defaults_and_out_gathered() -> None:
    seen = {}

    def impl(self, dim=None, keepdim=None, dtype=None, out=None):  # type: ignore[no-untyped-def]
        seen.update(self=self, dim=dim, keepdim=keepdim, dtype=dtype, out=out)
        return "result"

    kernel = registry.bind(impl, "sum.dim_IntList")
    assert kernel("x", [1]) == "result"
    # keepdim left out by the caller arrives with the schema's default, dtype with impl's own
    assert seen == {"self": "x", "dim": [1], "keepdim": False, "dtype": None, "out": None}
    registry.bind(impl, "sum.IntList_out")("x", [0], out="o")
    assert seen["out"] == "o"


def test_bind_gathers_several_out_arguments_and_renames_python_keywords() -> None:
    got = {}
    registry.bind(lambda self, dim, keepdim, out: got.update(out=out), "max.dim_max")(
        "x", 0, False, max="values", max_values="indices")
    assert got["out"] == ("values", "indices")
    registry.bind(lambda self, from_, to, generator=None: got.update(lo=from_, hi=to),
                  "random_.from")("x", 3, 7)
    assert (got["lo"], got["hi"]) == (3, 7)


def test_bind_refuses_an_impl_that_cannot_take_the_schema_arguments_at_import() -> None:
    with pytest.raises(TypeError, match="no parameter keepdim"):
        registry.bind(lambda self, dim, dtype=None: None, "sum.dim_IntList")
    with pytest.raises(TypeError, match="dtype needs a default"):
        registry.bind(lambda self, dim, keepdim, dtype: None, "sum.dim_IntList")


def test_a_row_serves_every_overload_of_its_entry_like_the_hand_written_kernels_did() -> None:
    x = torch.arange(6.0).reshape(2, 3)
    m = x.to("mlu")
    torch.testing.assert_close(m.sum().cpu(), x.sum())
    torch.testing.assert_close(m.sum(1, keepdim=True).cpu(), x.sum(1, keepdim=True))
    out = torch.empty(0, device="mlu")
    assert torch.sum(m, 0, out=out) is out
    torch.testing.assert_close(out.cpu(), x.sum(0))
    values, indices = torch.empty(0, device="mlu"), torch.empty(0, dtype=torch.long, device="mlu")
    torch.max(m, 1, out=(values, indices))
    torch.testing.assert_close(indices.cpu(), x.max(1).indices)
    w = torch.kaiser_window(5, periodic=False, beta=3.0, device="mlu")
    torch.testing.assert_close(w.cpu(), torch.kaiser_window(5, periodic=False, beta=3.0))


def test_partial_rows_are_named_after_their_function_in_duplicate_errors() -> None:
    with pytest.raises(ValueError, match=r"already registered by kernels\.reductions\._amax"):
        registry.register("amax")(functools.partial(len))


def test_check_dtype_is_cpus_refusal() -> None:
    with pytest.raises(NotImplementedError, match=r"^\"op_cpu\" not implemented for 'Half'$"):
        _semantics.check_dtype("op_cpu", torch.float16, allowed=_semantics.REAL - {torch.float16})
    with pytest.raises(NotImplementedError, match="'Bool'"):
        _semantics.check_dtype("op_cpu", torch.bool, refused=_semantics.BOOL)
    _semantics.check_dtype("op_cpu", torch.float32, allowed=_semantics.FLOATING)
    with pytest.raises(NotImplementedError, match="\"median_cpu\" not implemented for 'Bool'"):
        torch.ones(3, dtype=torch.bool, device="mlu").median()


def test_dtype_sets_and_names_come_from_opdb_dtypes() -> None:
    assert _semantics.ALL == frozenset(opdb_dtypes.torch_dtypes())
    assert [d for d in opdb_dtypes.torch_dtypes() if d in _semantics.LOW_PRECISION] == [
        torch.float16, torch.bfloat16]
    for name in opdb_dtypes.DTYPE_NAMES:
        d = opdb_dtypes.torch_dtype(name)
        assert _semantics.scalar_type_name(d) == opdb_dtypes.SCALAR_TYPE_NAMES[name]
        assert _semantics.cpp_type_name(d) == opdb_dtypes.CPP_TYPE_NAMES[name]
    # outside the twelve: torch's own spelling
    assert _semantics.scalar_type_name(torch.uint16) == "UInt16"
    assert _semantics.cpp_type_name(torch.uint16) == "uint16"


@pytest.mark.parametrize("name", ["sparse_csr_tensor.crow_col_value_size",
                                  "sparse_bsc_tensor.ccol_row_value_size",
                                  "_sparse_csr_tensor_unsafe"])
def test_sparse_results_are_refused_as_a_missing_kernel(name: str) -> None:
    from conformance.core.verdicts import missing_op_from

    def t(*v: int) -> torch.Tensor:
        return torch.tensor(v, device="mlu")

    values = torch.ones(2, 1, 1, device="mlu") if "bs" in name else torch.ones(2, device="mlu")
    with pytest.raises(NotImplementedError) as info:
        registry.resolve_overload(name)(t(0, 1, 2), t(0, 1), values, [2, 2])
    assert missing_op_from(info.value) == (name, "mlu")
    assert name in registry.unsupported()


@pytest.mark.parametrize("op", ["copysign.Scalar", "__lshift__.Scalar", "le.Scalar"])
def test_a_category_refusal_covers_promotion_beyond_the_twelve(op: str) -> None:
    # float16 with a complex Scalar computes in complex32: CPU refuses it as "complex"
    x = torch.ones(2, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        registry.resolve_overload(op)(x, 1.5 + 0.5j)
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        registry.resolve_overload(op)(x.to("mlu"), 1.5 + 0.5j)


def test_the_bfloat16_row_is_there_whenever_asked() -> None:
    # NP_DTYPE adds its bfloat16 row (ml_dtypes, 0.7-1 s to import) on first use: every way
    # of asking finds it, and both tables agree
    import ml_dtypes
    import numpy as np

    from kernels._tensor import NP_DTYPE, TORCH_DTYPE, np_dtype

    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert torch.bfloat16 in NP_DTYPE and bf16 in TORCH_DTYPE
    assert NP_DTYPE[torch.bfloat16] == bf16 and NP_DTYPE.get(torch.bfloat16) == bf16
    assert TORCH_DTYPE[bf16] is torch.bfloat16 and np_dtype(torch.bfloat16) == bf16
    assert set(opdb_dtypes.torch_dtypes()) <= set(NP_DTYPE)
    assert torch.complex32 not in NP_DTYPE and NP_DTYPE.get(torch.complex32) is None
    with pytest.raises(KeyError):
        NP_DTYPE[torch.complex32]
    assert _semantics.opmath(np.zeros(2, bf16)).dtype == np.float32
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16, device="mlu")
    assert t.cpu().tolist() == [1.5, -2.0] and (t + t).cpu().tolist() == [3.0, -4.0]
