"""One boxed fallback for PrivateUse1 that runs every op on CPU over aliases of the device memory,
then lets a proof backend recompute the op's floating values its own way.

How an op runs (:func:`run_op`):

1. Every device tensor argument becomes a CPU alias of its bytes (:func:`_device.cpu_alias`), a
   device ``torch.device`` argument becomes ``cpu``. The op runs once on these aliases: that run
   decides everything but floating values — errors, result dtypes, shapes, strides, views,
   in-place writes and resizes — exactly as CPU does.
2. Beforehand, where the backend's :class:`Transform` applies to the op, the op ran on the
   transform's *copies* of the inputs (float64 copies, other layouts, flushed subnormals). If that
   run succeeded, its floating values replace the first run's in every fresh floating result and
   every written floating argument of the same shape (``copy_``: rounded back to the result's
   dtype, written in the result's own layout), then :meth:`Transform.finish` sees them.
3. Results go back to the device: the written argument itself for an in-place/out= result, a
   view of the device storage for a result that shares an input's storage, an adopted storage
   for a fresh result.

A transform skips random ops (``nondeterministic_seeded``: a second draw differs) and ops that
change an argument's geometry in place (``inplace_view``: ``as_strided_``, ``resize_``...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from proof_backends import _device

_FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
             torch.complex128, torch.complex32)


@dataclass(frozen=True)
class Transform:
    """What a proof backend does differently from CPU: ``inputs`` makes the CPU tensor arguments
    of the second run (never mutating them), ``finish`` edits the floating values finally
    stored (in place), ``skip`` names ops (base names) the transform must leave alone because
    their meaning depends on the dtype or layout it changes."""

    inputs: Callable[[torch.Tensor], torch.Tensor]
    finish: Callable[[torch.Tensor], None] = lambda t: None
    skip: frozenset[str] = field(default_factory=frozenset)
    #: what a written argument (out=, an in-place self) becomes; default: as ``inputs``
    written: Callable[[torch.Tensor], torch.Tensor] | None = None
    #: the second run decides non-floating results too (a comparison, an index): where the
    #: transform changes which values are equal or ordered (a subnormal flushed to zero
    #: compares equal to zero on an FTZ/DAZ device)
    decides_all: bool = False


def _map(x: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_map(v, fn) for v in x)
    return fn(x)


def _leaves(x: Any) -> Iterable[Any]:
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


def _to_cpu_arg(name: str) -> Callable[[Any], Any]:
    aliases: dict[int, torch.Tensor] = {}

    def conv(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.device.type == name:
            # one alias per device tensor: an op that gets self twice (logical_xor_'s
            # composite calls logical_xor.out(self, other, out=self)) must see one tensor
            if id(x) not in aliases:
                aliases[id(x)] = _device.cpu_alias(x)
            return aliases[id(x)]
        if isinstance(x, torch.device) and x.type == name:
            return torch.device("cpu")
        if isinstance(x, torch.UntypedStorage) and x.device.type == name:
            return _device.storage_buffer(x)
        if isinstance(x, torch.TypedStorage) and x.device.type == name:
            return torch.TypedStorage(wrap_storage=_device.storage_buffer(x._untyped_storage),
                                      dtype=x.dtype, _internal=True)
        return x
    return conv


def _transformable(op: torch._ops.OpOverload, transform: Transform | None) -> bool:
    if transform is None:
        return False
    tags = set(op.tags)
    if torch.Tag.nondeterministic_seeded in tags or torch.Tag.inplace_view in tags:
        return False
    base = op._schema.name.split("::")[-1].rstrip("_")
    return base not in transform.skip


def _written(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]
             ) -> list[tuple[int | str, Any]]:
    """(position or keyword, value) of every argument the schema writes."""
    out: list[tuple[int | str, Any]] = []
    for i, a in enumerate(op._schema.arguments):
        if a.alias_info is None or not a.alias_info.is_write:
            continue
        if a.kwarg_only or i >= len(args):
            if a.name in kwargs:
                out.append((a.name, kwargs[a.name]))
        else:
            out.append((i, args[i]))
    return out


def _second_run(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any],
                transform: Transform) -> tuple[Any, dict[int | str, Any]] | None:
    """The op on the transform's copies: (results, written arguments by position) or None if it
    raised."""
    def conv(x: Any) -> Any:
        return transform.inputs(x) if isinstance(x, torch.Tensor) else x

    def conv_written(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        return (transform.written or transform.inputs)(x)

    written = {key for key, _ in _written(op, args, kwargs)}
    targs = tuple(_map(a, conv_written if i in written else conv) for i, a in enumerate(args))
    tkwargs = {k: _map(v, conv_written if k in written else conv) for k, v in kwargs.items()}
    try:
        res = _call(op, targs, tkwargs)
    except Exception:  # noqa: BLE001 - the first run's outcome stands
        return None
    return res, {k: (targs[k] if isinstance(k, int) else tkwargs[k]) for k in written}


def _store(dst: Any, src: Any, transform: Transform) -> None:
    """Copy ``src``'s values into ``dst`` where both are floating tensors of one shape (any
    tensors of one dtype and shape where the transform decides all results)."""
    if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)):
        return
    if transform.decides_all and dst.dtype not in _FLOATING and dst.dtype == src.dtype \
            and dst.shape == src.shape:
        with torch.no_grad():
            dst.copy_(src)
        return
    if dst.dtype not in _FLOATING or src.dtype not in _FLOATING or dst.shape != src.shape:
        return
    if src.is_complex() and not dst.is_complex():
        return
    with torch.no_grad():
        dst.copy_(src)
        transform.finish(dst)


def _views_of(storages: dict[int, torch.Tensor], t: torch.Tensor) -> torch.Tensor | None:
    return storages.get(t.untyped_storage()._cdata)


def _back(name: str, res: Any, cpu_args: list[Any], dev_args: list[Any],
          to_device: bool) -> Any:
    """The first run's results on the device (see the module's step 3)."""
    by_identity = {id(c): d for c, d in zip(cpu_args, dev_args, strict=True)
                   if isinstance(c, torch.Tensor)}
    storages = {c.untyped_storage()._cdata: d for c, d in zip(cpu_args, dev_args, strict=True)
                if isinstance(c, torch.Tensor) and isinstance(d, torch.Tensor)
                and d.device.type == name}

    def conv(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if id(x) in by_identity:
            return by_identity[id(x)]
        base = _views_of(storages, x)
        if base is not None:
            v = _device.view_of(base, x.shape, x.stride(), int(x.storage_offset()), x.dtype)
            if x.is_conj():
                torch._C._set_conj(v, True)
            if x.is_neg():
                torch._C._set_neg(v, True)
            return v
        return _device.adopt(x) if to_device else x

    return _map(res, conv)


def _regeometry(name: str, cpu_args: list[Any], dev_args: list[Any]) -> None:
    """A device argument whose CPU alias the op re-shaped (``resize_``, ``set_``, an ``out=``
    resized) takes the alias's new geometry and storage."""
    storages = {_device.buffer(d)._cdata: d
                for d in dev_args if isinstance(d, torch.Tensor) and d.device.type == name}
    for c, d in zip(cpu_args, dev_args, strict=True):
        if not (isinstance(d, torch.Tensor) and d.device.type == name
                and isinstance(c, torch.Tensor)):
            continue
        # an out= kernel may leave its output a lazy conjugate (CPU's _linalg_solve_ex.result
        # with left=False writes conj(X) and sets the bit): the device tensor takes the bits
        if c.is_conj() != d.is_conj():
            torch._C._set_conj(d, c.is_conj())
        if c.is_neg() != d.is_neg():
            torch._C._set_neg(d, c.is_neg())
        same = (c.untyped_storage()._cdata == _device.buffer(d)._cdata and c.shape == d.shape
                and c.stride() == d.stride() and c.storage_offset() == d.storage_offset())
        if same:
            continue
        owner = storages.get(c.untyped_storage()._cdata)
        if owner is not None:
            st = owner.untyped_storage()
        else:
            st = _device.attach(c.untyped_storage(), c.dtype, (0,), (1,), 0).untyped_storage()
        _device.set_geometry(d, st, int(c.storage_offset()), c.shape, c.stride())


