"""conformance: the parity engine, its pytest plugin and the ``conformance`` CLI."""

from __future__ import annotations

__version__ = "0.1.0"
