"""Verdict records and the exceptions checks raise to reach them.

A check never returns a verdict itself: it raises :class:`CheckFailure` (with a category) for a
disagreement with CPU, :class:`CpuRejected` when CPU refuses the example (not counted), and the
engine turns the dispatcher's "Could not run 'aten::X' with arguments from the 'B' backend" error
into ``unsupported`` with ``missing_op`` (see :func:`missing_op_from`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from opdb import outcomes

# The vocabulary (verdict and category names, severities) has one home shared with reports.
VERDICTS = outcomes.VERDICTS


FAIL_CATEGORIES = tuple(outcomes.FAIL_CATEGORIES)


SKIP_CATEGORIES = tuple(outcomes.SKIP_CATEGORIES)


_COULD_NOT_RUN = re.compile(r"Could not run '([^']+)' with arguments from the '([^']+)' backend")


#: The same, as torch's Python dispatcher words it for a key with neither kernel nor fake impl.
_NO_KERNEL = re.compile(r"^([\w:.]+): attempted to run this operator with (\w+) tensors, but there "
                        r"was no fake impl or \2 kernel registered")


#: ATen's stub for ops each backend is to implement itself (``convolution_overrideable``,
#: ``convolution_backward_overrideable``): registered for every key, it only raises this. A
#: device answering so has no kernel; CPU answering so is no oracle (``cpu_unsupported``).
_OVERRIDE_STUB = re.compile(r"^(\w+)(?: not implemented\.|:) You are likely triggering this with "
                            r"tensor backend other than [\w/]+, if this is intended, please use "
                            r"TORCH_LIBRARY_IMPL to override this function")


def missing_op_from(exc: BaseException) -> tuple[str, str] | None:
    """``(overload, backend)`` named by the dispatcher's missing-kernel error, else ``None``.

    ``aten::add.Tensor`` -> ``add.Tensor``; ``aten::abs`` -> ``abs`` (the default overload).
    ATen's override-me stub (:data:`_OVERRIDE_STUB`) names no key: ``(op, "*")``. The key is
    whose kernel is missing: a backend call's error naming another key (``'CPU'``) is no kernel
    the backend lacks (callers ask :meth:`conformance.core.backends.Backend.owns_key`).
    """
    if not isinstance(exc, NotImplementedError):
        return None
    stub = _OVERRIDE_STUB.search(str(exc))
    if stub is not None:
        return stub.group(1), "*"
    m = _COULD_NOT_RUN.search(str(exc)) or _NO_KERNEL.search(str(exc))
    if m is None:
        return None
    name = m.group(1)
    name = name.split("::", 1)[1] if name.startswith("aten::") else name
    return name, m.group(2)


def error_line(exc: BaseException) -> str:
    """``RuntimeError: first line of the message`` (trimmed) — what messages and tallies show."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 200:
        first = first[:197] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class CpuRejected(Exception):
    """CPU raised on this example: it is not counted (CPU is the oracle)."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        super().__init__(error_line(exc))


class CheckFailure(AssertionError):
    """The backend disagreed with CPU. ``category`` is one of :data:`FAIL_CATEGORIES`."""

    def __init__(self, category: str, message: str, call: Any = None) -> None:
        assert category in FAIL_CATEGORIES, category
        self.category = category
        self.message = message
        self.call = call  # the call that showed it, when not the example drawn (a sweep's part)
        super().__init__(message)


class NotComparable(Exception):
    """Values could not be read back from the backend (e.g. meta tensors hold no data)."""


class Abort(BaseException):
    """Stops the Hypothesis run at once (not an ``Exception``, so Hypothesis does not shrink it)."""

    def __init__(self, verdict: str, category: str, message: str, missing_op: str | None = None):
        self.verdict = verdict
        self.category = category
        self.message = message
        self.missing_op = missing_op
        self.call: object | None = None  # the call that hit it (for the repro)
        super().__init__(message)


@dataclass(frozen=True)
class DtypeTally:
    """Counts over the examples in which some tensor argument had one dtype."""

    examples: int = 0
    cpu_ok: int = 0
    backend_ok: int = 0
    agree: int = 0


@dataclass(frozen=True)
class Failure:
    """One distinct failure of an item: its category, message, fingerprint (``key``, from
    :func:`conformance.engine.failure_key`), the shrunk call's repro, and the expected-failure
    reason that matched it (``None``: a new failure), and the input source that found it
    (``hypothesis``: the schema strategies; ``corpus``: a recorded call)."""

    category: str
    message: str
    key: str
    repro: str | None = None
    expected: str | None = None
    dtypes: tuple[str, ...] = ()
    source: str = "hypothesis"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["dtypes"] = list(self.dtypes)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Failure:
        known = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in obj.items() if k in known}
        kw["dtypes"] = tuple(obj.get("dtypes") or ())
        kw["source"] = obj.get("source") or "hypothesis"
        return cls(**kw)


@dataclass(frozen=True)
class Verdict:
    """One record per (overload, check); field names are the results-file contract."""

    overload: str
    check: str
    backend: str
    verdict: str
    category: str | None
    message: str
    examples: int
    duration_s: float
    seed: int
    torch_version: str
    missing_op: str | None = None
    repro: str | None = None
    expected: str | None = None
    dtypes: Mapping[str, DtypeTally] = field(default_factory=dict)
    #: every distinct failure found (the primary one first); empty unless ``verdict == "fail"``
    failures: tuple[Failure, ...] = ()
    #: the ``dtypes`` check's outcome per dtype name (:data:`opdb.outcomes.DTYPE_OUTCOMES`);
    #: empty for other checks
    dtype_support: Mapping[str, str] = field(default_factory=dict)
    #: examples checked per input source (``hypothesis``, ``corpus``)
    sources: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    @property
    def id(self) -> str:
        return f"{self.overload}::{self.check}"

    def to_json(self) -> dict[str, Any]:
        out = {"record": "verdict", **asdict(self)}
        out["dtypes"] = {k: asdict(v) if isinstance(v, DtypeTally) else dict(v)
                         for k, v in self.dtypes.items()}
        out["failures"] = [f.to_json() for f in self.failures]
        out["dtype_support"] = dict(self.dtype_support)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Verdict:
        known = {f for f in cls.__dataclass_fields__}
        kw = {k: v for k, v in obj.items() if k in known}
        kw["dtypes"] = {k: DtypeTally(**v) for k, v in (obj.get("dtypes") or {}).items()}
        kw["failures"] = tuple(Failure.from_json(f) for f in obj.get("failures") or ())
        kw["dtype_support"] = {str(k): str(v) for k, v in (obj.get("dtype_support") or {}).items()}
        kw["sources"] = dict(obj.get("sources") or {})
        return cls(**kw)
