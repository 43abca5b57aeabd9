"""Backend records: what the user names on the command line, resolved to a device and dispatch key.

This is the only place that knows backend names. The engine and the static coverage see a
:class:`Backend` record and never special-case the reference backend: ``mlu`` is resolved exactly
like a vendor's ``privateuse1:MODULE`` except that its module is ours.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

from opdb.errors import InputError

#: Environment variable read by the reference backend: comma-separated overload names to leave out.
WITHOUT_ENV = "OPCONFORM_MLU_WITHOUT"


#: Environment each built-in backend is run under unless the user set the variable: errors of an
#: asynchronous device surface at the call that caused them (a sticky error pinned on its call,
#: not on whatever ran next). Set before the backend initializes; workers inherit it.
_ENV: dict[str, dict[str, str]] = {
    "cuda": {"CUDA_LAUNCH_BLOCKING": "1", "HIP_LAUNCH_BLOCKING": "1"},  # HIP: ROCm's "cuda"
}


_BUILTIN = {
    # name: (device type, dispatch key, whether its tensors hold values that can be read back,
    # whether a forked child can use the device)
    "cpu": ("cpu", "CPU", True, True),
    "meta": ("meta", "Meta", False, True),
    "cuda": ("cuda", "CUDA", True, False),
    "mps": ("mps", "MPS", True, False),
    "xpu": ("xpu", "XPU", True, False),
}


BACKEND_NAMES = (*_BUILTIN, "mlu", "privateuse1:MODULE")


@dataclass(frozen=True)
class Backend:
    """A backend under test.

    ``name`` is as the user spelled it (``mlu``, ``cuda``, ``privateuse1:torch_mlu``);
    ``device`` is the torch device type tensors are moved to; ``dispatch_key`` is the key the
    dispatcher is asked about; ``module`` is the Python module imported to bring it up, if any;
    ``without`` lists overloads deliberately left out of the reference backend;
    ``host_values`` is False for a shape-only backend (``meta``, fake tensors): its tensors
    carry sizes, strides and dtypes but no values, so the engine judges every check on
    metadata (structure, device, dtype, shape, aliasing, errors) and never reads values back.
    ``fork_safe``: a forked child of a process that used the device can use it too (host
    memory: ``cpu``, ``meta``, the reference ``mlu``; a vendor module says so with a
    module-level ``FORK_SAFE = True``); not CUDA, XPU or MPS, whose driver state a child
    cannot use. Only then may an item run in a forked child (``cpu_crashes`` in the hints).
    """

    name: str
    device: str
    dispatch_key: str
    module: str | None = None
    without: tuple[str, ...] = ()
    host_values: bool = True
    fork_safe: bool = False

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"


def _available(device: str) -> bool:
    import torch

    if device in ("cpu", "meta"):
        return True
    mod = getattr(torch, device, None)
    if device == "mps":
        return bool(torch.backends.mps.is_available())
    return bool(mod is not None and mod.is_available())


def parse_without(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(sorted({part.strip() for part in text.split(",") if part.strip()}))


def resolve(name: str, *, without: tuple[str, ...] | None = None) -> Backend:
    """Resolve a backend name, bringing the backend up (importing its module) if needed.

    Raises :class:`InputError` for an unknown or unavailable backend.
    """
    import torch

    key = name.strip()
    lower = key.lower()
    if without is None:
        without = parse_without(os.environ.get(WITHOUT_ENV))
    if without and lower != "mlu":
        raise InputError(
            f"--without applies only to the reference backend 'mlu', not {name!r}"
        )
    if lower in _BUILTIN:
        device, dispatch_key, host_values, fork_safe = _BUILTIN[lower]
        for var, value in _ENV.get(lower, {}).items():
            os.environ.setdefault(var, value)
        if not _available(device):
            raise InputError(
                f"backend {name!r} is not available in this torch build "
                f"({torch.__version__}): torch.{device} reports no device"
            )
        return Backend(name=lower, device=device, dispatch_key=dispatch_key,
                       host_values=host_values, fork_safe=fork_safe)
    if lower == "mlu":
        import kernels

        try:
            kernels.install(without=without)
        except ValueError as exc:  # an overload the reference backend does not implement
            raise InputError(f"--without / {WITHOUT_ENV}: {exc}") from None
        return Backend(
            name="mlu", device="mlu", dispatch_key="PrivateUse1", module="kernels", without=without,
            fork_safe=True,  # NumPy arrays in host memory
        )
    if lower.startswith("privateuse1:"):
        modname = key.split(":", 1)[1]
        if not modname:
            raise InputError("backend 'privateuse1:' needs a module name, e.g. privateuse1:torch_mlu")
        try:
            module = importlib.import_module(modname)
        except ImportError as exc:
            raise InputError(f"backend {name!r}: cannot import module {modname!r}: {exc}") from None
        device = torch._C._get_privateuse1_backend_name()
        return Backend(name=key, device=device, dispatch_key="PrivateUse1", module=modname,
                       fork_safe=getattr(module, "FORK_SAFE", False) is True)
    raise InputError(
        f"unknown backend {name!r}; expected one of: {', '.join(BACKEND_NAMES)}"
    )


def device_error(backend: Backend) -> str | None:
    """Whether ``backend``'s device still works: a tiny op on it, read back and synchronized.
    ``None`` if it does, else the error line. Asked after a backend call raised: some errors are
    sticky (CUDA's device-side assert), and every later call in that process fails with them."""
    import torch

    from conformance.core.verdicts import error_line

    try:
        t = torch.ones(2, device=backend.device).add(1)
        if backend.host_values:
            t.cpu()
        sync = getattr(getattr(torch, backend.device, None), "synchronize", None)
        if callable(sync):
            sync()
    except Exception as exc:  # noqa: BLE001 - the answer is the error
        return error_line(exc)
    return None
