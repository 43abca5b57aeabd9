"""The checks, one module each (forward, promotion, broadcast, dtypes, autograd, out, inplace,
noncontiguous), the :class:`~conformance.checks.check.Check` record, and :mod:`.registry`, which
alone imports them all. May import repro, compare, inputs and core; never the engine.

:data:`DEFAULT_CHECKS` lives here, names only, so that a command's ``--help`` can say them
without importing a check (each imports torch).
"""

#: The checks a run makes when ``--checks`` names none (each a key of ``registry.CHECKS``): the
#: eight that compare a backend with CPU op by op, so that the main job gives a gradient, out=,
#: in-place and layout verdict for every overload (issue 27; their cost and the run's time are
#: in docs/decisions.md#all-checks-default). ``distribution`` and ``invalid`` (issue 26) and
#: ``compile`` (issue 29) run when named: no full run has measured their time within the
#: budget, nor the reference backend's fails they bring.
DEFAULT_CHECKS = ("forward", "promotion", "broadcast", "dtypes", "autograd", "inplace",
                  "noncontiguous", "out")
