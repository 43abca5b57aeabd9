"""What each overload decomposes into under ``torch.compile``, and which of those ops a backend
lacks: the static twin of the ``compile`` check's ``unsupported``/``missing_kernel``.

A compiled call reaches the backend through the ops AOTAutograd's graph calls, not the op the
user called: CompositeImplicitAutograd kernels are traced through (every compile backend), and
a decomposition table replaces more ops by Python decompositions into core ATen (``inductor`` and
``aot_eager_decomp_partition``: Inductor's ``select_decomp_table()``; ``core_aten``: torch.export's
``core_aten_decompositions()``; ``aot_eager``: no table). An op the graph calls that the backend
has no kernel for fails the compiled call although eager works.

The ops a decomposition calls are read by running it, not its source: decompositions branch on
dtypes, ranks and arguments, call helpers and further decompositions, so only a trace says what
one call reaches (docs/decisions.md#decomposition-twin). :func:`trace` runs one call under
``make_fx`` with fake tensors (no kernel computes), functionalized as AOTAutograd does
(``relu_`` becomes ``relu`` and ``copy_``), and names the ops of the graph. The calls to trace
come from the harness's strategies (``conformance.trace.decompositions``); an overload no drawn
call traced is counted and shown (``calls`` None), never taken as needing nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opdb.dispatch import Status
from opdb.errors import InputError

#: Decomposition table applied by each compile backend (``--compile-backend``), by name:
#: ``aot_eager`` applies none (CompositeImplicitAutograd kernels only).
TABLES: Mapping[str, str] = {
    "aot_eager": "none",
    "aot_eager_decomp_partition": "inductor",
    "inductor": "inductor",
    "core_aten": "core_aten",
}

#: Sources of an overload's decomposition.
TABLE = "table"
COMPOSITE_IMPLICIT = "composite_implicit"

#: Bumped when what a cached entry means changes (how calls are traced or drawn; 3: on the
#: backend's device).
CACHE_FORMAT = 3


@dataclass(frozen=True)
class Decomposition:
    """One overload that a compiled call decomposes: from a decomposition ``table`` or its
    CompositeImplicitAutograd kernel (``source``); ``calls``: the ATen overloads (and other
    namespaces' ops, ``prims.``-prefixed) the traced graph calls, or None where no drawn call
    traced (``reason`` says why); ``example``: the call traced (a decomposition branches on
    dtypes and arguments: what it calls is said of that call); ``device``: the device its fake
    tensors were on (the backend's; ``cpu`` where no call traced there: CPU's branch)."""

    overload: str
    source: str
    calls: tuple[str, ...] | None
    reason: str | None = None
    example: str | None = None
    device: str = "cpu"

    @property
    def traced(self) -> bool:
        return self.calls is not None

    def missing(self, statuses: Mapping[str, Status]) -> tuple[str, ...]:
        """The ops the decomposition calls that the backend has no kernel for (an op outside
        the op database, another namespace's, is not judged; nor the overload itself, where
        the traced call did not decompose it: that gap is its own status, eager's too)."""
        return tuple(c for c in self.calls or ()
                     if c != self.overload and c in statuses and not statuses[c].available)

    def as_json(self) -> dict[str, Any]:
        return {"overload": self.overload, "source": self.source,
                "calls": list(self.calls) if self.calls is not None else None,
                "reason": self.reason, "example": self.example, "device": self.device}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Decomposition:
        calls = obj["calls"]
        return cls(str(obj["overload"]), str(obj["source"]),
                   tuple(calls) if calls is not None else None, obj.get("reason"),
                   obj.get("example"), str(obj.get("device", "cpu")))


def table_name(compile_backend: str) -> str:
    """The decomposition table ``compile_backend`` applies (:data:`TABLES`); InputError for a
    compile backend whose table is not known here."""
    try:
        return TABLES[compile_backend]
    except KeyError:
        raise InputError(f"--decompositions: no known decomposition table for compile backend "
                         f"{compile_backend!r} (known: {', '.join(TABLES)})") from None


def load_table(table: str) -> dict[Any, Callable[..., Any]]:
    """The decomposition table named ``table`` (a value of :data:`TABLES`). ``inductor`` imports
    Inductor (seconds): asked only by ``conformance coverage --decompositions``."""
    if table == "none":
        return {}
    if table == "core_aten":
        from torch._decomp import core_aten_decompositions

        return dict(core_aten_decompositions())
    if table == "inductor":
        from torch._inductor.decomposition import select_decomp_table

        return dict(select_decomp_table())
    raise ValueError(f"unknown decomposition table {table!r}")


def overload_key(op: Any) -> str | None:
    """The op database's key of an ``OpOverload`` (``aten.addr.default`` -> ``addr``,
    ``aten.add.Tensor`` -> ``add.Tensor``); another namespace's op keeps its namespace
    (``prims.convert_element_type``); None for what is not an ``OpOverload``."""
    schema = getattr(op, "_schema", None)
    if schema is None or not hasattr(op, "_overloadname"):
        return None
    ns, _, base = schema.name.partition("::")
    over = op._overloadname
    name = base if over == "default" else f"{base}.{over}"
    return name if ns == "aten" else f"{ns}.{name}"


def decomposed(names: Iterable[str], table: Mapping[Any, Any]) -> dict[str, str]:
    """The overloads among ``names`` a compiled call decomposes, each with its source: a
    CompositeImplicitAutograd kernel (traced through by every compile backend, whatever the
    table) or an entry of ``table``."""
    from opdb.dispatch import registered

    wanted = set(names)
    implicit = registered("CompositeImplicitAutograd")
    in_table = {k for k in map(overload_key, table) if k is not None}
    out: dict[str, str] = {}
    for name in sorted(wanted):
        if name in implicit:
            out[name] = COMPOSITE_IMPLICIT
        elif name in in_table:
            out[name] = TABLE
    return out


def _faked(mode: Any, value: Any, device: str) -> Any:
    """``value`` with every tensor (lists included) a fake tensor of ``mode`` on ``device``:
    made from CPU's tensor and moved under the mode, so the device does no work."""
    import torch

    if isinstance(value, torch.Tensor):
        return mode.from_tensor(value).to(device)
    if isinstance(value, list | tuple):
        return type(value)(_faked(mode, v, device) for v in value)
    return value


def trace(packet: Any, args: list[Any], kwargs: Mapping[str, Any],
          table: Mapping[Any, Any], device: str = "cpu") -> tuple[str, ...]:
    """The ops one call of ``packet`` (an ``OpOverload``) reaches in a compiled graph, sorted:
    traced by ``make_fx`` on fake tensors of ``device`` (``args``/``kwargs`` hold CPU tensors)
    with ``table`` applied, functionalized as AOTAutograd does (mutations removed, views kept).
    The device matters: a composite branches on it (``lstm.input`` takes the mkldnn path for
    CPU tensors only). Raises what the trace raises."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    # keyword arguments go in as inputs too: an out= tensor captured by the function would
    # be a non-functional tensor that functionalization refuses to write
    n, keys = len(args), list(kwargs)

    def fn(*a: Any) -> Any:
        args, kwargs = a[:n], dict(zip(keys, a[n:], strict=True))
        # a CompositeImplicitAutograd kernel runs first, as under AOTAutograd (above
        # functionalization): functionalize alone meets an in-place or out= composite itself
        # (``__iand__``, ``absolute_``, ``arccos.out``) and refuses it
        # (make_fx's torch-function mode would turn the kernel's call back into the op's own)
        with torch._C.DisableTorchFunction():
            got = packet.decompose(*args, **kwargs)
        return packet(*args, **kwargs) if got is NotImplemented else got

    functional = torch.func.functionalize(fn, remove="mutations")
    mode = FakeTensorMode()
    with mode:
        inputs = [_faked(mode, v, device) for v in (*args, *kwargs.values())]
        graph = make_fx(functional, decomposition_table=dict(table),
                        tracing_mode="real")(*inputs)
    found = {overload_key(n.target) for n in graph.graph.nodes if n.op == "call_function"}
    return tuple(sorted(k for k in found if k is not None))


def lacking(decomps: Iterable[Decomposition], statuses: Mapping[str, Status]
            ) -> list[dict[str, Any]]:
    """Rows for the coverage JSON: each decomposed overload, what its traced graph calls and
    which of those the backend lacks (``missing``; None where not traced)."""
    rows = []
    for d in decomps:
        rows.append({**d.as_json(),
                     "missing": list(d.missing(statuses)) if d.traced else None})
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts over :func:`lacking`'s rows: decomposed, traced, untraced, needing an op the
    backend lacks."""
    traced = [r for r in rows if r["calls"] is not None]
    return {"decomposed": len(rows), "traced": len(traced), "untraced": len(rows) - len(traced),
            "needs_missing": sum(1 for r in traced if r["missing"])}


def cache_key(table: str, torch_version: str, device: str = "cpu") -> str:
    return f"{table}-{device}-torch{torch_version}-v{CACHE_FORMAT}"


def read_cache(path: str | os.PathLike[str], key: str) -> dict[str, Decomposition] | None:
    """The decompositions cached at ``path`` under ``key``; None if absent, unreadable or
    another key (another torch, table or format: traced again)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("key") != key:
            return None
        return {e["overload"]: Decomposition.from_json(e) for e in data["decompositions"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_cache(path: str | os.PathLike[str], key: str,
                decomps: Mapping[str, Decomposition]) -> None:
    """Write ``decomps`` to ``path`` under ``key`` (its folder made); a cache that cannot be
    written is not an error (the next run traces again)."""
    data = {"key": key, "decompositions": [d.as_json() for d in decomps.values()]}
    try:
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass
