"""Reading results files (JSONL, see docs/ARCHITECTURE.md "The results file").

A results file is written line by line while a run goes on, so a crash can leave a half-written
last line. :func:`read` keeps every record it can parse, warns once per damaged line (naming
``file:line``) and goes on; only a file with nothing readable in it is an error.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opdb import outcomes
from opdb.dtypes import DTYPE_NAMES
from opdb.errors import InputError

#: The twelve dtypes (columns of the dtype matrix), and the verdict vocabulary: one home each,
#: in opdb (string-level modules, no torch import).
DTYPES: tuple[str, ...] = DTYPE_NAMES
VERDICTS: tuple[str, ...] = outcomes.VERDICTS
TESTED_VERDICTS: frozenset[str] = outcomes.TESTED_VERDICTS
BAD_VERDICTS: frozenset[str] = outcomes.BAD_VERDICTS

#: Columns of the verdict table, in order (see :func:`reports.load`).
VERDICT_FIELDS: tuple[str, ...] = (
    "overload", "check", "backend", "verdict", "category", "message", "missing_op",
    "examples", "duration_s", "seed", "torch_version", "repro", "expected", "dtypes",
    "dtype_support", "failures", "frames", "frames_by",
)

#: Fields of one entry of a verdict's ``failures`` (every distinct failure the search found).
FAILURE_FIELDS: tuple[str, ...] = ("category", "message", "key", "repro", "expected", "dtypes")

_REQUIRED = ("overload", "check", "verdict")
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_DTYPE_COUNTS = ("examples", "cpu_ok", "backend_ok", "agree")


class ResultsWarning(UserWarning):
    """A damaged or unexpected line in a results file; the line was skipped."""


@dataclass(frozen=True)
class Results:
    """What one or more results files hold: run headers and verdict records, in file order."""

    runs: tuple[dict[str, Any], ...]
    verdicts: tuple[dict[str, Any], ...]
    sources: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())


def _warn(message: str, collected: list[str]) -> None:
    collected.append(message)
    warnings.warn(message, ResultsWarning, stacklevel=3)


def _number(value: Any, *, default: float | None = None) -> float | None:
    if value is None:
        return default
    if isinstance(value, str):
        return _NONFINITE.get(value, default)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return default


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return int(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _dtype_counts(value: Any) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    if not isinstance(value, Mapping):
        return out
    for name, counts in value.items():
        if not isinstance(counts, Mapping):
            continue
        out[str(name)] = {k: _int(counts.get(k)) or 0 for k in _DTYPE_COUNTS}
    return out


def _dtype_support(value: Any) -> dict[str, str]:
    """The ``dtypes`` check's outcome per dtype (``{}`` for other checks and older files)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def _failures(value: Any) -> tuple[dict[str, Any], ...]:
    """A verdict's distinct failures, each with every field of :data:`FAILURE_FIELDS`
    (``key`` ``None`` where the engine wrote none, ``dtypes`` a tuple); entries that are not
    objects are dropped. ``()`` for other verdicts and for files older than the field."""
    if not isinstance(value, (list, tuple)):
        return ()
    out = []
    for f in value:
        if not isinstance(f, Mapping):
            continue
        dts = f.get("dtypes")
        out.append({
            "category": _text(f.get("category")),
            "message": _text(f.get("message")) or "",
            "key": _text(f.get("key")),
            "repro": _text(f.get("repro")),
            "expected": _text(f.get("expected")),
            "dtypes": tuple(str(d) for d in dts) if isinstance(dts, (list, tuple)) else (),
        })
    return tuple(out)


