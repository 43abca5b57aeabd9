"""Which devices are lazy: their results are computed only when read (XLA's lazy tensors).

A module of its own so that bringing a backend up (:func:`conformance.core.backends.bring_up`)
does not import the call machinery (:mod:`conformance.core.call`, NumPy's random module: 0.2 s
of ``conformance coverage``, which calls nothing).
"""

from __future__ import annotations

from collections.abc import Callable

#: Device types whose results are computed only when read (lazy tensors: XLA), each with its
#: step barrier where its backend names one (``Backend.step``: ``torch_xla.sync``), else
#: ``None``: the bring-up of a backend whose record says ``lazy`` puts its device here, any
#: other's takes it out (:func:`conformance.core.backends.bring_up`);
#: :func:`conformance.core.call.settle` reads it. The barrier is called after every call on the
#: device is read back. Without it a lazy backend keeps one graph open across calls: torch_xla
#: chains its RNG seed through every random op since the last step, so each call of ``normal``
#: or ``bernoulli`` compiled a new graph (1-2 s each on the CPU, a random-op item 5 minutes) and
#: the compilation cache grew without bound.
LAZY_DEVICES: dict[str, Callable[[], object] | None] = {}


def step(device: str) -> None:
    """Close ``device``'s graph with its step barrier, if it has one (:data:`LAZY_DEVICES`).
    A barrier that raises is computing another tensor's graph, one an earlier call left failed
    and something still holds (an in-place call's argument in a kept error's frames): never
    this call's error, whose results were read back already. The next call's step tries again."""
    barrier = LAZY_DEVICES.get(device)
    if barrier is None:
        return
    try:
        barrier()
    except Exception:  # noqa: BLE001, S110 - see above: not this call's error
        pass


__all__ = ["LAZY_DEVICES", "step"]
