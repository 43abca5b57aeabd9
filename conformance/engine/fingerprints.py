"""A failure's fingerprint (:func:`failure_key`): category and message with numbers, shapes
and dtype names normalized, so that one bug seen in many examples is one failure.

The normalization is string-level and lives in :mod:`opdb.fingerprints` (reports key old
results files with it); what the engine adds here is the dtype a failure is filed under
(:func:`lead_dtype`).
"""

from __future__ import annotations

import torch

from conformance.core.call import Call
from opdb.fingerprints import failure_key

__all__ = ["failure_key", "lead_dtype"]


def lead_dtype(call: Call) -> tuple[str, ...]:
    """The dtype of the call's first tensor argument (``self`` as a rule): the dtype a failure
    is filed under (one bug seen with several partner dtypes is still one failure)."""
    for _, value in call.values:
        for t in value if isinstance(value, list | tuple) else (value,):
            if isinstance(t, torch.Tensor):
                return (str(t.dtype).removeprefix("torch."),)
    return ()
