"""The op database: every overload of ``native_functions.yaml`` (autogen'd ones included),
their derivatives, and the aten ops the live dispatcher knows beyond the YAML."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from opdb import cache
from opdb.derivatives import _Resolver, find_derivatives_yaml, parse_derivatives
from opdb.errors import InputError
from opdb.model import Derivative, Overload, SourceLocation, family_of, kind_of, split_name
from opdb.native import AutogenRequest, generated_tags, read_native_functions

Autograd = Literal["formula", "decomposition", "not_differentiable", "out_unsupported", "unknown"]


def packaged_native_functions() -> Path:
    """The ``native_functions.yaml`` packaged with the installed torch (``torchgen/packaged``)."""
    import importlib.util

    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        raise InputError("torchgen is not installed; pass --native-functions PATH")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "packaged" / "ATen" / "native" / "native_functions.yaml"
    if not path.is_file():
        raise InputError("the installed torch packages no native_functions.yaml", file=str(path))
    return path


class OpDB:
    """Overloads in YAML order (autogen'd ones right after their source entry)."""

    def __init__(
        self,
        overloads: tuple[Overload, ...],
        derivatives: Mapping[str, Derivative],
        *,
        native_functions_path: Path,
        derivatives_path: Path | None,
        extra_dispatcher_ops: tuple[str, ...],
        unresolved_autogen: tuple[tuple[str, SourceLocation], ...] = (),
    ) -> None:
        self.overloads = overloads
        self.derivatives: Mapping[str, Derivative] = MappingProxyType(dict(derivatives))
        self.native_functions_path = native_functions_path
        self.derivatives_path = derivatives_path
        self.extra_dispatcher_ops = extra_dispatcher_ops
        self.unresolved_autogen = unresolved_autogen
        self._by_name = {ov.name: ov for ov in overloads}
        fams: dict[str, list[Overload]] = {}
        for ov in overloads:
            fams.setdefault(ov.family, []).append(ov)
        order = {"functional": 0, "out": 1, "inplace": 2}
        self.families: Mapping[str, tuple[Overload, ...]] = MappingProxyType(
            {f: tuple(sorted(ovs, key=lambda o: order[o.kind])) for f, ovs in fams.items()}
        )

    def __reduce__(self) -> tuple[object, ...]:
        # pickled (opdb.cache) as its constructor's arguments; the indexes are rebuilt
        return (_restore, (self.overloads, dict(self.derivatives), self.native_functions_path,
                           self.derivatives_path, self.extra_dispatcher_ops,
                           self.unresolved_autogen))

    def __getitem__(self, name: str) -> Overload:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Overload]:
        return iter(self.overloads)

    def __len__(self) -> int:
        return len(self.overloads)

    def get(self, name: str) -> Overload | None:
        return self._by_name.get(name)

    def autograd(self, name: str) -> Autograd:
        """How autograd handles an overload: ``formula`` (derivatives.yaml, directly or for the
        in-place variant through its functional sibling), ``decomposition`` (no formula, but a
        CompositeImplicitAutograd kernel: differentiable through the ops it calls),
        ``out_unsupported`` (out= overloads: autograd rejects them when an input requires grad),
        (a CompositeImplicitAutograd op with a formula, such as ``matmul``, uses the formula
        only on a backend that registers its own kernel; see the static coverage),
        ``not_differentiable``, or ``unknown`` when no derivatives.yaml was found."""
        ov = self[name]
        if ov.kind == "out":
            return "out_unsupported"
        if "CompositeImplicitAutograd" in ov.dispatch:
            return "decomposition"
        d = self.derivatives.get(name)
        if d is not None:
            return "formula" if d.differentiable else "not_differentiable"
        if self.derivatives_path is None:
            return "unknown"
        return "not_differentiable"


def _restore(
    overloads: tuple[Overload, ...],
    derivatives: Mapping[str, Derivative],
    native_functions_path: Path,
    derivatives_path: Path | None,
    extra_dispatcher_ops: tuple[str, ...],
    unresolved_autogen: tuple[tuple[str, SourceLocation], ...],
) -> OpDB:
    return OpDB(overloads, derivatives, native_functions_path=native_functions_path,
                derivatives_path=derivatives_path, extra_dispatcher_ops=extra_dispatcher_ops,
                unresolved_autogen=unresolved_autogen)


def _resolve_autogen(
    requests: list[AutogenRequest], known: set[str]
) -> tuple[dict[str, list[Overload]], list[tuple[str, SourceLocation]]]:
    """Schemas of ``autogen:`` overloads come from the live dispatcher (they have no YAML entry)."""
    import torch

    find = torch._C._dispatch_find_schema_or_throw
    by_source: dict[str, list[Overload]] = {}
    unresolved: list[tuple[str, SourceLocation]] = []
    yaml_names = set(known)
    for req in requests:
        src = req.source
        if req.name in known and req.name not in yaml_names:
            continue  # several entries may autogen the same overload (_foreach_lerp.List_out)
        if req.name in known:
            raise InputError(
                f"autogen name {req.name!r} of {src.name!r} has an entry of its own",
                file=src.loc.file,
                line=req.line,
            )
        known.add(req.name)
        base, overload_name = split_name(req.name)
        try:
            schema = find(f"aten::{base}", overload_name).schema()
        except RuntimeError:
            unresolved.append((req.name, SourceLocation(src.loc.file, req.line)))
            continue
        family, inplace_name = family_of(base)
        kind = kind_of(schema, inplace_name)
        ov = Overload(
            name=req.name,
            base=base,
            overload_name=overload_name,
            schema_str=str(schema).split("::", 1)[-1],
            kind=kind,
            family=family,
            variants=frozenset({"function"}),
            tags=generated_tags(src, kind, inplace_name),
            autogen=True,
            autogen_from=src.name,
            loc=SourceLocation(src.loc.file, req.line),
        )
        ov.__dict__["schema"] = schema
        by_source.setdefault(src.name, []).append(ov)
    return by_source, unresolved


