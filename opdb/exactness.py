"""Exactness classes: which overloads have a unique answer (``opdb/data/exactness.yaml``).

Data, read key by key; an unknown key, a wrong value or an unknown family is an
:class:`~opdb.errors.InputError` naming the file and line. The classes are explained in the data
file's header; the comparison that applies them lives in ``conformance/checks.py``.

    table = opdb.exactness.load()
    entry = table.entry_for("add.Tensor", family="add", tags=frozenset(), is_view=False)
    entry.klass  # "rounded"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from opdb._yaml import Entry, read_entries
from opdb.errors import InputError

CLASSES = ("exact", "rounded")
_KEYS = {"class", "families", "tags", "views", "requires", "complex", "undefined_conversion",
         "low_precision_ulps", "ulps", "signed_zero", "host_scalars", "dtype_pairs", "reason"}


@dataclass(frozen=True)
class ExactEntry:
    """One entry of the data file: a class and what it covers."""

    klass: str
    reason: str
    families: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    views: bool = False
    requires: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    complex_ok: bool = True
    undefined_conversion: bool = False
    low_precision_ulps: int = 1  # rounded class: ulps allowed for float16/bfloat16 results
    ulps: int = 0  # rounded class: ulps allowed for float32/float64 results
    signed_zero: bool = False  # the sign of a zero result is part of the answer
    host_scalars: bool = True  # False: the class does not hold when an operand is a host scalar
    dtype_pairs: bool = False  # the answer depends on the (input, ScalarType argument) pair
    file: str = ""
    line: int = 0

    def covers(self, family: str, tags: frozenset[str], is_view: bool) -> bool:
        return family in self.families or bool(self.tags & tags) or (self.views and is_view)

    def holds_for(self, args: Mapping[str, Any]) -> bool:
        """Whether the ``requires`` conditions hold for a call's named argument values (absent
        arguments hold: they take their default)."""
        for name, allowed in self.requires.items():
            if name in args and not any(_same(args[name], a) for a in allowed):
                return False
        return True


def _same(value: Any, allowed: Any) -> bool:
    if allowed is None or value is None:
        return value is allowed
    if isinstance(allowed, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(allowed, bool) and value is allowed
    try:
        return bool(value == allowed)
    except Exception:  # noqa: BLE001 - a tensor or other non-scalar: the condition fails
        return False


@dataclass(frozen=True)
class Exactness:
    """The table: the first entry that covers an overload decides its class."""

    entries: tuple[ExactEntry, ...] = ()

    def entry_for(self, name: str, *, family: str, tags: Iterable[str], is_view: bool
                  ) -> ExactEntry | None:
        tagset = frozenset(tags)
        for e in self.entries:
            if e.covers(family, tagset, is_view):
                return e
        return None

    @property
    def families(self) -> frozenset[str]:
        out: set[str] = set()
        for e in self.entries:
            out |= e.families
        return frozenset(out)

    def unknown_families(self, known: Iterable[str]) -> list[tuple[str, str, int]]:
        """(family, file, line) of every family named in the data that ``known`` lacks."""
        have = set(known)
        return [(f, e.file, e.line) for e in self.entries for f in sorted(e.families)
                if f not in have]


def _names(entry: Entry, key: str) -> frozenset[str]:
    value = entry.items[key][0] if key in entry.items else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise entry.error(f"'{key}' must be a list of names", key)
    return frozenset(value)


def _flag(entry: Entry, key: str, default: bool) -> bool:
    if key not in entry.items:
        return default
    value = entry.items[key][0]
    if not isinstance(value, bool):
        raise entry.error(f"'{key}' must be true or false", key)
    return value


def _parse(entry: Entry) -> ExactEntry:
    extra = sorted(set(entry.keys()) - _KEYS)
    if extra:
        raise entry.error(f"unknown key {extra[0]!r} (expected one of: {', '.join(sorted(_KEYS))})",
                          extra[0])
    klass = entry.items.get("class", (None, 0))[0]
    if klass not in CLASSES:
        raise entry.error(f"'class' must be one of {', '.join(CLASSES)}, not {klass!r}",
                          "class" if "class" in entry.items else None)
    reason = entry.items.get("reason", ("", 0))[0]
    if not isinstance(reason, str) or not reason.strip():
        raise entry.error("an entry needs a 'reason'")
    requires: dict[str, tuple[Any, ...]] = {}
    if "requires" in entry.items:
        raw = entry.items["requires"][0]
        if not isinstance(raw, dict) or not all(isinstance(v, list) for v in raw.values()):
            raise entry.error("'requires' must map argument names to lists of values",
                              "requires")
        requires = {str(k): tuple(v) for k, v in raw.items()}
    low = entry.items.get("low_precision_ulps", (1, 0))[0]
    if not isinstance(low, int) or isinstance(low, bool) or low not in (0, 1):
        raise entry.error("'low_precision_ulps' must be 0 or 1", "low_precision_ulps")
    ulps = entry.items.get("ulps", (0, 0))[0]
    if not isinstance(ulps, int) or isinstance(ulps, bool) or ulps not in (0, 1):
        raise entry.error("'ulps' must be 0 or 1", "ulps")
    if klass != "rounded" and ("ulps" in entry.items or "low_precision_ulps" in entry.items):
        raise entry.error("'ulps' and 'low_precision_ulps' apply to the rounded class only",
                          "ulps" if "ulps" in entry.items else "low_precision_ulps")
    out = ExactEntry(klass=klass, low_precision_ulps=low, ulps=ulps,
                     signed_zero=_flag(entry, "signed_zero", False),
                     host_scalars=_flag(entry, "host_scalars", True),
                     dtype_pairs=_flag(entry, "dtype_pairs", False), reason=" ".join(reason.split()),
                     families=_names(entry, "families"), tags=_names(entry, "tags"),
                     views=_flag(entry, "views", False), requires=requires,
                     complex_ok=_flag(entry, "complex", True),
                     undefined_conversion=_flag(entry, "undefined_conversion", False),
                     file=entry.file, line=entry.line)
    if not (out.families or out.tags or out.views):
        raise entry.error("an entry needs 'families', 'tags' or 'views: true'")
    return out


def default_path() -> Path:
    return Path(str(resources.files("opdb") / "data" / "exactness.yaml"))


def load_from(path: str | Path) -> Exactness:
    """Read an exactness file (see the packaged one for the format)."""
    table = Exactness(tuple(_parse(e) for e in read_entries(Path(path),
                                                            what="exactness file")))
    seen: dict[str, int] = {}
    for e in table.entries:
        for f in e.families:
            if f in seen:
                raise InputError(f"family {f!r} is already classified (line {seen[f]})",
                                 file=e.file, line=e.line)
            seen[f] = e.line
    return table


@cache
def load() -> Exactness:
    """The packaged table (``opdb/data/exactness.yaml``), read once per process."""
    return load_from(default_path())
