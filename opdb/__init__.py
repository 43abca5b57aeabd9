"""opdb: the op database — native_functions.yaml, derivatives.yaml, dispatcher queries, per-op data.

Nothing here executes ops or imports the engine (``conformance``).
"""

from __future__ import annotations

from opdb.errors import InputError

__all__ = ["InputError"]
