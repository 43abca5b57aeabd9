"""Expected failures: ``conformance/data/expected_failures/<backend>.yaml``, known failures with
the reason a maintainer needs; and the harness's own, ``opdb/data/cpu_quirks.yaml``: failures
that come from CPU or ATen rather than from the backend, read for every backend after its file
(:func:`load_for_backend`).

Input hints and tolerances are per-op data of the op database: :mod:`opdb.opdata`. Every entry is
read key by key; an unknown key, a wrong type or a malformed id is an
:class:`~opdb.errors.InputError` naming the file and line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from opdb.errors import InputError
from opdb.opdata import LINE, read_yaml, take

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


#: The packaged expected-failure files, one per backend name.
EXPECTED_DIR: Traversable = resources.files("conformance") / "data" / "expected_failures"

#: Failures every backend but CPU meets, whatever its kernels: CPU kernels that break their own
#: contract, ATen composites that differ from CPU's kernel, CPU-only host code. Per-op knowledge
#: of the harness (data of the op database), so it lives beside the hints and tolerances.
CPU_QUIRKS: Traversable = resources.files("opdb") / "data" / "cpu_quirks.yaml"


@dataclass(frozen=True)
class Expectation:
    """One id pattern of an expected-failure entry (``add.Tensor::promotion``; ``*`` globs allowed).

    An entry listing several ids (``ids: [digamma::forward, digamma.out::forward]``, or a glob
    for a family sharing the cause) becomes one record per id, sharing reason and location.
    ``category`` and ``message`` (a regular expression searched in the failure message) narrow
    the entry to one failure fingerprint; without them it covers every failure of the item.
    """

    id: str
    reason: str
    file: str
    line: int | None
    category: str | None = None
    message: re.Pattern[str] | None = None

    @property
    def whole_item(self) -> bool:
        """True when the entry covers every failure of the matched items (no fingerprint)."""
        return self.category is None and self.message is None

    def matches(self, test_id: str) -> bool:
        return fnmatch.fnmatchcase(test_id, self.id)

    def matches_failure(self, test_id: str, category: str | None, message: str) -> bool:
        """Whether this entry explains a failure of ``test_id`` with this category and message."""
        if not self.matches(test_id):
            return False
        if self.category is not None and category != self.category:
            return False
        return self.message is None or self.message.search(message) is not None


_GLOB = "*?["


class _Index(NamedTuple):
    """:attr:`Expectations._index`: entry positions by exact id; glob entries whose overload
    part is literal (``addr::*``, most globs) by that overload; the other globs, split into
    those starting with a wildcard (``*::inplace``: tried on every item) and the rest
    (``conv2d*::forward``), tried only when ``screen``, one pattern matching what any of them
    matches, matches (most items match none of them)."""

    exact: dict[str, tuple[int, ...]]
    by_overload: dict[str, tuple[tuple[int, re.Pattern[str]], ...]]
    screened: tuple[tuple[int, re.Pattern[str]], ...]
    screen: re.Pattern[str] | None
    open: tuple[tuple[int, re.Pattern[str]], ...]


@dataclass(frozen=True)
class Expectations:
    entries: tuple[Expectation, ...] = ()

    @cached_property
    def _index(self) -> _Index:
        """Where each entry is looked up: a run asks for every one of ~25,000 items in each
        worker, and a scan of every glob per item (3.2 M regex matches) cost each worker start
        ~1.5 CPU-s at collection."""
        exact: dict[str, list[int]] = {}
        by_overload: dict[str, list[tuple[int, re.Pattern[str]]]] = {}
        screened: list[tuple[int, re.Pattern[str]]] = []
        open_: list[tuple[int, re.Pattern[str]]] = []
        for i, e in enumerate(self.entries):
            if not any(c in e.id for c in _GLOB):
                exact.setdefault(e.id, []).append(i)
                continue
            rx = re.compile(fnmatch.translate(e.id))
            overload, sep, _ = e.id.partition("::")
            if sep and not any(c in overload for c in _GLOB):
                by_overload.setdefault(overload, []).append((i, rx))
            elif e.id[0] in _GLOB:
                open_.append((i, rx))
            else:
                screened.append((i, rx))
        screen = (re.compile("|".join(f"(?:{rx.pattern})" for _, rx in screened))
                  if screened else None)
        return _Index({k: tuple(v) for k, v in exact.items()},
                      {k: tuple(v) for k, v in by_overload.items()},
                      tuple(screened), screen, tuple(open_))

    def _matching(self, test_id: str) -> Iterator[Expectation]:
        """The entries whose id pattern matches ``test_id``, in file order."""
        ix = self._index
        globs = ix.by_overload.get(test_id.partition("::")[0], ()) + ix.open
        if ix.screen is not None and ix.screen.match(test_id):
            globs += ix.screened
        hits = sorted((*ix.exact.get(test_id, ()), *(i for i, rx in globs if rx.match(test_id))))
        return (self.entries[i] for i in hits)

    def for_item(self, test_id: str) -> Expectation | None:
        """The first entry covering the whole item (no fingerprint): its fails are expected, and
        a pass while it stands means the entry is stale."""
        return next((e for e in self._matching(test_id) if e.whole_item), None)

    def for_failure(self, test_id: str, category: str | None, message: str
                    ) -> Expectation | None:
        """The first entry explaining one failure (whole-item entries explain every failure)."""
        return next((e for e in self._matching(test_id)
                     if e.matches_failure(test_id, category, message)), None)

    def reason_for(self, test_id: str, category: str | None = None,
                   message: str | None = None) -> str | None:
        """The reason of :meth:`for_failure` when a failure is given (a category or message),
        else of :meth:`for_item`."""
        if category is None and message is None:
            hit = self.for_item(test_id)
        else:
            hit = self.for_failure(test_id, category, message or "")
        return hit.reason if hit else None

    def matcher(self, test_id: str) -> str | Callable[[str, str], str | None] | None:
        """What the engine's ``run_check(expected=...)`` takes for item ``test_id``: a whole-item
        entry's reason (every failure expected), else a ``(category, message) -> reason | None``
        matcher that explains each distinct failure by the entries' fingerprints."""
        whole = self.for_item(test_id)
        if whole is not None:
            return whole.reason

        def by_fingerprint(category: str, message: str) -> str | None:
            return self.reason_for(test_id, category, message)

        return by_fingerprint

    def unmatched(self, test_ids: Iterable[str]) -> list[Expectation]:
        """Id patterns that name no item among ``test_ids`` (each with its file and line)."""
        ids = set(test_ids)
        ix = self._index
        named = {i for key, hits in ix.exact.items() if key in ids for i in hits}
        by_ov: dict[str, list[str]] = {}
        for t in ids:
            by_ov.setdefault(t.partition("::")[0], []).append(t)
        named |= {i for ov, hits in ix.by_overload.items() for i, rx in hits
                  if any(rx.match(t) for t in by_ov.get(ov, ()))}
        named |= {i for i, rx in ix.open if any(rx.match(t) for t in ids)}
        some = [t for t in ids if ix.screen is not None and ix.screen.match(t)]
        named |= {i for i, rx in ix.screened if any(rx.match(t) for t in some)}
        return [e for i, e in enumerate(self.entries) if i not in named]


