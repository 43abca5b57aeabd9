"""Per-op data: input hints and tolerance overrides — records, loading and validation, in one place.

* ``opdb/data/hints.yaml``       — argument-name conventions and per-overload input hints
* ``opdb/data/tolerances.yaml``  — per-overload (and per-dtype) rtol/atol overrides

Both are data the engine reads and never branches on. Every entry is read key by key; an unknown
key, a wrong type, a name that is not an overload of the op database (or a ``*`` glob that
matches none), an argument the named overloads do not have, or an unknown dtype is an
:class:`~opdb.errors.InputError` naming the file and line — for the packaged files and for
user-supplied ``--hints`` / ``--tolerances`` files alike. Packaged files are found with
:mod:`importlib.resources`.

:func:`read_yaml` (YAML with the line of every mapping) is shared with the engine's
expected-failures data.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

import yaml

from opdb.dtypes import DTYPE_NAMES, dtype_name
from opdb.errors import InputError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import torch

    from opdb.db import OpDB

    DataPath: TypeAlias = str | Path | Traversable

#: The packaged data files.
HINTS_FILE: Traversable = resources.files("opdb") / "data" / "hints.yaml"
TOLERANCES_FILE: Traversable = resources.files("opdb") / "data" / "tolerances.yaml"

LINE = "__line__"  # key under which read_yaml records a mapping's line


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ArgHint:
    """What the hints data says about one argument (all optional)."""

    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: float | None = None
    shape: tuple[Any, ...] | None = None  # symbolic shape for a tensor (letters are shared sizes)
    dtypes: tuple[str, ...] | None = None  # dtypes a tensor argument may take (e.g. indices)
    length: int | None = None  # list length for int[] arguments
    device: str | None = None  # "cpu": a tensor argument that stays on CPU (as on CUDA)
    extremes: bool = True  # False: no dtype extremes (iinfo/finfo min/max, inf) in this argument
    #: an index tensor: positions into self along this int argument, or along this fixed dim
    #: (an int: nll_loss's target, class positions along self's dim 1)
    along: str | int | None = None
    #: with ``along``: not positions but one slice of ``self`` per position of the named index
    #: tensor (index_add's source): self's shape, its size along ``dim`` that tensor's length
    length_of: str | None = None
    #: a Tensor[] that is empty in about half the calls: an optional state list the other
    #: arguments decide on (fused Adam's max_exp_avg_sqs without amsgrad, fused SGD's
    #: momentum_buffer_list without momentum), which drawn non-empty CPU always refuses there
    maybe_empty: bool = False


_NO_ARGS: Mapping[str, ArgHint] = MappingProxyType({})


@dataclass(frozen=True)
class TieHint:
    """An output of positions into ``self`` along ``dim`` that is not unique when elements tie
    (``topk``, ``sort``, ``kthvalue``...): compared by the values it picks, not as numbers.

    ``output`` is the output's position among the overload's returns (resolved from its name);
    ``keepdim``: the overload has a ``keepdim`` argument (without it the output keeps ``dim``);
    ``unless``: a bool argument that, when true, makes the positions unique (``stable``)."""

    output: int
    name: str
    keepdim: bool = False
    unless: str | None = None


#: How each kind of indexed write places its source elements (``collisions: {writes: KIND}``):
#: the argument holding the positions and the one holding the values written
#: (:mod:`conformance.compare.collisions` computes the positions).
COLLISION_WRITES: Mapping[str, tuple[str, str]] = MappingProxyType({
    "scatter": ("index", "src"),  # along dim, index shaped like the source's used part
    "index_copy": ("index", "source"),  # slices of source along dim, to positions in index
    "index_put": ("indices", "values"),  # advanced indexing, values broadcast to its shape
    "unpool": ("indices", "self"),  # flat positions in each (batch, channel) plane
    "put": ("index", "source"),  # flat positions in self
})


@dataclass(frozen=True)
class CollisionHint:
    """An overload that writes source elements to positions an index argument gives, without
    accumulating (``scatter_.src``, ``index_copy``, ``index_put`` with ``accumulate=False``,
    ``max_unpool``): where two land on one element, which of them stays is unspecified
    (documented for scatter_, index_put_ and index_copy_; CUDA's and XLA's writes race), so
    that element is compared by whether it holds one of the values written to it.

    ``writes`` is a key of :data:`COLLISION_WRITES`; ``unless``: a bool argument that, when
    true, makes the writes accumulate (``accumulate``): then the result is compared as ever."""

    writes: str
    unless: str | None = None


@dataclass(frozen=True)
class OpHints:
    """Hints for one overload: per argument, merged global-by-name then per-op."""

    args: Mapping[str, ArgHint] = field(default_factory=lambda: _NO_ARGS)
    max_side: int | None = None
    values: bool = True  # False: result values are unspecified (empty_like): dtype/shape only
    result_on_device: bool = True  # False: the op returns CPU tensors by design
    ties: TieHint | None = None  # an indices output that is ambiguous under ties
    #: indexed writes whose colliding elements may keep any of the values written there
    collisions: CollisionHint | None = None
    #: CPU (the oracle) kills the process on some drawn inputs: each item runs in a forked
    #: child, so a crash costs the child rather than a whole test worker
    cpu_crashes: bool = False
    #: CPU (the oracle) ignores its inputs' strides (walks data_ptr() as numel() contiguous
    #: elements): its answer for non-contiguous views is no contract, so the noncontiguous
    #: check does not apply (a backend computing on the views correctly would fail it)
    cpu_ignores_strides: bool = False
    #: CPU (the oracle) may never return on a size-0 input: no size-0 side is drawn for the
    #: overload's schema shapes (an item would spend the per-call timeout instead of a verdict)
    nonempty: bool = False
    #: optional arguments of which a call gives exactly one, the others None: torch refuses
    #: a call that gives none or several (upsample ``.vec``: ``output_size``, ``scale_factors``)
    one_of: tuple[str, ...] = ()

    def get(self, name: str) -> ArgHint:
        return self.args.get(name, ArgHint())


@dataclass(frozen=True)
class Hints:
    """All hints: global argument conventions plus per-overload entries (and where each is)."""

    arguments: Mapping[str, ArgHint] = field(default_factory=lambda: _NO_ARGS)
    ops: Mapping[str, OpHints] = field(default_factory=dict)
    source: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def for_op(self, name: str) -> OpHints:
        own = self.ops.get(name)
        if own is None:
            return OpHints(args=self.arguments)
        return replace(own, args={**self.arguments, **own.args})


@dataclass(frozen=True)
class Tolerance:
    """One override: these overloads (and dtypes; ``None`` = all) compare with ``rtol``/``atol``
    and/or may differ by ``scale_ulps`` ulps of the result dtype at the magnitude of the inputs
    feeding each element (``None``: the entry does not say)."""

    names: frozenset[str]
    dtypes: tuple[str, ...] | None
    rtol: float | None
    atol: float | None
    reason: str
    file: str
    line: int | None
    scale_ulps: int | None = None
    #: ``True``: where CPU's element is not finite (inf or NaN, either part of a complex one),
    #: any non-finite element of the backend's agrees with it (``nonfinite: unspecified``)
    nonfinite_unspecified: bool = False
    #: ``True``: a result element fed by an input element that is inf or NaN is left open by the
    #: contract (``nonfinite_inputs: unspecified``: complex ``pow``, for which C99 Annex G gives
    #: no special values); arbitration counts it as unspecified whatever either side gives
    nonfinite_inputs_unspecified: bool = False
    #: a gradient (autograd check) whose values miss ``rtol``/``atol`` still agrees when it is
    #: at most this many times as far from the same gradient computed in float64/complex128 as
    #: CPU's own gradient is (largest element distance); ``None``: the entry does not say
    grad_error_factor: float | None = None
    #: what ``scale_ulps`` counts ulps at (``scale:``): ``inputs`` (the default: the inputs
    #: feeding each result element), ``all_inputs`` (every input element at every result
    #: element: a transform, each result element sums all inputs, even an input of the
    #: result's own shape) or ``terms`` (the sum of the magnitudes of the terms each result
    #: element sums: the same call on the inputs' absolute values, in float64; a GEMM's
    #: ``|A| @ |B|``, the quantity the standard error bound of a sum of products scales with)
    scale: str = "inputs"
    #: ``arbitrate: false``: a disagreement is not arbitrated against the same call computed in
    #: float64 (the result dtype's own behaviour is the contract: nextafter, casts, nan_to_num)
    no_arbitration: bool = False

    def covers(self, overload: str, dname: str) -> bool:
        return overload in self.names and (self.dtypes is None or dname in self.dtypes)


@dataclass(frozen=True)
class Tolerances:
    """Overrides in file order: the first entry naming (overload, dtype) with ``rtol``/``atol``
    gives them, the first with ``scale_ulps`` gives that."""

    entries: tuple[Tolerance, ...] = ()

    def __call__(self, overload: str, dtype: torch.dtype | str
                 ) -> tuple[float | None, float | None]:
        dname = dtype_name(dtype)
        for t in self.entries:
            if t.rtol is not None and t.covers(overload, dname):
                return t.rtol, t.atol
        return None, None

    def scale_ulps(self, overload: str, dtype: torch.dtype | str) -> int:
        """Ulps of ``dtype`` at the inputs' magnitude a tolerance-compared result may differ by
        beyond rtol/atol (0 where no entry says)."""
        dname = dtype_name(dtype)
        for t in self.entries:
            if t.scale_ulps is not None and t.covers(overload, dname):
                return t.scale_ulps
        return 0

    def scale_kind(self, overload: str, dtype: torch.dtype | str) -> str:
        """The ``scale`` of the entry giving ``scale_ulps`` (:attr:`Tolerance.scale`)."""
        dname = dtype_name(dtype)
        for t in self.entries:
            if t.scale_ulps is not None and t.covers(overload, dname):
                return t.scale
        return "inputs"

    def grad_error_factor(self, overload: str, dtype: torch.dtype | str) -> float:
        """How many times CPU's own distance from a float64 computation of a ``dtype``
        gradient the backend's may be (0 where no entry says)."""
        dname = dtype_name(dtype)
        for t in self.entries:
            if t.grad_error_factor is not None and t.covers(overload, dname):
                return t.grad_error_factor
        return 0.0

    def nonfinite_unspecified(self, overload: str, dtype: torch.dtype | str) -> bool:
        """Whether some entry naming (overload, dtype) says ``nonfinite: unspecified``."""
        dname = dtype_name(dtype)
        return any(t.nonfinite_unspecified and t.covers(overload, dname) for t in self.entries)

    def nonfinite_inputs_unspecified(self, overload: str, dtype: torch.dtype | str) -> bool:
        """Whether some entry naming (overload, dtype) says ``nonfinite_inputs: unspecified``."""
        dname = dtype_name(dtype)
        return any(t.nonfinite_inputs_unspecified and t.covers(overload, dname)
                   for t in self.entries)

    def arbitrates(self, overload: str, dtype: torch.dtype | str) -> bool:
        """Whether a ``dtype`` result's disagreement with CPU may be arbitrated against the call
        computed in float64 (no entry naming (overload, dtype) says ``arbitrate: false``)."""
        dname = dtype_name(dtype)
        return not any(t.no_arbitration and t.covers(overload, dname) for t in self.entries)


