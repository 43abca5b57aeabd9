"""The verdict ladder: what a search that found no failure earned, by what it saw on the way.

The first rung whose condition holds gives the verdict; a rung is a row of :data:`LADDER`. Above
the ladder, the search decides ``fail`` (a failure found) and ``skip``/``no_valid_inputs`` (no
example CPU accepted); every informational ``pass`` category says why the pass is qualified.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.compare.context import Context
from opdb.outcomes import CPU_DTYPE_GAP, CPU_UNSTABLE, METADATA_ONLY


@dataclass(frozen=True)
class Rung:
    """One rung: when it applies, the verdict, and ``judge(ctx, device) -> (category, message)``."""

    applies: Callable[[Context], bool]
    verdict: str
    judge: Callable[[Context, str], tuple[str | None, str]]


def _no_host_values(ctx: Context, device: str) -> tuple[str | None, str]:
    return "no_host_values", (
        f"agreed with CPU on {ctx.checked} examples as far as compared, but values could not "
        f"be compared on {ctx.not_comparable}: {device} tensors hold no values")


def _metadata_only(ctx: Context, device: str) -> tuple[str | None, str]:
    note = ""
    if ctx.value_errors:
        (line, n), = ctx.value_errors.most_common(1)
        note = (f"; {sum(ctx.value_errors.values())} examples CPU refused for their values "
                f"alone were not counted (e.g. {n}x {line})")
    return METADATA_ONLY, (
        f"agreed with CPU on {ctx.checked} examples on metadata only (structure, device, dtype, "
        f"shape, errors); values not compared on {ctx.metadata_only}: {device} tensors hold no "
        f"values{note}")


def _cpu_unstable(ctx: Context, device: str) -> tuple[str | None, str]:
    (line, n), = ctx.cpu_unstable_calls.most_common(1)
    return CPU_UNSTABLE, (
        f"agreed with CPU on {ctx.checked} examples; on {sum(ctx.cpu_unstable_calls.values())} "
        f"of them CPU disagreed with itself (values unspecified there: structure, dtype and shape "
        f"compared; e.g. {line})")


def _cpu_dtype_gap(ctx: Context, device: str) -> tuple[str | None, str]:
    (line, n), = ctx.cpu_dtype_gaps.most_common(1)
    return CPU_DTYPE_GAP, (
        f"agreed with CPU on {ctx.checked} examples; also computed "
        f"{sum(ctx.cpu_dtype_gaps.values())} that CPU refuses only for lack of a dtype kernel "
        f"(informational; e.g. {n}x {line})")


def _informational(ctx: Context, device: str) -> tuple[str | None, str]:
    ((category, line), n), = ctx.infos.most_common(1)
    elements = ctx.info_elements[category]
    counted = f": {elements} element(s)" if elements else ""
    return category, (
        f"agreed with CPU on {ctx.checked} examples; {sum(ctx.infos.values())} informational "
        f"finding(s) ({category}{counted}), e.g. {n}x {line}")


def _agreed(ctx: Context, device: str) -> tuple[str | None, str]:
    return None, f"agreed with CPU on {ctx.checked} examples"


#: Top rung first: values a shape-only backend could not give (a skip: nothing was compared
#: there), then the qualified passes, then the plain one.
LADDER: tuple[Rung, ...] = (
    Rung(lambda ctx: bool(ctx.not_comparable), "skip", _no_host_values),
    Rung(lambda ctx: bool(ctx.metadata_only), "pass", _metadata_only),
    Rung(lambda ctx: bool(ctx.cpu_unstable_calls), "pass", _cpu_unstable),
    Rung(lambda ctx: bool(ctx.cpu_dtype_gaps), "pass", _cpu_dtype_gap),
    Rung(lambda ctx: bool(ctx.infos), "pass", _informational),
    Rung(lambda ctx: True, "pass", _agreed),
)


def climb(ctx: Context, device: str) -> tuple[str, str | None, str]:
    """``(verdict, category, message)`` of the first rung of :data:`LADDER` that applies."""
    for rung in LADDER:
        if rung.applies(ctx):
            category, message = rung.judge(ctx, device)
            return rung.verdict, category, message
    raise AssertionError("the ladder's last rung always applies")
