"""One decorator keyed by overload name, and the install step that hands kernels to the dispatcher.

``@register("add.Tensor", "add_.Tensor")`` mirrors ``torch.library.impl``: the key is the overload
name exactly as torch spells it (no ``aten::`` prefix; a nameless overload is just the base name,
e.g. ``"exp"``). A name registered twice is refused, and every name is checked against the live
``torch.ops.aten`` namespace when the decorator runs, so a typo fails at import, not at run time.

:func:`install` registers everything (minus ``without``, with ``overrides`` swapped in) for the
PrivateUse1 dispatch key through one ``torch.library.Library`` handle. Installing again with other
arguments destroys that handle first, so a left-out overload is *really* missing: the dispatcher
raises its own ``NotImplementedError: Could not run 'aten::X' with arguments from the 'mlu'
backend``. (An overload that has a CompositeExplicitAutograd kernel in ATen falls back to it when
left out, as it would for a real backend lacking it.)
"""

from __future__ import annotations

import functools
import importlib
import inspect
import keyword
import pkgutil
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import torch

__all__ = ["bind", "install", "implemented", "register", "register_rows", "register_unsupported",
           "registered", "kernel", "resolve_overload", "unsupported"]

F = TypeVar("F", bound=Callable[..., Any])

_KERNELS: dict[str, Callable[..., Any]] = {}
_ORIGIN: dict[str, str] = {}
_UNSUPPORTED: dict[str, str] = {}
_lock = threading.RLock()
_lib: torch.library.Library | None = None
_state: tuple[frozenset[str], tuple[tuple[str, int], ...]] | None = None
_installed: frozenset[str] = frozenset()
_loaded = False
_exact: frozenset[str] | None = None

#: Modules of this package that hold no kernels (everything else is imported by :func:`install`).
_NOT_KERNEL_MODULES = frozenset({"registry"})


def resolve_overload(name: str) -> torch._ops.OpOverload:
    """``"add.Tensor"`` -> ``torch.ops.aten.add.Tensor``; ``ValueError`` for an unknown name."""
    base, _, overload = name.partition(".")
    try:
        packet = getattr(torch.ops.aten, base)
        return getattr(packet, overload or "default")  # type: ignore[no-any-return]
    except (AttributeError, RuntimeError):
        raise ValueError(f"{name!r} is not an aten overload known to torch {torch.__version__}") from None


def register(*names: str) -> Callable[[F], F]:
    """Register the decorated function as the mlu kernel for each overload in ``names``."""
    if not names:
        raise TypeError("register() needs at least one overload name, e.g. register('add.Tensor')")
    for name in names:
        if name.startswith("aten::"):
            raise ValueError(f"register({name!r}): give the overload name without 'aten::'")
        resolve_overload(name)

    def deco(fn: F) -> F:
        target = getattr(fn, "func", fn)  # a functools.partial names its function
        origin = f"{target.__module__}.{getattr(target, '__qualname__', repr(fn))}"
        with _lock:
            for name in names:
                if name in _KERNELS:
                    raise ValueError(
                        f"overload {name!r} is already registered by {_ORIGIN[name]}; "
                        f"refusing a second kernel from {origin}"
                    )
                _KERNELS[name] = fn
                _ORIGIN[name] = origin
        return fn

    return deco


def _py_name(name: str) -> str:
    """A schema argument name as a Python parameter name (``from`` -> ``from_``)."""
    return name + "_" if keyword.iskeyword(name) else name


