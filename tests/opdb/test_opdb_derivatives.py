"""opdb derivatives: which aten ops each backward formula calls, and differentiability."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import opdb
from opdb.derivatives import called_names

MINI = Path(__file__).parent.parent / "data" / "opdb" / "mini"


@pytest.fixture(scope="module")
def db() -> opdb.OpDB:
    return opdb.load()


@pytest.fixture(scope="module")
def mini() -> opdb.OpDB:
    return opdb.load(MINI / "native_functions.yaml")


def test_called_names() -> None:
    formula = "at::where(self > 0, grad, grad.sum(0)) + zeros_like(grads[0]).mul_(2) + std::sqrt(x)"
    assert called_names(formula) == {"where", "sum", "zeros_like", "mul_"}
    # a method of a non-tensor argument is not an aten op call
    assert "conj" not in called_names("maybe_multiply(grad, alpha.conj())", frozenset({"alpha"}))
    assert "conj" in called_names("grad.conj()", frozenset({"alpha"}))


def test_packaged_forward_needs_its_backward(db: opdb.OpDB) -> None:
    d = db.derivatives["_adaptive_avg_pool2d"]
    assert d.differentiable and d.backward_ops == {"_adaptive_avg_pool2d_backward"}
    assert "native_layer_norm_backward" in db.derivatives["native_layer_norm"].backward_ops
    assert db.derivatives_path is not None and db.derivatives_path.name == "derivatives.yaml"


def test_inplace_borrows_functional_formula_and_out_is_not_differentiable(db: opdb.OpDB) -> None:
    assert db.derivatives["add_.Tensor"].entry == "add.Tensor"
    assert db.derivatives["add_.Tensor"].differentiable
    assert "add.out" not in db.derivatives
    assert db.autograd("add.out") == "out_unsupported"
    a = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out="):
        torch.add(a, a, out=torch.empty(2))


def test_autograd_kinds(db: opdb.OpDB) -> None:
    assert db.autograd("add.Tensor") == "formula"
    assert db.autograd("matmul") == "decomposition"  # CompositeImplicitAutograd
    # every overload gets one of the documented answers
    answers = {db.autograd(ov.name) for ov in db.overloads}
    assert answers <= {"formula", "decomposition", "out_unsupported", "not_differentiable"}


def test_mini_derivatives(mini: opdb.OpDB) -> None:
    d = mini.derivatives
    # helpers (handle_r_to_c, maybe_multiply), metadata calls and c10::Scalar::conj are skipped
    assert d["add.Tensor"].differentiable and d["add.Tensor"].backward_bases == frozenset()
    assert d["add.Tensor"].inputs == ("self", "other")
    assert d["add_.Tensor"].entry == "add.Tensor"
    assert d["_adaptive_avg_pool2d"].backward_ops == {"_adaptive_avg_pool2d_backward"}
    assert d["sum"].backward_ops == {"expand"}  # grad.expand_symint(...) is expand
    assert not d["sum.dim_IntList"].differentiable  # output_differentiability: [False]
    assert not d["argmax"].differentiable  # non_differentiable
    assert not d["relu"].differentiable and d["relu"].not_implemented == ("self",)
    # only the Default table of a dispatch: block; a call names every non-out overload of a base
    assert d["matmul"].backward_bases == {"sum", "relu"}
    assert d["matmul"].backward_ops == {"sum", "sum.dim_IntList", "relu"}
    assert d["matmul"].loc.line == 25  # "- name: matmul(...)"


@pytest.mark.parametrize("layout", ["same_dir", "torchgen", "checkout"])
def test_derivatives_found_beside(tmp_path: Path, layout: str) -> None:
    where = {
        "same_dir": ("x", "x"),
        "torchgen": ("packaged/ATen/native", "packaged/autograd"),
        "checkout": ("aten/src/ATen/native", "tools/autograd"),
    }[layout]
    nf_dir, d_dir = (tmp_path / w for w in where)
    nf_dir.mkdir(parents=True, exist_ok=True)
    d_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(MINI / "native_functions.yaml", nf_dir)
    shutil.copy(MINI / "derivatives.yaml", d_dir)
    db = opdb.load(nf_dir / "native_functions.yaml")
    assert db.derivatives_path == (d_dir / "derivatives.yaml").resolve()
    assert db.derivatives["_adaptive_avg_pool2d"].differentiable


def test_explicit_derivatives_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(opdb.InputError, match="derivatives.yaml not found"):
        opdb.load(MINI / "native_functions.yaml", derivatives=tmp_path / "derivatives.yaml")
