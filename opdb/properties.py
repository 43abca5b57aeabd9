"""Backend properties: what a backend may declare it does on purpose where CPU does otherwise
(flush subnormals, TF32 matrix products, narrow accumulation), read from
``opdb/data/backend_properties.yaml``. The engine honours a declared property in its value
comparison (``conformance.compare.properties``); the report states the declared ones at its top.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType

from opdb.dtypes import DTYPE_NAMES
from opdb.errors import InputError
from opdb.opdata import LINE, read_yaml, take

PROPERTIES_FILE = resources.files("opdb") / "data" / "backend_properties.yaml"

#: How a property is honoured: ``flush`` (CPU's answer with subnormal inputs and results
#: flushed to zero), ``tf32`` (CPU's answer with float32 inputs rounded to TF32's 10 mantissa
#: bits), ``tolerance`` (CPU's answer, with ``rtol`` times the result's largest magnitude).
HONOURED = ("flush", "tf32", "tolerance")

_KEYS = ("summary", "honoured", "dtypes", "ops", "rtol")


@dataclass(frozen=True)
class BackendProperty:
    """One declarable property: its ``name`` (what ``--assume`` takes), a one-line ``summary``,
    how the comparison ``honoured`` it, the result ``dtypes`` and ops (``ops``: globs over an
    overload's base name) it concerns, and ``rtol`` per dtype for ``tolerance`` honouring."""

    name: str
    summary: str
    honoured: str
    dtypes: frozenset[str]
    ops: tuple[str, ...]
    rtol: Mapping[str, float]
    line: int | None = None

    def concerns(self, base: str, dtype: str) -> bool:
        """Whether a result of dtype ``dtype`` of an overload named ``base`` (no overload
        suffix) may show this property."""
        return dtype in self.dtypes and any(fnmatch.fnmatchcase(base, p) for p in self.ops)


def _parse(name: str, entry: object, file: str) -> BackendProperty:
    if not isinstance(entry, Mapping):
        raise InputError(f"property {name!r} must be a mapping", file=file)
    line = entry.get(LINE)
    take(entry, _KEYS, file, f"property {name!r}")
    if entry.get("honoured") not in HONOURED:
        raise InputError(f"property {name!r}: 'honoured' must be one of {', '.join(HONOURED)}",
                         file=file, line=line)
    dtypes = entry.get("dtypes") or []
    unknown = [d for d in dtypes if d not in DTYPE_NAMES]
    if unknown or not dtypes:
        raise InputError(f"property {name!r}: 'dtypes' must name dtypes of {DTYPE_NAMES}",
                         file=file, line=line)
    rtol = {k: float(v) for k, v in (entry.get("rtol") or {}).items() if k != LINE}
    if (entry["honoured"] == "tolerance") != bool(rtol):
        raise InputError(f"property {name!r}: 'rtol' (per dtype) goes with honoured: tolerance",
                         file=file, line=line)
    return BackendProperty(name=name, summary=str(entry["summary"]).strip(),
                           honoured=entry["honoured"], dtypes=frozenset(dtypes),
                           ops=tuple(str(p) for p in entry.get("ops") or ["*"]),
                           rtol=MappingProxyType(rtol), line=line)


@cache
def properties() -> Mapping[str, BackendProperty]:
    """Every declarable property by name (the packaged data file, read once)."""
    file = str(PROPERTIES_FILE)
    data = read_yaml(PROPERTIES_FILE) or {}
    return MappingProxyType({name: _parse(name, entry, file)
                             for name, entry in data.items() if name != LINE})


def parse_assumes(text: str | None, *, option: str = "--assume") -> frozenset[str]:
    """``"ftz,tf32"`` -> the property names; an unknown one is an :class:`InputError` naming
    ``option`` and the vocabulary."""
    if not text:
        return frozenset()
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    known = properties()
    for name in sorted(names):
        if name not in known:
            raise InputError(f"{option}: unknown backend property {name!r} (known: "
                             f"{', '.join(known)})")
    return names
