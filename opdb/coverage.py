"""Static coverage of one backend: what the dispatcher serves for its key, which families lack
variants, and which forwards need backward ops the backend lacks.

Produces the "Static coverage JSON" of docs/ARCHITECTURE.md (the engine's reports read it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opdb.db import OpDB
from opdb.decompositions import Decomposition, lacking, summarize
from opdb.dispatch import STATUSES, Status, classify, fallback_origin

#: Forward statuses whose autograd goes through a derivatives.yaml formula. A
#: composite_implicit forward is differentiated through the ops it decomposes into instead.
_FORMULA_STATUSES = frozenset({Status.native, Status.composite_explicit, Status.fallback})


def missing_variants(db: OpDB, statuses: Mapping[str, Status]) -> list[dict[str, Any]]:
    """Families with some overloads available and some missing (``add.Tensor`` present,
    ``add_.Tensor`` missing).

    Families with nothing available are not listed: the backend does not have the op at all,
    which the per-overload list already says. Nor are families whose only available overloads
    are autogen'd ones served by a CompositeExplicitAutograd kernel: torchgen generates those
    kernels (``foo.out``) as calls of the family's functional or in-place op, so they only
    work where that op does."""
    rows = []
    for family, ovs in db.families.items():
        present = [ov.name for ov in ovs if statuses[ov.name].available]
        missing = [ov.name for ov in ovs if not statuses[ov.name].available]
        own = any(
            statuses[ov.name].available
            and not (ov.autogen and statuses[ov.name] is Status.composite_explicit)
            for ov in ovs
        )
        if own and missing:
            rows.append({"family": family, "present": present, "missing": missing})
    return rows


def missing_backward(db: OpDB, statuses: Mapping[str, Status]) -> list[dict[str, Any]]:
    """Forwards the backend serves through a kernel of its own or an explicit composite (so
    autograd uses their derivatives.yaml formula) whose formula calls a base op the backend has
    no overload of. ``missing`` lists the overloads of each such base that the formula may call."""
    rows = []
    for ov in db.overloads:
        if statuses[ov.name] not in _FORMULA_STATUSES:
            continue
        d = db.derivatives.get(ov.name)
        if d is None or not d.differentiable:
            continue
        by_base: dict[str, list[str]] = {}
        for name in d.backward_ops:
            by_base.setdefault(db[name].base, []).append(name)
        lacking: list[str] = []
        for _base, names in sorted(by_base.items()):
            if not any(statuses[n].available for n in names):
                lacking.extend(sorted(names))
        if lacking:
            rows.append({"forward": ov.name, "missing": lacking})
    return rows


def decomposition_section(decomps: Mapping[str, Decomposition], statuses: Mapping[str, Status],
                          *, compile_backend: str, table: str) -> dict[str, Any]:
    """The coverage JSON's ``decompositions``: per decomposed overload the ops its traced graph
    calls and those the backend lacks (:mod:`opdb.decompositions`), with counts."""
    rows = lacking(decomps.values(), statuses)
    return {"compile_backend": compile_backend, "table": table, "summary": summarize(rows),
            "rows": rows}


def static_coverage(db: OpDB, *, backend: str, dispatch_key: str,
                    decompositions: Mapping[str, Decomposition] | None = None,
                    compile_backend: str = "aot_eager", table: str = "none") -> dict[str, Any]:
    """The static coverage JSON object for one backend (see docs/ARCHITECTURE.md);
    ``decompositions`` (traced for ``compile_backend``'s ``table``) adds its section."""
    import torch

    statuses = classify(dispatch_key, [ov.name for ov in db.overloads])
    summary = {s.value: 0 for s in STATUSES}
    for status in statuses.values():
        summary[status.value] += 1
    probe = next((n for n, s in statuses.items() if s is Status.fallback), None)
    cov = {
        "backend": backend,
        "dispatch_key": dispatch_key,
        "torch_version": torch.__version__,
        "native_functions": str(db.native_functions_path),
        "derivatives": str(db.derivatives_path) if db.derivatives_path else None,
        "fallback_origin": fallback_origin(dispatch_key, probe),
        "summary": summary,
        "overloads": [
            {
                "name": ov.name,
                "status": statuses[ov.name].value,
                "kind": ov.kind,
                "family": ov.family,
                "tags": sorted(ov.tags),
            }
            for ov in db.overloads
        ],
        "missing_variants": missing_variants(db, statuses),
        "missing_backward": missing_backward(db, statuses),
    }
    if decompositions is not None:
        cov["decompositions"] = decomposition_section(
            decompositions, statuses, compile_backend=compile_backend, table=table)
    return cov
