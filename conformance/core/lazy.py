"""Which devices are lazy: their results are computed only when read (XLA's lazy tensors).

A module of its own so that bringing a backend up (:func:`conformance.core.backends.bring_up`)
does not import the call machinery (:mod:`conformance.core.call`, NumPy's random module: 0.2 s
of ``conformance coverage``, which calls nothing).
"""

from __future__ import annotations

#: Device types whose results are computed only when read (lazy tensors: XLA): the bring-up of
#: a backend whose record says ``lazy`` puts its device here, any other's takes it out
#: (:func:`conformance.core.backends.bring_up`); :func:`conformance.core.call.settle` reads it.
LAZY_DEVICES: set[str] = set()

__all__ = ["LAZY_DEVICES"]
