"""The registry of checks (:data:`CHECKS`): the one module that imports every check module.
Adding a check is a new module in this package (its ``CHECK`` record) and one line here.
"""

from __future__ import annotations

from conformance.checks import (
    DEFAULT_CHECKS,
    autograd,
    broadcast,
    compile,
    distribution,
    dtypes,
    forward,
    inplace,
    invalid,
    noncontiguous,
    out,
    promotion,
)
from conformance.checks.check import Check

CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        forward.CHECK,
        promotion.CHECK,
        broadcast.CHECK,
        autograd.CHECK,
        dtypes.CHECK,
        inplace.CHECK,
        noncontiguous.CHECK,
        out.CHECK,
        distribution.CHECK,
        invalid.CHECK,
        compile.CHECK,
    )
}

assert set(DEFAULT_CHECKS) <= set(CHECKS), DEFAULT_CHECKS

__all__ = ["CHECKS", "DEFAULT_CHECKS"]
