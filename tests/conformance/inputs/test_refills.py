"""Refills: Hypothesis draws a call's structure once, the engine checks several value fills of it
(``Call.refill``, ``Fill.refill``): same dtypes, shapes and arguments, new values, reproducible."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks.registry import CHECKS
from conformance.core.backends import resolve
from conformance.core.call import Call
from conformance.core.fills import Fill
from conformance.core.signature import OpSignature
from conformance.engine import EngineSettings, Item, run_check
from conformance.inputs.strategies import calls
from conformance.repro.snippet import snippet
from opdb import load
from opdb.opdata import load_hints, load_tolerances

HINTS = load_hints()
TOL = load_tolerances()
FAST = settings(max_examples=25, deadline=None, database=None, derandomize=True)


def _sig(name: str) -> OpSignature:
    return OpSignature.of(load()[name])


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""
    def bits(t: torch.Tensor) -> torch.Tensor:
        t = t.reshape(-1)
        return t.view(torch.uint8) if t.dtype != torch.bool and t.numel() else t

    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(bits(a), bits(b))


def _tensors(call: Call) -> list[tuple[str, torch.Tensor]]:
    out = []
    for name, v in call.values:
        for t in v if isinstance(v, list) else [v]:
            if isinstance(t, torch.Tensor):
                out.append((name, t))
    return out


@FAST
@given(st.data())
def test_refills_keep_the_structure_and_change_the_values(data):
    sig = _sig("addcmul")
    call = data.draw(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    assert call.refill(0) is call
    assert {name for name, _, _ in call.fills} <= {n for n, _ in call.values}
    changed = False
    for i in range(1, 6):
        again = call.refill(i)
        assert [n for n, _ in again.values] == [n for n, _ in call.values]
        for (n, a), (_, b) in zip(call.values, again.values, strict=True):
            if isinstance(a, torch.Tensor):
                assert a.shape == b.shape, n
                if i % 2 == 0:  # even refills keep the dtype; odd ones move the call to another
                    assert a.dtype == b.dtype, n
                changed |= a.numel() > 0 and not _same(a, b)
            else:
                # Hypothesis' own draws (scalars, dims) stay as drawn (NaN too: NaN != NaN)
                assert a == b or (a != a and b != b), n
        # a refill is a function of the drawn call: the same values every time
        for (_, a), (_, b) in zip(_tensors(again), _tensors(call.refill(i)), strict=True):
            assert _same(a, b)
    if any(f.numel for _, _, f in call.fills):
        assert changed


def test_scheduled_refills_carry_a_headline_special_in_one_tensor():
    """Refills 2, 3, 10, 11 (NaN), 5 (+inf) and 13 (-inf) write that special into one tensor
    of the call, a different one each refill; other refills draw their specials as before."""
    from conformance.core.fills import FORCED_HEADLINE, headline

    for seed in range(20):
        f = Fill("float32", (3, 2), seed=seed)
        for i, kind in FORCED_HEADLINE.items():
            t = f.refill(i, 0, force=True)
            want = headline("float32")[kind]
            assert bool(t.isnan().any()) if want != want else bool((t == want).any())
        g = Fill("int16", (5,), seed=seed)
        assert bool((g.refill(2, 0, force=True) == torch.iinfo(torch.int16).max).any())
        # bounded and tame fills keep their own values
        b = Fill("float32", (4,), seed=seed, bounds=(0.0, 1.0))
        assert bool(((b.refill(2, 0, force=True) >= 0) & (b.refill(2, 0, force=True) <= 1)).all())
    sig = _sig("add.Tensor")
    call = Call(sig, (("self", Fill("float32", (4,), seed=1).tensor()),
                      ("other", Fill("float32", (4,), seed=2).tensor())),
                fills=(("self", None, Fill("float32", (4,), seed=1)),
                       ("other", None, Fill("float32", (4,), seed=2))))
    v = dict(call.refill(2).values)  # refill 2 keeps float32: NaN in `self` (2 % 2 tensors)
    assert bool(v["self"].isnan().any())


@FAST
@given(st.data())
def test_the_first_move_to_each_floating_category_carries_a_nan(data):
    """Whatever order the moves visit the dtypes in, the first refill that moves a call to a
    floating dtype forces a NaN into one of its tensors, and so does the first to a complex
    one; the second of each forces +inf."""
    sig = _sig("sort.stable")
    call = data.draw(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    if not call.fills or call.fills[0][2].numel < 2:
        return  # nothing to refill, or one element (never forced)
    seen: dict[str, int] = {}
    for i in range(1, 16, 2):
        to = call.refill_dtype(i)
        cat = "complex" if to.startswith("complex") else "floating" if to.startswith(
            ("float", "bfloat")) else None
        if cat is None:
            continue
        seen[cat] = seen.get(cat, 0) + 1
        t = torch.view_as_real(x) if (x := dict(call.refill(i).values)["self"]).is_complex() \
            else x
        if seen[cat] == 1:
            assert bool(t.isnan().any()), (i, to)
        elif seen[cat] == 2:
            assert bool((t == float("inf")).any()), (i, to)


def test_tensors_with_equal_seeds_refill_differently():
    """After shrinking every seed is 0; two tensors of one call must still differ."""
    f = Fill("float32", (8,), seed=0)
    assert not _same(f.refill(1, 0), f.refill(1, 1))
    assert _same(f.refill(1, 0), f.refill(1, 0))


@FAST
@given(st.data())
def test_odd_refills_move_the_free_tensors_to_another_dtype(data):
    """Half the refills try another dtype (all free tensors together, empty outs too); a
    hint-fixed dtype (index tensors) stays."""
    sig = _sig("addcmul")
    call = data.draw(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    drawn = {t.dtype for _, t in _tensors(call) if t.numel()}
    for i in (1, 3, 5) if call.fills else ():  # nothing to refill in an empty call
        again = {t.dtype for _, t in _tensors(call.refill(i))}
        assert len(again) == 1 and again != drawn
    sig = _sig("index.Tensor")
    call = data.draw(calls(sig, HINTS.for_op(sig.name), mode="forward"))
    for i in (1, 3):
        idx = dict(call.refill(i).values)["indices"]
        assert all(t.dtype == torch.int64 for t in idx)


def test_an_empty_pinned_index_keeps_its_dtype_when_self_shares_it():
    """An empty index tensor has no fill to say a hint pins its dtype: beside an int64 ``self``
    (the dtype the refill moves) it was moved too, and CPU refused every moved refill."""
    from hypothesis import find

    sig = _sig("index.Tensor")

    def empty_index_beside_int64(call: Call) -> bool:
        values = dict(call.values)
        return values["self"].dtype == torch.int64 and bool(call.fills) and any(
            t is not None and t.numel() == 0 for t in values["indices"])

    call = find(calls(sig, HINTS.for_op(sig.name), mode="forward"), empty_index_beside_int64,
                settings=settings(max_examples=2000, database=None, derandomize=True))
    assert call.pinned, "the hint-fixed indices are recorded as pinned"
    for i in (1, 3, 5):
        refilled = dict(call.refill(i).values)
        assert all(t.dtype == torch.int64 for t in refilled["indices"] if t is not None)
        if i % 2:
            assert refilled["self"].dtype != torch.int64  # the free tensor did move


def test_adversarial_refills_carry_special_values_and_profiles():
    vals = torch.cat([Fill("float32", (4,), seed=3).refill(i).double() for i in range(1, 400)])
    fi = torch.finfo(torch.float32)
    assert vals.isnan().any() and vals.isinf().any()
    assert ((vals == 0) & vals.signbit()).any(), "-0.0"
    assert (vals.abs() == fi.max).any() and (vals.abs() > 1e30).any()
    assert ((vals != 0) & (vals.abs() < fi.tiny)).any(), "subnormals"
    assert (vals.frac().abs() == 0.5).any(), "ties"


def test_an_adversarial_refill_reads_the_seed_alone():
    """What the dtypes sweep relies on when it draws a fill's seed alone (draw_fill's
    seed_only): the drawn profile and special values make no difference to a refill."""
    plain = Fill("float32", (6,), seed=11)
    drawn = Fill("float32", (6,), profile="wide", seed=11, specials=((0, 1), (3, 2)))
    bounded = Fill("float32", (6,), seed=11, bounds=(-2.0, 12.0))
    for i in range(1, 20):
        assert _same(plain.refill(i, 1), drawn.refill(i, 1))
        assert _same(bounded.refill(i), Fill("float32", (6,), seed=11, bounds=(-2.0, 12.0),
                                             specials=((2, 0),)).refill(i))
    assert not _same(plain.tensor(), drawn.tensor())  # the call as drawn does differ


def test_tame_and_bounded_fills_stay_so():
    for i in range(1, 50):
        t = Fill("int64", (6,), seed=i, bounds=(0, 3), adversarial=False).refill(i)
        assert bool(((t >= 0) & (t <= 3)).all())
        t = Fill("float32", (6,), seed=i, adversarial=False).refill(i)
        assert bool(t.isfinite().all()) and float(t.abs().max()) <= 8
        t = Fill("float32", (6,), seed=i, bounds=(-2.0, 12.0)).refill(i)
        assert bool(((t >= -2) & (t <= 12)).all())


@FAST
@given(st.data())
def test_calls_whose_values_are_not_the_subject_are_not_refilled(data):
    sig = _sig("add.Tensor")
    for mode in ("promotion", "broadcast", "autograd"):
        call = data.draw(calls(sig, HINTS.for_op(sig.name), mode=mode))
        assert call.fills == ()


def test_a_bug_on_wide_values_is_caught_by_refills_and_replays_the_same():
    """abs saturating at 1e4: a bug only non-tame values show. Two drawn calls with eight
    refills each find it; the verdict (repro included) is the same on a second run."""
    import kernels
    from kernels.registry import kernel

    ref = kernel("abs")
    mlu = resolve("mlu", without=())

    def saturating(self):
        return ref(self.cpu().clamp(max=1e4).to(self.device))

    kernels.install(overrides={"abs": saturating})
    try:
        verdicts = [run_check(Item(_sig("abs"), CHECKS["forward"]), mlu,
                              settings=EngineSettings(max_examples=2, refills=8, database=None),
                              hints=HINTS.for_op("abs"), tolerance_fn=TOL,
                              repro_fn=lambda call: snippet(call, mlu)) for _ in range(2)]
    finally:
        kernels.install()
    assert verdicts[0].verdict == "fail", verdicts[0].message
    assert verdicts[0].examples > 2  # refills are checked examples
    assert verdicts[0].repro == verdicts[1].repro


def test_a_drawn_call_cpu_refuses_for_its_dtype_is_rescued_in_another(monkeypatch):
    """relu refuses bool inputs: a drawn bool call is checked in a dtype CPU takes (moved
    refills) instead of being thrown away for another draw (12 draws thrown away, 1 with)."""
    import hypothesis

    from conformance.engine import search as engine

    mlu = resolve("mlu")
    real_reject = hypothesis.reject
    rejected = {"n": 0}

    def counting_reject():
        rejected["n"] += 1
        return real_reject()

    monkeypatch.setattr(engine, "reject", counting_reject)  # where the search calls it
    outcomes = {}
    for tries in (0, engine.RESCUE_TRIES):
        monkeypatch.setattr(engine, "RESCUE_TRIES", tries)
        rejected["n"] = 0
        v = run_check(Item(_sig("relu"), CHECKS["forward"]), mlu,
                      settings=EngineSettings(max_examples=10, database=None),
                      hints=HINTS.for_op("relu"), tolerance_fn=TOL,
                      repro_fn=lambda call: snippet(call, mlu))
        assert v.verdict == "pass", v.message
        outcomes[tries] = (rejected["n"], v.examples)
    (thrown, _), (rescued, _) = outcomes[0], outcomes[engine.RESCUE_TRIES]
    assert thrown >= 3 and rescued < thrown / 2, outcomes