# --------------------------------------------------------------------------- reading


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers the line of every mapping (under the key :data:`LINE`)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping[LINE] = node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: DataPath) -> Any:
    """A YAML data file; every mapping carries its line under :data:`LINE`. A missing file or
    malformed YAML is an :class:`InputError` naming the file (and line)."""
    try:
        text = (Path(path) if isinstance(path, str) else path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", file=str(path)) from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise InputError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path),
                         line=line + 1 if line is not None else None) from None


def take(entry: Mapping[str, Any], allowed: Iterable[str], file: str, what: str) -> None:
    """Refuse keys of ``entry`` outside ``allowed`` (naming the file and the entry's line)."""
    extra = set(entry) - set(allowed) - {LINE}
    if extra:
        raise InputError(f"unknown key {sorted(extra)[0]!r} in {what} (expected one of: "
                         f"{', '.join(sorted(allowed))})", file=file, line=entry.get(LINE))


def expand_names(patterns: Iterable[str], known: Iterable[str], *, file: str, line: int | None,
                 what: str = "overload", strict: bool = True) -> tuple[str, ...]:
    """Overload names for ``patterns`` (exact names, or ``*``/``?`` globs), in ``known``'s order
    for globs. A name not in ``known``, or a glob matching nothing, is an :class:`InputError`;
    unless not ``strict`` (the packaged data, written for the newest torch, read under an older
    one that lacks some overloads): then it is left out."""
    known = list(known)
    known_set = set(known)
    out: list[str] = []
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            hits = fnmatch.filter(known, pattern)
            if not hits and strict:
                raise InputError(f"{what} pattern {pattern!r} matches no overload", file=file,
                                 line=line)
            out.extend(h for h in hits if h not in out)
        elif pattern in known_set:
            if pattern not in out:
                out.append(pattern)
        elif strict:
            raise InputError(f"{pattern!r} is not an overload of the op database", file=file,
                             line=line)
    return tuple(out)