def _flat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    return [*_leaves(list(args)), *_leaves(list(kwargs.values()))]


def _category(kind: type | torch.dtype) -> int:
    """Type promotion's category: bool 0, integral 1, floating 2, complex 3."""
    if isinstance(kind, torch.dtype):
        return 0 if kind == torch.bool else 3 if kind.is_complex else 2 if kind.is_floating_point \
            else 1
    return {bool: 0, int: 1, float: 2, complex: 3}[kind]


def _as_wrapped(value: complex, tensors: list[torch.Tensor]) -> torch.Tensor:
    """A 0-dim tensor standing for a Python number that torch passed as a wrapped number: it
    must not change type promotion where a wrapped number would not. Where a tensor argument's
    category is as high as the number's, the number takes the tensors' promoted dtype (its value
    converted as the kernel would: -128 into uint8 is 128); else its category's default."""
    peers = [t.dtype for t in tensors if _category(t.dtype) >= _category(type(value))]
    if peers:
        dtype = peers[0]
        for other in peers[1:]:
            dtype = torch.promote_types(dtype, other)
        exact = {bool: torch.bool, int: torch.int64, float: torch.float64,
                 complex: torch.complex128}[type(value)]
        return torch.tensor(value, dtype=exact).to(dtype)
    default = {bool: torch.bool, int: torch.int64, float: torch.get_default_dtype(),
               complex: torch.complex64 if torch.get_default_dtype() == torch.float32
               else torch.complex128}[type(value)]
    return torch.tensor(value, dtype=default)


