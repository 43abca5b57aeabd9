"""The records of the op database: frozen dataclasses, one key (the overload name) everywhere."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

Kind = Literal["functional", "inplace", "out"]
KINDS: tuple[Kind, ...] = ("functional", "inplace", "out")

# Python's augmented-assignment dunders, as torchgen's BaseOperatorName.parse knows them:
# ``__iand__`` is the in-place form of ``__and__``.
_AUGMENTED = re.compile(r"__i(add|sub|mul|div|mod|pow|lshift|rshift|and|xor|or)__")

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def split_name(name: str) -> tuple[str, str]:
    """``"add.Tensor"`` -> ``("add", "Tensor")``; ``"relu"`` -> ``("relu", "")``."""
    base, _, overload = name.partition(".")
    return base, overload


def family_of(base: str) -> tuple[str, bool]:
    """The family of a base name and whether the base is an in-place name.

    ``add_`` -> (``add``, True); ``__iand__`` -> (``__and__``, True); ``add`` -> (``add``, False).
    Out overloads keep their base name (``add.out`` is base ``add``), so they join the family
    without help.
    """
    if base.startswith("__") and base.endswith("__"):
        m = _AUGMENTED.fullmatch(base)
        return (f"__{m[1]}__", True) if m else (base, False)
    if base.endswith("_") and len(base) > 1:
        return base[:-1], True
    return base, False


def kind_of(schema: torch._C.FunctionSchema, inplace_name: bool) -> Kind:
    """``out`` if the schema has keyword-only arguments it writes to (torchgen's ``is_out_fn``),
    ``inplace`` if the base name is an in-place name (``add_``, ``__iand__``), else
    ``functional``. Ops that mutate other arguments without either mark (torchgen's "mutable"
    kind) count as functional here."""
    for arg in schema.arguments:
        info = arg.alias_info
        if arg.kwarg_only and info is not None and info.is_write:
            return "out"
    return "inplace" if inplace_name else "functional"


# torch's JIT type classes -> the schema's own spelling of a base type
_BASE_OF_JIT = {
    "TensorType": "Tensor", "IntType": "int", "SymIntType": "SymInt", "FloatType": "float",
    "SymFloatType": "SymFloat", "BoolType": "bool", "SymBoolType": "SymBool",
    "NumberType": "Scalar", "StringType": "str", "DeviceObjType": "Device",
    "_GeneratorType": "Generator", "StreamObjType": "Stream",
}


@dataclass(frozen=True)
class Argument:
    """One schema argument with its type taken apart, read from torch's parsed ``FunctionSchema``.

    ``base`` is the schema's spelling of the element type (``Tensor``, ``int``, ``SymInt``,
    ``float``, ``bool``, ``str``, ``Scalar``, ``ScalarType``, ``Layout``, ``MemoryFormat``,
    ``Device``, ``Generator``, ...): torch's ``real_type``, so ``ScalarType`` is not ``int``.
    ``int[2]? padding`` is ``base="int", is_list=True, list_size=2, optional=True``;
    ``Tensor?[] indices`` has ``elem_optional=True``. ``default`` is the default value as torch
    evaluates it (``[1, 1]`` for ``int[2] stride=1``; ``None`` also for "no default": see
    ``has_default_value``).
    """

    name: str
    base: str
    optional: bool = False
    is_list: bool = False
    list_size: int | None = None
    elem_optional: bool = False
    has_default_value: bool = False
    default: Any = None
    kwarg_only: bool = False
    is_write: bool = False
    is_out: bool = False

    @property
    def type(self) -> str:
        """The type as the schema spells it: ``Tensor?``, ``int[1]?``, ``Tensor?[]``."""
        text = self.base + ("?" if self.elem_optional else "")
        if self.is_list:
            text += f"[{self.list_size}]" if self.list_size else "[]"
        return text + ("?" if self.optional else "")

    @property
    def is_tensor(self) -> bool:
        """A single (possibly optional) Tensor, not a list."""
        return self.base == "Tensor" and not self.is_list

    @property
    def has_default(self) -> bool:
        """The argument may be left out of a call (it has a default value, or is optional)."""
        return self.has_default_value or self.optional

    @classmethod
    def from_torch(cls, arg: Any) -> Argument:
        """From one ``torch._C.Argument`` of a parsed ``FunctionSchema``."""
        t = arg.real_type
        optional = type(t).__name__ == "OptionalType"
        if optional:
            t = t.getElementType()
        is_list = type(t).__name__ == "ListType"
        elem_optional = False
        if is_list:
            t = t.getElementType()
            if type(t).__name__ == "OptionalType":
                elem_optional, t = True, t.getElementType()
        has_default = bool(arg.has_default_value())
        info = arg.alias_info
        return cls(name=arg.name, base=_BASE_OF_JIT.get(type(t).__name__, str(t)),
                   optional=optional, is_list=is_list, list_size=arg.N if is_list else None,
                   elem_optional=elem_optional, has_default_value=has_default,
                   default=arg.default_value if has_default else None,
                   kwarg_only=bool(arg.kwarg_only), is_write=bool(info and info.is_write),
                   is_out=bool(arg.is_out))


def arguments_of(schema: torch._C.FunctionSchema) -> tuple[Argument, ...]:
    """The typed arguments of a parsed schema, in schema order."""
    return tuple(Argument.from_torch(a) for a in schema.arguments)


@dataclass(frozen=True)
class Overload:
    """One overload of an aten operator, as ``native_functions.yaml`` (or ``autogen:``) defines it.

    ``name`` is the key used everywhere (``add.Tensor``; a base with no overload name is just
    ``relu``). ``dispatch`` is the entry's dispatch table with comma-separated keys split
    (an entry with neither a table nor ``structured_delegate`` gets torchgen's implicit
    ``CompositeImplicitAutograd`` entry); autogen'd overloads have an empty table.
    ``tags`` are the YAML's tags plus those torchgen implies (``out``, ``inplace``,
    ``pt2_compliant_tag``; ``generated`` for autogen'd overloads).
    """

    name: str
    base: str
    overload_name: str
    schema_str: str
    kind: Kind
    family: str
    dispatch: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    structured: bool = False
    structured_delegate: str | None = None
    structured_inherits: str | None = None
    variants: frozenset[str] = frozenset({"function"})
    tags: frozenset[str] = frozenset()
    python_module: str | None = None
    autogen: bool = False
    autogen_from: str | None = None
    loc: SourceLocation = SourceLocation("<unknown>", 0)

    def __hash__(self) -> int:
        return hash(self.name)

    # Pickling (the on-disk cache, opdb.cache): the fields only. torch's parsed schema and what
    # is derived from it are cached properties, parsed again on first use (torch's
    # FunctionSchema does not pickle); the dispatch table travels as a dict (a mappingproxy does
    # not pickle either).
    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in _CACHED}
        state["dispatch"] = dict(self.dispatch)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        dispatch = state["dispatch"]
        state["dispatch"] = MappingProxyType(dispatch) if dispatch else _EMPTY
        self.__dict__.update(state)

    @cached_property
    def schema(self) -> torch._C.FunctionSchema:
        """The schema parsed by torch's own parser (once; cached); an autogen'd overload's is
        the live dispatcher's, as when the database was built (``aten::``-qualified)."""
        import torch

        if self.autogen:
            return torch._C._dispatch_find_schema_or_throw(
                f"aten::{self.base}", self.overload_name).schema()
        return torch._C.parse_schema(self.schema_str)

    @cached_property
    def arguments(self) -> tuple[Argument, ...]:
        """The schema's arguments, typed (from :attr:`schema`; once; cached)."""
        return arguments_of(self.schema)

    @cached_property
    def returns(self) -> tuple[str, ...]:
        """The return types as the schema spells them (``Tensor``, ``Tensor[]``, ``SymInt``)."""
        return tuple(Argument.from_torch(r).type for r in self.schema.returns)

    @property
    def out_dtype_exact(self) -> bool:
        """An ``out=`` overload whose CPU kernel refuses an ``out`` of any dtype but the result's
        (``Expected out tensor to have dtype float, but got double instead``): a structured kernel
        not built on TensorIterator (torchgen's ``set_output`` checks the dtype its meta function
        gives; TensorIterator-based ones cast into ``out`` where the result type allows)."""
        return (self.kind == "out" and self.structured
                and self.structured_inherits != "TensorIteratorBase")

    @property
    def qualname(self) -> str:
        """``aten::add.Tensor`` — the dispatcher's spelling."""
        return f"aten::{self.name}"

    def __str__(self) -> str:
        return self.name


