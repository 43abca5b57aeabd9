"""Parse ``native_functions.yaml`` into :class:`~opdb.model.Overload` records.

Entries are consumed key by key, as torchgen's ``NativeFunction.from_yaml`` does; a key left
over is an error that names the file, the line and the key. Schemas are parsed by torch's own
parser (``torch._C.parse_schema``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from opdb._yaml import Entry, read_entries
from opdb.errors import InputError
from opdb.model import Overload, SourceLocation, family_of, kind_of

# Keys torchgen's NativeFunction.from_yaml consumes, with the type each must have.
_KEY_TYPES: dict[str, tuple[type, ...]] = {
    "func": (str,),
    "variants": (str,),
    "dispatch": (dict,),
    "structured": (bool,),
    "structured_delegate": (str,),
    "structured_inherits": (str,),
    "precomputed": (list,),
    "python_module": (str,),
    "device_guard": (bool,),
    "device_check": (str,),
    "manual_kernel_registration": (bool,),
    "manual_cpp_binding": (bool,),
    "category_override": (str,),
    "tags": (str, list),
    "autogen": (str,),
    "cpp_no_default_args": (list,),
    "ufunc_inner_loop": (str, dict),
    "use_const_ref_for_mutable_tensors": (bool,),
}
_TYPE_NAMES = {str: "a string", bool: "a bool", dict: "a mapping", list: "a list"}
_VARIANTS = frozenset({"function", "method"})
_GENERATED_KEEP_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})


@dataclass(frozen=True)
class AutogenRequest:
    """An ``autogen:`` name, to be resolved against the live dispatcher."""

    name: str
    source: Overload
    line: int


def schema_error(text: str, exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    reason = lines[0] if lines else type(exc).__name__
    reason = reason.split(". ", 1)[0].rstrip(":. ")
    return f"unparsable schema {text!r}: {reason}"


def parse_schema(text: str, *, file: str, line: int) -> Any:
    import torch

    try:
        return torch._C.parse_schema(text)
    except RuntimeError as exc:
        raise InputError(schema_error(text, exc), file=file, line=line) from None


def overload_name_of(schema: Any) -> str:
    base = schema.name.split("::", 1)[-1]
    return f"{base}.{schema.overload_name}" if schema.overload_name else base


def read_tags(path: Path) -> frozenset[str] | None:
    """Valid tag names from ``tags.yaml`` beside ``native_functions.yaml`` (None if absent)."""
    if not path.is_file():
        return None
    tags: set[str] = set()
    for entry in read_entries(path, what="tags.yaml"):
        if "tag" not in entry.items:
            raise entry.error("tags.yaml entry has no 'tag'")
        tag, line = entry.items["tag"]
        if not isinstance(tag, str):
            raise InputError("'tag' must be a string", file=entry.file, line=line)
        tags.add(tag)
    return frozenset(tags)


def _get(entry: Entry, key: str, default: Any = None) -> Any:
    if key not in entry.items:
        return default
    value, line = entry.items[key]
    types = _KEY_TYPES[key]
    if not isinstance(value, types):
        expected = " or ".join(_TYPE_NAMES[t] for t in types)
        raise InputError(f"key {key!r} must be {expected}", file=entry.file, line=line)
    return value


def parse_entry(
    entry: Entry, valid_tags: frozenset[str] | None, schema_cache: Callable[[Overload, Any], None]
) -> tuple[Overload, list[AutogenRequest]]:
    if "func" not in entry.items:
        raise entry.error("entry has no 'func'")
    func = _get(entry, "func")
    for key in entry.items:
        if key not in _KEY_TYPES:
            raise InputError(
                f"unknown key {key!r} in entry {func.split('(', 1)[0]!r}",
                file=entry.file,
                line=entry.line_of(key),
            )
    func_line = entry.line_of("func")
    schema = parse_schema(func, file=entry.file, line=func_line)
    if "::" in schema.name and not schema.name.startswith("aten::"):
        raise InputError(
            f"{schema.name.split('(', 1)[0]!r}: only aten operators are supported",
            file=entry.file,
            line=func_line,
        )
    name = overload_name_of(schema)
    base = name.split(".", 1)[0]
    family, inplace_name = family_of(base)
    kind = kind_of(schema, inplace_name)

    variants_s = _get(entry, "variants", "function")
    variants = frozenset(v.strip() for v in variants_s.split(","))
    bad = variants - _VARIANTS
    if bad:
        raise InputError(
            f"illegal variant {sorted(bad)[0]!r} (expected function, method)",
            file=entry.file,
            line=entry.line_of("variants"),
        )

    structured = _get(entry, "structured", False)
    delegate = _get(entry, "structured_delegate")
    raw_dispatch = _get(entry, "dispatch")
    dispatch: dict[str, str] = {}
    if raw_dispatch is not None:
        for keys, kernel in raw_dispatch.items():
            if not isinstance(keys, str) or not isinstance(kernel, str):
                raise InputError(
                    f"dispatch entry {keys!r}: {kernel!r} must map key names to a kernel name",
                    file=entry.file,
                    line=entry.line_of("dispatch"),
                )
            for key in keys.split(","):
                dispatch[key.strip()] = kernel
    elif not structured and delegate is None:
        # torchgen: no table means an implicit CompositeImplicitAutograd kernel.
        dispatch["CompositeImplicitAutograd"] = base + ("_out" if kind == "out" else "")

    tags_in = _get(entry, "tags", [])
    tag_list = [tags_in] if isinstance(tags_in, str) else list(tags_in)
    for tag in tag_list:
        if not isinstance(tag, str) or (valid_tags is not None and tag not in valid_tags):
            raise InputError(
                f"unknown tag {tag!r} (not in tags.yaml)", file=entry.file, line=entry.line_of("tags")
            )
    tags = set(tag_list)
    # The tags torchgen adds to every (aten) entry (see NativeFunction.from_yaml).
    implied = {"pt2_compliant_tag"}
    if kind == "out":
        implied.add("out")
    if inplace_name:
        implied.add("inplace")
    tags |= {t for t in implied if valid_tags is None or t in valid_tags}

    python_module = _get(entry, "python_module")
    inherits = _get(entry, "structured_inherits")
    for key in (
        "precomputed", "device_guard", "device_check",
        "manual_kernel_registration", "manual_cpp_binding", "category_override",
        "cpp_no_default_args", "ufunc_inner_loop", "use_const_ref_for_mutable_tensors",
    ):
        _get(entry, key)  # type-checked; not modelled

    loc = SourceLocation(entry.file, entry.line)
    overload = Overload(
        name=name,
        base=base,
        overload_name=schema.overload_name,
        schema_str=func,
        kind=kind,
        family=family,
        dispatch=MappingProxyType(dispatch),
        structured=structured,
        structured_delegate=delegate,
        structured_inherits=inherits,
        variants=variants,
        tags=frozenset(tags),
        python_module=python_module,
        loc=loc,
    )
    schema_cache(overload, schema)

    autogen_s = _get(entry, "autogen", "")
    requests = []
    if autogen_s.strip():
        line = entry.line_of("autogen")
        for part in autogen_s.split(","):
            part = part.strip()
            if not part:
                raise InputError("empty name in 'autogen'", file=entry.file, line=line)
            requests.append(AutogenRequest(name=part, source=overload, line=line))
    return overload, requests


def generated_tags(source: Overload, kind: str, inplace_name: bool) -> frozenset[str]:
    """Tags of an autogen'd overload, as torchgen's native_function_generation gives them."""
    tags = {"generated"} | (source.tags & _GENERATED_KEEP_TAGS)
    if kind == "out":
        tags.add("out")
    if inplace_name:
        tags.add("inplace")
    return frozenset(tags)


def read_native_functions(path: Path) -> tuple[list[Overload], list[AutogenRequest]]:
    """All YAML entries of ``native_functions.yaml`` as overloads, plus the ``autogen:`` names."""
    valid_tags = read_tags(path.parent / "tags.yaml")
    entries = read_entries(path, what="native_functions.yaml")

    def cache(ov: Overload, schema: Any) -> None:
        ov.__dict__["schema"] = schema  # fill the cached_property: parsed once

    overloads: list[Overload] = []
    requests: list[AutogenRequest] = []
    seen: dict[str, Overload] = {}
    for entry in entries:
        ov, reqs = parse_entry(entry, valid_tags, cache)
        if ov.name in seen:
            raise InputError(
                f"duplicate overload {ov.name!r} (first at line {seen[ov.name].loc.line})",
                file=entry.file,
                line=entry.line,
            )
        seen[ov.name] = ov
        overloads.append(ov)
        requests.extend(reqs)
    return overloads, requests
