"""Joining shard results (``conformance run --shard K/N``) into one results file.

Records are copied as written (unknown fields and record types included), so the merged file
says exactly what the shards said. What the merge refuses and reports:

* shards of different torch versions, backends or seeds are refused (``--allow-mixed`` merges
  them anyway, and the merged header lists each shard's own header);
* *overlaps* — the same (backend, overload, check[, dtype]) in two files: the later file's record
  is kept (as every reader keeps the latest), and the overlap is reported, as a *conflict* when
  the verdicts differ;
* *holes* — shard numbers of ``K/N`` that no file covered, and items of the run's scope (opdb's
  overloads matching its ``--ops``, times its checks) that no file has a verdict for.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opdb.errors import InputError
from reports.results import ResultsWarning, read_raw

#: Header fields that must agree across shards (unless --allow-mixed).
MUST_AGREE = ("backend", "torch_version", "seed")
#: Header fields whose disagreement is reported but allowed.
SHOULD_AGREE = ("checks", "ops", "max_examples", "dispatch_key")

_SHARD = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Overlap:
    key: tuple[str, str, str, str | None]
    first: str  # file:line
    second: str
    conflict: bool  # the verdicts differ


@dataclass(frozen=True)
class Merged:
    header: dict[str, Any]
    lines: tuple[str, ...]  # the merged file's lines (header first), without newlines
    verdicts: int
    overlaps: tuple[Overlap, ...]
    missing_shards: tuple[str, ...]
    holes: tuple[tuple[str, str], ...] | None  # None: the scope could not be computed
    notes: tuple[str, ...] = field(default=())


def shard_of(header: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(K, N)`` from a header's ``shard`` field, or from ``--shard K/N`` in its ``argv``."""
    value = header.get("shard")
    if isinstance(value, (list, tuple)) and len(value) == 2:
        value = f"{value[0]}/{value[1]}"
    if not isinstance(value, str):
        argv = header.get("argv") or []
        value = None
        for i, arg in enumerate(argv):
            if arg == "--shard" and i + 1 < len(argv):
                value = str(argv[i + 1])
            elif isinstance(arg, str) and arg.startswith("--shard="):
                value = arg.split("=", 1)[1]
    m = _SHARD.fullmatch(value) if isinstance(value, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _read(path: str) -> list[tuple[int, str, dict[str, Any]]]:
    text = read_raw(path).decode("utf-8", errors="replace")
    out = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            warnings.warn(f"{path}:{lineno}: damaged record, line skipped: "
                          f"{str(exc).splitlines()[0][:80]}", ResultsWarning, stacklevel=3)
            continue
        out.append((lineno, line.strip(), obj))
    if not any(o.get("record") in ("run", "verdict") for _, _, o in out):
        raise InputError("no run or verdict record; not a results file (JSONL)?", file=path)
    return out


def merge(paths: Iterable[str | os.PathLike[str]], *, allow_mixed: bool = False,
          universe: Iterable[str] | None = None) -> Merged:
    """Merge results files. ``universe``: every overload the run could have covered (opdb's),
    for finding holes; ``None`` skips that part."""
    files = [os.fspath(p) for p in paths]
    if not files:
        raise InputError("no results file given")
    headers: list[tuple[str, int, dict[str, Any]]] = []
    records: dict[tuple[str, str, str, str | None], tuple[str, str, dict[str, Any]]] = {}
    others: dict[str, None] = {}
    overlaps: list[Overlap] = []
    for path in files:
        for lineno, line, obj in _read(path):
            kind = obj.get("record")
            if kind == "run":
                headers.append((path, lineno, obj))
            elif kind == "verdict":
                if not all(isinstance(obj.get(k), str) for k in ("overload", "check", "verdict")):
                    warnings.warn(f"{path}:{lineno}: verdict record without overload, check or "
                                  f"verdict, line skipped", ResultsWarning, stacklevel=2)
                    continue
                dtype = obj.get("dtype") if isinstance(obj.get("dtype"), str) else None
                key = (str(obj.get("backend") or ""), obj["overload"], obj["check"], dtype)
                where = f"{path}:{lineno}"
                prev = records.get(key)
                if prev is not None:
                    overlaps.append(Overlap(key, prev[0], where,
                                            prev[2].get("verdict") != obj.get("verdict")))
                records[key] = (where, line, obj)
            else:
                others.setdefault(line)
    if not headers:
        raise InputError("no run header in any file; not results of `conformance run`?",
                         file=files[0])
    notes: list[str] = []
    first_path, first_line, first = headers[0]
    for field_ in MUST_AGREE:
        for path, lineno, h in headers[1:]:
            if h.get(field_) != first.get(field_):
                msg = (f"{field_} {h.get(field_)!r} differs from {first.get(field_)!r} "
                       f"({first_path}:{first_line})")
                if not allow_mixed:
                    raise InputError(f"{msg}; pass --allow-mixed to merge anyway",
                                     file=path, line=lineno)
                notes.append(f"{path}:{lineno}: {msg} (merged: --allow-mixed)")
                break
    for field_ in SHOULD_AGREE:
        values = {json.dumps(h.get(field_), sort_keys=True) for _, _, h in headers}
        if len(values) > 1:
            notes.append(f"the shards' {field_} differ: {', '.join(sorted(values))}")

    shards = [shard_of(h) for _, _, h in headers]
    missing_shards: list[str] = []
    ns = {s[1] for s in shards if s is not None}
    if len(ns) == 1 and all(s is not None for s in shards):
        (n,) = ns
        seen = {s[0] for s in shards if s is not None}
        missing_shards = [f"{k}/{n}" for k in range(n) if k not in seen]
    elif len(ns) > 1:
        notes.append("the files come from different shard counts: "
                     + ", ".join(f"{k}/{n}" for k, n in sorted(s for s in shards if s)))

    holes: list[tuple[str, str]] | None = None
    if universe is not None:
        from reports.ops import scope

        patterns = [h.get("ops") for _, _, h in headers]
        checks: list[str] = []
        for _, _, h in headers:
            checks.extend(c for c in h.get("checks") or () if isinstance(c, str))
        covered = {(k[1], k[2]) for k in records}
        holes = [(ov, c) for ov in scope(list(universe), patterns)
                 for c in dict.fromkeys(checks) if (ov, c) not in covered]

    header = dict(first)
    header["started_at"] = min((str(h.get("started_at")) for _, _, h in headers
                                if h.get("started_at")), default=first.get("started_at"))
    header.pop("shard", None)
    header["merged_from"] = [
        {"file": p, "shard": f"{s[0]}/{s[1]}" if s else None,
         **({k: h.get(k) for k in MUST_AGREE} if allow_mixed else {})}
        for (p, _, h), s in zip(headers, shards, strict=True)]
    lines = [json.dumps(header, ensure_ascii=False, allow_nan=False, default=str),
             *others, *(line for _, line, _ in records.values())]
    return Merged(header, tuple(lines), len(records), tuple(overlaps), tuple(missing_shards),
                  tuple(holes) if holes is not None else None, tuple(notes))
