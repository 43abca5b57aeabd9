"""The ``mlu`` device: PrivateUse1 renamed, the ``torch.mlu`` module, memory figures and the RNG.

This is the only module that touches torch's private Python-backend API
(``torch.utils.backend_registration._setup_privateuseone_for_python_backend``). :func:`setup` runs it
once per process, however often it is called or this module imported.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import cast

import numpy as np
import torch

DEVICE_NAME = "mlu"
_DEVICE_DESCRIPTION = "opconform NumPy reference device"

_lock = threading.Lock()
_done = False

# ---------------------------------------------------------------------------------------------
# Memory accounting: every NumPy buffer that backs an mlu storage is registered here; a weakref
# finalizer gives its bytes back when the buffer dies.
# ---------------------------------------------------------------------------------------------
_allocated = 0
_peak = 0
#: id(root ndarray) -> weakref to it; lets ``_tensor.from_numpy`` tell device memory from a temp.
_live: dict[int, weakref.ReferenceType[np.ndarray]] = {}


def _released(key: int, nbytes: int) -> Callable[[object], None]:
    def callback(_ref: object) -> None:
        global _allocated
        _allocated -= nbytes
        _live.pop(key, None)

    return callback


def track(root: np.ndarray) -> None:
    """Count ``root`` (a buffer that now backs an mlu storage) until it is garbage collected."""
    global _allocated, _peak
    key = id(root)
    ref = _live.get(key)
    if ref is not None and ref() is root:
        return
    nbytes = int(root.nbytes)
    # A weakref callback (cheaper than weakref.finalize) gives the bytes back.
    _live[key] = weakref.ref(root, _released(key, nbytes))
    _allocated += nbytes
    if _allocated > _peak:
        _peak = _allocated


def is_device_buffer(root: np.ndarray) -> bool:
    ref = _live.get(id(root))
    return ref is not None and ref() is root


# ---------------------------------------------------------------------------------------------
# Random numbers: one NumPy generator per process (one device), seeded by manual_seed.
# torch.manual_seed(s) also reaches it through torch.mlu.manual_seed_all.
# ---------------------------------------------------------------------------------------------
_initial_seed = 67280421310721
_rng = np.random.Generator(np.random.PCG64(_initial_seed))


def generator() -> np.random.Generator:
    """The NumPy generator all random kernels draw from."""
    return _rng


def _check_device(device: object) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        index = device
    else:
        dev = torch.device(cast("str | torch.device", device))
        if dev.type != DEVICE_NAME:
            raise ValueError(f"Expected a {DEVICE_NAME} device, but got: {dev}")
        index = 0 if dev.index is None else dev.index
    if index not in (0, -1):
        raise RuntimeError(f"Invalid device index {index}: the {DEVICE_NAME} backend has 1 device")
    return 0


def _build_module() -> types.ModuleType:
    mod = types.ModuleType(f"torch.{DEVICE_NAME}", "The opconform NumPy reference device.")

    def is_available() -> bool:
        """The reference device is always available."""
        return True

    def is_initialized() -> bool:
        return True

    def _is_in_bad_fork() -> bool:
        return False

    def device_count() -> int:
        """One device: ``mlu:0``."""
        return 1

    def current_device() -> int:
        return 0

    def set_device(device: object) -> None:
        """Only device 0 exists; anything else raises like CUDA does for a bad ordinal."""
        _check_device(device)

    def synchronize(device: object = None) -> None:
        """Kernels run eagerly on the host; nothing to wait for."""
        _check_device(device)

    def manual_seed(seed: int) -> None:
        """Seed the generator behind ``rand``/``randn``/``uniform_``/``normal_``/``bernoulli_``..."""
        global _rng, _initial_seed
        _initial_seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        _rng = np.random.Generator(np.random.PCG64(_initial_seed))

    def manual_seed_all(seed: int) -> None:
        manual_seed(seed)

    def seed() -> None:
        # a fresh SeedSequence draws its entropy as one int (never None or a sequence)
        manual_seed(int(cast(int, np.random.SeedSequence().entropy)) & 0xFFFF_FFFF_FFFF_FFFF)

    def seed_all() -> None:
        seed()

    def initial_seed() -> int:
        return _initial_seed

    def get_device_name(device: object = None) -> str:
        _check_device(device)
        return _DEVICE_DESCRIPTION

    def get_device_capability(device: object = None) -> tuple[int, int]:
        _check_device(device)
        return (0, 0)

    def memory_allocated(device: object = None) -> int:
        """Bytes held by live mlu storages (their NumPy buffers)."""
        _check_device(device)
        return _allocated

    def max_memory_allocated(device: object = None) -> int:
        """Peak of :func:`memory_allocated` since start or :func:`reset_peak_memory_stats`."""
        _check_device(device)
        return _peak

    def reset_peak_memory_stats(device: object = None) -> None:
        global _peak
        _check_device(device)
        _peak = _allocated

    def empty_cache() -> None:
        """Buffers are freed when their last tensor dies; nothing is cached."""

    for fn in (
        is_available, is_initialized, _is_in_bad_fork, device_count, current_device, set_device,
        synchronize, manual_seed, manual_seed_all, seed, seed_all, initial_seed, get_device_name,
        get_device_capability, memory_allocated, max_memory_allocated, reset_peak_memory_stats,
        empty_cache,
    ):
        fn.__module__ = mod.__name__
        setattr(mod, fn.__name__, fn)
    return mod


def setup() -> types.ModuleType:
    """Bring up the ``mlu`` device once per process and return ``torch.mlu``."""
    global _done
    with _lock:
        if _done:
            return getattr(torch, DEVICE_NAME)  # type: ignore[no-any-return]
        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", DEVICE_NAME):
            raise RuntimeError(
                f"PrivateUse1 is already taken by backend {current!r}; "
                f"the {DEVICE_NAME} reference backend cannot be brought up in this process"
            )
        module = _build_module()
        if current == DEVICE_NAME and hasattr(torch, DEVICE_NAME):
            # Someone (an earlier copy of this module, e.g. after importlib.reload) did it already.
            _done = True
            return getattr(torch, DEVICE_NAME)  # type: ignore[no-any-return]
        from torch.utils.backend_registration import (
            _setup_privateuseone_for_python_backend,
        )

        _setup_privateuseone_for_python_backend(DEVICE_NAME, backend_module=module)
        sys.modules[module.__name__] = module
        _route_storage_copies_through_tensors()
        atexit.register(drain_autograd_thread)
        _done = True
        return module


# ---------------------------------------------------------------------------------------------
# Interpreter exit: let autograd's mlu thread finish with its last backward first.
# ---------------------------------------------------------------------------------------------
_DRAIN_TIMEOUT_S = 10.0


def _autograd_thread_started() -> bool:
    """Whether autograd's device thread (``pt_autograd_0``) runs in this process; True where
    threads cannot be listed (anything but Linux)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith("pt_autograd"):
                    return True
        except OSError:
            continue
    return False


