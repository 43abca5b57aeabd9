"""A backend that computes each op on copies of its inputs laid out otherwise
(``proof_backends``): dimensions stored in reverse order (column-major) for two or more
dimensions, every other element for one, so reductions, products and vectorised loops run in
another order. Results keep CPU's layout. Skipped (CPU's own answer): ops whose meaning is the
storage layout itself (``as_strided`` and its copies, ``_reshape_alias_copy``, ``resize_``,
``set_``).
"""

from __future__ import annotations

import torch

from proof_backends import fallback
from proof_backends.fallback import Transform

FORK_SAFE = True


def relayout(x: torch.Tensor) -> torch.Tensor:
    """A copy of ``x`` with the same values in another memory layout."""
    if x.dim() >= 2:
        rev = list(range(x.dim()))[::-1]
        return x.permute(rev).clone(memory_format=torch.contiguous_format).permute(rev)
    if x.dim() == 1 and x.numel() > 1:
        wide = torch.empty(2 * x.numel(), dtype=x.dtype)[::2]
        return wide.copy_(x)
    return x.clone()


def same_layout(x: torch.Tensor) -> torch.Tensor:
    """A written argument keeps its layout: CPU's own out= kernels do not all honour an out='s
    strides (``_softmax.out`` writes a strided out= as if it were contiguous), and the backend
    computes into the tensor it is given."""
    return x.clone()


TRANSFORM = Transform(inputs=relayout, written=same_layout, skip=frozenset({
    "as_strided", "as_strided_copy", "as_strided_scatter", "_reshape_alias_copy", "resize",
    "resize_as", "set"}))
fallback.install("reorder", TRANSFORM)
