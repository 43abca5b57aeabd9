"""Probes: one call on the device per backend property (``opdb/data/backend_properties.yaml``),
asked once per run, so that a backend that flushes subnormals, multiplies float32 in TF32 or
accumulates float16 in float16 without declaring it is told which ``--assume`` its fails point
to. A probe compares the device's answer with the exact one, never with CPU's: CPU does none of
these things, and a probe must not depend on what CPU happens to do either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import torch

from conformance.core.backends import Backend


def _ftz(device: str) -> str | None:
    """``2**-140 * 1.5`` in float32 (a subnormal times a normal, a subnormal result) is
    ``1.5 * 2**-140`` exactly; a device that flushes inputs or results answers 0."""
    x = torch.tensor([2.0 ** -140], dtype=torch.float32).to(device)
    got = float((x * torch.tensor([1.5], dtype=torch.float32).to(device)).cpu()[0])
    return None if got != 0.0 else f"2**-140 * 1.5 in float32 gave {got!r}, not 1.5 * 2**-140"


def _tf32(device: str) -> str | None:
    """``[[1 + 2**-20, 0]] @ [[1], [1]]`` in float32 is ``1 + 2**-20`` exactly; TF32 keeps 10
    mantissa bits of each input and answers 1."""
    a = torch.tensor([[1.0 + 2.0 ** -20, 0.0]], dtype=torch.float32).to(device)
    b = torch.ones(2, 1, dtype=torch.float32).to(device)
    got = float((a @ b).cpu()[0, 0])
    return None if got != 1.0 else "[[1 + 2**-20, 0]] @ [[1], [1]] in float32 gave 1.0"


def _half_accumulation(device: str) -> str | None:
    """A dot product of 4096 float16 values in [0.5, 1) with ones: with a float32 accumulator
    the result is the exact sum rounded once (within one float16 ulp); a float16 accumulator's
    running sum loses a bit per doubling past 2048 and misses by many ulps."""
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(1, 4096, generator=g, dtype=torch.float64) * 0.5 + 0.5).to(torch.float16)
    exact = float(a.double().sum())
    got = float((a.to(device) @ torch.ones(4096, 1, dtype=torch.float16).to(device)).cpu()[0, 0])
    ulp = 2.0 ** (int(torch.tensor(exact).log2().floor()) - 10)
    if abs(got - exact) <= ulp:
        return None
    return (f"a float16 dot product of 4096 terms gave {got!r}, the exact sum is {exact!r} "
            f"(off by {abs(got - exact) / ulp:.0f} float16 ulps)")


#: One probe per property name of ``opdb/data/backend_properties.yaml``: ``None`` where the
#: device does not show the property, else the evidence.
PROBES: Mapping[str, Callable[[str], str | None]] = MappingProxyType({
    "ftz": _ftz, "tf32": _tf32, "half_accumulation": _half_accumulation})


def probe(backend: Backend) -> dict[str, str]:
    """The properties ``backend``'s device shows, each with its evidence (one call each; a
    probe the device refuses shows nothing). Nothing for a backend without values (``meta``)."""
    if not backend.host_values:
        return {}
    found = {}
    for name, fn in PROBES.items():
        try:
            evidence = fn(backend.device)
        except Exception:  # noqa: BLE001 - a refused probe shows nothing; the checks will tell
            evidence = None
        if evidence is not None:
            found[name] = evidence
    return found
