"""Inputs the schema cannot relate, drawn so CPU accepts them and the relation is exercised:
index tensors bounded by self's size along dim (``along``), Tensor[] elements in every dtype,
Python-scalar promotion operands one category up, square broadcast bases, and the dtypes check's pairs."""

from __future__ import annotations

from dataclasses import replace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.core.call import Call
from conformance.core.signature import OpSignature
from conformance.inputs.strategies import calls, related, tensor_lists
from opdb import load
from opdb.dtypes import DTYPE_NAMES, FLOATING, INTEGRAL, category
from opdb.opdata import load_hints

HINTS = load_hints()
FAST = settings(max_examples=40, deadline=None, database=None, derandomize=True)


def _sig(name: str) -> OpSignature:
    return OpSignature.of(load()[name])


def _draw(data: st.DataObject, name: str, mode: str = "forward"):  # type: ignore[no-untyped-def]
    sig = _sig(name)
    return data.draw(calls(sig, HINTS.for_op(name), mode=mode))


@FAST
@given(st.data())
def test_index_tensors_are_positions_along_dim(data):
    """gather's and index_select's index: int64 positions in [0, self.size(dim)), refills too
    (CPU accepts every such call; repeated positions are frequent)."""
    for name in ("gather", "index_select", "scatter_add"):
        call = _draw(data, name)
        for i in (0, 1, 2):
            v = dict(call.refill(i).values)
            self_, dim, index = v["self"], v["dim"], v["index"]
            assert index.dtype == torch.int64
            n = self_.shape[dim % self_.dim()] if self_.dim() else 1
            if n and index.numel():
                assert int(index.min()) >= 0 and int(index.max()) < n, (name, n, index)
            if name == "index_select":
                assert index.dim() == 1


@FAST
@given(st.data())
def test_class_targets_are_positions_along_a_fixed_dim(data):
    """nll_loss's target (``along: 1``, a dim rather than an argument): int64 classes in
    [0, self.size(1)), for the autograd check's draws too (drawn in 0..3, every call with
    fewer classes was refused: the autograd check found no valid example)."""
    for name, mode in (("nll_loss", "forward"), ("nll_loss2d", "autograd"),
                       ("nll_loss_nd", "forward")):
        v = dict(_draw(data, name, mode).values)
        self_, target = v["self"], v["target"]
        assert target.dtype == torch.int64 and target.shape == self_.shape[:1] + self_.shape[2:]
        assert int(target.min()) >= 0 and int(target.max()) < self_.shape[1], (name, self_.shape,
                                                                               target)


@FAST
@given(st.data())
def test_index_sources_hold_one_slice_of_self_per_position(data):
    """index_add's, index_copy's and index_reduce's source (``along: dim``, ``length_of:
    index``): self's shape with its size along dim the index's length, so CPU accepts the call
    (drawn with self's shape, it fit only when the index happened to be as long: index_add.out
    got one valid example in ten)."""
    for name in ("index_add.out", "index_copy", "index_reduce"):
        v = dict(_draw(data, name).values)
        self_, dim, index, source = v["self"], v["dim"], v["index"], v["source"]
        want = list(self_.shape)
        if want:
            want[dim % len(want)] = index.shape[0]
        assert list(source.shape) == want, (name, self_.shape, dim, index.shape, source.shape)


def test_index_add_out_forward_finds_valid_examples():
    """At the default depth the forward check of index_add.out checks many examples, and catches
    an alpha ignored (benchmarks/mutants.py index_add_alpha)."""
    import kernels
    from conformance.checks.registry import CHECKS
    from conformance.core.backends import resolve
    from conformance.engine import EngineSettings, Item, run_check
    from opdb.opdata import load_tolerances

    def no_alpha(self, dim, index, source, *, alpha=1, out):
        from kernels.registry import kernel

        return kernel("index_add.out")(self, dim, index, source, out=out)

    backend = resolve("mlu", without=())

    def run():
        return run_check(Item(_sig("index_add.out"), CHECKS["forward"]), backend,
                         settings=EngineSettings(max_examples=10, seed=0, database=None),
                         hints=HINTS.for_op("index_add.out"), tolerance_fn=load_tolerances(),
                         repro_fn=lambda call: "")

    kernels.install(without=())
    try:
        ok = run()
        assert ok.verdict == "pass" and ok.examples >= 40, (ok.verdict, ok.examples, ok.message)
        kernels.install(overrides={"index_add.out": no_alpha})
        bad = run()
        assert bad.verdict == "fail" and bad.category == "value", bad.message
    finally:
        kernels.install(without=())


