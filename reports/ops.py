"""What a report knows about each overload besides its verdicts: family, kind, tags, static status.

The results file carries only overload names. The rest comes, in order of preference, from the
static coverage JSON (``conformance coverage -o``), from :mod:`opdb` (imported lazily), or — when
neither is at hand — from the name itself (``add_.Scalar`` → family ``add``, kind ``inplace``).
:attr:`Annotations.source` says which one was used, and the report prints it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opdb.errors import InputError
from opdb.model import family_of, split_name

#: Static statuses, in display order (docs/ARCHITECTURE.md "Static coverage JSON").
STATUSES: tuple[str, ...] = (
    "native", "composite_implicit", "composite_explicit", "fallback", "missing",
)

KINDS: tuple[str, ...] = ("functional", "inplace", "out")


@dataclass(frozen=True)
class OverloadFacts:
    """Static facts about one overload, as far as the report knows them."""

    name: str
    family: str
    kind: str
    tags: tuple[str, ...] = ()
    status: str | None = None


def family_from_name(name: str) -> str:
    """The family of an overload by opdb's own rule (:func:`opdb.model.family_of`):
    ``add_.Tensor`` → ``add``; ``__iand__.Scalar`` → ``__and__``; ``add.out`` → ``add``."""
    return family_of(split_name(name)[0])[0]


def kind_from_name(name: str) -> str:
    """``inplace`` / ``out`` / ``functional`` from the spelling alone, for overloads that neither
    the static coverage nor opdb knows. In-place names follow :func:`opdb.model.family_of`.
    Only the schema says for sure that an overload is ``out`` (opdb's :func:`~opdb.model.kind_of`:
    ``nll_loss_backward.grad_input`` is one); from a name, an overload name that is ``out`` or
    carries an ``out`` word (``Scalar_out``, ``out_int``, ``OutTensor``) is the best guess."""
    base, overload = split_name(name)
    if family_of(base)[1]:
        return "inplace"
    words = overload.lower().split("_")
    if "out" in words or overload.startswith("Out"):
        return "out"
    return "functional"


def info_from_name(name: str) -> OverloadFacts:
    return OverloadFacts(name=name, family=family_from_name(name), kind=kind_from_name(name))


@dataclass(frozen=True)
class Annotations:
    """Per-overload facts plus where they came from.

    ``universe`` is every overload the source knows (``None`` when only the names in the results
    are known); overloads in it without a verdict are reported as *not tested*.
    """

    source: str  # "coverage" | "opdb" | "names"
    note: str
    infos: Mapping[str, OverloadFacts]
    universe: tuple[str, ...] | None
    coverage: Mapping[str, Any] | None = None
    missing_variants: tuple[dict[str, Any], ...] = field(default=())
    missing_backward: tuple[dict[str, Any], ...] = field(default=())
    #: the coverage's decomposed overloads that need ops the backend lacks (``conformance
    #: coverage --decompositions``), and under which compile backend and table (None: not asked)
    decompositions: tuple[dict[str, Any], ...] = field(default=())
    decomposition_setting: dict[str, Any] | None = None

    def info(self, name: str) -> OverloadFacts:
        got = self.infos.get(name)
        return got if got is not None else info_from_name(name)


def read_coverage(coverage: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Load and check a static coverage JSON (a path or an already-parsed mapping)."""
    if isinstance(coverage, Mapping):
        data: Any = dict(coverage)
        name = "<coverage>"
    else:
        name = os.fspath(coverage)
        try:
            with open(name, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            raise InputError("coverage file not found", file=name) from None
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON: {exc.msg}", file=name, line=exc.lineno) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read coverage file: {exc}", file=name) from None
    if not isinstance(data, dict) or not isinstance(data.get("overloads"), list):
        raise InputError("not a static coverage JSON: no 'overloads' list", file=name)
    for i, entry in enumerate(data["overloads"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError(f"overloads[{i}] has no 'name'", file=name)
    return data


def _from_coverage(data: Mapping[str, Any]) -> Annotations:
    infos: dict[str, OverloadFacts] = {}
    for entry in data["overloads"]:
        name = entry["name"]
        tags = entry.get("tags") or ()
        infos[name] = OverloadFacts(
            name=name,
            family=str(entry.get("family") or family_from_name(name)),
            kind=str(entry.get("kind") or kind_from_name(name)),
            tags=tuple(sorted(str(t) for t in tags)),
            status=str(entry["status"]) if entry.get("status") is not None else None,
        )
    mv = tuple(x for x in data.get("missing_variants") or () if isinstance(x, dict))
    mb = tuple(x for x in data.get("missing_backward") or () if isinstance(x, dict))
    dec = data.get("decompositions") if isinstance(data.get("decompositions"), dict) else None
    needing = tuple(x for x in (dec or {}).get("rows") or ()
                    if isinstance(x, dict) and x.get("missing"))
    setting = None if dec is None else {k: dec.get(k) for k in
                                        ("compile_backend", "table", "summary")}
    return Annotations(
        source="coverage",
        note=f"static coverage for {data.get('backend', '?')} ({len(infos)} overloads)",
        infos=infos,
        universe=tuple(infos),
        coverage=data,
        missing_variants=mv,
        missing_backward=mb,
        decompositions=needing,
        decomposition_setting=setting,
    )


_OPDB_CACHE: dict[str, Any] = {}


def _load_opdb() -> Any:
    if "db" not in _OPDB_CACHE:
        import opdb  # lazy: parsing native_functions.yaml takes a moment

        _OPDB_CACHE["db"] = opdb.load()
    return _OPDB_CACHE["db"]


def _from_opdb(names: Iterable[str]) -> Annotations:
    db = _load_opdb()
    infos: dict[str, OverloadFacts] = {}
    universe = tuple(ov.name for ov in db.overloads)
    for ov in db.overloads:
        infos[ov.name] = OverloadFacts(
            name=ov.name, family=str(ov.family), kind=str(ov.kind),
            tags=tuple(sorted(str(t) for t in ov.tags)),
        )
    for name in names:
        if name not in infos:
            infos[name] = info_from_name(name)
    return Annotations(
        source="opdb", note=f"opdb ({len(universe)} overloads in native_functions.yaml)",
        infos=infos, universe=universe,
    )


def annotate(
    names: Iterable[str],
    coverage: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    use_opdb: bool = True,
) -> Annotations:
    """Facts for ``names``: from ``coverage`` if given, else opdb, else the names themselves."""
    names = list(names)
    if coverage is not None:
        return _from_coverage(read_coverage(coverage))
    reason = "not asked for"
    if use_opdb:
        try:
            return _from_opdb(names)
        except Exception as exc:  # opdb is optional here: any failure degrades to names
            reason = f"unavailable: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    infos = {n: info_from_name(n) for n in names}
    return Annotations(
        source="names",
        note=f"family and kind guessed from overload names (opdb {reason}); pass --coverage "
        "for static status and tags",
        infos=infos, universe=None,
    )


def scope(
    universe: Iterable[str], patterns: Iterable[str | None], ann: Annotations | None = None
) -> list[str]:
    """Overloads of ``universe`` that a run restricted by ``--ops`` would have covered: as
    ``conformance run`` does, a regex selects an overload when it fully matches its name, its
    base name or its family. ``None`` among ``patterns`` means an unrestricted run."""
    pats = list(patterns)
    names = list(universe)
    if not pats or any(p is None for p in pats):
        return names
    compiled = []
    for p in pats:
        try:
            compiled.append(re.compile(str(p)))
        except re.error:
            return names
    out = []
    for n in names:
        fam = ann.info(n).family if ann is not None else family_from_name(n)
        keys = (n, split_name(n)[0], fam)
        if any(rx.fullmatch(k) for rx in compiled for k in keys):
            out.append(n)
    return out
