"""``--shard K/N``: which items one CI machine runs.

Items are dealt in a stable order (the collection order: YAML order of the overloads, then the
checks), so every shard of every machine sees the same partition. Without durations the deal is
round-robin (balanced by counts), each round starting one shard further on: a plain ``i % N``
gives every shard a single check whenever N is a multiple of the number of checks (8 checks,
``--shard K/16``: shard 0 was every other overload's ``forward`` and nothing else), so a shard
was neither a sample of the run nor of its cost. With the verdicts of a previous results file
(``--durations FILE``) it is greedy longest-first: the slowest item goes to the least-loaded shard,
ties to the lower shard; items the file does not know weigh the median of those it does. The
partition is disjoint and complete by construction, and a function of (ids, durations, N) only.
"""

from __future__ import annotations

import heapq
import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from opdb.errors import InputError


def parse_shard(text: str, option: str = "--shard") -> tuple[int, int]:
    """``"1/4"`` -> ``(1, 4)``; anything else (or K >= N) is an :class:`InputError`."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise InputError(f"{option} must be K/N with 0 <= K < N (0-based), e.g. 0/4, "
                         f"not {text!r}")
    return int(m.group(1)), int(m.group(2))


def load_durations(path: str | Path) -> dict[str, float]:
    """Test id -> ``duration_s`` from a results file (damaged lines skipped; last one wins)."""
    from conformance.store.results import read_records

    path = Path(path)
    if not path.is_file():
        raise InputError("--durations: file not found", file=str(path))
    out: dict[str, float] = {}
    try:
        for rec in read_records(path):
            if rec.get("record") != "verdict":
                continue
            d = rec.get("duration_s")
            if isinstance(d, int | float) and d >= 0:
                out[f"{rec.get('overload')}::{rec.get('check')}"] = float(d)
    except UnicodeDecodeError:
        raise InputError("--durations: not a results file (JSONL)", file=str(path)) from None
    if not out:
        raise InputError("--durations: no verdict record with a duration", file=str(path))
    return out


def assign(ids: Sequence[str], n: int, durations: Mapping[str, float] | None = None
           ) -> list[int]:
    """The shard (0..n-1) of each id, in the order given."""
    if not durations:
        return [(i + i // n) % n for i in range(len(ids))]
    known = [durations[i] for i in ids if i in durations]
    default = statistics.median(known) if known else 1.0
    # a floor keeps a file full of 0.0 s skips from piling every item onto one shard
    weights = [max(durations.get(i, default), 1e-3) for i in ids]
    order = sorted(range(len(ids)), key=lambda k: (-weights[k], k))
    loads = [(0.0, s) for s in range(n)]
    heapq.heapify(loads)
    shard = [0] * len(ids)
    for k in order:
        load, s = heapq.heappop(loads)
        shard[k] = s
        heapq.heappush(loads, (load + weights[k], s))
    return shard
