"""Shared fixtures for the harness's own tests."""

from __future__ import annotations

import torch

pytest_plugins = ["pytester"]

# pytester's in-process runs restore sys.modules afterwards. Torch modules that a conformance
# run imports lazily and that register a TORCH_LIBRARY namespace (torch.distributed.tensor ->
# c10d_functional) would then be imported a second time by the next test in the same worker,
# and torch refuses the second registration. Importing them here puts them in the snapshot.
if torch.distributed.is_available():
    import torch.distributed.tensor  # noqa: F401

# The harness's own Hypothesis tests draw as the engine does: a function of their seed alone.
# Hypothesis otherwise mixes in constants from the source of every module loaded so far, which
# differ between xdist workers: a derandomized test then drew another example in one worker
# (test_refills' odd-refill test failed once under -n 2, on a draw it never made alone).
from conformance.engine.hypothesis_hooks import no_local_constants  # noqa: E402

no_local_constants()