def _names(entry: Mapping[str, Any], file: str) -> list[str]:
    names = entry.get("names")
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise InputError("'names' must be a non-empty list of overload names (globs allowed)",
                         file=file, line=entry.get(LINE))
    return names


def database(db: OpDB | None) -> OpDB:
    """``db``, else the op database (:func:`opdb.load`): what a data file's names are
    validated against."""
    if db is not None:
        return db
    from opdb.db import load

    return load()


def entry_list(path: DataPath | None, default: DataPath) -> tuple[str, list[Any]]:
    """The file a data file's errors name (``path``, else the packaged ``default``) and its
    entries; anything but a YAML list is an :class:`InputError` naming the file."""
    src = path if path is not None else default
    file = str(src)
    data = read_yaml(src) or []
    if not isinstance(data, list):
        raise InputError("expected a list of entries", file=file, line=1)
    return file, data


# --------------------------------------------------------------------------- hints

_ARG_KEYS = {"choices", "min", "max", "shape", "dtypes", "length", "device", "extremes",
             "along", "length_of", "maybe_empty"}
_OP_KEYS = {"names", "args", "max_side", "values", "result_device", "ties", "cpu_crashes",
            "cpu_ignores_strides", "collisions", "nonempty", "one_of"}
_TIE_KEYS = {"output", "unless"}
_COLLISION_KEYS = {"writes", "unless"}


