"""Backend records: what the user names on the command line, resolved to a device and dispatch key.

This is the only place that knows backend names. The engine and the static coverage see a
:class:`Backend` record and never special-case the reference backend: ``mlu`` is resolved exactly
like a vendor's ``privateuse1:MODULE`` except that its module is ours.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from opdb.errors import InputError

#: Environment variable read by the reference backend: comma-separated overload names to leave out.
WITHOUT_ENV = "OPCONFORM_MLU_WITHOUT"


#: Environment each built-in backend is run under unless the user set the variable: errors of an
#: asynchronous device surface at the call that caused them (a sticky error pinned on its call,
#: not on whatever ran next). Set before the backend initializes; workers inherit it.
_ENV: dict[str, dict[str, str]] = {
    "cuda": {"CUDA_LAUNCH_BLOCKING": "1", "HIP_LAUNCH_BLOCKING": "1"},  # HIP: ROCm's "cuda"
}


@dataclass(frozen=True)
class Backend:
    """A backend under test, and everything the harness may assume of it.

    ``name`` is as the user spelled it (``mlu``, ``cuda``, ``xla``, ``privateuse1:torch_mlu``);
    ``device`` is the torch device type tensors are moved to; ``dispatch_key`` is the key the
    dispatcher is asked about; ``module`` is the Python module imported to bring it up, if any;
    ``without`` lists overloads deliberately left out of the reference backend.

    What the harness assumes of a backend is a field here, never "not CPU" and never its name:

    - ``installs``: bring-up calls ``module.install()`` (the reference backend, with
      ``without``; a vendor module only if it has an ``install``). A repro does the same.
    - ``host_values`` is False for a shape-only backend (``meta``, fake tensors): its tensors
      carry sizes, strides and dtypes but no values, so the engine judges every check on
      metadata (structure, device, dtype, shape, aliasing, errors) and never reads values back.
    - ``fork_safe``: a forked child of a process that used the device can use it too (host
      memory: ``cpu``, ``meta``, the reference ``mlu``; a vendor module says so with a
      module-level ``FORK_SAFE = True``); not CUDA, XPU, MPS or XLA, whose driver or runtime
      state a child cannot use. Only then may an item run in a forked child (``cpu_crashes`` in
      the hints).
    - ``lazy``: results are computed when they are read (XLA's lazy tensors: a graph is
      traced, compiled per new shape and run on read-back). Every backend call's results are
      then read back inside the call (:func:`conformance.core.call.settle`), so an error the
      computation raises is the call's, before a refusal is judged, and the compilation counts
      in the call, under its about-to-run marker. A vendor module says so with ``LAZY = True``.
    - ``step``: a lazy backend's step barrier, as a dotted name (``torch_xla.sync``), called
      after each call is read back so that no graph stays open across calls
      (:data:`conformance.core.lazy.LAZY_DEVICES`). A vendor module names it with ``LAZY_STEP``.
    - ``strides``: result strides are the backend's own answer, so where CPU's are a contract
      (views, in-place results, ``memory_format``) a difference is a failure. A backend whose
      tensors keep no strides of their own (XLA: every tensor is laid out as the compiler
      likes, ``stride()`` is a contiguous stand-in) does not promise them: the ``noncontiguous``
      check then notes a difference (``strides_informational``). A vendor module says so with
      ``STRIDES = False``.
    - ``host_memory``: the device's tensors live in host memory (``cpu``, the reference
      ``mlu``'s NumPy arrays; a vendor module says so with ``HOST_MEMORY = True``). Where
      they do not (CUDA, XPU, MPS, XLA, a vendor's device memory, ``meta``'s none), an ATen
      composite that reads its tensors through host pointers (``opdb/data/host_composites.yaml``)
      kills the process: that crash is a kernel the backend needs
      (``unsupported``/``host_composite``), not a bare crash.
    - ``assumes``: what the backend declares it does on purpose where CPU does otherwise
      (``ftz``, ``tf32``, ``half_accumulation``: ``opdb/data/backend_properties.yaml``), from
      ``--assume`` and a vendor module's ``ASSUMES``. The value comparison honours each
      (:mod:`conformance.compare.properties`); the report states them at its top.
    - ``compiles_per_shape``: the backend compiles a graph for every new input shape (XLA:
      ~0.1 items/s on CPU at the free draw, 630 graphs for ``eq.Scalar`` alone). Each item's
      shapes are then drawn from a small menu of sizes (:mod:`conformance.inputs.shape_menus`),
      so its graphs are compiled once and reused, and a failure's shrink is budgeted (each
      shape it tries is a compile). ``--shapes fixed|free`` overrides it for a run; a vendor
      module declares it with ``COMPILES_PER_SHAPE = True``.
    """

    name: str
    device: str
    dispatch_key: str
    module: str | None = None
    without: tuple[str, ...] = ()
    host_values: bool = True
    fork_safe: bool = False
    installs: bool = False
    lazy: bool = False
    strides: bool = True
    host_memory: bool = False
    assumes: frozenset[str] = frozenset()
    compile_backend: str = "aot_eager"
    compiles_per_shape: bool = False
    step: str | None = None

    @property
    def shapes(self) -> str:
        """How this run draws shapes (the run record's and ``--shapes``' word): ``fixed`` (from
        a menu: :attr:`compiles_per_shape`) or ``free``."""
        return "fixed" if self.compiles_per_shape else "free"

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"

    def owns_key(self, key: str) -> bool:
        """Whether a dispatch key a missing-kernel message names is this backend's: its own key
        or device name (``CUDA``, ``PrivateUse1`` or its renamed ``mlu``), with a functionality
        prefix (``SparseCUDA``, ``AutogradPrivateUse1``), or ``*`` (ATen's override-me stub,
        every backend's). Another key's (``CPU``, named by a backend's fallback that copied its
        tensors to CPU and called an op CPU lacks) is a refusal of the backend's own kernel or
        fallback, not a kernel the backend lacks: the error is judged as any other."""
        if key == "*":
            return True
        low = key.lower()
        return any(low.endswith(own.lower()) for own in (self.dispatch_key, self.device))


#: The backends named by a word (besides ``mlu`` and ``privateuse1:MODULE``), as resolved when
#: available. A record with a ``module`` is brought up by importing it (``xla``: torch_xla, whose
#: ``PJRT_DEVICE`` environment variable picks CPU, TPU or CUDA).
BUILTIN: dict[str, Backend] = {
    "cpu": Backend("cpu", "cpu", "CPU", fork_safe=True, host_memory=True),
    "meta": Backend("meta", "meta", "Meta", host_values=False, fork_safe=True),
    "cuda": Backend("cuda", "cuda", "CUDA"),
    "mps": Backend("mps", "mps", "MPS"),
    "xpu": Backend("xpu", "xpu", "XPU"),
    "xla": Backend("xla", "xla", "XLA", module="torch_xla", lazy=True, strides=False,
                   compiles_per_shape=True, step="torch_xla.sync"),
}


BACKEND_NAMES = (*BUILTIN, "mlu", "privateuse1:MODULE")


#: The words of ``--shapes`` (:attr:`Backend.shapes`).
SHAPE_MODES = ("fixed", "free")


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


def resolve(name: str, *, without: tuple[str, ...] | None = None, touch: bool = True,
            assumes: frozenset[str] = frozenset(),
            compile_backend: str | None = None, shapes: str | None = None) -> Backend:
    """Resolve a backend name and bring the backend up (:func:`bring_up`: its module imported,
    installed where it installs, one tensor made on its device unless ``touch`` is false: a
    static question, ``conformance coverage``, computes nothing there). ``assumes``: the
    properties declared on the command line (:func:`opdb.properties.parse_assumes`), joined
    with those a vendor module declares. ``compile_backend``: ``--compile-backend`` (None: the
    record's own). ``shapes``: ``--shapes`` (:data:`SHAPE_MODES`; None: the record's own
    :attr:`Backend.compiles_per_shape`).

    Raises :class:`InputError` for an unknown or unavailable backend, or ``shapes`` not one of
    :data:`SHAPE_MODES`.
    """
    if shapes is not None and shapes not in SHAPE_MODES:
        raise InputError(f"--shapes must be one of {', '.join(SHAPE_MODES)}, not {shapes!r}")
    backend = replace_assumes(_resolve(name, without=without, touch=touch), assumes)
    if shapes is not None:
        backend = replace(backend, compiles_per_shape=shapes == "fixed")
    return replace(backend, compile_backend=compile_backend) if compile_backend else backend


def replace_assumes(backend: Backend, assumes: frozenset[str]) -> Backend:
    """``backend`` with ``assumes`` added to what it declares."""
    return replace(backend, assumes=backend.assumes | assumes) if assumes else backend


def _resolve(name: str, *, without: tuple[str, ...] | None, touch: bool) -> Backend:
    key = name.strip()
    lower = key.lower()
    if without is None:
        without = parse_without(os.environ.get(WITHOUT_ENV))
    if without and lower != "mlu":
        raise InputError(
            f"--without applies only to the reference backend 'mlu', not {name!r}"
        )
    if lower in BUILTIN:
        return bring_up(_builtin(BUILTIN[lower]), touch=touch)
    if lower == "mlu":
        return bring_up(Backend(
            name="mlu", device="mlu", dispatch_key="PrivateUse1", module="kernels", without=without,
            installs=True, fork_safe=True, host_memory=True,  # NumPy arrays in host memory
        ), touch=touch)
    if lower.startswith("privateuse1:"):
        return bring_up(_vendor(key), touch=touch)
    raise InputError(
        f"unknown backend {name!r}; expected one of: {', '.join(BACKEND_NAMES)}"
    )


def _builtin(record: Backend) -> Backend:
    """A named backend's record, once its module imports (if it has one) and its device is
    there."""
    import torch

    for var, value in _ENV.get(record.name, {}).items():
        os.environ.setdefault(var, value)
    if record.module is not None:
        try:
            importlib.import_module(record.module)
        except ImportError as exc:
            raise InputError(
                f"backend {record.name!r} needs the module {record.module!r}, which does not "
                f"import: {exc} (install it with the torch it pins)") from None
    elif not _available(record.device):
        raise InputError(
            f"backend {record.name!r} is not available in this torch build "
            f"({torch.__version__}): torch.{record.device} reports no device"
        )
    return record


def _vendor(key: str) -> Backend:
    """``privateuse1:MODULE``: the module imported; what it declares (``FORK_SAFE``, ``LAZY``,
    ``STRIDES``, ``HOST_MEMORY``, ``ASSUMES``, ``COMPILES_PER_SHAPE``, an ``install()``) is its
    record."""
    import torch

    from opdb.properties import parse_assumes

    modname = key.split(":", 1)[1]
    if not modname:
        raise InputError("backend 'privateuse1:' needs a module name, e.g. privateuse1:torch_mlu")
    try:
        module = importlib.import_module(modname)
    except ImportError as exc:
        raise InputError(f"backend {key!r}: cannot import module {modname!r}: {exc}") from None
    device = torch._C._get_privateuse1_backend_name()
    return Backend(name=key, device=device, dispatch_key="PrivateUse1", module=modname,
                   fork_safe=getattr(module, "FORK_SAFE", False) is True,
                   installs=callable(getattr(module, "install", None)),
                   lazy=getattr(module, "LAZY", False) is True,
                   strides=getattr(module, "STRIDES", True) is not False,
                   host_memory=getattr(module, "HOST_MEMORY", False) is True,
                   assumes=parse_assumes(",".join(getattr(module, "ASSUMES", ())),
                                         option=f"{modname}.ASSUMES"),
                   compile_backend=str(getattr(module, "COMPILE_BACKEND", "aot_eager")),
                   compiles_per_shape=getattr(module, "COMPILES_PER_SHAPE", False) is True,
                   step=_declared_step(module, modname))


def _declared_step(module: Any, modname: str) -> str | None:
    """A vendor module's ``LAZY_STEP``: a dotted name, or ``None`` where it declares none."""
    step = getattr(module, "LAZY_STEP", None)
    if step is None or isinstance(step, str) and "." in step:
        return step
    raise InputError(f"{modname}.LAZY_STEP: expected a dotted name of a function "
                     f"(e.g. 'torch_xla.sync'), got {step!r}")


def step_function(backend: Backend) -> Callable[[], object] | None:
    """The function :attr:`Backend.step` names, imported; ``None`` where the record names none.
    A name that does not import or is not callable is bad input."""
    if backend.step is None:
        return None
    try:
        found = pkgutil.resolve_name(backend.step)
    except (ImportError, AttributeError, ValueError) as exc:
        raise InputError(f"backend {backend.name!r}: its step barrier {backend.step!r} does "
                         f"not import: {exc}") from None
    if not callable(found):
        raise InputError(f"backend {backend.name!r}: its step barrier {backend.step!r} is "
                         "not a function")
    return cast("Callable[[], object]", found)


def bring_up(backend: Backend, *, touch: bool = True) -> Backend:
    """Bring ``backend`` up in this process and return it: its module's ``install()`` where the
    record ``installs`` (the reference backend with its ``without``), one tensor made on its
    device, and its device registered as lazy or not (:data:`conformance.core.lazy.LAZY_DEVICES`,
    read by every call on the device).

    The tensor: autograd's engine sets up its per-device ready queues when it first starts, and a
    device first touched after a CPU backward in the process fails every later backward there
    with "INTERNAL ASSERT FAILED ... device_ready_queues_" (torch_xla on CPU did: the autograd
    check's first item runs CPU's backward first). A device that cannot make a tensor is bad
    input now, not a verdict on every item."""
    import torch

    from conformance.core.lazy import LAZY_DEVICES

    step = step_function(backend) if backend.lazy else None  # bad input before any state
    if backend.installs and backend.module is not None:
        module = importlib.import_module(backend.module)
        try:
            if backend.without:
                module.install(without=backend.without)
            else:
                module.install()
        except ValueError as exc:  # an overload the reference backend does not implement
            raise InputError(f"--without / {WITHOUT_ENV}: {exc}") from None
    if backend.lazy:
        LAZY_DEVICES[backend.device] = step
    else:
        LAZY_DEVICES.pop(backend.device, None)
    if touch and not backend.is_cpu:
        try:
            torch.empty(1, device=backend.device)
        except Exception as exc:  # noqa: BLE001 - the answer is the error
            from conformance.core.verdicts import error_line

            raise InputError(f"backend {backend.name!r}: making a tensor on its device "
                             f"{backend.device!r} raised {error_line(exc)}") from None
    return backend


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