#: The cached properties of :class:`Overload`, left out of its pickled state.
_CACHED = frozenset(
    name for name, value in vars(Overload).items() if isinstance(value, cached_property)
)


@dataclass(frozen=True)
class Derivative:
    """What ``derivatives.yaml`` says about one overload.

    ``differentiable`` is False when the entry marks every input ``non_differentiable`` or
    ``not_implemented(...)`` or declares no differentiable output. ``backward_ops`` are the
    overload names the backward formulas (the ``Default`` ones; per-key formulas such as
    ``AutogradNestedTensor`` are not for dense backends) may call, resolved at the level of
    base names: a call ``sum(...)`` records every functional overload of ``sum`` (an in-place
    call ``mul_(...)`` every in-place overload of ``mul_``), and ``backward_bases`` keeps the
    bases. A backend lacks a backward op only if it has *none* of a base's recorded overloads.
    Helpers from ``FunctionsManual.cpp`` are not aten ops and are skipped, so ops those
    helpers call inside are not seen.

    ``entry`` is the ``derivatives.yaml`` entry the formulas come from: the overload itself, or
    its functional sibling for an in-place overload without an entry of its own (as torchgen
    matches them by signature). ``not_implemented`` names inputs whose formula is
    ``not_implemented(...)``.
    """

    name: str
    differentiable: bool
    backward_ops: frozenset[str] = frozenset()
    backward_bases: frozenset[str] = frozenset()
    entry: str = ""
    inputs: tuple[str, ...] = ()
    not_implemented: tuple[str, ...] = ()
    loc: SourceLocation = SourceLocation("<unknown>", 0)
