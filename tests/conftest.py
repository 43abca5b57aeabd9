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