def bind(impl: Callable[..., Any], name: str) -> Callable[..., Any]:
    """A kernel for overload ``name`` that calls ``impl`` with the overload's arguments by name.

    The dispatcher passes leading positional arguments positionally (trailing defaults left out)
    and keyword-only ones as keywords; here each reaches ``impl`` as a keyword named as in the
    schema (a Python keyword gets a trailing ``_``); absent positional ones get the schema's
    default, absent keyword-only ones impl's own (``dtype=None``).
    ``out=`` arguments arrive as ``out``: the tensor itself, or a tuple when the overload has
    several (``max.dim_max``'s ``max, max_values``). ``impl`` must accept every name (checked
    here, so a mismatch fails at import).
    """
    schema = resolve_overload(name)._schema
    outs = tuple(a.name for a in schema.arguments if a.is_out)
    positional = tuple(_py_name(a.name) for a in schema.arguments if not a.kwarg_only)
    keywords = {a.name: _py_name(a.name) for a in schema.arguments
                if a.kwarg_only and not a.is_out}
    # Keyword-only defaults are impl's own: the schema gives enum ones (``dtype=long``) as C++
    # integers.
    defaults = {_py_name(a.name): a.default_value for a in schema.arguments
                if a.has_default_value() and not a.kwarg_only}
    params = inspect.signature(impl).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        wanted = set(positional) | set(keywords.values()) | ({"out"} if outs else set())
        missing = sorted(wanted - set(params))
        if missing:
            raise TypeError(f"{impl!r} cannot serve {name!r}: no parameter {', '.join(missing)}")
        undefaulted = sorted(v for k, v in keywords.items() if params[v].default is params[v].empty
                             and next(a for a in schema.arguments if a.name == k)
                             .has_default_value())
        if undefaulted:
            raise TypeError(f"{impl!r} cannot serve {name!r}: {', '.join(undefaulted)} needs a "
                            "default (the dispatcher leaves defaulted keyword arguments out)")
    renamed = any(k != v for k, v in keywords.items())

    def kernel(*args: Any, **kwargs: Any) -> Any:
        kw = dict(defaults)
        kw.update(zip(positional, args, strict=False))
        if outs:
            out = tuple(kwargs.pop(n) for n in outs)
            kw["out"] = out[0] if len(out) == 1 else out
        if renamed:
            kwargs = {keywords.get(k, k): v for k, v in kwargs.items()}
        kw.update(kwargs)
        return impl(**kw)

    target = getattr(impl, "func", impl)  # a functools.partial names its function
    kernel.__name__ = name.replace(".", "_")
    kernel.__qualname__ = f"{getattr(target, '__qualname__', kernel.__name__)}[{name}]"
    kernel.__module__ = getattr(target, "__module__", __name__)
    return kernel


def register_rows(rows: Mapping[str | tuple[str, ...], Callable[..., Any]]) -> None:
    """Register a table of rows ``{overload name(s): impl}``: each overload gets the kernel
    :func:`bind` makes of its row's impl (``functools.partial(impl, op="amax")`` fixes the
    impl's own extra arguments)."""
    for names, impl in rows.items():
        for name in (names,) if isinstance(names, str) else names:
            register(name)(bind(impl, name))


