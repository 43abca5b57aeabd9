"""The checks, one module each (forward, promotion, broadcast, dtypes, autograd, out, inplace,
noncontiguous), the :class:`~conformance.checks.check.Check` record, and :mod:`.registry`, which
alone imports them all. May import repro, compare, inputs and core; never the engine.

:data:`DEFAULT_CHECKS` lives here, names only, so that a command's ``--help`` can say them
without importing a check (each imports torch).
"""

#: The checks a run makes when ``--checks`` names none (each a key of ``registry.CHECKS``).
#: ``distribution`` and ``invalid`` (issue 26) are not among them yet: no full run has measured
#: their time, nor the reference backend's fails they bring (cosmetic exception types, ~50
#: extrapolated from one shard); issue 27 makes every check the default within its budget.
DEFAULT_CHECKS = ("forward", "promotion", "broadcast", "dtypes")
