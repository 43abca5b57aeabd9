"""A session runs torch on one intra-op thread (its parallelism is its worker processes) and puts
the count back (docs/decisions.md#engine-speed)."""

from __future__ import annotations

import torch

from conformance.pytest_plugin.hooks import one_intra_op_thread


def test_one_intra_op_thread_returns_the_count_to_put_back():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert one_intra_op_thread() == 2
        assert torch.get_num_threads() == 1
        assert one_intra_op_thread() is None  # one already: nothing to put back
    finally:
        torch.set_num_threads(before)
