"""opdb/data/host_composites.yaml (issue 25, 5d): ATen composites that read host memory."""

from __future__ import annotations

from pathlib import Path

import pytest

import opdb
from opdb.errors import InputError
from opdb.hostmemory import load_host_composites


def test_the_packaged_list_names_only_composites_of_this_torch() -> None:
    """Every entry is an overload whose only kernel is ATen's composite (no backend has its
    own): the reason it crashes on device memory is ATen's code, which every backend inherits."""
    db = opdb.load()
    listed = load_host_composites(db=db)
    assert {"_sobol_engine_draw", "_sobol_engine_ff_", "_sobol_engine_scramble_",
            "_sobol_engine_initialize_state_"} <= set(listed.entries)
    for name, entry in listed.entries.items():
        keys = set(db[name].dispatch)
        assert keys and keys <= {"CompositeImplicitAutograd", "CompositeExplicitAutograd"}, \
            (name, keys)
        assert "data_ptr" in entry.reason or "accessor" in entry.reason, entry
    assert listed.get("add.Tensor") is None


@pytest.mark.parametrize(("text", "error"), [
    ("- names: [no_such_op]\n  reason: r\n", "'no_such_op' is not an overload"),
    ("- names: [_sobol_engine_draw]\n", "needs a 'reason'"),
    ("- names: [_sobol_engine_draw]\n  reason: r\n  why: x\n", "unknown key 'why'"),
    ("names: [x]\n", "expected a list"),
])
def test_a_users_file_is_checked_entry_by_entry(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "hc.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=error) as info:
        load_host_composites(path)
    assert info.value.file == str(path)
