"""pytest plugin (entry point ``pytest11: conformance``). Inactive unless ``--backend`` is given."""

from __future__ import annotations