def _wrap_numbers(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]
                  ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A boxed Python fallback receives a wrapped-number tensor (a Python number passed where
    the schema says Tensor: ``fmod.Tensor(x, 2)`` from ``fmod.Scalar``'s composite) as the
    number itself, which the op then refuses; it becomes a CPU 0-dim tensor again."""
    written = {key for key, _ in _written(op, args, kwargs)}  # an out= takes no part
    operands = [a for i, a in enumerate(args) if i not in written] + \
        [v for k, v in kwargs.items() if k not in written]
    tensors = [t for t in _leaves(operands) if isinstance(t, torch.Tensor)]
    out_args, out_kwargs = list(args), dict(kwargs)
    for i, a in enumerate(op._schema.arguments):
        if not isinstance(a.type, torch.TensorType) and not (
                isinstance(a.type, torch.OptionalType)
                and isinstance(a.type.getElementType(), torch.TensorType)):
            continue
        where: dict[Any, Any] | list[Any] = out_args if i < len(args) else out_kwargs
        key: Any = i if i < len(args) else a.name
        if (i < len(args) or a.name in kwargs) and isinstance(where[key], (bool, int, float,
                                                                           complex)):
            value = where[key]
            where[key] = _as_wrapped(value, tensors)
    return tuple(out_args), out_kwargs


def run_op(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any],
           transform: Transform | None) -> Any:
    """Run ``op`` for the device (see the module docstring)."""
    name = _device.device_name()
    conv = _to_cpu_arg(name)
    cargs = _map(args, conv)
    ckwargs = {k: _map(v, conv) for k, v in kwargs.items()}
    second = (_second_run(op, cargs, ckwargs, transform)
              if transform is not None and _transformable(op, transform) else None)
    res = _call(op, cargs, ckwargs)
    dev_flat, cpu_flat = _flat(args, kwargs), _flat(cargs, ckwargs)
    _regeometry(name, cpu_flat, dev_flat)
    if second is not None and transform is not None:
        sres, swritten = second
        argument_ids = {id(c) for c in cpu_flat if isinstance(c, torch.Tensor)}
        storages = {c.untyped_storage()._cdata for c in cpu_flat
                    if isinstance(c, torch.Tensor)}
        pairs = zip(_leaves(res), _leaves(sres), strict=False)
        for r, s in pairs:
            if isinstance(r, torch.Tensor) and id(r) not in argument_ids \
                    and r.untyped_storage()._cdata not in storages:
                _store(r, s, transform)
        for key, value in _written(op, cargs, ckwargs):
            for r, s in zip(_leaves(value), _leaves(swritten.get(key)), strict=False):
                _store(r, s, transform)
    device_arg = kwargs.get("device")
    to_device = not (isinstance(device_arg, torch.device) and device_arg.type != name)
    return _back(name, res, cpu_flat, dev_flat, to_device)


def _copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    return dst.copy_(src)


def _copy_from_and_resize(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    return dst.resize_(src.shape).copy_(src)


#: The ops only a non-CPU device has (a copy between devices), done on the CPU aliases.
CPU_EQUIVALENT: dict[str, Callable[..., Any]] = {
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
}


def _numbers_at(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> frozenset[str]:
    """Names of the Tensor arguments that arrived as Python numbers (wrapped numbers)."""
    found = set()
    for i, a in enumerate(op._schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(a.name)
        if isinstance(value, bool | int | float | complex) and (
                isinstance(a.type, torch.TensorType) or (
                    isinstance(a.type, torch.OptionalType)
                    and isinstance(a.type.getElementType(), torch.TensorType))):
            found.add(a.name)
    return frozenset(found)


def _scalar_twin(op: torch._ops.OpOverload, numbers: frozenset[str]
                 ) -> torch._ops.OpOverload | None:
    """The overload of ``op``'s packet taking a Scalar exactly where ``op`` takes the Tensors
    in ``numbers`` (``remainder.Scalar_out`` for ``remainder.Tensor_out``,
    ``special_chebyshev_polynomial_t.x_scalar`` for its ``.default``): its composite wraps the
    number again, so CPU's kernel sees a true wrapped number."""
    packet = getattr(torch.ops.aten, op._schema.name.split("::")[-1])
    want = [(a.name, "number" if a.name in numbers else str(a.type))  # Scalar prints so
            for a in op._schema.arguments]
    for name in packet.overloads():
        other = getattr(packet, name)
        if [(a.name, str(a.type)) for a in other._schema.arguments] == want:
            return other
    return None


def _call(op: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    same = CPU_EQUIVALENT.get(op._schema.name)
    if same is not None:
        return same(*args, **kwargs)
    # a wrapped number arrives as a Python number; no Python call makes a wrapped number
    # again, and a plain 0-dim tensor wins type promotion where the wrapped number would not
    # (uint8 0-dim remainder -128: int64 arithmetic, not uint8): the Scalar overload does it
    numbers = _numbers_at(op, args, kwargs)
    if numbers:
        twin = _scalar_twin(op, numbers)
        if twin is not None:
            return twin(*args, **kwargs)
    args, kwargs = _wrap_numbers(op, args, kwargs)
    return op(*args, **kwargs)


#: Ops registered to the fallback by name (see :func:`install`).
OWN_KERNEL = ("conj_physical_", "_lazy_clone")

_LIBS: list[torch.library.Library] = []


def install(name: str, transform: Transform | None) -> None:
    """Bring up device ``name`` and register the fallback, once per process."""
    _device.setup(name)
    if _LIBS:
        return
    lib = torch.library.Library("_", "IMPL")

    def fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
        return run_op(op, args, kwargs, transform)

    lib.fallback(fallback, "PrivateUse1")
    _LIBS.append(lib)
    # copy_ gets a kernel of its own: ATen's composite copy_ sends a copy to a device through
    # _copy_from, which the Conjugate/Negative fallbacks materialize by a clone, which copies
    # again (an endless recursion for a conjugate view); copy_ is a fallthrough there, and on
    # CPU aliases it honours the lazy bits itself.
    aten = torch.library.Library("aten", "IMPL")
    copy = torch.ops.aten.copy_.default

    def copy_kernel(*args: Any, **kwargs: Any) -> Any:
        return run_op(copy, args, kwargs, transform)

    aten.impl("copy_", copy_kernel, "PrivateUse1")
    # ops whose CompositeExplicitAutograd kernel calls a CPU-only DispatchStub ("missing kernel
    # for <device>"): every backend needs a kernel of its own there; this one is the fallback
    for name in OWN_KERNEL:
        op = getattr(torch.ops.aten, name).default

        def kernel(*args: Any, op: torch._ops.OpOverload = op, **kwargs: Any) -> Any:
            return run_op(op, args, kwargs, transform)

        aten.impl(name, kernel, "PrivateUse1")
    _LIBS.append(aten)
