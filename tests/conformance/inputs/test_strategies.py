"""Schema-driven strategies: argument types, tags and names -> calls CPU accepts."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import opdb
from conformance.core.signature import DEVICE, NoStrategy, OpSignature
from conformance.inputs.strategies import OpHints, calls
from opdb.opdata import load_hints

FAST = settings(max_examples=25, deadline=None, database=None, derandomize=True)


def sig_of(name: str) -> OpSignature:
    return OpSignature.of(opdb.load()[name])


def test_signature_takes_the_schema_apart():
    sig = sig_of("add.Tensor")
    assert (sig.base, sig.overload_name, sig.kind) == ("add", "Tensor", "functional")
    assert [a.name for a in sig.operands] == ["self", "other"]
    alpha = sig.args[-1]
    assert (alpha.name, alpha.base, alpha.kwarg_only, alpha.default) == ("alpha", "Scalar",
                                                                        True, 1)
    assert sig.args == opdb.load()["add.Tensor"].arguments  # opdb's typed arguments, not a re-parse
    assert sig.is_pointwise and not sig.is_factory
    out = sig_of("add.out")
    assert out.kind == "out" and [a.name for a in out.args if a.is_out] == ["out"]
    assert sig_of("add_.Tensor").kind == "inplace"
    s = sig_of("sum.dim_IntList")
    dim = next(a for a in s.args if a.name == "dim")
    assert dim.is_list and dim.optional and dim.base == "int"
    dtype = next(a for a in s.args if a.name == "dtype")
    assert dtype.base == "ScalarType"  # not 'int' as the JIT schema type would say
    # a schema outside the database (e.g. the dispatcher's spelling) parses the same way
    packet = torch.ops.aten.sum.dim_IntList
    assert OpSignature.parse("sum.dim_IntList", str(packet._schema)).args == s.args


def test_untestable_types_are_named():
    sig = OpSignature.parse("x.y", "x.y(Tensor self, Storage source) -> Tensor")
    with pytest.raises(NoStrategy, match="Storage source"):
        calls(sig, OpHints(), mode="forward")
    enum = sig_of("div.Tensor_mode")  # str? rounding_mode: no default value, no hint
    with pytest.raises(NoStrategy, match="rounding_mode"):
        calls(enum, OpHints(), mode="forward")


@FAST
@given(st.data())
def test_reduction_dim_within_rank(data):
    sig = sig_of("sum.dim_IntList")
    call = data.draw(calls(sig, OpHints(), mode="forward"))
    values = dict(call.values)
    rank = values["self"].dim()
    for d in values.get("dim") or []:
        assert -max(rank, 1) <= d < max(rank, 1)
    assert len({d % max(rank, 1) for d in values.get("dim") or []}) == len(values.get("dim") or [])


@FAST
@given(st.data())
def test_pointwise_forward_operands_broadcast_and_share_a_dtype(data):
    call = data.draw(calls(sig_of("mul.Tensor"), OpHints(), mode="forward"))
    a, b = dict(call.values)["self"], dict(call.values)["other"]
    torch.broadcast_shapes(a.shape, b.shape)  # raises if not broadcastable
    assert a.dtype == b.dtype


@FAST
@given(st.data())
def test_broadcast_mode_shapes(data):
    call = data.draw(calls(sig_of("add.Tensor"), OpHints(), mode="broadcast"))
    a, b = dict(call.values)["self"], dict(call.values)["other"]
    assert a.dim() <= 4 and b.dim() <= 4
    if "non-broadcastable" in call.notes:
        with pytest.raises(RuntimeError):
            torch.broadcast_shapes(a.shape, b.shape)
    else:
        torch.broadcast_shapes(a.shape, b.shape)


@FAST
@given(st.data(), st.sampled_from(["forward", "dtypes", "promotion", "broadcast"]))
def test_a_nonempty_hint_draws_no_size_0_side(data, mode):
    # CPU's _cummax_helper never returns on some size-0 inputs (hints.yaml): none is drawn
    hints = load_hints().for_op("_cummax_helper")
    assert hints.nonempty
    drawn = data.draw(calls(sig_of("_cummax_helper"), hints, mode=mode))
    for call in getattr(drawn, "calls", None) or [(None, drawn)]:
        for _, v in call[1].values:
            if isinstance(v, torch.Tensor):
                assert 0 not in v.shape, call[1].describe()


def test_promotion_mode_draws_every_operand_form():
    sig = sig_of("add.Tensor")
    seen: set[str] = set()

    @settings(max_examples=120, deadline=None, database=None, derandomize=True)
    @given(calls(sig, OpHints(), mode="promotion"))
    def collect(call):
        other = dict(call.values)["other"]
        if "other" in call.on_cpu:
            assert isinstance(other, torch.Tensor) and other.dim() == 0
            seen.add("cpu_zerodim")
        elif isinstance(other, torch.Tensor):
            seen.add("zerodim" if other.dim() == 0 else "tensor")
        else:
            seen.add(f"python {type(other).__name__}")
        seen.add(str(dict(call.values)["self"].dtype))

    collect()
    assert {"tensor", "zerodim", "cpu_zerodim"} <= seen
    assert any(s.startswith("python ") for s in seen)
    assert len([s for s in seen if s.startswith("torch.")]) >= 8  # dtypes across the twelve


def test_promotion_mode_keeps_a_scalar_operands_hinted_range():
    from opdb.opdata import load_hints

    name = "special_hermite_polynomial_h.n_scalar"  # n: {min: -2, max: 12} in hints.yaml
    hints = load_hints().for_op(name)
    seen: list[object] = []

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(calls(sig_of(name), hints, mode="promotion"))
    def collect(call):
        seen.append(dict(call.values)["n"])

    collect()
    parts = [p for n in seen if not isinstance(n, torch.Tensor)
             for p in ((n.real, n.imag) if isinstance(n, complex) else (n,))]
    assert parts and all(-2 <= p <= 12 for p in parts)
    assert {type(n) for n in seen} >= {int, float}


def test_factory_device_argument_follows_the_call():
    sig = sig_of("ones")  # ones(SymInt[] size, *, ScalarType? dtype, ..., Device? device, ...)
    assert sig.is_factory

    @FAST
    @given(calls(sig, OpHints(), mode="forward"))
    def check(call):
        assert dict(call.values).get("device") is DEVICE
        _, kwargs = call.split("meta")
        assert kwargs["device"] == torch.device("meta")

    check()


@pytest.mark.parametrize("name", ["upsample_nearest2d.vec", "upsample_bilinear2d.vec",
                                  "upsample_trilinear3d.vec"])
def test_one_of_gives_exactly_one_of_its_arguments(name):
    """F.interpolate's overloads take output_size or scale_factors, never both or neither
    (hints ``one_of``): every draw gives one, as long as the input's spatial dims, and the
    other None; both forms are drawn, and CPU runs most calls (each form was refused in every
    draw before: 'Must specify exactly one of output_size and scale_factors')."""
    sig = sig_of(name)
    hints = load_hints().for_op(name)
    spatial = {"2d": 2, "3d": 3}[name.split(".")[0][-2:]]
    forms, ran = set(), []

    @FAST
    @given(calls(sig, hints, mode="forward"))
    def check(call):
        values = dict(call.values)
        given_ = [n for n in ("output_size", "scale_factors") if values[n] is not None]
        assert len(given_) == 1 and len(values[given_[0]]) == spatial
        forms.add(given_[0])
        try:
            call.run("cpu")
        except RuntimeError as exc:  # a scale that takes a side to 0, a dtype...
            assert "exactly one" not in str(exc)
            return
        ran.append(call)

    check()
    assert forms == {"output_size", "scale_factors"} and len(ran) > 5


@pytest.mark.parametrize("name", ["rand.generator", "randperm.generator",
                                  "randint_like.generator"])
def test_an_optional_argument_without_a_default_is_given_as_none(name):
    """``Generator? generator`` of the ``.generator`` overloads has no default value: torch's
    binding refuses a call that leaves it out ("missing value for argument 'generator'"), which
    left all twenty such overloads untested (CPU refused every draw). It is given, as None,
    and CPU runs the call."""
    sig = sig_of(name)
    hints = load_hints().for_op(name)

    ran = []

    @FAST
    @given(calls(sig, hints, mode="forward"))
    def check(call):
        assert "generator" in dict(call.values)
        assert dict(call.values)["generator"] is None
        try:
            call.run("cpu")
        except (RuntimeError, NotImplementedError) as exc:  # a bool dtype, a negative size...
            assert "missing value" not in str(exc)
            return
        ran.append(call)

    check()
    assert ran


def test_cpu_zerodim_stays_on_cpu_when_split():
    sig = sig_of("add.Tensor")
    from conformance.core.call import Call

    call = Call(sig=sig, values=(("self", torch.ones(2)), ("other", torch.tensor(2.0))),
                on_cpu=frozenset({"other"}))
    args, _ = call.split("meta")
    assert args[0].device.type == "meta" and args[1].device.type == "cpu"
    assert call.describe() == "add.Tensor(float32[2], float32[] on cpu)"


@FAST
@given(st.data())
def test_fixed_size_list_keeps_its_schema_size(data):
    """``SymInt[2] output_size`` and ``int[2] kernel_size`` are drawn with exactly two elements
    (CPU refuses any other count: 'It is expected output_size equals to 2, but got size 1'),
    though their names make them size-like; an unsized ``SymInt[] size`` still varies."""
    for name, arg in (("_upsample_bicubic2d_aa", "output_size"), ("col2im", "kernel_size"),
                      ("upsample_nearest3d", "output_size")):
        sig = sig_of(name)
        n = next(a.list_size for a in sig.args if a.name == arg)
        call = data.draw(calls(sig, OpHints(), mode="forward"))
        assert len(dict(call.values)[arg]) == n, (name, dict(call.values)[arg])


@pytest.mark.parametrize(("name", "accepted_share"), [
    ("_fused_adam_", 8), ("_fused_sgd_", 4), ("_foreach_addcmul_.Scalar", 2)])
def test_later_tensor_lists_mostly_take_the_first_lists_form(name, accepted_share):
    """Foreach and fused-optimizer ops zip their ``Tensor[]`` arguments (``_fused_adam_``'s
    params, grads, moments, steps) and CPU refuses lists of other lengths or shapes: drawn
    apart they agreed once in hundreds, and such items ended ``no_valid_inputs``. In three calls
    in four every later list takes the first list's length and shape, so CPU accepts a share of
    float32 draws (``accepted_share``: at least 1 in that many; a list with a hinted shape,
    _fused_adam_'s 0-dim state_steps, takes that instead: with the parameters' shape CPU
    accepted only 1-element parameters, 0 of these 60 draws). An optional state list
    (hints: ``maybe_empty``; Adam's max_exp_avg_sqs without amsgrad) is empty about half the
    time, and some of those calls CPU accepts: the path torch.optim's defaults take."""
    from conformance.inputs.strategies import forward_calls
    from opdb.opdata import load_hints

    sig = sig_of(name)
    hints = load_hints().for_op(name)
    lists = [a.name for a in sig.args if a.base == "Tensor" and a.is_list]
    optional = [n for n in lists if hints.get(n).maybe_empty]
    forms: list[bool] = []
    accepted: list[bool] = []
    accepted_empty: list[bool] = []

    @settings(max_examples=120, deadline=None, database=None, derandomize=True)
    @given(forward_calls(sig, hints, dtype="float32"))
    def collect(call):
        values = dict(call.values)
        first = values[lists[0]]
        forms.append(all((n in optional and not values[n]) or (
            len(values[n]) == len(first) and all(
                t.shape == (first[0].shape if hints.get(n).shape is None else hints.get(n).shape)
                for t in values[n]))
            for n in lists[1:]))
        try:
            call.run("cpu")
        except RuntimeError:
            accepted.append(False)
        else:
            accepted.append(True)
            accepted_empty.append(any(not values[n] for n in optional))

    collect()
    assert sum(forms) >= len(forms) // 2, (sum(forms), len(forms))
    if not accepted_share:
        return
    assert sum(accepted) >= len(accepted) // accepted_share, (sum(accepted), len(accepted))
    if optional:  # both forms of the optional state reach the kernel
        assert any(accepted_empty) and not all(accepted_empty), accepted_empty
