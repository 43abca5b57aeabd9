"""The recorder's hook that keeps the aten calls it sees as corpus specs: :func:`encode` (one
argument as JSON, :func:`conformance.inputs.corpus.decode` reads it back) and :class:`Collector`
(deduplicated per overload and tensor dtypes, then selected per overload). Shared by the build
(:mod:`conformance.corpus_tools.build`) and the derived backward calls' worker
(:mod:`conformance.corpus_tools.derive`), which import it and never each other.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

#: Distinct specs kept per (overload, tensor dtypes) while recording.
PER_DTYPE = 4


#: Specs per overload in the file.
CAP = 12


#: Most tensor elements (all arguments together) of a kept spec.
MAX_NUMEL = 1 << 16


class Unencodable(Exception):
    """An argument the corpus cannot describe (sparse or non-CPU tensor, a Python object)."""


def _float(x: float) -> Any:
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "inf" if x > 0 else "-inf"}
    return x


def _range(t: Any) -> list[float] | None:
    """``[min, max]`` of a tensor's values (finite ones for floats; none for complex)."""
    import torch

    if t.numel() == 0 or t.is_complex():
        return None
    with torch.no_grad():
        flat = t.detach().reshape(-1)
        if t.is_floating_point():
            flat = flat[torch.isfinite(flat)]
            if flat.numel() == 0:
                return None
            lo, hi = float(flat.min()), float(flat.max())
            return [lo, hi]
        flat = flat.to(torch.int64)
        return [int(flat.min()), int(flat.max())]


#: Most elements of an integer tensor whose values are kept exactly (see :func:`encode`).
MAX_EXACT = 4096


def encode(value: Any, *, exact: bool = False) -> Any:
    """One argument value as JSON (:func:`conformance.inputs.corpus.decode` reads it back). ``exact``:
    integer and bool tensors keep their values (a backward call's ``indices`` come from its
    forward: a range would not keep them in their pooling windows); more than
    :data:`MAX_EXACT` elements are :class:`Unencodable` then."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.device.type != "cpu" or value.is_quantized \
                or type(value) not in (torch.Tensor, torch.nn.Parameter):
            raise Unencodable(f"{value.layout} {value.device.type} {type(value).__name__}")
        out: dict[str, Any] = {"tensor": str(value.dtype).removeprefix("torch."),
                               "shape": list(value.shape)}
        stride = list(value.stride())
        if value.is_contiguous() is False or value.storage_offset():
            out["stride"] = stride
            out["offset"] = int(value.storage_offset())
        elif any(s != c for s, c, n in zip(stride, _contig(value.shape), value.shape, strict=True)
                 if n > 1):
            out["stride"] = stride
        rng = _range(value)
        if rng is not None:
            out["range"] = rng
        if exact and not (value.is_floating_point() or value.is_complex()):
            if value.numel() > MAX_EXACT:
                raise Unencodable("an integer tensor of a backward call too large to keep")
            out["values"] = value.detach().contiguous().reshape(-1).to(torch.int64).tolist()
        return out
    if isinstance(value, (list, tuple)):
        return [encode(v, exact=exact) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, complex):
        return {"complex": [_float(value.real), _float(value.imag)]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": value.type}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Generator):
        return {"generator": None}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise Unencodable("symbolic value")
    raise Unencodable(type(value).__name__)


def _contig(shape: Sequence[int]) -> list[int]:
    from conformance.inputs.corpus import contiguous_strides

    return list(contiguous_strides(shape))


def _numel(enc: Any) -> int:
    if isinstance(enc, dict) and "tensor" in enc:
        return math.prod(enc["shape"])
    if isinstance(enc, list):
        return sum(_numel(e) for e in enc)
    return 0


def _dtypes(enc: Any) -> tuple[str, ...]:
    if isinstance(enc, dict) and "tensor" in enc:
        return (enc["tensor"],)
    if isinstance(enc, list):
        return tuple(d for e in enc for d in _dtypes(e))
    return ()


class Collector:
    """The recorder's ``on_call`` hook: encodes each aten call made while :attr:`active`."""

    def __init__(self, *, per_dtype: int = PER_DTYPE, max_numel: int = MAX_NUMEL) -> None:
        self.per_dtype = per_dtype
        self.max_numel = max_numel
        self.origin = ""
        self.active = False
        #: overload -> (tensor dtypes) -> spec JSON text -> record
        self.calls: dict[str, dict[tuple[str, ...], dict[str, dict[str, Any]]]] = {}
        self.seen = 0
        self.unencodable = 0

    def __call__(self, level: str, name: str, func: Any, args: tuple[Any, ...],
                 kwargs: Mapping[str, Any]) -> None:
        if not self.active or "::" in name:
            return
        self.seen += 1
        import torch
        from torch._dispatch.python import no_python_dispatcher
        from torch.utils._python_dispatch import _disable_current_modes

        names = [a.name for a in func._schema.arguments]
        # a call the autograd engine makes: its integer arguments came from the forward
        exact = torch._C._current_autograd_node() is not None
        try:
            # the ranges are computed with torch: not through the recorder's own modes
            with _disable_current_modes(), no_python_dispatcher():
                pairs = [[names[i] if i < len(names) else f"arg{i}", encode(v, exact=exact)]
                         for i, v in enumerate(args)]
                pairs += [[k, encode(v, exact=exact)] for k, v in kwargs.items()]
        except Unencodable:
            self.unencodable += 1
            return
        if sum(_numel(v) for _, v in pairs) > self.max_numel:
            return
        dtypes = tuple(d for _, v in pairs for d in _dtypes(v))
        group = self.calls.setdefault(name, {}).setdefault(dtypes, {})
        if len(group) >= self.per_dtype:
            return
        key = json.dumps(pairs, sort_keys=True)
        if key not in group:
            group[key] = {"overload": name, "origin": self.origin, "args": pairs}

    def seed(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Start from records already selected (an existing corpus file's)."""
        for rec in records:
            pairs = rec["args"]
            dtypes = tuple(d for _, v in pairs for d in _dtypes(v))
            group = self.calls.setdefault(rec["overload"], {}).setdefault(dtypes, {})
            group.setdefault(json.dumps(pairs, sort_keys=True), dict(rec))

    @contextmanager
    def recording(self, origin: str) -> Iterator[None]:
        self.origin, self.active = origin, True
        try:
            yield
        finally:
            self.active = False

    def select(self, cap: int = CAP) -> list[dict[str, Any]]:
        """At most ``cap`` records per overload: round-robin over (origin kind, dtypes) groups,
        smallest first within each; overloads by name."""
        out: list[dict[str, Any]] = []
        for name in sorted(self.calls):
            groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
            for dtypes, recs in self.calls[name].items():
                for rec in recs.values():
                    kind = rec["origin"].split(":", 1)[0]
                    groups.setdefault((kind, dtypes), []).append(rec)
            queues = [sorted(g, key=lambda r: sum(_numel(v) for _, v in r["args"]))
                      for _, g in sorted(groups.items(), key=lambda kv: (kv[0][0] != "model",
                                                                         kv[0]))]
            picked: list[dict[str, Any]] = []
            while len(picked) < cap and any(queues):
                for q in queues:
                    if q and len(picked) < cap:
                        picked.append(q.pop(0))
            out.extend(picked)
        return out
