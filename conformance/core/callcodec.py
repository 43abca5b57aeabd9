"""A call and its repro function as bytes (:func:`dump_call`), rendered into the repro text only
where it is read (:func:`render_call`): the about-to-run marker (:mod:`conformance.core.inflight`)
keeps the call this way, and the repro is written only after a death
(docs/decisions.md#engine-speed).

Rendering the repro before every backend call cost 12% of a forward run: every tensor written as
a literal, those above 4096 elements zlib-compressed and base64-encoded, then JSON-escaped into the
marker. Here a CPU tensor's bytes are copied as they are (its dtype, shape, strides, offset and
``requires_grad`` with them: the rendered repro is the one the call would have had), the
signature as its fields (not its cached ``torch.ops`` packet), and the ``Device?`` placeholder
as itself. Anything else that pickle cannot write (a tensor on a device, sparse or quantized) makes
:func:`dump_call` return ``None``: the caller renders the repro at once, as before.
"""

from __future__ import annotations

import ctypes
import dataclasses
import io
import pickle
import types
from collections.abc import Callable
from dataclasses import fields
from functools import cache
from typing import Any

import torch

from conformance.core.signature import DEVICE, OpSignature

_SIG_FIELDS = tuple(f.name for f in fields(OpSignature))


def _device() -> Any:
    return DEVICE


def _signature(*values: Any) -> OpSignature:
    return OpSignature(**dict(zip(_SIG_FIELDS, values, strict=True)))


def _tensor(data: bytes, dtype: torch.dtype, shape: tuple[int, ...], stride: tuple[int, ...],
            offset: int, numel: int, requires_grad: bool) -> torch.Tensor:
    flat = torch.frombuffer(bytearray(data), dtype=dtype) if data else \
        torch.empty(numel, dtype=dtype)
    t = flat.as_strided(shape, stride, offset)
    return t.requires_grad_() if requires_grad else t


def _record(cls: type, values: tuple[Any, ...], whole: bool = False) -> Any:
    return cls(**dict(zip(_init_fields(cls, whole), values, strict=True)))


#: The bytes of a call that is exactly a refill of the head's drawn call start with this tag,
#: then the refill's number, ``move`` and ``dtype`` (:meth:`CallCodec.dump`).
_REFILL_TAG = "refill of the drawn call"


#: Fields of a record that a repro does not read and the marker leaves out: how a call's tensors
#: were filled (the tensors themselves are kept) and which of them a hint pins, which only draw
#: further refills.
_LEFT_OUT = frozenset({"fills", "pinned"})


@cache
def _init_fields(cls: type, whole: bool = False) -> tuple[str, ...]:
    """The fields a record of class ``cls`` is rebuilt from: those its constructor takes, less
    :data:`_LEFT_OUT` (each has a default; ``whole``: all of them, for a drawn call whose
    refills are made again from it). Its cached properties (``Call``'s description, its refill
    dtypes) are left out with them: they are worked out again where read."""
    return tuple(f.name for f in fields(cls) if f.init and (whole or f.name not in _LEFT_OUT))


class _Unsupported(Exception):
    """A value the marker cannot keep as bytes: the repro is rendered at once instead."""


def _shared(i: int) -> Any:  # pragma: no cover - never called: _Unpickler.find_class
    """Stands for the ``i``-th object written once per item (:class:`CallCodec`)."""
    raise RuntimeError("a kept call is read by render_call")


#: Types pickle writes by name (or a dtype's own reduction), asked of :meth:`_Pickler.
#: reducer_override` for every one it meets (the reduction functions it returns included):
#: answered first.
_BY_NAME = frozenset({types.FunctionType, type, torch.dtype})


class _Pickler(pickle.Pickler):
    """Pickles tensors as bytes, the signature as its fields; ``shared``: objects written
    once (the signature, a refill's drawn call), referred to by number; ``whole``: records
    with their fills (a drawn call, whose refills are made again from it)."""

    def __init__(self, file: io.BytesIO, shared: tuple[Any, ...] = (), *,
                 whole: bool = False) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = {id(obj): i for i, obj in enumerate(shared)}
        self.whole = whole

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is torch.Tensor:
            return _reduce_tensor(obj)
        if kind in _BY_NAME:  # most of what a call holds besides its tensors
            return NotImplemented
        if isinstance(obj, torch.Tensor):  # a subclass: refused there
            return _reduce_tensor(obj)
        if isinstance(obj, OpSignature):
            i = self.shared.get(id(obj))
            if i is not None:
                return _shared, (i,)
            return _signature, tuple(getattr(obj, name) for name in _SIG_FIELDS)
        if obj is DEVICE:
            return _device, ()
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return self._reduce_record(obj)
        return NotImplemented

    def _reduce_record(self, obj: Any) -> tuple[Any, ...]:
        cls: type = type(obj)
        values = tuple(getattr(obj, name) for name in _init_fields(cls, self.whole))
        return _record, (cls, values, self.whole)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, shared: tuple[Any, ...]) -> None:
        super().__init__(file)
        self.shared = shared

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == "_shared":
            return self.shared.__getitem__
        return super().find_class(module, name)


