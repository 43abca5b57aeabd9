"""Data the engine reads, never branches on: input hints, tolerances, expected failures.

* ``opdb/data/hints.yaml``       — argument-name conventions and per-overload hints
* ``opdb/data/tolerances.yaml``  — per-overload (and per-dtype) rtol/atol overrides
* ``conformance/data/expected_failures/<backend>.yaml`` — known failures with reasons

Every entry is read key by key; an unknown key, a wrong type or a name that is not an overload is
an :class:`~opdb.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.strategies import ArgHint, OpHints
from opdb.dtypes import DTYPE_NAMES
from opdb.errors import InputError

_OPDB_DATA = Path(__file__).resolve().parent.parent / "opdb" / "data"
_CONF_DATA = Path(__file__).resolve().parent / "data"
HINTS_PATH = _OPDB_DATA / "hints.yaml"
TOLERANCES_PATH = _OPDB_DATA / "tolerances.yaml"
EXPECTED_DIR = _CONF_DATA / "expected_failures"


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers the line of every mapping (as the key ``__line__``)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path),
                         line=line + 1 if line is not None else None) from None


def _take(entry: Mapping[str, Any], allowed: Iterable[str], path: Path, what: str) -> None:
    line = entry.get("__line__")
    extra = set(entry) - set(allowed) - {"__line__"}
    if extra:
        raise InputError(f"unknown key {sorted(extra)[0]!r} in {what} (expected one of: "
                         f"{', '.join(sorted(allowed))})", file=str(path), line=line)


def _names(entry: Mapping[str, Any], path: Path) -> tuple[str, ...]:
    names = entry.get("names")
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
        raise InputError("'names' must be a non-empty list of overload names", file=str(path),
                         line=entry.get("__line__"))
    return tuple(names)


# --------------------------------------------------------------------------- hints

_ARG_KEYS = {"choices", "min", "max", "shape", "dtypes", "length", "device"}


def _arg_hint(raw: Any, path: Path, line: int | None) -> ArgHint:
    if not isinstance(raw, Mapping):
        raise InputError("an argument hint must be a mapping", file=str(path), line=line)
    _take(raw, _ARG_KEYS, path, "argument hint")
    line = raw.get("__line__", line)
    kw: dict[str, Any] = {}
    for key in ("choices", "shape", "dtypes"):
        if key in raw:
            if not isinstance(raw[key], list):
                raise InputError(f"'{key}' must be a list", file=str(path), line=line)
            kw[key] = tuple(raw[key])
    for key in ("min", "max"):
        if key in raw:
            if not isinstance(raw[key], int | float):
                raise InputError(f"'{key}' must be a number", file=str(path), line=line)
            kw[key] = raw[key]
    if "length" in raw:
        kw["length"] = int(raw["length"])
    if "device" in raw:
        if raw["device"] != "cpu":
            raise InputError("'device' can only be 'cpu' (an argument kept on CPU)",
                             file=str(path), line=line)
        kw["device"] = "cpu"
    if "dtypes" in kw:
        for d in kw["dtypes"]:
            if d not in DTYPE_NAMES:
                raise InputError(f"unknown dtype {d!r}", file=str(path), line=line)
    return ArgHint(**kw)


@dataclass(frozen=True)
class Hints:
    """All hints: global argument conventions plus per-overload entries."""

    arguments: Mapping[str, ArgHint] = field(default_factory=dict)
    ops: Mapping[str, OpHints] = field(default_factory=dict)
    source: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def for_op(self, name: str) -> OpHints:
        own = self.ops.get(name)
        if own is None:
            return OpHints(args=self.arguments)
        return OpHints(args={**self.arguments, **own.args}, max_side=own.max_side,
                       values=own.values, result_on_device=own.result_on_device)


def load_hints(path: str | Path | None = None) -> Hints:
    path = Path(path) if path else HINTS_PATH
    data = _load(path) or {}
    if not isinstance(data, Mapping):
        raise InputError("expected a mapping with 'arguments' and 'ops'", file=str(path), line=1)
    _take(data, {"arguments", "ops"}, path, "hints file")
    arguments = {}
    for name, raw in (data.get("arguments") or {}).items():
        if name == "__line__":
            continue
        arguments[name] = _arg_hint(raw, path, data["arguments"].get("__line__"))
    ops: dict[str, OpHints] = {}
    source: dict[str, tuple[str, int | None]] = {}
    for entry in data.get("ops") or []:
        if not isinstance(entry, Mapping):
            raise InputError("each entry of 'ops' must be a mapping", file=str(path))
        _take(entry, {"names", "args", "max_side", "values", "result_device"}, path,
              "ops entry")
        line = entry.get("__line__")
        if entry.get("values", "compared") not in ("compared", "unspecified"):
            raise InputError("'values' must be 'compared' or 'unspecified'", file=str(path),
                             line=line)
        if entry.get("result_device", "input") not in ("input", "cpu"):
            raise InputError("'result_device' must be 'input' or 'cpu'", file=str(path),
                             line=line)
        args = {k: _arg_hint(v, path, line) for k, v in (entry.get("args") or {}).items()
                if k != "__line__"}
        for name in _names(entry, path):
            ops[name] = OpHints(args=args, max_side=entry.get("max_side"),
                                values=entry.get("values", "compared") == "compared",
                                result_on_device=entry.get("result_device", "input") == "input")
            source[name] = (str(path), line)
    return Hints(arguments=arguments, ops=ops, source=source)


# --------------------------------------------------------------------------- tolerances


@dataclass(frozen=True)
class Tolerance:
    names: tuple[str, ...]
    dtypes: tuple[str, ...] | None
    rtol: float
    atol: float


@dataclass(frozen=True)
class Tolerances:
    entries: tuple[Tolerance, ...] = ()

    def __call__(self, overload: str, dtype: Any) -> tuple[float | None, float | None]:
        dname = str(dtype).removeprefix("torch.")
        for t in self.entries:
            if overload in t.names and (t.dtypes is None or dname in t.dtypes):
                return t.rtol, t.atol
        return None, None


def load_tolerances(path: str | Path | None = None) -> Tolerances:
    path = Path(path) if path else TOLERANCES_PATH
    data = _load(path) or []
    if not isinstance(data, list):
        raise InputError("expected a list of entries", file=str(path), line=1)
    entries = []
    for entry in data:
        _take(entry, {"names", "dtypes", "rtol", "atol", "reason"}, path, "tolerance entry")
        line = entry.get("__line__")
        if "rtol" not in entry or "atol" not in entry:
            raise InputError("a tolerance entry needs both 'rtol' and 'atol'", file=str(path),
                             line=line)
        if not entry.get("reason"):
            raise InputError("a tolerance entry needs a 'reason'", file=str(path), line=line)
        dtypes = entry.get("dtypes")
        entries.append(Tolerance(names=_names(entry, path),
                                 dtypes=tuple(dtypes) if dtypes else None,
                                 rtol=float(entry["rtol"]), atol=float(entry["atol"])))
    return Tolerances(tuple(entries))


# --------------------------------------------------------------------------- expected failures


@dataclass(frozen=True)
class Expectation:
    """One expected failure: a test id (``add.Tensor::promotion``; ``*`` globs allowed)."""

    id: str
    reason: str
    file: str
    line: int | None

    def matches(self, test_id: str) -> bool:
        return fnmatch.fnmatchcase(test_id, self.id)


@dataclass(frozen=True)
class Expectations:
    entries: tuple[Expectation, ...] = ()

    def reason_for(self, test_id: str) -> str | None:
        for e in self.entries:
            if e.matches(test_id):
                return e.reason
        return None

    def unmatched(self, test_ids: Iterable[str]) -> list[Expectation]:
        ids = list(test_ids)
        return [e for e in self.entries if not any(e.matches(i) for i in ids)]


_ID = re.compile(r"^[\w.*?\[\]-]+::[\w*?\[\]]+$")


def expected_failures_path(backend_name: str) -> Path:
    safe = re.sub(r"[^\w.-]+", "_", backend_name)
    return EXPECTED_DIR / f"{safe}.yaml"


def load_expectations(path: str | Path | None) -> Expectations:
    """Expected failures from ``path`` (a missing default file means none)."""
    if path is None:
        return Expectations()
    path = Path(path)
    if not path.exists():
        return Expectations()
    data = _load(path) or []
    if not isinstance(data, list):
        raise InputError("expected a list of {id, reason} entries", file=str(path), line=1)
    entries = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise InputError("each entry must be a mapping with 'id' and 'reason'",
                             file=str(path))
        _take(entry, {"id", "reason"}, path, "expected failure")
        line = entry.get("__line__")
        test_id = entry.get("id")
        if not isinstance(test_id, str) or not _ID.match(test_id):
            raise InputError(f"'id' must look like 'add.Tensor::promotion', not {test_id!r}",
                             file=str(path), line=line)
        if not entry.get("reason"):
            raise InputError(f"expected failure {test_id!r} needs a 'reason'", file=str(path),
                             line=line)
        entries.append(Expectation(test_id, str(entry["reason"]), str(path), line))
    return Expectations(tuple(entries))
