"""The registry of checks (:data:`CHECKS`): the one module that imports every check module.
Adding a check is a new module in this package and one line here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.checks.autograd import autograd_applies, verify_autograd
from conformance.checks.broadcast import broadcast_applies, verify_broadcast
from conformance.checks.check import Check
from conformance.checks.dtypes import dtypes_applies, verify_dtypes
from conformance.checks.forward import forward_applies, forward_refill, verify_forward
from conformance.checks.inplace import INPLACE_FACTOR, inplace_applies, verify_inplace
from conformance.checks.noncontiguous import (
    NONCONTIGUOUS_FACTOR,
    noncontiguous_applies,
    noncontiguous_hints,
    verify_noncontiguous,
)
from conformance.checks.out import out_check
from conformance.checks.promotion import promotion_applies, promotion_identity, verify_promotion
from opdb.dtypes import DTYPE_NAMES

if TYPE_CHECKING:
    pass


CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        Check("forward", "forward", "values, dtype and shape as CPU", forward_applies,
              verify_forward, refills=True, prepare=forward_refill),
        Check("promotion", "promotion", "result dtype as CPU across dtype pairs and operand forms",
              promotion_applies, verify_promotion, examples_factor=3,
              identity=promotion_identity),
        Check("broadcast", "broadcast", "shapes and values under broadcasting as CPU",
              broadcast_applies, verify_broadcast),
        Check("autograd", "autograd", "gradients of differentiable outputs as CPU's",
              autograd_applies, verify_autograd, forks=False),
        Check("dtypes", "dtypes", "each of the twelve dtypes: CPU supports it, the backend "
              "supports it, values agree", dtypes_applies, verify_dtypes, examples_factor=0.3,
              shrink=False, calls_per_draw=len(DTYPE_NAMES)),
        Check("inplace", "inplace", "in-place overloads: self returned and written, inputs and "
              "view bases as CPU's, refusals, version counters", inplace_applies, verify_inplace,
              examples_factor=INPLACE_FACTOR),
        Check("noncontiguous", "forward", "forward inputs as transposed, strided, "
              "expanded, offset and channels_last views: values as CPU, strides where a "
              "contract", noncontiguous_applies, verify_noncontiguous,
              examples_factor=NONCONTIGUOUS_FACTOR, applies_hints=noncontiguous_hints),
        out_check(),
    )
}


DEFAULT_CHECKS = ("forward", "promotion", "broadcast", "dtypes")
