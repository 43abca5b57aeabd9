"""The checks, one module each (forward, promotion, broadcast, dtypes, autograd, out, inplace,
noncontiguous), the :class:`~conformance.checks.check.Check` record, and :mod:`.registry`, which
alone imports them all. May import repro, compare, inputs and core; never the engine.
"""
