"""ATen's own composites run on CPU: the answer a backend without a kernel of its own gets.

A few overloads have two implementations in PyTorch: CPU's own kernel and a composite that
every other backend inherits when it registers none (``native_layer_norm``,
``native_group_norm``, ``addr``, ``all.dims_out``, ``_stack.out``, ``silu_backward``...). The
two are not bound to agree: the composite of ``native_group_norm`` centres before it squares
where CPU's kernel takes a one-pass variance, the composite of ``all.dims_out`` lacks CPU's
out= dtype check. A backend computing what ATen's composite computes is as right as PyTorch
is; where it differs from CPU's kernel, that is a fact about PyTorch, not a backend failure.

:func:`composite_run` runs a call on CPU with every overload that has a composite sent through
it (CompositeImplicitAutograd, else CompositeExplicitAutograd), at any depth, and says which of
them CPU overrides. Asked only where a comparison with CPU's own answer failed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from conformance.core.call import Call

#: The composite keys, in the order an overload with several is sent to them. The last is
#: a structured op's functional/in-place form over its ``.out`` kernel: what a backend that
#: registers only ``.out`` kernels runs. The trace recorder expands composites by the same
#: order (:mod:`conformance.trace.recorder`).
COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                  "CompositeExplicitAutogradNonFunctional")


@functools.cache
def composite_key(qualified: str) -> str | None:
    """The composite key of an overload (``aten::native_group_norm``, or without the
    namespace: ``aten``'s), CompositeImplicitAutograd first; ``None`` where it has none."""
    if "::" not in qualified:
        qualified = f"aten::{qualified}"
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return next((key for key in COMPOSITE_KEYS if has(qualified, key)), None)


@functools.cache
def cpu_overrides(qualified: str) -> bool:
    """Whether CPU runs a kernel of its own for an overload that has a composite."""
    return composite_key(qualified) is not None \
        and torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CPU")


@dataclass(frozen=True)
class CompositeRun:
    """CPU's answer with ATen's composites (``answer``, or ``error``: the exception it raised)
    and the overloads sent to them (empty: the answer is CPU's own)."""

    answer: Any
    error: BaseException | None
    routed: tuple[str, ...]


class Unreplayable(Exception):  # noqa: N818 - a condition, not an error of the call
    """The mode could not replay a call as CPU made it (a wrapped number): no answer."""


class _Composites(TorchDispatchMode):
    """Runs each overload that has a composite through it, itself active again inside: what a
    composite calls is seen too (CPU runs ``addr_``'s composite, which calls ``addr.out``, which
    CPU overrides). Records the overloads CPU overrides; an overload whose composite calls
    itself runs its kernel at the inner call."""

    def __init__(self) -> None:
        super().__init__()
        self.routed: list[str] = []
        self._open: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        try:
            return self._dispatch(func, args, kwargs or {})
        except RuntimeError as exc:
            # a mode receives a wrapped number (``wrapped_scalar_tensor``) as a Python number,
            # and no Python call makes one again: outside the few ops that take a number for
            # a Tensor (add, mul...), the call cannot be replayed as CPU made it
            if "Expected a value of type 'Tensor'" in str(exc):
                raise Unreplayable(str(exc).splitlines()[0]) from None
            raise

    def _dispatch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name = func.name()
        key = composite_key(name)
        if key is None or name in self._open:
            return func(*args, **kwargs)
        if cpu_overrides(name) and name not in self.routed:
            self.routed.append(name)
        self._open.add(name)
        try:
            with self:
                return func._op_dk(getattr(torch._C.DispatchKey, key), *args, **kwargs)
        finally:
            self._open.discard(name)


def composite_run(call: Call, before: Callable[[], None] | None = None) -> CompositeRun | None:
    """``call`` on CPU with ATen's composites where CPU has kernels of its own (see the module
    docstring); ``before`` runs first (the about-to-run marker: a crash here is CPU's).
    ``None`` where the call cannot be replayed under the mode (:class:`Unreplayable`)."""
    if before is not None:
        before()
    mode = _Composites()
    try:
        with mode:
            answer = call.run("cpu")
    except Unreplayable:
        return None
    except Exception as exc:  # noqa: BLE001 - the composite's refusal is an answer too
        return CompositeRun(None, exc, tuple(mode.routed))
    return CompositeRun(answer, None, tuple(mode.routed))
