"""Seeded-random results judged as distributions: the backend's samples of one call against
CPU's, element by element, with a two-sample Kolmogorov-Smirnov distance whose false-alarm
rate is bounded (:func:`assert_same_distribution`).

The distribution a seeded-random overload's arguments define is what CPU samples from (CPU is
the oracle, its generator is not: the backend's stream differs legitimately). So the backend's
``n`` samples of each result element are compared with CPU's ``m`` samples of it, as
distributions: ``D`` = the largest gap between the two empirical CDFs, each sample allowed the
dtype's tolerance (a backend computing ``x / (1 - p)`` where CPU computes ``x * (1 / (1 - p))``
is one rounding away, not another distribution). By the Dvoretzky-Kiefer-Wolfowitz inequality
(Massart's constant, any distribution, discrete ones included) an empirical CDF of ``n``
independent samples strays further than ``t`` from the true one with probability at most
``2 exp(-2 n t^2)``; two samples of one distribution are thus further than
``sqrt(ln(4/a)/(2n)) + sqrt(ln(4/a)/(2m))`` apart with probability at most ``a``. The bound is
split over every element compared (Bonferroni, no independence needed), so a false alarm has
probability at most :data:`FALSE_ALARM` per example, whatever the distribution.
"""

from __future__ import annotations

import math

import torch

from conformance.core.verdicts import CheckFailure
from opdb.outcomes import DISTRIBUTION

#: False-alarm probability of one example (all elements of all results together): a check of
#: at most 10 examples an item stays under 1e-6 per item, so CI does not flake.
FALSE_ALARM = 1e-7


def ks_bound(n: int, m: int, tests: int, alpha: float = FALSE_ALARM) -> float:
    """The distance two empirical CDFs (``n`` and ``m`` samples of one distribution) exceed in
    any of ``tests`` comparisons with probability at most ``alpha`` (DKW, Bonferroni)."""
    log = math.log(4 * max(tests, 1) / alpha)
    return math.sqrt(log / (2 * n)) + math.sqrt(log / (2 * m))


def columns(samples: list[torch.Tensor]) -> torch.Tensor:
    """Samples of one result, ``(samples, elements)`` in float64: complex parts are elements
    of their own, bool is 0/1, NaN ranks with +inf (above every number)."""
    stacked = torch.stack([s.detach().reshape(-1) for s in samples])
    if stacked.is_complex():
        stacked = torch.view_as_real(stacked).reshape(len(samples), -1)
    return torch.nan_to_num(stacked.double(), nan=math.inf, posinf=math.inf,
                            neginf=-math.inf)


def _cdf_at(sorted_rows: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Per row, the empirical CDF of ``sorted_rows`` at ``points`` (right-continuous)."""
    return torch.searchsorted(sorted_rows, points.contiguous(), right=True).double() \
        / sorted_rows.shape[1]


def distances(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """Per element (column), the KS distance between samples ``a`` ``(n, k)`` and ``b``
    ``(m, k)``, each sample given the tolerance ``atol + rtol * |x|``: the larger of
    ``sup F_a(t) - F_b(t + tol)`` and ``sup F_b(t) - F_a(t + tol)`` (taken at the jumps)."""
    a_s = a.T.contiguous().sort(dim=1).values
    b_s = b.T.contiguous().sort(dim=1).values

    def widened(x: torch.Tensor) -> torch.Tensor:
        slack = torch.where(torch.isfinite(x), atol + rtol * x.abs(), torch.zeros_like(x))
        return x + slack

    up = (_cdf_at(a_s, a_s) - _cdf_at(b_s, widened(a_s))).amax(dim=1)
    down = (_cdf_at(b_s, b_s) - _cdf_at(a_s, widened(b_s))).amax(dim=1)
    return torch.maximum(up, down).clamp(min=0)


def summary(column: torch.Tensor) -> str:
    """One element's samples in a few words: the frequencies of up to 4 distinct values, else
    mean, standard deviation and range."""
    values, counts = torch.unique(column, return_counts=True)
    n = column.numel()
    if values.numel() <= 4:
        return "{" + ", ".join(f"{v:g}: {c / n:.0%}" for v, c in
                               zip(values.tolist(), counts.tolist(), strict=True)) + "}"
    finite = column[torch.isfinite(column)]
    if finite.numel() == 0:
        return "non-finite"
    return (f"mean {float(finite.mean()):.4g}, std {float(finite.std()):.4g}, "
            f"range [{float(finite.min()):.4g}, {float(finite.max()):.4g}]")


def assert_same_distribution(label: str, where: str, backend: torch.Tensor, cpu: torch.Tensor,
                             rtol: float, atol: float, tests: int) -> None:
    """Samples ``backend`` ``(n, k)`` and ``cpu`` ``(m, k)`` of one result (:func:`columns`)
    come from the same distribution, element by element, to tolerance; ``tests``: the elements
    compared in the whole example (the false-alarm budget is split over them)."""
    __tracebackhide__ = True
    if backend.shape[1] == 0:
        return
    d = distances(backend, cpu, rtol, atol)
    bound = ks_bound(backend.shape[0], cpu.shape[0], tests)
    worst = int(d.argmax())
    if float(d[worst]) <= bound:
        return
    raise CheckFailure(DISTRIBUTION, (
        f"{label} element {worst} (of {d.numel()}): the backend's {backend.shape[0]} samples "
        f"are distributed otherwise than CPU's {cpu.shape[0]} (KS distance {float(d[worst]):.2f}"
        f" > {bound:.2f}, a false alarm's bound at probability {FALSE_ALARM:g}); backend "
        f"{summary(backend[:, worst])}, CPU {summary(cpu[:, worst])} [{where}]"))
