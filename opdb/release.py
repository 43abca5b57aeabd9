"""What one torch release declares about its operators, read without that torch: the facts of
every overload in a ``native_functions.yaml`` (and the ``derivatives.yaml`` beside it), in a
saved ``conformance ops --format json`` snapshot, or in the YAML another Python's torch packages.

The rule: both sides of an upgrade are read by the same reader, and that reader does not use the
running torch's schema parser. torch 2.13's parser refuses 2.9's ``Dimname`` schemas
(``rename_(Tensor(a!) self, Dimname[]? names)``: "unknown type specifier"), so another release's
YAML cannot go through :func:`opdb.load`; schemas are compared as their own text, split into
arguments (:func:`split_schema`). Autogen'd overloads (``autogen:``) are named with their source
entry's location; their schema lives only in that release's dispatcher, so it is not compared.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from opdb._yaml import Entry, read_entries
from opdb.derivatives import called_names, find_derivatives_yaml
from opdb.errors import InputError
from opdb.model import family_of, split_name

COMPOSITE_IMPLICIT = "CompositeImplicitAutograd"
COMPOSITE_EXPLICIT = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")

#: derivatives.yaml keys that are not formulas (torchgen's load_derivatives).
_NOT_FORMULAS = frozenset({"name", "output_differentiability", "dispatch", "result_type"})


@dataclass(frozen=True)
class SchemaArg:
    """One argument of a schema as its text spells it: ``Scalar alpha=1`` after ``*``."""

    name: str
    type: str  # without the alias annotation: ``Tensor`` for ``Tensor(a!)``
    default: str | None
    kwarg_only: bool
    alias: str  # ``(a!)`` or ""

    def __str__(self) -> str:
        text = f"{self.type}{self.alias} {self.name}"
        return text + (f"={self.default}" if self.default is not None else "")


@dataclass(frozen=True)
class OpFacts:
    """One overload as a release declares it. ``schema`` is None for an autogen'd overload
    (its schema is generated); ``backward_bases`` is None where no derivatives were read."""

    name: str
    schema: str | None
    kind: str
    dispatch: tuple[str, ...]  # dispatch keys of the entry (an implicit CIA included)
    structured_delegate: str | None
    autogen: bool
    tags: frozenset[str]
    loc: str  # file:line of the entry
    differentiable: bool | None = None  # None: no derivatives.yaml entry (or none read)
    #: names the backward formulas call: every called identifier for a YAML (resolved to aten
    #: bases against both releases at comparison, so an op one release adds does not make an
    #: unchanged formula look changed), the resolved bases for a snapshot
    backward_bases: frozenset[str] | None = None
    derivative_loc: str | None = None

    @property
    def composite(self) -> str | None:
        """The composite kernel that serves every backend, if any: ``CompositeImplicitAutograd``,
        ``CompositeExplicitAutograd`` (or ...NonFunctional), or ``autogen`` (torchgen generates
        a CompositeExplicitAutograd kernel over the family's functional or in-place op)."""
        if COMPOSITE_IMPLICIT in self.dispatch:
            return COMPOSITE_IMPLICIT
        for key in COMPOSITE_EXPLICIT:
            if key in self.dispatch:
                return key
        return "autogen" if self.autogen else None


@dataclass(frozen=True)
class Release:
    """Every overload of one release, by name, and where the facts came from."""

    label: str
    native_functions: str
    derivatives: str | None
    ops: Mapping[str, OpFacts]


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets, parentheses and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    tail = "".join(cur).strip()
    return [*parts, tail] if tail or parts else []


def split_schema(schema: str) -> tuple[str, tuple[SchemaArg, ...], str]:
    """``name(args) -> returns`` -> the name, the arguments, the returns' text."""
    head, sep, rest = schema.partition("(")
    depth, end = 1, -1
    for i, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            end = i
            break
    if not sep or end < 0:
        raise ValueError(f"unbalanced schema {schema!r}")
    args: list[SchemaArg] = []
    kwarg_only = False
    for part in split_top(rest[:end]):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        typ, _, name = decl.strip().rpartition(" ")
        alias = ""
        if "(" in typ:
            at = typ.index("(")
            close = typ.index(")", at)
            alias, typ = typ[at:close + 1], typ[:at] + typ[close + 1:]
        args.append(SchemaArg(name=name, type=typ, default=default.strip() if eq else None,
                              kwarg_only=kwarg_only, alias=alias))
    returns = rest[end + 1:].strip().removeprefix("->").strip()
    return head.strip(), tuple(args), returns


def _kind(base: str, args: tuple[SchemaArg, ...]) -> str:
    if any(a.kwarg_only and a.alias.endswith("!)") for a in args):
        return "out"
    return "inplace" if family_of(base)[1] else "functional"


def _tags(entry: Entry) -> frozenset[str]:
    raw = entry.items.get("tags", ([], 0))[0]
    return frozenset([raw] if isinstance(raw, str) else [t for t in raw if isinstance(t, str)])


def _native_entry(entry: Entry) -> list[OpFacts]:
    """The overload of one native_functions.yaml entry, and the overloads it autogens."""
    func = entry.items.get("func", (None, 0))[0]
    if not isinstance(func, str):
        raise entry.error("entry has no 'func'")
    try:
        name, args, _ = split_schema(func)
    except ValueError as exc:
        raise InputError(str(exc), file=entry.file, line=entry.line_of("func")) from None
    base = split_name(name)[0]
    kind = _kind(base, args)
    table = entry.items.get("dispatch", (None, 0))[0]
    delegate = entry.items.get("structured_delegate", (None, 0))[0]
    structured = bool(entry.items.get("structured", (False, 0))[0])
    keys: list[str] = []
    if isinstance(table, dict):
        keys = [k.strip() for ks in table for k in str(ks).split(",")]
    elif not structured and delegate is None:
        keys = [COMPOSITE_IMPLICIT]  # torchgen: no table means an implicit CIA kernel
    tags = _tags(entry)
    loc = f"{entry.file}:{entry.line}"
    out = [OpFacts(name=name, schema=func, kind=kind, dispatch=tuple(sorted(set(keys))),
                   structured_delegate=delegate, autogen=False, tags=tags, loc=loc)]
    autogen = entry.items.get("autogen", ("", 0))
    for part in str(autogen[0] or "").split(","):
        if part.strip():
            gen = part.strip()
            gbase = split_name(gen)[0]
            out.append(OpFacts(name=gen, schema=None,
                               kind="out" if gen.endswith("out") else _kind(gbase, ()),
                               dispatch=(), structured_delegate=None, autogen=True,
                               tags=frozenset({"generated"}),
                               loc=f"{entry.file}:{autogen[1]}"))
    return out


def _formulas(entry: Entry) -> list[str]:
    texts = [v for k, (v, _) in entry.items.items() if k not in _NOT_FORMULAS]
    table = entry.items.get("dispatch", (None, 0))[0]
    if isinstance(table, dict) and isinstance(table.get("Default"), dict):
        texts.extend(v for k, v in table["Default"].items() if k not in _NOT_FORMULAS)
    return [t for t in texts if isinstance(t, str)]


def _derivatives(path: Path) -> dict[str, tuple[bool, frozenset[str], str]]:
    """Per overload named in derivatives.yaml: (differentiable, the names its formulas call,
    file:line); ``foo_symint`` is the C++ spelling of ``foo``, as opdb resolves it."""
    out: dict[str, tuple[bool, frozenset[str], str]] = {}
    for entry in read_entries(path, what="derivatives.yaml"):
        text = entry.items.get("name", (None, 0))[0]
        if not isinstance(text, str):
            raise entry.error("derivatives.yaml entry has no 'name'")
        name = text.partition("(")[0].strip()
        formulas = _formulas(entry)
        called: set[str] = set()
        for f in formulas:
            for ident in called_names(f):
                called.add(ident.removesuffix("_symint"))
        differentiable = any(f.strip() != "non_differentiable" for f in formulas)
        out[name] = (differentiable, frozenset(called), f"{entry.file}:{entry.line}")
    return out


def read_yaml(native_functions: str | Path, *, label: str | None = None,
              derivatives: str | Path | None = None) -> Release:
    """A release's facts from its ``native_functions.yaml`` (a folder holding one works too)
    and the ``derivatives.yaml`` beside it (``find_derivatives_yaml``)."""
    path = Path(native_functions)
    if path.is_dir():
        path = path / "native_functions.yaml"
    if not path.is_file():
        raise InputError("native_functions.yaml not found", file=str(path))
    facts: dict[str, OpFacts] = {}
    for entry in read_entries(path, what="native_functions.yaml"):
        for f in _native_entry(entry):
            facts.setdefault(f.name, f)
    d_path = Path(derivatives) if derivatives is not None else find_derivatives_yaml(path)
    if d_path is not None:
        derivs = _derivatives(d_path)
        for name, f in list(facts.items()):
            d = derivs.get(name)
            facts[name] = _with_derivative(f, d) if d else _with_derivative(f, None)
    return Release(label=label or str(path), native_functions=str(path),
                   derivatives=str(d_path) if d_path else None,
                   ops=MappingProxyType(facts))


def _with_derivative(f: OpFacts, d: tuple[bool, frozenset[str], str] | None) -> OpFacts:
    from dataclasses import replace

    if d is None:
        return replace(f, backward_bases=frozenset())
    return replace(f, differentiable=d[0], backward_bases=d[1], derivative_loc=d[2])


def read_snapshot(path: str | Path, *, label: str | None = None) -> Release:
    """A release's facts from a saved ``conformance ops --format json`` (older snapshots
    without ``backward_bases`` leave derivatives unknown)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the ops snapshot: {exc}", file=str(p)) from None
    if not isinstance(doc, list) or not all(isinstance(r, dict) and "name" in r for r in doc):
        raise InputError("not a `conformance ops --format json` snapshot (a list of overloads)",
                         file=str(p))
    facts: dict[str, OpFacts] = {}
    for r in doc:
        bb = r.get("backward_bases")
        auto = r.get("autograd")
        facts[r["name"]] = OpFacts(
            name=r["name"], schema=None if r.get("autogen") else r.get("schema"),
            kind=r.get("kind", "functional"), dispatch=tuple(sorted(r.get("dispatch") or {})),
            structured_delegate=r.get("structured_delegate"), autogen=bool(r.get("autogen")),
            tags=frozenset(r.get("tags") or ()) - {"pt2_compliant_tag", "out", "inplace"},
            loc=str(r.get("source", "")),
            differentiable=None if auto in (None, "unknown") or bb is None
            else auto == "formula",
            backward_bases=frozenset(bb) if bb is not None else None,
            derivative_loc=r.get("derivative_source"))
    return Release(label=label or str(p), native_functions=str(p), derivatives=None,
                   ops=MappingProxyType(facts))


#: Run in another Python: where its torch packages the YAML, and its version, without
#: importing torch there (find_spec of a top-level package does not execute it).
_LOCATE = (
    "import importlib.util as u, importlib.metadata as m, json\n"
    "s = u.find_spec('torchgen')\n"
    "root = list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else None\n"
    "try:\n v = m.version('torch')\nexcept m.PackageNotFoundError:\n v = None\n"
    "print(json.dumps({'torchgen': root, 'version': v}))\n"
)


def locate_packaged(python: str) -> tuple[Path, str | None]:
    """The ``native_functions.yaml`` the torch of interpreter ``python`` packages, and that
    torch's version, asked of that interpreter in a subprocess."""
    try:
        done = subprocess.run([python, "-c", _LOCATE], capture_output=True, text=True,
                              timeout=60, check=False)
    except OSError as exc:
        raise InputError(f"cannot run {python}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"{python} did not answer in 60 s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"{python} could not locate its torch: {tail}")
    info: dict[str, Any] = json.loads(lines[-1])
    if not info.get("torchgen"):
        raise InputError(f"{python} has no torchgen (torch not installed there)")
    path = Path(info["torchgen"]) / "packaged" / "ATen" / "native" / "native_functions.yaml"
    if not path.is_file():
        raise InputError("that torch packages no native_functions.yaml", file=str(path))
    return path, info.get("version")


def read_side(spec: str, *, python: bool = False) -> Release:
    """One side of an upgrade: a Python interpreter (``python``), a ``.json`` ops snapshot, or
    a ``native_functions.yaml`` (or the folder holding it)."""
    if python:
        path, version = locate_packaged(spec)
        return read_yaml(path, label=f"torch {version}" if version else spec)
    if spec.endswith(".json"):
        return read_snapshot(spec)
    return read_yaml(spec)


__all__ = ["OpFacts", "Release", "SchemaArg", "locate_packaged", "read_side", "read_snapshot",
           "read_yaml", "split_schema", "split_top"]
