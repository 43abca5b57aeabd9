"""A host-memory PrivateUse1 device for the proof backends: tensors whose bytes live in a CPU
storage, so a CPU tensor can *alias* a device tensor (same ``StorageImpl``) and every op can run on
CPU through one boxed fallback.

A device tensor is made by ``torch._C._acc.create_empty_tensor`` (no allocation); its
``UntypedStorage`` Python object carries the CPU ``UntypedStorage`` that holds its bytes in the
attribute :data:`BUF` (torch preserves a storage's Python object for as long as the C++ storage
lives, so every view finds the same bytes). Geometry is set through the Meta kernel of
``set_.source_Storage_storage_offset``, as the reference backend ``kernels`` does; this module
does not import ``kernels`` (whose import names PrivateUse1 ``mlu``).
"""

from __future__ import annotations

import types
from collections.abc import Sequence

import torch

BUF = "_proof_buf"
_create = torch._C._acc.create_empty_tensor
_META = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
_set_meta = torch.ops.aten.set_.source_Storage_storage_offset.redispatch

_state: dict[str, str] = {}


def setup(name: str) -> str:
    """Rename PrivateUse1 to ``name`` and register a minimal ``torch.<name>`` module, once per
    process. Returns the device name."""
    if _state.get("name"):
        return _state["name"]
    current = torch._C._get_privateuse1_backend_name()
    if current != "privateuseone":
        raise RuntimeError(f"PrivateUse1 is already taken by backend {current!r}")
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    _setup_privateuseone_for_python_backend(name, backend_module=_module(name))
    _route_storage_copies_through_tensors(name)
    _state["name"] = name
    return name


def device_name() -> str:
    return _state["name"]


def _module(name: str) -> types.ModuleType:
    mod = types.ModuleType(f"torch.{name}", "A proof backend: CPU kernels behind PrivateUse1.")

    def _true() -> bool:
        return True

    def _false() -> bool:
        return False

    def _zero(*_a: object) -> int:
        return 0

    def _one() -> int:
        return 1

    def _none(*_a: object) -> None:
        return None

    # Random ops run on CPU with CPU's generator, seeded by torch.manual_seed already.
    table = {"is_available": _true, "is_initialized": _true, "_is_in_bad_fork": _false,
             "device_count": _one, "current_device": _zero, "set_device": _none,
             "synchronize": _none, "manual_seed": _none, "manual_seed_all": _none,
             "seed": _none, "seed_all": _none, "initial_seed": _zero, "empty_cache": _none,
             "memory_allocated": _zero, "max_memory_allocated": _zero}
    for key, fn in table.items():
        setattr(mod, key, fn)
    return mod


def _route_storage_copies_through_tensors(name: str) -> None:
    """``copy.deepcopy``/pickle of a storage-less PrivateUse1 tensor take torch's own round trip
    through CPU when ``torch._C._has_storage`` answers False (as ``kernels._device`` does)."""
    original = torch._C._has_storage

    def _has_storage(x: torch.Tensor) -> bool:
        if x.device.type == name:
            return False
        return bool(original(x))

    torch._C._has_storage = _has_storage


def is_device(x: object) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == _state.get("name")


def buffer(t: torch.Tensor) -> torch.UntypedStorage:
    """The CPU storage behind device tensor ``t``."""
    return getattr(t.untyped_storage(), BUF)  # type: ignore[no-any-return]


def storage_buffer(st: torch.UntypedStorage) -> torch.UntypedStorage:
    return getattr(st, BUF)  # type: ignore[no-any-return]


def cpu_alias(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor over the same bytes as device tensor ``t`` (same ``StorageImpl``: a resize
    on CPU is seen by the device tensor's buffer), with ``t``'s geometry and lazy bits."""
    out = torch.empty(0, dtype=t.dtype)
    out.set_(buffer(t), t.storage_offset(), t.shape, t.stride())
    if t.is_conj():
        out = out.conj()
    if t.is_neg() and t.dtype != torch.bool:  # negating a bool is no change (CPU has no kernel)
        out = torch._neg_view(out)
    return out


def set_geometry(t: torch.Tensor, st: torch.UntypedStorage, offset: int, size: Sequence[int],
                 stride: Sequence[int]) -> torch.Tensor:
    """Point device tensor ``t`` at device storage ``st`` with this geometry."""
    _set_meta(_META, t, st, int(offset), [int(s) for s in size], [int(s) for s in stride])
    return t


def attach(cpu_storage: torch.UntypedStorage, dtype: torch.dtype, size: Sequence[int],
           stride: Sequence[int], offset: int) -> torch.Tensor:
    """A new device tensor whose bytes are ``cpu_storage`` (adopted, not copied)."""
    t = _create((0,), dtype)
    st = t.untyped_storage()
    setattr(st, BUF, cpu_storage)
    return set_geometry(t, st, offset, size, stride)


def view_of(base: torch.Tensor, size: Sequence[int], stride: Sequence[int], offset: int,
            dtype: torch.dtype) -> torch.Tensor:
    """A new device tensor viewing ``base``'s device storage (a real view)."""
    v = _create((0,), dtype)
    return set_geometry(v, base.untyped_storage(), offset, size, stride)


def adopt(cpu: torch.Tensor) -> torch.Tensor:
    """A device tensor holding CPU tensor ``cpu``'s values, geometry and lazy bits (its storage is
    adopted: ``cpu`` is a fresh result nobody else writes)."""
    bits = (cpu.is_conj(), cpu.is_neg())
    t = attach(cpu.untyped_storage(), cpu.dtype, cpu.shape, cpu.stride(),
               int(cpu.storage_offset()))
    if bits[0]:
        torch._C._set_conj(t, True)
    if bits[1]:
        torch._C._set_neg(t, True)
    return t
