"""What the engine knows of an overload: :class:`OpSignature` (name, kind, tags, typed
arguments) and the :data:`DEVICE` placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from opdb.model import Argument, Overload, arguments_of, family_of, kind_of, split_name

# Base types the strategies can draw; anything else is drawn only as its default / None.
DRAWABLE = {"Tensor", "int", "SymInt", "float", "bool", "Scalar", "ScalarType", "str"}


# Types that are always left to their default (or None): they choose placement, not values.
DEFAULTED = {"Layout", "MemoryFormat", "Generator", "Device", "DeviceIndex"}


class NoStrategy(Exception):
    """The schema has an argument the strategies cannot draw (reason in the message)."""


class _Device:
    """Placeholder for ``Device?`` arguments of factory ops: the device the call runs on."""

    def __repr__(self) -> str:
        return "DEVICE"


DEVICE = _Device()


#: One schema argument, typed once by opdb (:class:`opdb.model.Argument`).
ArgSpec = Argument


@dataclass(frozen=True)
class OpSignature:
    """What the engine needs to know about an overload: name, kind, tags and typed arguments."""

    name: str
    base: str
    overload_name: str
    kind: str
    tags: frozenset[str]
    args: tuple[ArgSpec, ...]
    returns: tuple[str, ...]
    schema_str: str
    problem: str | None = None  # set when the schema could not be parsed (the item then skips)

    @classmethod
    def parse(cls, name: str, schema_str: str, tags: frozenset[str] | set[str] = frozenset()
              ) -> OpSignature:
        """From a schema string (``torch._C.parse_schema``), for a schema outside the op
        database; an overload of the database comes through :meth:`of`."""
        text = schema_str.split("::", 1)[1] if schema_str.startswith("aten::") else schema_str
        schema = torch._C.parse_schema(text)
        base, overload_name = split_name(name)
        kind = kind_of(schema, family_of(base)[1])
        return cls(name=name, base=base, overload_name=overload_name, kind=kind,
                   tags=frozenset(tags), args=arguments_of(schema),
                   returns=tuple(Argument.from_torch(r).type for r in schema.returns),
                   schema_str=text)

    @classmethod
    def of(cls, overload: Overload) -> OpSignature:
        """From an ``opdb.Overload``: its typed arguments, parsed once by opdb."""
        try:
            return cls(name=overload.name, base=overload.base,
                       overload_name=overload.overload_name, kind=overload.kind,
                       tags=frozenset(overload.tags), args=overload.arguments,
                       returns=overload.returns, schema_str=overload.schema_str)
        except Exception as exc:  # noqa: BLE001 - reported as the item's skip reason
            return cls(name=overload.name, base=overload.base,
                       overload_name=overload.overload_name, kind=overload.kind,
                       tags=frozenset(overload.tags), args=(), returns=(),
                       schema_str=overload.schema_str,
                       problem=f"schema could not be parsed: {type(exc).__name__}: {exc}")

    @cached_property
    def packet(self) -> Any:
        """``torch.ops.aten.<base>.<overload>`` (``default`` for an empty overload name)."""
        return getattr(getattr(torch.ops.aten, self.base), self.overload_name or "default")

    @cached_property
    def named_args(self) -> frozenset[str]:
        """Arguments a call's description writes as ``name=value`` (keyword-only or
        defaulted ones; read for every call the marker names)."""
        return frozenset(a.name for a in self.args if a.kwarg_only or a.has_default)

    @property
    def tensor_args(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.is_tensor and not a.is_out)

    @property
    def operands(self) -> tuple[ArgSpec, ...]:
        """Positional non-optional Tensor and Scalar arguments: what promotion mixes."""
        return tuple(a for a in self.args if not a.kwarg_only and not a.optional
                     and not a.is_list and a.base in ("Tensor", "Scalar"))

    @property
    def is_pointwise(self) -> bool:
        return "pointwise" in self.tags

    @property
    def is_factory(self) -> bool:
        return not any(a.base == "Tensor" for a in self.args if not a.is_out)

    def untestable(self) -> str | None:
        """Why no strategy can be built for this overload (``None`` when one can)."""
        if self.problem:
            return self.problem
        for a in self.args:
            if a.is_out:
                continue
            if a.base in DRAWABLE or a.base in DEFAULTED:
                continue
            if not a.has_default:
                return f"argument '{a.type} {a.name}' has a type the strategies cannot draw"
        return None
