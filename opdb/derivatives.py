"""Parse ``derivatives.yaml``: which aten ops each backward formula calls, and whether an
overload is differentiable at all.

Keys of an entry are consumed as torchgen's ``load_derivatives`` does: ``name`` (the schema),
``output_differentiability``, ``dispatch`` (per-autograd-key formula tables; ``Default`` is the
one for dense backends), and formula keys. A formula key whose first name is an argument of the
schema is a backward formula (``self``, ``input, weight, bias``); otherwise it must name outputs
(``result``, ``result0``, a named return) and is a forward-mode formula. Anything else is an
unknown key and an error.

Which ops a formula calls: every identifier followed by ``(`` — a function (``at::where(``,
``zeros_like(``) or a method (``grad.sum(``) — that names an aten base in the database
(``foo_symint`` is the C++ spelling of ``foo``). Other identifiers are C++ helpers (mostly
``FunctionsManual.cpp``) and are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from opdb._yaml import Entry, read_entries
from opdb.errors import InputError
from opdb.model import Derivative, Overload, SourceLocation
from opdb.native import overload_name_of, parse_schema

_CALL = re.compile(r"(?<![\w:])(?:at::)?([A-Za-z_]\w*)(?=\s*\()")
_RECEIVER = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*\.\s*$")
_NOT_IMPLEMENTED = re.compile(r"^\s*not_implemented\s*\(")


def called_names(formula: str, non_tensors: frozenset[str] = frozenset()) -> set[str]:
    """Identifiers called in a C++ formula: functions, and methods except those called on a
    non-tensor argument (``alpha.conj()`` is c10::Scalar's, not ``aten::conj``)."""
    names: set[str] = set()
    for m in _CALL.finditer(formula):
        if non_tensors and formula[: m.start()].rstrip().endswith("."):
            receiver = _RECEIVER.search(formula, 0, m.start())
            if receiver is not None and receiver.group(1) in non_tensors:
                continue
        names.add(m.group(1))
    return names


def _signature(ov: Overload) -> tuple[Any, ...]:
    """torchgen's ``FunctionSchema.signature()`` in miniature: family, and the arguments that are
    not out= arguments, without alias annotations or defaults. Pairs an in-place overload with
    its functional sibling."""
    args = tuple(
        (a.name, str(a.type))
        for a in ov.schema.arguments
        if not (a.kwarg_only and a.alias_info is not None and a.alias_info.is_write)
    )
    return (ov.family, args)


class _Resolver:
    """Bare function names in formulas -> overload names, at the level of base names."""

    def __init__(self, overloads: Iterable[Overload]) -> None:
        self.by_base: dict[str, list[Overload]] = {}
        for ov in overloads:
            self.by_base.setdefault(ov.base, []).append(ov)

    def base_of(self, ident: str) -> str | None:
        if ident in self.by_base:
            return ident
        if ident.endswith("_symint") and ident[: -len("_symint")] in self.by_base:
            return ident[: -len("_symint")]
        return None

    def overloads_of(self, base: str) -> frozenset[str]:
        """The overloads a call of ``base(...)`` may resolve to: all but the out= ones."""
        ovs = self.by_base[base]
        chosen = [ov.name for ov in ovs if ov.kind != "out"] or [ov.name for ov in ovs]
        return frozenset(chosen)


def _formula_table(entry: Entry, schema: Any, key_line: int, table: Mapping[str, Any]) -> tuple[
    list[str], list[str], list[str], set[str]
]:
    """Classify one table of formulas: (inputs with formulas, non-differentiable inputs,
    not-implemented inputs, identifiers called by backward formulas)."""
    arg_names = {a.name for a in schema.arguments}
    non_tensors = frozenset(a.name for a in schema.arguments if "Tensor" not in str(a.type))
    returns = list(schema.returns)
    out_names = {r.name for r in returns if r.name} | {"result"}
    out_names |= {f"result{i}" for i in range(len(returns))}
    inputs: list[str] = []
    nondiff: list[str] = []
    notimpl: list[str] = []
    calls: set[str] = set()
    for raw, formula in table.items():
        line = entry.line_of(raw) if raw in entry.items else key_line
        if not isinstance(raw, str):
            raise InputError(f"formula key {raw!r} must be a string", file=entry.file, line=line)
        names = [n.strip() for n in raw.split(",")]
        if not isinstance(formula, str):
            raise InputError(f"formula for {raw!r} must be a string", file=entry.file, line=line)
        if names[0] in arg_names:
            unknown = [n for n in names if n not in arg_names]
            if unknown:
                raise InputError(
                    f"formula key {raw!r}: {unknown[0]!r} is not an argument of the schema",
                    file=entry.file,
                    line=line,
                )
            text = formula.strip()
            if text.lower() == "non_differentiable":
                nondiff.extend(names)
            elif _NOT_IMPLEMENTED.match(text):
                notimpl.extend(names)
            else:
                inputs.extend(names)
                calls |= called_names(text, non_tensors)
        elif all(n in out_names for n in names):
            continue  # forward-mode formula
        else:
            raise InputError(
                f"unknown key {raw!r} (neither an argument nor an output of the schema)",
                file=entry.file,
                line=line,
            )
    return inputs, nondiff, notimpl, calls


def parse_derivatives(
    path: Path, overloads: Mapping[str, Overload], resolver: _Resolver | None = None
) -> dict[str, Derivative]:
    """``derivatives.yaml`` -> one :class:`Derivative` per entry, keyed by overload name."""
    resolver = resolver or _Resolver(overloads.values())
    out: dict[str, Derivative] = {}
    for entry in read_entries(path, what="derivatives.yaml"):
        if "name" not in entry.items:
            raise entry.error("entry has no 'name'")
        text, name_line = entry.items["name"]
        if not isinstance(text, str):
            raise InputError("'name' must be a schema string", file=entry.file, line=name_line)
        schema = parse_schema(text, file=entry.file, line=name_line)
        name = overload_name_of(schema)
        if name not in overloads:
            raise InputError(
                f"derivative for {name!r}, which native_functions.yaml does not define",
                file=entry.file,
                line=name_line,
            )
        if name in out:
            raise InputError(
                f"duplicate derivative for {name!r} (first at line {out[name].loc.line})",
                file=entry.file,
                line=name_line,
            )
        outdiff = None
        if "output_differentiability" in entry.items:
            outdiff, line = entry.items["output_differentiability"]
            # booleans, or C++ conditions ("!dtype || isDifferentiableType(*dtype)")
            if not isinstance(outdiff, list) or not all(isinstance(b, (bool, str)) for b in outdiff):
                raise InputError(
                    "'output_differentiability' must be a list of booleans or conditions",
                    file=entry.file,
                    line=line,
                )
        formulas = {k: v for k, (v, _) in entry.items.items()
                    if k not in ("name", "output_differentiability", "dispatch")}
        tables: dict[str, Mapping[str, Any]] = {}
        if "dispatch" in entry.items:
            dispatch, line = entry.items["dispatch"]
            if formulas:
                raise InputError(
                    f"formula {next(iter(formulas))!r} beside a 'dispatch' table",
                    file=entry.file,
                    line=entry.line_of(next(iter(formulas))),
                )
            if not isinstance(dispatch, dict) or not all(
                isinstance(t, dict) for t in dispatch.values()
            ):
                raise InputError(
                    "'dispatch' must map autograd keys to formula tables",
                    file=entry.file,
                    line=line,
                )
            tables = dispatch
            dispatch_line = line
        else:
            tables = {"Default": formulas}
            dispatch_line = entry.line
        parsed = {
            key: _formula_table(entry, schema, dispatch_line, table) for key, table in tables.items()
        }
        inputs, _nondiff, notimpl, calls = parsed.get("Default", ([], [], [], set()))
        bases = {b for b in (resolver.base_of(c) for c in calls) if b is not None}
        ops: set[str] = set()
        for base in bases:
            ops |= resolver.overloads_of(base)
        differentiable = bool(inputs) and (outdiff is None or any(b is not False for b in outdiff))
        out[name] = Derivative(
            name=name,
            differentiable=differentiable,
            backward_ops=frozenset(ops) if differentiable else frozenset(),
            backward_bases=frozenset(bases) if differentiable else frozenset(),
            entry=name,
            inputs=tuple(inputs),
            not_implemented=tuple(notimpl),
            loc=SourceLocation(entry.file, entry.line),
        )
    # In-place overloads without an entry use their functional sibling's formulas, matched by
    # signature as torchgen does. Out= overloads get none: autograd rejects out= calls whose
    # inputs require grad.
    by_sig: dict[tuple[Any, ...], Derivative] = {}
    for name, d in out.items():
        ov = overloads[name]
        if ov.kind == "functional":
            by_sig.setdefault(_signature(ov), d)
    for ov in overloads.values():
        if ov.kind != "inplace" or ov.name in out:
            continue
        src = by_sig.get(_signature(ov))
        if src is not None:
            out[ov.name] = Derivative(
                name=ov.name,
                differentiable=src.differentiable,
                backward_ops=src.backward_ops,
                backward_bases=src.backward_bases,
                entry=src.name,
                inputs=src.inputs,
                not_implemented=src.not_implemented,
                loc=src.loc,
            )
    return out


def find_derivatives_yaml(native_functions: Path) -> Path | None:
    """``derivatives.yaml`` beside ``native_functions.yaml``: in the same folder, in
    ``../../autograd/`` as in torchgen's packaged layout, or in ``tools/autograd/`` of a PyTorch
    checkout (``aten/src/ATen/native/native_functions.yaml``)."""
    folder = native_functions.resolve().parent
    candidates = [folder / "derivatives.yaml", folder.parent.parent / "autograd" / "derivatives.yaml"]
    if len(folder.parents) > 3:  # a PyTorch checkout: aten/src/ATen/native -> tools/autograd
        candidates.append(folder.parents[3] / "tools" / "autograd" / "derivatives.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None
