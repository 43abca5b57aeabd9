"""A vendor-like backend: an in-place foreach kernel that returns without writing (``-> ()``:
it returns nothing either way, so only what it wrote can show the bug)."""

from __future__ import annotations

import kernels


def _foreach_neg_(self):
    return None


OVERRIDES = {"_foreach_neg_": _foreach_neg_}
kernels.install(overrides=OVERRIDES)
