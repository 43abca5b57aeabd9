"""conformance: the parity engine, its pytest plugin and the ``conformance`` CLI."""

from __future__ import annotations

__version__ = "0.1.0"

# ``pytest -p conformance`` (what ``conformance run`` passes) names the plugin's entry point when
# the package is installed; from a checkout on PYTHONPATH it imports this package, which brings
# the plugin in here.
pytest_plugins = ["conformance.pytest_plugin"]
