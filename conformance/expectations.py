"""Expected failures: ``conformance/data/expected_failures/<backend>.yaml``, known failures with
the reason a maintainer needs.

Input hints and tolerances are per-op data of the op database: :mod:`opdb.opdata`. Every entry is
read key by key; an unknown key, a wrong type or a malformed id is an
:class:`~opdb.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from opdb.errors import InputError
from opdb.opdata import LINE, read_yaml, take

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: The packaged expected-failure files, one per backend name.
EXPECTED_DIR: Traversable = resources.files("conformance") / "data" / "expected_failures"


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


def expected_failures_path(backend_name: str) -> Traversable:
    """The packaged expected-failures file for a backend name (it may not exist)."""
    safe = re.sub(r"[^\w.-]+", "_", backend_name)
    return EXPECTED_DIR / f"{safe}.yaml"


def load_expectations(path: str | Path | Traversable | None) -> Expectations:
    """Expected failures from ``path`` (a missing default file means none)."""
    if path is None:
        return Expectations()
    src = Path(path) if isinstance(path, str) else path
    if not src.is_file():
        return Expectations()
    file = str(src)
    data = read_yaml(src) or []
    if not isinstance(data, list):
        raise InputError("expected a list of {id, reason} entries", file=file, line=1)
    entries = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise InputError("each entry must be a mapping with 'id' and 'reason'", file=file)
        take(entry, {"id", "reason"}, file, "expected failure")
        line = entry.get(LINE)
        test_id = entry.get("id")
        if not isinstance(test_id, str) or not _ID.match(test_id):
            raise InputError(f"'id' must look like 'add.Tensor::promotion', not {test_id!r}",
                             file=file, line=line)
        if not entry.get("reason"):
            raise InputError(f"expected failure {test_id!r} needs a 'reason'", file=file,
                             line=line)
        entries.append(Expectation(test_id, str(entry["reason"]), file, line))
    return Expectations(tuple(entries))
