"""``--shard K/N``: the partition is disjoint, complete, stable, and balanced by durations."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conformance.store.shards import assign, load_durations, parse_shard
from opdb.errors import InputError


def _ids(n: int) -> list[str]:
    return [f"op{i}.Tensor::{c}" for i in range(n // 3 + 1) for c in
            ("forward", "promotion", "broadcast")][:n]


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_partition_is_disjoint_complete_and_stable(n: int) -> None:
    ids = _ids(100)
    rng = random.Random(0)
    durations = {i: rng.expovariate(1.0) for i in ids[:80]}  # some items unknown
    for d in (None, durations):
        shard = assign(ids, n, d)
        assert len(shard) == len(ids) and all(0 <= s < n for s in shard)  # each id: one shard
        assert assign(ids, n, d) == shard  # same inputs, same partition
        assert assign(list(ids), n, dict(d) if d else None) == shard
        if len(ids) >= n:
            assert set(shard) == set(range(n))  # no empty shard


def test_durations_balance_the_shards() -> None:
    ids = _ids(60)
    # a few very slow items at the front, where the rotating round-robin deals them to shard 0
    durations = {i: (30.0 if k in (0, 7, 10, 13) else 0.5) for k, i in enumerate(ids)}

    def loads(shard: list[int]) -> list[float]:
        out = [0.0, 0.0, 0.0, 0.0]
        for i, s in zip(ids, shard, strict=True):
            out[s] += durations[i]
        return out

    by_count, by_time = loads(assign(ids, 4)), loads(assign(ids, 4, durations))
    ideal = sum(durations.values()) / 4
    assert max(by_count) > 1.5 * ideal
    assert max(by_time) <= ideal + max(durations.values()) / 2  # greedy longest-first bound
    assert max(by_time) < max(by_count)


def test_parse_shard_and_load_durations(tmp_path: Path) -> None:
    assert parse_shard("1/4") == (1, 4) and parse_shard(" 0 / 1 ") == (0, 1)
    for bad in ("4/4", "3/2", "1/0", "x", "", "-1/2"):
        with pytest.raises(InputError, match="K/N"):
            parse_shard(bad)
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"record": "run"},
        {"record": "verdict", "overload": "a", "check": "forward", "duration_s": 1.5},
        {"record": "verdict", "overload": "b", "check": "forward", "duration_s": "NaN"},
    ]) + "\n")
    assert load_durations(path) == {"a::forward": 1.5}
    path.write_text('{"record": "run"}\n')
    with pytest.raises(InputError, match="no verdict record"):
        load_durations(path)


@pytest.mark.parametrize(("checks", "n"), [(8, 16), (4, 16), (3, 3), (8, 8)])
def test_every_shard_gets_every_check_when_n_is_a_multiple_of_their_number(checks: int,
                                                                            n: int) -> None:
    """Dealt without durations, a shard is a sample of the whole run: every check in it, not one
    check of every n/checks-th overload (``i % n`` did that), and counts still balanced."""
    names = [f"c{k}" for k in range(checks)]
    ids = [f"op{o}.Tensor::{c}" for o in range(40 * n) for c in names]
    shard = assign(ids, n)
    for s in range(n):
        mine = [i for i, k in zip(ids, shard, strict=True) if k == s]
        assert {i.rpartition("::")[2] for i in mine} == set(names)
    counts = [shard.count(s) for s in range(n)]
    assert max(counts) - min(counts) <= 1