def _reduce_tensor(t: torch.Tensor) -> tuple[Any, ...]:
    if not t.is_cpu or t.layout != torch.strided or t.is_quantized \
            or t.is_conj() or t.is_neg() or type(t) is not torch.Tensor:
        raise _Unsupported(f"{t.device.type} {t.layout} tensor")
    size = t.element_size()
    storage = t.untyped_storage()
    numel = storage.nbytes() // size if size else 0
    # the whole storage, so a view keeps its strides and offset (a layout's base); its bytes
    # read straight from memory: four tensor operations fewer than a NumPy round trip
    data = ctypes.string_at(storage.data_ptr(), numel * size) if numel else b""
    return _tensor, (data, t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset(),
                     numel, t.requires_grad)


class CallCodec:
    """Writes calls of one item as bytes: the repro function and the signature, the same for
    every call of an item, are pickled once (:meth:`head`, the signature referred to from each
    call's bytes by number), each call at :meth:`dump`. A refill (``Call.origin``) is kept as
    its drawn call, pickled once into the head with its fills, and which refill it is: its
    tensors are made again where the repro is read (a drawn call's refills cost one pickling
    of a call between them, not one each)."""

    def __init__(self) -> None:
        self._shared: tuple[Any, ...] = (None, None, None)  # repro, signature, drawn call
        self._unkept: Any = None  # the drawn call that could not be pickled (its refills whole)
        self._head: bytes | None = b""
        self._buf = io.BytesIO()
        self._pickler = _Pickler(self._buf)  # one per head: its shared objects

    def head(self, repro: Callable[[Any], str], call: Any) -> bytes | None:
        """The bytes of ``call``'s repro function and signature (and, for a refill, its drawn
        call); ``None`` where they cannot be pickled (a lambda)."""
        sig = getattr(call, "sig", None)
        origin = getattr(call, "origin", None)
        drawn = origin[0] if origin is not None and origin[0] is not self._unkept else None
        kept, kept_sig, kept_drawn = self._shared  # a call that is no refill keeps the
        # drawn call of the refills around it in the head: it is pickled once for them all
        if kept is not repro or kept_sig is not sig or (drawn is not None
                                                         and kept_drawn is not drawn):
            self._head = self._pickled_head((repro, sig, drawn))
            if self._head is None and drawn is not None:  # its refills are kept whole
                self._unkept = drawn
                self._head = self._pickled_head((repro, sig, None))
            self._pickler = _Pickler(self._buf, self._shared[1:2])
        return self._head

    def _pickled_head(self, shared: tuple[Any, ...]) -> bytes | None:
        self._shared = shared  # held: a head is asked for by the identity of these objects
        buf = io.BytesIO()
        try:
            _Pickler(buf, whole=True).dump(shared)
        except Exception:  # noqa: BLE001 - rendered at once instead (asked once per head)
            return None
        return buf.getvalue()

    def dump(self, repro: Callable[[Any], str], call: Any) -> bytes | None:
        """``(repro, call)`` as bytes for :func:`render_call`; ``None`` where some part of them
        cannot be kept so (then render the repro now)."""
        head = self.head(repro, call)
        if head is None:
            return None
        origin = getattr(call, "origin", None)
        if origin is not None and origin[0] is self._shared[2]:
            body = pickle.dumps((_REFILL_TAG, *origin[1:]), protocol=pickle.HIGHEST_PROTOCOL)
            return b"%d\n" % len(head) + head + body
        buf = self._buf  # one buffer and pickler for every call (their set-up cost a tenth)
        buf.seek(0)
        buf.truncate()
        self._pickler.clear_memo()
        try:
            self._pickler.dump(call)
        except Exception:  # noqa: BLE001 - a device tensor, a sparse one: rendered at once
            return None
        return b"%d\n" % len(head) + head + buf.getvalue()


def dump_call(repro: Callable[[Any], str], call: Any) -> bytes | None:
    """:meth:`CallCodec.dump` of a codec of its own (nothing shared with earlier calls)."""
    return CallCodec().dump(repro, call)


def render_call(data: bytes) -> str:
    """The repro of a call kept by :meth:`CallCodec.dump`."""
    size, _, rest = data.partition(b"\n")
    n = int(size)
    repro, sig, drawn = pickle.loads(rest[:n])  # noqa: S301 - our own marker, written by
    # this process
    call = _Unpickler(io.BytesIO(rest[n:]), (sig,)).load()
    if isinstance(call, tuple) and call[:1] == (_REFILL_TAG,):
        _, i, move, dtype = call
        call = drawn.refill(i, move=move, dtype=dtype)
    return str(repro(call))