def drain_autograd_thread(timeout: float = _DRAIN_TIMEOUT_S) -> bool:
    """Wait until autograd's mlu device thread has dropped every finished backward (atexit).

    Why: backward through mlu tensors runs on autograd's device thread ``pt_autograd_0`` (CPU
    work runs on the caller's thread). That thread drops the last reference to a finished
    ``GraphTask`` *after* ``backward()`` has returned in the caller; the task's captured
    ``at::ThreadLocalState`` holds Python objects (``c10::SafePyObject``), whose release takes
    the GIL. When the script ends right after a backward, that GIL request can come after the
    interpreter started finalizing; CPython then ends the thread with ``pthread_exit``, whose
    forced unwind through the engine's ``noexcept`` frames calls ``std::terminate``:
    "terminate called without an active exception", SIGABRT, exit 134.

    How: one more backward whose gradient lives on mlu (so it queues on the same thread, after
    everything before it) with a saved-tensors hook installed: the task's ThreadLocalState
    holds the hook functions, so they die exactly when that thread drops this last task. Wait
    for that (releasing the GIL). Returns False if it did not happen within ``timeout``.
    """
    if not _autograd_thread_started():
        return True
    dropped = threading.Event()

    def pack(t: torch.Tensor) -> torch.Tensor:
        return t

    def unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    weakref.finalize(pack, dropped.set)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            x = torch.zeros(1, device=DEVICE_NAME, requires_grad=True)
            x.clone().backward(torch.zeros(1, device=DEVICE_NAME))
    except Exception:  # a backend brought up without clone/zeros: nothing to wait for then
        pass
    del pack, unpack
    return dropped.wait(timeout)


def _route_storage_copies_through_tensors() -> None:
    """Make ``copy.deepcopy`` and ``torch.save``/pickle of mlu tensors take torch's own path for
    storage-less Python backends.

    An mlu tensor's C++ storage holds no data (its bytes live in a NumPy buffer), so torch's
    generic storage copy (``UntypedStorage.clone``/``.cpu()``, used by ``Tensor.__deepcopy__``
    and ``Tensor.__reduce_ex__``) would dereference a null pointer. Both methods already have a
    branch for PrivateUse1 tensors "without storage" (clone / round trip through CPU), selected
    by ``torch._C._has_storage``; answering False for mlu tensors selects it.
    """
    original = torch._C._has_storage
    if getattr(original, "_opconform_mlu", False):
        return

    def _has_storage(x: torch.Tensor) -> bool:  # parameter named as in torch._C's stub
        if x.device.type == DEVICE_NAME:
            return False
        return bool(original(x))

    _has_storage._opconform_mlu = True  # type: ignore[attr-defined]
    torch._C._has_storage = _has_storage