def _collision_hint(raw: Any, ov: Any, file: str, line: int | None) -> CollisionHint:
    """``collisions: {writes: scatter, unless: accumulate}`` checked against one overload: a
    known kind whose arguments the overload has, ``unless`` a bool argument."""
    if not isinstance(raw, Mapping) or raw.get("writes") not in COLLISION_WRITES:
        raise InputError(f"'collisions' must be a mapping with 'writes' one of "
                         f"{', '.join(COLLISION_WRITES)}", file=file, line=line)
    take(raw, _COLLISION_KEYS, file, "collisions hint")
    line = raw.get(LINE, line)
    try:
        args = {a.name: str(a.type) for a in ov.schema.arguments}
    except RuntimeError:
        args = {}
    needed = ("self", *COLLISION_WRITES[raw["writes"]])
    missing = [a for a in needed if a not in args]
    if missing:
        raise InputError(f"{ov.name}: 'collisions: {{writes: {raw['writes']}}}' needs arguments "
                         f"{', '.join(missing)}", file=file, line=line)
    unless = raw.get("unless")
    if unless is not None and args.get(unless) not in ("bool", "Optional[bool]"):
        raise InputError(f"{ov.name}: 'unless' must name a bool argument, not {unless!r}",
                         file=file, line=line)
    return CollisionHint(writes=raw["writes"], unless=unless)


