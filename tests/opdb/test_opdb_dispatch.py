"""opdb.dispatch: classify overloads for a dispatch key from the live dispatcher.

Registrations made here use PrivateUse3, a key nothing else in the project uses, and are
removed again at the end of each test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import opdb
from opdb.coverage import static_coverage
from opdb.dispatch import Status, classify, fallback_origin, has_fallback

SPARE = "PrivateUse3"


@pytest.fixture(scope="module")
def db() -> opdb.OpDB:
    return opdb.load()


@pytest.fixture
def libs() -> Iterator[list[torch.library.Library]]:
    made: list[torch.library.Library] = []
    yield made
    for lib in made:
        lib._destroy()


def _never_called(*args: object, **kwargs: object) -> None:
    raise NotImplementedError("registered for static classification only")


def test_cpu_classification_agrees_with_the_dispatcher(db: opdb.OpDB) -> None:
    names = [ov.name for ov in db.overloads]
    status = classify("CPU", names)
    assert status["add.Tensor"] is Status.native
    assert status["matmul"] is Status.composite_implicit
    assert status["add.Scalar"] is Status.composite_explicit
    assert status["add.Scalar"] == "composite_explicit" and str(status["add.Scalar"]) == "composite_explicit"
    cpu = torch._C.DispatchKey.CPU
    for name in names:
        has = torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{name}", cpu)
        assert (status[name] is Status.native) == has, name
        # anything not missing is something the dispatcher computes a CPU kernel for
        computed = torch._C._dispatch_has_computed_kernel_for_dispatch_key(f"aten::{name}", "CPU")
        assert status[name].available == computed, name
    assert set(status.values()) >= {Status.native, Status.composite_explicit,
                                    Status.composite_implicit, Status.missing}


def test_native_kernel_wins_over_composite(db: opdb.OpDB, libs: list) -> None:
    assert classify(SPARE, ["matmul"])["matmul"] is Status.composite_implicit
    lib = torch.library.Library("aten", "IMPL")
    libs.append(lib)
    lib.impl("matmul", _never_called, SPARE)
    assert classify(SPARE, ["matmul"])["matmul"] is Status.native


def test_fallback(db: opdb.OpDB, libs: list) -> None:
    names = [ov.name for ov in db.overloads]
    before = classify(SPARE, names)
    assert not has_fallback(SPARE) and Status.fallback not in before.values()
    lib = torch.library.Library("_", "IMPL")
    libs.append(lib)
    lib.fallback(_never_called, SPARE)
    after = classify(SPARE, names)
    for name in names:
        want = Status.fallback if before[name] is Status.missing else before[name]
        assert after[name] is want, name
    origin = fallback_origin(SPARE, "_adaptive_avg_pool2d")
    assert origin is not None and origin.split(":")[0].endswith("test_opdb_dispatch.py")


def test_forward_without_backward_is_a_missing_backward_op(db: opdb.OpDB, libs: list) -> None:
    lib = torch.library.Library("aten", "IMPL")
    libs.append(lib)
    lib.impl("_adaptive_avg_pool2d", _never_called, SPARE)
    lib.impl("add.Tensor", _never_called, SPARE)
    cov = static_coverage(db, backend="spare", dispatch_key=SPARE)
    rows = {r["forward"]: r["missing"] for r in cov["missing_backward"]}
    assert rows["_adaptive_avg_pool2d"] == ["_adaptive_avg_pool2d_backward"]
    variants = {r["family"]: r for r in cov["missing_variants"]}
    assert "add.out" in variants["add"]["missing"] and "add.Tensor" in variants["add"]["present"]
    assert cov["summary"]["native"] == 2 and sum(cov["summary"].values()) == len(db.overloads)

    lib.impl("_adaptive_avg_pool2d_backward", _never_called, SPARE)
    cov = static_coverage(db, backend="spare", dispatch_key=SPARE)
    assert "_adaptive_avg_pool2d" not in {r["forward"] for r in cov["missing_backward"]}


@pytest.mark.parametrize("key", ["CPU", "Meta", "XLA", "PrivateUse1"])
def test_availability_matches_the_computed_dispatch_table(db: opdb.OpDB, key: str) -> None:
    """Whatever the status, "available" must be exactly what the dispatcher computes for the
    key (XLA is outside CompositeExplicitAutogradNonFunctional's alias set; Meta has a fallback)."""
    status = classify(key, [ov.name for ov in db.overloads])
    for name, st in status.items():
        computed = torch._C._dispatch_has_computed_kernel_for_dispatch_key(f"aten::{name}", key)
        assert st.available == computed, (name, st)


def test_unknown_key() -> None:
    with pytest.raises(ValueError, match="NoSuchKey"):
        classify("NoSuchKey", ["add.Tensor"])