_ID = re.compile(r"^[\w.*?\[\]-]+::[\w*?\[\]]+$")


_KEYS = {"id", "ids", "reason", "category", "message"}


def expected_failures_path(backend_name: str) -> Traversable:
    """The packaged expected-failures file for a backend name (it may not exist)."""
    safe = re.sub(r"[^\w.-]+", "_", backend_name)
    return EXPECTED_DIR / f"{safe}.yaml"


def _categories() -> frozenset[str]:
    from opdb.outcomes import FAIL_CATEGORIES, LEGACY_ERROR_MISMATCH

    return frozenset(FAIL_CATEGORIES) | {LEGACY_ERROR_MISMATCH}


def load_for_backend(path: str | Path | Traversable | None) -> Expectations:
    """A run's expected failures: the backend's file (``path``, as :func:`load_expectations`),
    then :data:`CPU_QUIRKS`, which applies to every backend (an emptied backend file still
    explains what CPU or ATen cause). The backend's own entry, first, wins for its reason."""
    own = load_expectations(path)
    return Expectations(own.entries + load_expectations(CPU_QUIRKS).entries)


def load_expectations(path: str | Path | Traversable | None) -> Expectations:
    """Expected failures from ``path`` (a missing default file means none).

    Each entry: ``id`` (one test id) or ``ids`` (a list), ``*`` globs allowed; ``reason`` (what
    is wrong and why, for a maintainer); optional ``category`` and ``message`` (a regular
    expression) to match one failure fingerprint. Format: ``conformance/data/expected_failures/
    README.md``.
    """
    if path is None:
        return Expectations()
    src = Path(path) if isinstance(path, str) else path
    if not src.is_file():
        return Expectations()
    file = str(src)
    data = read_yaml(src) or []
    if not isinstance(data, list):
        raise InputError("expected a list of {ids, reason} entries", file=file, line=1)
    entries: list[Expectation] = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise InputError("each entry must be a mapping with 'ids' and 'reason'", file=file)
        take(entry, _KEYS, file, "expected failure")
        line = entry.get(LINE)
        if ("id" in entry) == ("ids" in entry):
            raise InputError("an expected failure needs exactly one of 'id' or 'ids'", file=file,
                             line=line)
        ids = [entry["id"]] if "id" in entry else entry["ids"]
        if not isinstance(ids, list) or not ids:
            raise InputError("'ids' must be a non-empty list of test ids", file=file, line=line)
        for test_id in ids:
            if not isinstance(test_id, str) or not _ID.match(test_id):
                raise InputError(f"an id must look like 'add.Tensor::promotion' (globs allowed), "
                                 f"not {test_id!r}", file=file, line=line)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"expected failure {ids[0]!r} needs a 'reason'", file=file,
                             line=line)
        category = entry.get("category")
        if category is not None and category not in _categories():
            raise InputError(f"unknown category {category!r} (known: "
                             f"{', '.join(sorted(_categories()))})", file=file, line=line)
        message = entry.get("message")
        pattern = None
        if message is not None:
            if not isinstance(message, str) or not message:
                raise InputError("'message' must be a regular expression", file=file, line=line)
            try:
                pattern = re.compile(message)
            except re.error as exc:
                raise InputError(f"'message' is not a valid regular expression: {exc}",
                                 file=file, line=line) from None
        text = " ".join(reason.split())
        entries.extend(Expectation(i, text, file, line, category, pattern) for i in ids)
    return Expectations(tuple(entries))