def load(
    native_functions: str | os.PathLike[str] | None = None,
    *,
    derivatives: str | os.PathLike[str] | None = None,
    use_cache: bool = True,
) -> OpDB:
    """Load the op database.

    ``native_functions``: a path, or None for the copy packaged with the installed torch.
    ``derivatives``: a path, or None to look beside ``native_functions.yaml``
    (:func:`opdb.derivatives.find_derivatives_yaml`); when none is found,
    ``db.derivatives_path`` is None and autograd information is ``unknown``.
    ``use_cache``: read and write the on-disk cache (:mod:`opdb.cache`; also off with
    ``OPCONFORM_CACHE_DIR=off``).
    Bad input raises :class:`~opdb.errors.InputError` naming the file and line.
    """
    aten_ops = [n for n in torch_op_names() if n.startswith("aten::")]
    key = _memo_key(native_functions, derivatives, len(aten_ops))
    if key is not None and key in _MEMO:
        return _MEMO[key]
    # The parse makes ~100k small objects (unpickling the cached database as many); with
    # torch's heap alive, the cyclic collector's passes over them cost more than the parse
    # itself (0.4 s vs 0.14 s). Nothing here makes cycles.
    # Once made, they live as long as the process (memoized): frozen out of the collector's
    # generations, so its later passes skip them (a full pass over them cost the coverage
    # command 0.12 s, the engine a share of every collection).
    enabled = gc.isenabled()
    gc.disable()
    try:
        db = _cached_or_load(native_functions, derivatives, aten_ops, use_cache=use_cache)
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    if key is not None:
        _MEMO[key] = db
    return db


def torch_op_names() -> list[str]:
    """Every operator the live dispatcher knows (``aten::add.Tensor``)."""
    import torch

    return list(torch._C._dispatch_get_all_op_names())


#: load() results within one process, keyed by the files (path, size, mtime) and the number of
#: ``aten`` operators the dispatcher knows (autogen'd schemas and extra ops come from them; ops
#: other namespaces register later, e.g. ``c10d_functional`` when a plugin imports
#: torch.distributed, do not make the YAML be parsed again).
_MEMO: dict[tuple[object, ...], OpDB] = {}


def _memo_key(
    native_functions: str | os.PathLike[str] | None,
    derivatives: str | os.PathLike[str] | None,
    aten_ops: int,
) -> tuple[object, ...] | None:
    parts: list[object] = [aten_ops]
    for p in (native_functions, derivatives):
        if p is None:
            parts.append(None)
            continue
        try:
            st = os.stat(p)
        except OSError:
            return None  # let _load report it
        parts.append((os.path.realpath(p), st.st_size, st.st_mtime_ns))
    return tuple(parts)


def _cached_or_load(
    native_functions: str | os.PathLike[str] | None,
    derivatives: str | os.PathLike[str] | None,
    aten_ops: list[str],
    *,
    use_cache: bool,
) -> OpDB:
    """The database from the on-disk cache (:mod:`opdb.cache`) where it holds one built from
    these files by this torch, else parsed (and cached)."""
    nf_path = Path(native_functions) if native_functions is not None else packaged_native_functions()
    if not nf_path.is_file():
        raise InputError("native_functions.yaml not found", file=str(nf_path))
    d_path: Path | None
    if derivatives is not None:
        d_path = Path(derivatives)
        if not d_path.is_file():
            raise InputError("derivatives.yaml not found", file=str(d_path))
    else:
        d_path = find_derivatives_yaml(nf_path)
    if not use_cache:
        return _load(nf_path, d_path, aten_ops)
    cache_key = cache.key(nf_path, d_path, aten_ops)
    db = cache.read(cache_key)
    if isinstance(db, OpDB):
        return db
    db = _load(nf_path, d_path, aten_ops)
    cache.write(cache_key, db)
    return db


def _load(nf_path: Path, d_path: Path | None, aten_ops: list[str]) -> OpDB:
    yaml_overloads, requests = read_native_functions(nf_path)
    known = {ov.name for ov in yaml_overloads}
    generated, unresolved = _resolve_autogen(requests, known)
    overloads: list[Overload] = []
    for ov in yaml_overloads:
        overloads.append(ov)
        overloads.extend(generated.get(ov.name, ()))
    by_name = {ov.name: ov for ov in overloads}
    derivs = (
        parse_derivatives(d_path, by_name, _Resolver(overloads)) if d_path is not None else {}
    )
    extra = tuple(sorted(
        n[len("aten::"):] for n in aten_ops if n[len("aten::"):] not in by_name
    ))
    return OpDB(
        tuple(overloads),
        derivs,
        native_functions_path=nf_path,
        derivatives_path=d_path,
        extra_dispatcher_ops=extra,
        unresolved_autogen=tuple(unresolved),
    )


__all__ = ["OpDB", "load", "packaged_native_functions"]
