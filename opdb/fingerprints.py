"""A failure's fingerprint (:func:`failure_key`): category and message with numbers, shapes
and dtype names normalized, so that one bug seen in many examples is one failure.

Strings only, like :mod:`opdb.outcomes`: the engine (``conformance.engine.failure_key``, which
adds the dtype of the call's first tensor) keys every failure it writes with it, and ``reports``
keys with it the failures of results files written before verdicts listed their ``failures``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from opdb.dtypes import (
    ATEN_TYPE_NAMES,
    CPP_TYPE_NAMES,
    DTYPE_NAMES,
    SCALAR_CONVERSION_NAMES,
    SCALAR_TYPE_NAMES,
)

_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:[-+](?:\d+\.?\d*)"
                     r"(?:[eE][-+]?\d+)?j)?(?![\w])")


_LIST = re.compile(r"([\[(])#(?:, ?#)*,?([\])])")


#: The dtypes check's prefix of a failure at one dtype: ``at float32: ``.
_AT_DTYPE = re.compile(r"at [\w.]+: ")
_SPECIAL = re.compile(r"(?<![\w.])-?(?:nan|inf)\b")


#: a dtype as a message spells it (torch's ``float32``/``torch.float32``, c10's ``Float``, the
#: C++ and ATen type names), longest first so ``c10::complex<float>`` is one name
_DTYPE_WORD = re.compile(r"(?<![\w:<])(?:torch\.)?(?:" + "|".join(sorted({
    re.escape(n) for table in (SCALAR_TYPE_NAMES, CPP_TYPE_NAMES, SCALAR_CONVERSION_NAMES,
                               ATEN_TYPE_NAMES) for n in table.values()} | set(DTYPE_NAMES)
    | {"ComplexHalf", "complex32"}, key=len, reverse=True)) + r")(?![\w>])")


def split_call(message: str) -> tuple[str, str]:
    """``("head", "call")`` of ``"head [call]"`` (the bracket matching the final ``]``)."""
    if not message.endswith("]"):
        return message, ""
    depth = 0
    for i in range(len(message) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(message[i], 0)
        if depth == 0:
            if i > 0 and message[i - 1] == " ":
                return message[:i - 1], message[i + 1:-1]
            return message, ""
    return message, ""


def failure_key(category: str | None, message: str, dtypes: Iterable[str] = ()) -> str:
    """A failure's fingerprint: category, message with numbers and shapes normalized, dtype.

    The call in the message's trailing ``[...]`` is dropped (its sizes and values vary from
    example to example); ``dtypes`` (the engine passes the dtype of the call's first tensor)
    stand in for it. A value
    failure keeps only what kind of disagreement it is — which result, and the NaN / infinity
    tokens it shows — not torch.testing's numbers. Dtype names in the message (an out= of dtype
    Int, then Byte: ``but got: Int``) are normalized as numbers are: the lead dtype alone keeps
    failures of different input dtypes apart. Two failures with one key are one bug for the
    engine (searched and shrunk once), for expected-failure entries (whose ``message`` regex
    still reads the failure's own message, dtype names included) and for the report's by-cause
    view.
    """
    head, _ = split_call(message)
    specials = sorted(set(_SPECIAL.findall(head)))
    if category == "value":
        # the dtypes check says at which dtype ("at float32: out values differ ..."): the
        # subject is what follows that prefix, up to torch.testing's numbers
        at = _AT_DTYPE.match(head)
        rest = head[at.end():] if at else head
        head = (at.group(0) if at else "") + rest.split(":", 1)[0].split("=", 1)[0]
        if specials:
            head += " (" + ", ".join(specials) + ")"
    else:
        head = _LIST.sub(r"\1#\2", _NUMBER.sub("#", head))
    head = _DTYPE_WORD.sub("<dtype>", head)
    names = ",".join(sorted(dtypes))
    return f"{category}: {head.strip()}" + (f" {{{names}}}" if names else "")


_KEY_DTYPES = re.compile(r" \{([^{}]*)\}$")


def split_key(key: str, category: str | None = None) -> tuple[str, tuple[str, ...]]:
    """``(head, dtypes)`` of a :func:`failure_key`: the normalized message without the
    ``category: `` prefix (when ``category`` is given and the key starts with it) and the lead
    dtypes it was filed under (``()`` for none) — what a report shows as the cause's title."""
    head = key
    if category is not None and head.startswith(f"{category}: "):
        head = head[len(category) + 2:]
    m = _KEY_DTYPES.search(head)
    if not m:
        return head, ()
    return head[:m.start()], tuple(d for d in m.group(1).split(",") if d)