def register_unsupported(names: Iterable[str], reason: str) -> None:
    """Refuse ``names`` as a missing kernel would, for a capability the backend lacks.

    Some overloads would otherwise *succeed* with a result the backend cannot represent: the
    sparse constructors are CompositeImplicitAutograd in ATen and build a sparse tensor around
    mlu components, which then fails on first use. The kernel registered here raises the
    dispatcher's own ``NotImplementedError: Could not run 'aten::X' with arguments from the
    'mlu' backend`` (plus ``reason``), so callers and the engine see an unsupported overload.
    :func:`unsupported` lists them.
    """
    for name in names:
        def refuse(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            backend = torch._C._get_privateuse1_backend_name()
            raise NotImplementedError(
                f"Could not run 'aten::{_name}' with arguments from the '{backend}' backend: "
                f"{reason}"
            )

        refuse.__name__ = refuse.__qualname__ = "unsupported_" + name.replace(".", "_")
        register(name)(refuse)
        _UNSUPPORTED[name] = reason


def unsupported() -> dict[str, str]:
    """Overloads registered only to refuse them (:func:`register_unsupported`) -> reason."""
    _load_kernel_modules()
    return dict(_UNSUPPORTED)


def _load_kernel_modules() -> None:
    """Import every kernel module of the package (so their ``@register`` decorators run)."""
    global _loaded
    if _loaded:
        return
    import kernels

    for info in sorted(pkgutil.iter_modules(kernels.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name in _NOT_KERNEL_MODULES:
            continue
        importlib.import_module(f"kernels.{info.name}")
    _loaded = True


def registered() -> frozenset[str]:
    """Every overload the package has a kernel for (installed or not)."""
    _load_kernel_modules()
    return frozenset(_KERNELS)


def kernel(name: str) -> Callable[[...], Any]:  # type: ignore[misc]
    """The package's own kernel for ``name`` (ignores overrides)."""
    _load_kernel_modules()
    return _KERNELS[name]


def _exact_out_names() -> frozenset[str]:
    """The ``out=`` overloads whose CPU kernel accepts no ``out`` dtype but the result's, from the
    op database (``Overload.out_dtype_exact``; loaded at the first ``out=`` call)."""
    global _exact
    if _exact is None:
        import opdb

        _exact = frozenset(ov.name for ov in opdb.load().overloads if ov.out_dtype_exact)
    return _exact


def _with_out_rule(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as the kernel of ``name``: for an ``out=`` overload that checks ``out``'s dtype
    exactly on CPU, :func:`kernels._semantics.write_out` holds the given ``out=`` tensors to the
    result dtype while ``fn`` runs (one rule from the data, not a flag in every kernel)."""
    outs = tuple(a.name for a in resolve_overload(name)._schema.arguments if a.is_out)
    if not outs:
        return fn
    from kernels._semantics import exact_outs

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if name not in _exact_out_names():
            return fn(*args, **kwargs)
        with exact_outs(tuple(kwargs[n] for n in outs if n in kwargs)):
            return fn(*args, **kwargs)

    kernel.__name__ = getattr(fn, "__name__", name.replace(".", "_"))
    kernel.__qualname__ = getattr(fn, "__qualname__", kernel.__name__)
    kernel.__module__ = getattr(fn, "__module__", __name__)
    return kernel


#: NumPy's refusals of an argument (shapes that do not broadcast, a negative size), which reach
#: a kernel's caller as ``ValueError``: ATen's own checks (``TORCH_CHECK``) raise
#: ``RuntimeError`` for the same inputs, and a caller catching that must catch these too.
_NUMPY_REFUSALS = re.compile(r"shape mismatch: objects cannot be broadcast|operands could not "
                             r"be broadcast together|negative dimensions are not allowed|cannot "
                             r"reshape array of size")


def _torch_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` raising NumPy's argument refusals (:data:`_NUMPY_REFUSALS`) as ``RuntimeError``,
    as a C++ backend's checks would; every other exception as it is."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:
            if _NUMPY_REFUSALS.search(str(exc)) is None:
                raise
            raise RuntimeError(str(exc)) from exc

    return kernel


def implemented() -> frozenset[str]:
    """Overload names currently registered for PrivateUse1 by :func:`install`."""
    return _installed


def install(without: Iterable[str] = (), overrides: Mapping[str, Callable[..., Any]] | None = None
            ) -> frozenset[str]:
    """Bring up ``mlu`` and register its kernels; returns :func:`implemented`.

    Same arguments as the current installation: no-op. Different ones: the previous registrations
    are destroyed and everything is registered anew.
    """
    global _lib, _state, _installed
    from kernels import _device

    _device.setup()
    _load_kernel_modules()
    without_set = frozenset(without)
    overrides = dict(overrides or {})
    state = (without_set, tuple(sorted((k, id(v)) for k, v in overrides.items())))
    with _lock:
        if state == _state:
            return _installed
        unknown = sorted(without_set - _KERNELS.keys())
        if unknown:
            raise ValueError(
                "cannot leave out overloads the mlu reference backend does not implement: "
                + ", ".join(unknown)
            )
        for name in overrides:
            resolve_overload(name)
        if _lib is not None:
            _lib._destroy()
            _lib = None
            _installed = frozenset()
        lib = torch.library.Library("aten", "IMPL", "PrivateUse1")  # noqa: TOR901
        table = {**_KERNELS, **overrides}
        for name in sorted(table):
            if name in without_set:
                continue
            lib.impl(name, _with_out_rule(name, _torch_errors(table[name])))
        _lib = lib
        _state = state
        _installed = frozenset(n for n in table if n not in without_set)
        return _installed
