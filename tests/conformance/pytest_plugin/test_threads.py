"""A session runs torch on one intra-op thread (its parallelism is its worker processes) and
makes fewer full garbage collections, and puts both settings back
(docs/decisions.md#engine-speed)."""

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


def test_fewer_full_collections_returns_the_thresholds_to_put_back():
    import gc

    from conformance.pytest_plugin.hooks import FULL_COLLECTION_EVERY, fewer_full_collections

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        assert fewer_full_collections() == (700, 10, 10)
        assert gc.get_threshold() == (700, 10, FULL_COLLECTION_EVERY)
        assert fewer_full_collections() is None  # set already: nothing to put back
    finally:
        gc.set_threshold(*before)
