"""The checks, one module each (forward, promotion, broadcast, dtypes, autograd, out, inplace,
noncontiguous, distribution, invalid, compile), the :class:`~conformance.checks.check.Check`
record, and :mod:`.registry`, which alone imports them all. May import repro, compare, inputs and core; never the engine.

:data:`DEFAULT_CHECKS` lives here, names only, so that a command's ``--help`` can say them
without importing a check (each imports torch).
"""

#: The checks a run makes when ``--checks`` names none (each a key of ``registry.CHECKS``): the
#: eight that compare a backend with CPU op by op, so that the main job gives a gradient, out=,
#: in-place and layout verdict for every overload (issue 27), and ``distribution`` and
#: ``invalid`` (issue 26), without which a sampler that ignores its probability or a kernel that
#: skips its argument checks passes the run (their cost, ~130 s of item time, and what they
#: catch: docs/decisions.md#all-checks-default). ``compile`` (issue 29) runs when named: it
#: compiles a graph per item.
DEFAULT_CHECKS = ("forward", "promotion", "broadcast", "dtypes", "autograd", "inplace",
                  "noncontiguous", "out", "distribution", "invalid")
