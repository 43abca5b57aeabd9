"""The ``noncontiguous`` check: the forward inputs again as non-contiguous views (transposed,
strided, expanded, offset, channels_last), values as CPU and strides where they are a contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.checks.check import Check
from conformance.compare.strides import compare_strides
from conformance.core.call import Call, written
from conformance.core.signature import OpSignature
from conformance.core.verdicts import CheckFailure, CpuRejected
from conformance.inputs.layouts import LayoutCall, layout_variants, with_layouts
from conformance.inputs.strategies import forward_calls
from opdb.fingerprints import split_call
from opdb.outcomes import STRIDES, STRIDES_INFORMATIONAL

if TYPE_CHECKING:
    from conformance.compare.context import Context
    from opdb.opdata import OpHints


def noncontiguous_applies(sig: OpSignature) -> str | None:

    return noncontiguous_applies_sig(sig)


def noncontiguous_hints(sig: OpSignature, hints: OpHints) -> str | None:
    if hints.cpu_ignores_strides:
        return ("CPU (the oracle) ignores its inputs' strides here (hints: "
                "cpu_ignores_strides): its answer for views is no contract")
    return None


#: The noncontiguous check draws this share of ``--max-examples`` forward calls (4 of 10) and
#: checks each in every layout that fits it (about five runs a call): the draws, most of them
#: refused by CPU, cost more than the runs (docs/decisions.md#variants-per-call).
NONCONTIGUOUS_FACTOR = 0.4


def verify_noncontiguous(ctx: Context, call: Call) -> None:
    """The forward inputs as non-contiguous views (conformance/inputs/layouts.py): each drawn call in
    every layout that fits it."""
    __tracebackhide__ = True

    verify_layouts(ctx, call)


def noncontiguous_applies_sig(sig: OpSignature) -> str | None:
    if not any(a.base == "Tensor" and not a.is_out for a in sig.args):
        return "no tensor argument to lay out"
    return None


def verify_layouts(ctx: Context, call: Call, *, strides: bool = True) -> None:
    """Values, dtype and shape as CPU's for the same non-contiguous views; strides where CPU's
    are a contract (``strides=False``: values only, as the forward check's view refill). A
    plain drawn call is checked in each of its layout variants (:func:`verify_variants`)."""
    __tracebackhide__ = True
    from conformance.compare.outputs import compare_outputs

    if not isinstance(call, LayoutCall):
        verify_variants(ctx, call)
        return
    call = written(call)  # an overload returning nothing: what it wrote is its result
    seeded = "nondeterministic_seeded" in call.sig.tags
    expected = ctx.run_cpu(call)
    samples = [expected, *ctx.cpu_samples(call, 7)] if seeded else None
    actual_or_none: Any = None
    try:
        actual = actual_or_none = ctx.run_backend(call)
        compare_outputs(ctx, call, expected, actual, values=not seeded, samples=samples)
    except CheckFailure as exc:
        why = _not_the_layout(ctx, call, actual_or_none, seeded)
        if why is not None:
            line = f"ValueError: {why}"
            ctx.cpu_errors[line] += 1
            raise CpuRejected(ValueError(why)) from None
        raise CheckFailure(exc.category, f"with {call.layout_text}, {exc.message}") from None
    if strides:
        _judge_strides(ctx, call, expected, actual)


def _judge_strides(ctx: Context, call: LayoutCall, expected: Any, actual: Any) -> None:
    """Result strides as :func:`compare_strides` judges them, for a backend whose record
    promises strides (``Backend.strides``). One that keeps none of its own (XLA, lazy tensors:
    ``stride()`` is a contiguous stand-in for whatever layout the compiler picks) does not
    promise CPU's even where they are CPU's contract: the difference is noted
    (``strides_informational``), not failed (it failed 43 of 44 items on torch_xla)."""
    __tracebackhide__ = True
    try:
        compare_strides(ctx, call, expected, actual)
    except CheckFailure as exc:
        if exc.category != STRIDES or ctx.backend.strides:
            raise
        ctx.note_info(STRIDES_INFORMATIONAL, f"{split_call(exc.message)[0]}; "
                                             f"{ctx.backend.name} keeps no strides of its own "
                                             f"(Backend.strides false), so promises none")


def verify_variants(ctx: Context, call: Call) -> None:
    """One example of the ``noncontiguous`` check: a drawn ``forward`` call checked in every
    variant of :func:`layout_variants`, the first with the drawn values, the ``j``-th with
    refill ``j`` of them (other values, same dtypes). CPU refusing the first variant refuses
    the example (as a forward call CPU refuses); a later variant CPU refuses, or one whose
    failure is not the layout's, is passed over. The first failing variant ends the example
    (the failure names that variant's call)."""
    __tracebackhide__ = True
    from conformance.core.verdicts import error_line

    variants = layout_variants(call)
    if not variants:  # every tensor argument None or an empty list
        none = ValueError("no tensor argument to lay out")
        ctx.cpu_errors[error_line(none)] += 1
        raise CpuRejected(none)
    for j, variant in enumerate(variants):
        laid = with_layouts(call.refill(j, move=False), variant.layouts) if j else variant
        try:
            verify_layouts(ctx, laid)
        except CpuRejected:
            if not j:
                raise
        except CheckFailure as exc:
            exc.call = exc.call or laid
            raise


def _not_the_layout(ctx: Context, call: LayoutCall, actual: Any, seeded: bool) -> str | None:
    """Why a failure of ``call`` (the views) is not the layout's, or ``None`` when it is.
    ``actual`` is the backend's answer to the views (``None``: it raised). Not the layout's:
    the backend disagrees with CPU on the contiguous twin too (the forward check's failure), its
    answer to the views is CPU's answer to the twin (CPU's own result depends on the layout
    there, e.g. how a BLAS path propagates inf and NaN), or CPU refuses the twin and the backend
    refuses the views with the same exception type (CPU's strided path skips a check its
    contiguous one makes: ``_native_batch_norm_legit`` of a 1-d input)."""
    from conformance.compare.outputs import compare_outputs

    twin = call.contiguous_twin()
    ctx.inflight.call(twin, ctx.repro_fn, side="cpu")
    try:
        expected = twin.run("cpu")
    except Exception as refusal:  # noqa: BLE001 - CPU refuses the contiguous twin
        if actual is None and _backend_refuses_like(ctx, call, refusal):
            return (f"CPU accepts these values only laid out this way (contiguous, it raises "
                    f"{type(refusal).__name__}); the backend raises that in both layouts")
        return None

    def agrees(answer: Any) -> bool:
        try:
            compare_outputs(ctx, twin, expected, answer, values=not seeded,
                            samples=[expected, *ctx.cpu_samples(twin, 7)] if seeded else None)
        except Exception:  # noqa: BLE001 - disagreed (or could not be compared)
            return False
        return True

    if actual is not None and agrees(actual):
        return ("CPU's own result for these values depends on their layout, and the backend "
                "gave CPU's result for contiguous tensors")
    ctx.inflight.call(twin, ctx.repro_fn, side=ctx.backend.device)
    try:
        again = twin.run(ctx.backend.device)
    except Exception as exc:  # noqa: BLE001 - raises without any view too
        ctx.device_alive(exc, twin)
        return "the same values as contiguous tensors fail too (the forward check's failure)"
    if not agrees(again):
        return "the same values as contiguous tensors fail too (the forward check's failure)"
    return None


def _backend_refuses_like(ctx: Context, call: Call, refusal: BaseException) -> bool:
    """Whether the backend raises ``refusal``'s exception type on ``call``."""
    ctx.inflight.call(call, ctx.repro_fn, side=ctx.backend.device)
    try:
        call.run(ctx.backend.device)
    except Exception as exc:  # noqa: BLE001
        ctx.device_alive(exc, call)
        return type(exc) is type(refusal)
    return False


def laid_out_calls(sig: OpSignature, hints: OpHints) -> Any:
    """The forward calls this check draws, without size-0 sides: a view of an empty tensor
    holds nothing to misread, and most layouts (transposed, expanded_transposed, channels_last)
    fit only where two or more sides exceed 1. Drawn as forward draws them, one call in three
    or four at the default depth had a size-0 side (Hypothesis' simplest choice of the
    one-in-ten draw is the empty one), and mul.Tensor's four calls never reached a composite
    layout (benchmarks/mutants.py mul_expanded_transposed; docs/decisions.md#large-sizes-on)."""
    return forward_calls(sig, hints, empty=False)


CHECK = Check("noncontiguous", laid_out_calls, "forward inputs as transposed, strided, expanded, "
              "offset and channels_last views: values as CPU, strides where a contract",
              noncontiguous_applies, verify_noncontiguous, examples_factor=NONCONTIGUOUS_FACTOR,
              applies_hints=noncontiguous_hints, recorded="forward")