def normalize_verdict(obj: Mapping[str, Any]) -> dict[str, Any]:
    """One verdict record with every field of :data:`VERDICT_FIELDS` present and typed."""
    rec: dict[str, Any] = {
        "overload": str(obj["overload"]),
        "check": str(obj["check"]),
        "backend": _text(obj.get("backend")),
        "verdict": str(obj["verdict"]),
        "category": _text(obj.get("category")),
        "message": _text(obj.get("message")) or "",
        "missing_op": _text(obj.get("missing_op")),
        "examples": _int(obj.get("examples")) or 0,
        "duration_s": _number(obj.get("duration_s"), default=math.nan),
        "seed": _int(obj.get("seed")),
        "torch_version": _text(obj.get("torch_version")),
        "repro": _text(obj.get("repro")),
        "expected": _text(obj.get("expected")),
        "dtypes": _dtype_counts(obj.get("dtypes")),
        "dtype_support": _dtype_support(obj.get("dtype_support")),
        "failures": _failures(obj.get("failures")),
        # a crash's top frames, innermost first, and what gave them (gdb, faulthandler)
        "frames": tuple(str(f) for f in obj["frames"]) if isinstance(obj.get("frames"),
                                                                      (list, tuple)) else (),
        "frames_by": _text(obj.get("frames_by")),
    }
    if isinstance(obj.get("dtype"), str):  # a check that records one verdict per dtype
        rec["dtype"] = obj["dtype"]
    return rec


def read_raw(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a results file; a missing or unreadable one is an :class:`InputError`."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputError("results file not found", file=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a results file (JSONL)", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot read results file: {exc.strerror}", file=name) from None


def read_one(path: str | os.PathLike[str], collected: list[str] | None = None) -> Results:
    """Read one results file. Damaged lines are skipped with a :class:`ResultsWarning`.

    Raises :class:`InputError` if the file is missing, unreadable, or holds no record at all.
    """
    name = os.fspath(path)
    notes: list[str] = [] if collected is None else collected
    raw = read_raw(name)

    runs: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    damaged = 0
    first_damage: int | None = None
    lines = raw.split(b"\n")
    for lineno, chunk in enumerate(lines, start=1):
        if not chunk.strip():
            continue
        try:
            obj = json.loads(chunk.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except (UnicodeDecodeError, ValueError) as exc:
            damaged += 1
            first_damage = first_damage or lineno
            last = lineno == len(lines) or (lineno == len(lines) - 1 and not lines[-1])
            what = "truncated record (half-written last line?)" if last else "malformed record"
            reason = str(exc).splitlines()[0][:80]
            _warn(f"{name}:{lineno}: {what}, line skipped: {reason}", notes)
            continue
        kind = obj.get("record")
        if kind == "run":
            obj = dict(obj)
            obj["source"] = name
            obj["line"] = lineno
            runs.append(obj)
        elif kind == "verdict":
            missing = [k for k in _REQUIRED if not isinstance(obj.get(k), str)]
            if missing:
                _warn(f"{name}:{lineno}: verdict record without {', '.join(missing)}, line skipped",
                      notes)
                continue
            rec = normalize_verdict(obj)
            rec["source"] = name
            rec["line"] = lineno
            rec["run"] = len(runs) - 1 if runs else None
            verdicts.append(rec)
        # other record types: skipped silently, as the contract says readers must.

    if not runs and not verdicts:
        if damaged:
            raise InputError(
                f"no readable record ({damaged} damaged line(s)); not a results file (JSONL)?",
                file=name, line=first_damage,
            )
        raise InputError("no run or verdict record; not a results file (JSONL)?", file=name)
    return Results(tuple(runs), tuple(verdicts), (name,), tuple(notes))


def read(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Results:
    """Read one or several results files into one :class:`Results` (file order kept)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    if not paths:
        raise InputError("no results file given")
    runs: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    sources: list[str] = []
    notes: list[str] = []
    for path in paths:
        one = read_one(path, notes)
        offset = len(runs)
        runs.extend(one.runs)
        for rec in one.verdicts:
            if rec["run"] is not None:
                rec["run"] += offset
            verdicts.append(rec)
        sources.extend(one.sources)
    return Results(tuple(runs), tuple(verdicts), tuple(sources), tuple(notes))