def test_index_lists_reach_negative_positions():
    sig = _sig("index.Tensor")
    seen: list[int] = []

    @FAST
    @given(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    def run(call):  # type: ignore[no-untyped-def]
        for t in dict(call.values)["indices"]:
            seen.extend(t.tolist())

    run()
    assert -1 in seen and 0 in seen


def test_tensor_list_elements_take_every_dtype():
    """cat's tensors are drawn in the call's dtype (not always float32), and the dtypes check
    applies to overloads whose only tensors are a Tensor[]."""
    from conformance.checks.dtypes import dtypes_applies

    sig = _sig("cat")
    assert tensor_lists(sig) and dtypes_applies(sig) is None
    seen: set[torch.dtype] = set()

    @FAST
    @given(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    def run(call):  # type: ignore[no-untyped-def]
        seen.update(t.dtype for t in dict(call.values)["tensors"])

    run()
    assert len(seen) > 3


def test_related_promotion_dtypes():
    """A Python scalar one category up decides the result's category."""
    assert set(related("int32")) == set(FLOATING)
    assert set(related("bool")) == set(INTEGRAL)
    assert all(category(d) == "complex" for d in related("complex64"))
    assert all(category(d) == "complex" for d in related("float16"))
    # a 0-dim tensor operand: its own category (a wider one must not promote) and the next up
    assert set(related("float32", "zerodim")) == set(FLOATING) | set(related("float32"))
    assert set(related("int8", "cpu_zerodim")) == set(INTEGRAL) | set(FLOATING)


def test_promotion_examples_are_distinct_calls():
    """Hypothesis repeats earlier draws (mul.Tensor: 20 distinct of 30); the promotion check's
    identity makes the engine draw another call in a repeat's place."""
    from conformance.checks.promotion import promotion_identity
    from conformance.checks.registry import CHECKS
    from conformance.core.backends import resolve
    from conformance.engine import EngineSettings, Item, run_check

    sig = _sig("mul.Tensor")
    seen: list[str] = []
    check = CHECKS["promotion"]

    def spy(ctx, call):  # type: ignore[no-untyped-def]
        seen.append(promotion_identity(call))
        check.verify(ctx, call)

    item = Item(sig, replace(check, verify=spy))
    v = run_check(item, resolve("cpu"), settings=EngineSettings(max_examples=10, database=None),
                  hints=HINTS.for_op(sig.name), tolerance_fn=lambda *a: (None, None),
                  repro_fn=lambda call: "")
    assert v.verdict == "pass" and v.examples == 30
    assert len(set(seen)) == len(seen) == 30


def test_promotion_draws_int_tensors_with_float_scalars():
    sig = _sig("mul.Tensor")
    pairs: set[tuple[str, str]] = set()

    @settings(max_examples=150, deadline=None, database=None, derandomize=True)
    @given(calls(sig, HINTS.for_op(sig.name), mode="promotion"))
    def run(call):  # type: ignore[no-untyped-def]
        v = dict(call.values)
        if isinstance(v["self"], torch.Tensor):
            pairs.add((category(str(v["self"].dtype).removeprefix("torch.")),
                       type(v["other"]).__name__))

    run()
    assert ("integral", "float") in pairs


def test_broadcast_bases_are_sometimes_square():
    """Every side equal: a lower-rank operand aligned left instead of right still fits."""
    sig = _sig("where.self")
    square = 0

    @FAST
    @given(calls(sig, HINTS.for_op(sig.name), mode="broadcast"))
    def run(call):  # type: ignore[no-untyped-def]
        nonlocal square
        shapes = [tuple(t.shape) for t in dict(call.values).values()
                  if isinstance(t, torch.Tensor)]
        big = max(shapes, key=len)
        if len(big) > 1 and len(set(big)) == 1 and big[0] > 1:
            square += 1

    run()
    assert square > 0


def test_conversions_sweep_every_dtype_pair():
    """_to_copy's dtypes sweep: each input dtype with each of the twelve targets, each pair with
    its own values (refills), so one sweep tries all 144 conversions."""
    sig = _sig("_to_copy")

    @settings(max_examples=2, deadline=None, database=None, derandomize=True)
    @given(calls(sig, HINTS.for_op(sig.name), mode="dtypes"))
    def run(sweep):  # type: ignore[no-untyped-def]
        pairs = {(d, dict(c.values)["dtype"]) for d, c in sweep.calls}
        assert len(pairs) == len(DTYPE_NAMES) ** 2

    run()


def test_broadcast_rotates_the_drawn_shapes_among_the_operands():
    """where's condition aligned from the left is right while it has the largest shape: each
    broadcast example is checked with the shapes rotated among the operands too."""
    from conformance.checks.broadcast import shape_rotations

    sig = _sig("where.self")
    c = Call(sig, (("condition", torch.tensor([[True, False], [False, True]])),
                   ("self", torch.arange(2.0)), ("other", torch.zeros(1))))
    rotated = shape_rotations(c)
    assert [[tuple(v.shape) for _, v in r.values] for r in rotated] == [
        [(2,), (1,), (2, 2)], [(1,), (2, 2), (2,)]]
    assert all(dict(r.values)["condition"].dtype == torch.bool for r in rotated)
    same = Call(sig, (("condition", torch.ones(2, dtype=torch.bool)), ("self", torch.ones(2)),
                      ("other", torch.ones(2))))
    assert shape_rotations(same) == []


def test_promotion_tries_each_zero_dim_dtype_where_a_rule_decides():
    """A 0-dim operand's dtype is swept where torch's promotion follows a rule rather than the
    table (``torch.result_type`` differs from ``torch.promote_types``, or the 0-dim operand
    gives the result its dtype): float32 with float64/complex64/complex128, never with the
    float16 or bfloat16 0-dim operands that change nothing."""
    from conformance.checks.promotion import zero_dim_partners

    sig = _sig("add.Tensor")
    c = Call(sig, (("self", torch.ones(3)), ("other", torch.tensor(2.0, dtype=torch.float16))))
    retyped = [dict(p.values)["other"].dtype for p in zero_dim_partners(c)]
    assert retyped == [torch.float64, torch.complex64, torch.complex128]
    assert all(dict(p.values)["self"].dtype == torch.float32 for p in zero_dim_partners(c))
    flipped = Call(sig, (("self", torch.tensor(1, dtype=torch.int32)),
                         ("other", torch.ones(2, dtype=torch.int32))))
    assert torch.int64 in [dict(p.values)["self"].dtype for p in zero_dim_partners(flipped)]
    both = Call(sig, (("self", torch.ones(2)), ("other", torch.ones(2, dtype=torch.float64))))
    assert zero_dim_partners(both) == []
