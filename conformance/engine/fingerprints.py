"""A failure's fingerprint (:func:`failure_key`): category and message with numbers, shapes
and dtype names normalized, so that one bug seen in many examples is one failure.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

import torch

from conformance.core.call import Call
from conformance.core.verdicts import split_call
from opdb.dtypes import (
    ATEN_TYPE_NAMES,
    CPP_TYPE_NAMES,
    DTYPE_NAMES,
    SCALAR_CONVERSION_NAMES,
    SCALAR_TYPE_NAMES,
)

if sys.version_info < (3, 11):  # pragma: no cover - Hypothesis depends on the backport there
    pass


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:[-+](?:\d+\.?\d*)"
                     r"(?:[eE][-+]?\d+)?j)?(?![\w])")


_LIST = re.compile(r"([\[(])#(?:, ?#)*,?([\])])")


_SPECIAL = re.compile(r"(?<![\w.])-?(?:nan|inf)\b")


#: a dtype as a message spells it (torch's ``float32``/``torch.float32``, c10's ``Float``, the
#: C++ and ATen type names), longest first so ``c10::complex<float>`` is one name
_DTYPE_WORD = re.compile(r"(?<![\w:<])(?:torch\.)?(?:" + "|".join(sorted({
    re.escape(n) for table in (SCALAR_TYPE_NAMES, CPP_TYPE_NAMES, SCALAR_CONVERSION_NAMES,
                               ATEN_TYPE_NAMES) for n in table.values()} | set(DTYPE_NAMES)
    | {"ComplexHalf", "complex32"}, key=len, reverse=True)) + r")(?![\w>])")


def failure_key(category: str | None, message: str, dtypes: Iterable[str] = ()) -> str:
    """A failure's fingerprint: category, message with numbers and shapes normalized, dtype.

    The call in the message's trailing ``[...]`` is dropped (its sizes and values vary from
    example to example); ``dtypes`` (the engine passes the dtype of the call's first tensor)
    stand in for it. A value
    failure keeps only what kind of disagreement it is — which result, and the NaN / infinity
    tokens it shows — not torch.testing's numbers. Dtype names in the message (an out= of dtype
    Int, then Byte: ``but got: Int``) are normalized as numbers are: the lead dtype alone keeps
    failures of different input dtypes apart. Two failures with one key are one bug for the
    engine (searched and shrunk once) and for expected-failure entries (whose ``message`` regex
    still reads the failure's own message, dtype names included).
    """
    head, _ = split_call(message)
    specials = sorted(set(_SPECIAL.findall(head)))
    if category == "value":
        head = head.split(":", 1)[0].split("=", 1)[0]
        if specials:
            head += " (" + ", ".join(specials) + ")"
    else:
        head = _LIST.sub(r"\1#\2", _NUMBER.sub("#", head))
    head = _DTYPE_WORD.sub("<dtype>", head)
    names = ",".join(sorted(dtypes))
    return f"{category}: {head.strip()}" + (f" {{{names}}}" if names else "")


def lead_dtype(call: Call) -> tuple[str, ...]:
    """The dtype of the call's first tensor argument (``self`` as a rule): the dtype a failure
    is filed under (one bug seen with several partner dtypes is still one failure)."""
    for _, value in call.values:
        for t in value if isinstance(value, list | tuple) else (value,):
            if isinstance(t, torch.Tensor):
                return (str(t.dtype).removeprefix("torch."),)
    return ()