def _tie_hint(raw: Any, ov: Any, file: str, line: int | None) -> TieHint:
    """``ties: {output: indices, unless: stable}`` resolved for one overload: the output must be
    one of its returns, ``self`` and ``dim`` must be arguments, ``unless`` a bool argument."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("output"), str):
        raise InputError("'ties' must be a mapping with 'output' (the name of an indices output)",
                         file=file, line=line)
    take(raw, _TIE_KEYS, file, "ties hint")
    line = raw.get(LINE, line)
    try:
        returns = [r.name for r in ov.schema.returns]
        args = {a.name: str(a.type) for a in ov.schema.arguments}
    except RuntimeError:
        returns, args = [], {}
    name = raw["output"]
    if not name or name not in returns:
        raise InputError(f"{ov.name} has no output named {name!r} (outputs: "
                         f"{', '.join(r or '?' for r in returns)})", file=file, line=line)
    if "self" not in args or "dim" not in args:
        raise InputError(f"{ov.name}: 'ties' needs arguments 'self' and 'dim' (the positions "
                         "index self along dim)", file=file, line=line)
    unless = raw.get("unless")
    if unless is not None and args.get(unless) not in ("bool", "Optional[bool]"):
        raise InputError(f"{ov.name}: 'unless' must name a bool argument, not {unless!r}",
                         file=file, line=line)
    return TieHint(output=returns.index(name), name=name, keepdim="keepdim" in args,
                   unless=unless)


def _arg_hint(raw: Any, file: str, line: int | None) -> ArgHint:
    if not isinstance(raw, Mapping):
        raise InputError("an argument hint must be a mapping", file=file, line=line)
    take(raw, _ARG_KEYS, file, "argument hint")
    line = raw.get(LINE, line)
    kw: dict[str, Any] = {}
    for key in ("choices", "shape", "dtypes"):
        if key in raw:
            if not isinstance(raw[key], list):
                raise InputError(f"'{key}' must be a list", file=file, line=line)
            kw[key] = tuple(raw[key])
    for key in ("min", "max"):
        if key in raw:
            if not isinstance(raw[key], int | float) or isinstance(raw[key], bool):
                raise InputError(f"'{key}' must be a number", file=file, line=line)
            kw[key] = raw[key]
    if "length" in raw:
        if not isinstance(raw["length"], int) or isinstance(raw["length"], bool):
            raise InputError("'length' must be an integer", file=file, line=line)
        kw["length"] = raw["length"]
    if "device" in raw:
        if raw["device"] != "cpu":
            raise InputError("'device' can only be 'cpu' (an argument kept on CPU)", file=file,
                             line=line)
        kw["device"] = "cpu"
    for key in ("extremes", "maybe_empty"):
        if key in raw:
            if not isinstance(raw[key], bool):
                raise InputError(f"'{key}' must be true or false", file=file, line=line)
            kw[key] = raw[key]
    if "along" in raw:
        if not isinstance(raw["along"], str | int) or isinstance(raw["along"], bool):
            raise InputError("'along' must name an int argument (the dim self is indexed along) "
                             "or be a dim (an integer)", file=file, line=line)
        kw["along"] = raw["along"]
    if "length_of" in raw:
        if not isinstance(raw["length_of"], str) or "along" not in raw:
            raise InputError("'length_of' must name a tensor argument, beside 'along' (a slice "
                             "of self along that dim per element of it)", file=file, line=line)
        kw["length_of"] = raw["length_of"]
    for d in kw.get("dtypes", ()):
        if d not in DTYPE_NAMES:
            raise InputError(f"unknown dtype {d!r} (known: {', '.join(DTYPE_NAMES)})",
                             file=file, line=line)
    return ArgHint(**kw)


def load_hints(path: DataPath | None = None, *, db: OpDB | None = None,
               strict: bool | None = None) -> Hints:
    """Hints from ``path`` (default: the packaged ``hints.yaml``), validated against ``db``
    (default: :func:`opdb.load`): overload names (or globs) must name overloads, and every
    argument named must be an argument of them (for ``arguments:``, of some overload).

    A file the user gives is held to that strictly. The packaged file is written for the torch
    CI pins; under another torch, names and arguments that torch lacks are left out (``strict``
    makes them errors there too: the project's tests read it so)."""
    strict = strict if strict is not None else path is not None
    src = path if path is not None else HINTS_FILE
    file = str(src)
    data = read_yaml(src) or {}
    if not isinstance(data, Mapping):
        raise InputError("expected a mapping with 'arguments' and 'ops'", file=file, line=1)
    take(data, {"arguments", "ops"}, file, "hints file")
    known = database(db)
    arg_names = {name for ov in known.overloads for name in _argument_names(ov)}
    raw_arguments = data.get("arguments") or {}
    if not isinstance(raw_arguments, Mapping):
        raise InputError("'arguments' must be a mapping of argument name -> hint", file=file,
                         line=data.get(LINE))
    arguments: dict[str, ArgHint] = {}
    for name, raw in raw_arguments.items():
        if name == LINE:
            continue
        line = raw.get(LINE) if isinstance(raw, Mapping) else raw_arguments.get(LINE)
        if name not in arg_names:
            if not strict:
                continue
            raise InputError(f"no overload has an argument named {name!r}", file=file, line=line)
        arguments[name] = _arg_hint(raw, file, line)
    ops: dict[str, OpHints] = {}
    source: dict[str, tuple[str, int | None]] = {}
    raw_ops = data.get("ops") or []
    if not isinstance(raw_ops, list):
        raise InputError("'ops' must be a list of entries", file=file, line=data.get(LINE))
    for entry in raw_ops:
        if not isinstance(entry, Mapping):
            raise InputError("each entry of 'ops' must be a mapping", file=file)
        take(entry, _OP_KEYS, file, "ops entry")
        line = entry.get(LINE)
        if entry.get("values", "compared") not in ("compared", "unspecified"):
            raise InputError("'values' must be 'compared' or 'unspecified'", file=file, line=line)
        if entry.get("result_device", "input") not in ("input", "cpu"):
            raise InputError("'result_device' must be 'input' or 'cpu'", file=file, line=line)
        for flag in ("cpu_crashes", "cpu_ignores_strides", "nonempty"):
            if not isinstance(entry.get(flag, False), bool):
                raise InputError(f"'{flag}' must be true or false", file=file, line=line)
        max_side = entry.get("max_side")
        if max_side is not None and (not isinstance(max_side, int) or max_side < 1):
            raise InputError("'max_side' must be a positive integer", file=file, line=line)
        names = expand_names(_names(entry, file), (o.name for o in known.overloads),
                             file=file, line=line, strict=strict)
        if not names:
            continue
        raw_args = entry.get("args") or {}
        if not isinstance(raw_args, Mapping):
            raise InputError("'args' must be a mapping of argument name -> hint", file=file,
                             line=line)
        have = {a for n in names for a in _argument_names(known[n])}
        args: dict[str, ArgHint] = {}
        for k, v in raw_args.items():
            if k == LINE:
                continue
            aline = v.get(LINE, line) if isinstance(v, Mapping) else line
            if k not in have:
                if not strict:
                    continue
                raise InputError(f"argument {k!r} is not an argument of "
                                 f"{', '.join(names[:4])}{' ...' if len(names) > 4 else ''}",
                                 file=file, line=aline)
            args[k] = _arg_hint(v, file, aline)
        frozen_args = MappingProxyType(args)
        one_of = _one_of(entry.get("one_of"), names, known, file, line)
        for name in names:
            ties = _tie_hint(entry["ties"], known[name], file, line) if "ties" in entry \
                else None
            collisions = _collision_hint(entry["collisions"], known[name], file, line) \
                if "collisions" in entry else None
            hint = OpHints(args=frozen_args, max_side=max_side,
                           values=entry.get("values", "compared") == "compared",
                           result_on_device=entry.get("result_device", "input") == "input",
                           ties=ties, collisions=collisions,
                           cpu_crashes=entry.get("cpu_crashes", False),
                           cpu_ignores_strides=entry.get("cpu_ignores_strides", False),
                           nonempty=entry.get("nonempty", False), one_of=one_of)
            earlier = ops.get(name)
            if earlier is not None:  # a second entry naming the overload adds to the first
                hint = OpHints(args=MappingProxyType({**earlier.args, **hint.args}),
                               max_side=hint.max_side or earlier.max_side,
                               values=hint.values and earlier.values,
                               result_on_device=hint.result_on_device and earlier.result_on_device,
                               ties=hint.ties or earlier.ties,
                               collisions=hint.collisions or earlier.collisions,
                               cpu_crashes=hint.cpu_crashes or earlier.cpu_crashes,
                               cpu_ignores_strides=hint.cpu_ignores_strides
                               or earlier.cpu_ignores_strides,
                               nonempty=hint.nonempty or earlier.nonempty,
                               one_of=hint.one_of or earlier.one_of)
            ops[name] = hint
            source[name] = (file, line)
    return Hints(arguments=MappingProxyType(arguments), ops=MappingProxyType(ops),
                 source=MappingProxyType(source))


def _one_of(raw: Any, names: Sequence[str], known: OpDB, file: str, line: int | None
            ) -> tuple[str, ...]:
    """``one_of: [output_size, scale_factors]``: two or more arguments, each an optional one
    (``T?``) of every overload the entry names (one of them is given, the others None)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(a, str) for a in raw):
        raise InputError("'one_of' must be a list of two or more argument names", file=file,
                         line=line)
    for name in names:
        try:
            optional = {a.name for a in known[name].arguments if a.optional}
        except RuntimeError:  # a schema torch cannot parse: nothing to check it against
            continue
        missing = [a for a in raw if a not in optional]
        if missing:
            raise InputError(f"{name}: 'one_of' names {missing[0]!r}, which is not an optional "
                             "argument of it", file=file, line=line)
    return tuple(raw)


def _argument_names(ov: Any) -> tuple[str, ...]:
    try:
        return tuple(a.name for a in ov.schema.arguments)
    except RuntimeError:  # a schema torch cannot parse (vendor YAML): no known arguments
        return ()


# --------------------------------------------------------------------------- tolerances

#: the values of a tolerance entry's ``scale`` (:attr:`Tolerance.scale`)
SCALE_KINDS = ("inputs", "all_inputs", "terms")

_TOL_KEYS = {"names", "dtypes", "rtol", "atol", "scale_ulps", "scale", "nonfinite",
             "nonfinite_inputs",
             "grad_error_factor", "arbitrate", "reason"}


def load_tolerances(path: DataPath | None = None, *, db: OpDB | None = None,
                    strict: bool | None = None) -> Tolerances:
    """Tolerance overrides from ``path`` (default: the packaged ``tolerances.yaml``), names
    validated against ``db`` (default: :func:`opdb.load`); ``strict`` as for
    :func:`load_hints`."""
    strict = strict if strict is not None else path is not None
    file, data = entry_list(path, TOLERANCES_FILE)
    known = database(db) if data else None
    entries = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise InputError("each tolerance entry must be a mapping", file=file)
        take(entry, _TOL_KEYS, file, "tolerance entry")
        line = entry.get(LINE)
        if ("rtol" in entry) != ("atol" in entry) or not (
                "rtol" in entry or "scale_ulps" in entry or "nonfinite" in entry
                or "nonfinite_inputs" in entry
                or "grad_error_factor" in entry or "arbitrate" in entry):
            raise InputError("a tolerance entry needs both 'rtol' and 'atol', or 'scale_ulps', "
                             "'nonfinite', 'grad_error_factor' or 'arbitrate'", file=file,
                             line=line)
        if entry.get("arbitrate", False) is not False:
            raise InputError("'arbitrate' must be false (arbitration is the default)", file=file,
                             line=line)
        if "scale" in entry and (entry["scale"] not in SCALE_KINDS or "scale_ulps" not in entry):
            raise InputError(f"'scale' must be one of {', '.join(SCALE_KINDS)}, beside "
                             f"'scale_ulps'", file=file, line=line)
        for key in ("nonfinite", "nonfinite_inputs"):
            if entry.get(key, "unspecified") != "unspecified":
                raise InputError(f"'{key}' must be 'unspecified'", file=file, line=line)
        for key in ("rtol", "atol"):
            value = entry.get(key, 0)
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise InputError(f"'{key}' must be a non-negative number", file=file, line=line)
        ulps = entry.get("scale_ulps")
        if ulps is not None and (not isinstance(ulps, int) or isinstance(ulps, bool) or ulps < 0):
            raise InputError("'scale_ulps' must be a non-negative integer", file=file, line=line)
        factor = entry.get("grad_error_factor")
        if factor is not None and (not isinstance(factor, int | float) or isinstance(factor, bool)
                                   or not factor >= 1):
            raise InputError("'grad_error_factor' must be a number of at least 1", file=file,
                             line=line)
        if not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
            raise InputError("a tolerance entry needs a 'reason'", file=file, line=line)
        dtypes = entry.get("dtypes")
        if dtypes is not None:
            if not isinstance(dtypes, list) or not dtypes:
                raise InputError("'dtypes' must be a non-empty list", file=file, line=line)
            for d in dtypes:
                if d not in DTYPE_NAMES:
                    raise InputError(f"unknown dtype {d!r} (known: {', '.join(DTYPE_NAMES)})",
                                     file=file, line=line)
        assert known is not None
        names = expand_names(_names(entry, file), (o.name for o in known.overloads),
                             file=file, line=line, strict=strict)
        if not names:
            continue
        entries.append(Tolerance(names=frozenset(names),
                                 dtypes=tuple(dtypes) if dtypes else None,
                                 rtol=float(entry["rtol"]) if "rtol" in entry else None,
                                 atol=float(entry["atol"]) if "atol" in entry else None,
                                 reason=entry["reason"].strip(), file=file, line=line,
                                 scale_ulps=ulps,
                                 nonfinite_unspecified="nonfinite" in entry,
                                 nonfinite_inputs_unspecified="nonfinite_inputs" in entry,
                                 grad_error_factor=None if factor is None else float(factor),
                                 scale=entry.get("scale", "inputs"),
                                 no_arbitration="arbitrate" in entry))
    return Tolerances(tuple(entries))


__all__ = [
    "HINTS_FILE",
    "TOLERANCES_FILE",
    "ArgHint",
    "Hints",
    "OpHints",
    "TieHint",
    "CollisionHint",
    "COLLISION_WRITES",
    "Tolerance",
    "Tolerances",
    "expand_names",
    "load_hints",
    "load_tolerances",
    "read_yaml",
    "take",
]
