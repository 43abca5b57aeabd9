"""Line-aware YAML reading with PyYAML's C loader.

``native_functions.yaml`` and ``derivatives.yaml`` are lists of mappings. Each entry is returned
as an :class:`Entry`: its keys, each with the value and the line it sits on, so that every error
can point into the file. Parsing errors (malformed or truncated YAML) become one-line
:class:`~opdb.errors.InputError` messages naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opdb.errors import InputError

if TYPE_CHECKING:
    import yaml

_BOOL = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


@dataclass(frozen=True)
class Entry:
    """One top-level mapping of a YAML list, with the line of the entry and of each key."""

    file: str
    line: int
    items: dict[str, tuple[Any, int]]

    def keys(self) -> Iterator[str]:
        return iter(self.items)

    def line_of(self, key: str) -> int:
        return self.items[key][1] if key in self.items else self.line

    def error(self, message: str, key: str | None = None) -> InputError:
        return InputError(message, file=self.file, line=self.line_of(key) if key else self.line)


def _construct(node: yaml.Node, file: str, yaml: Any) -> Any:
    """Build plain Python values from a composed node (safe subset: str/bool/int/float/None).
    ``yaml``: the module (imported by :func:`read_entries`, not at this module's import)."""
    if isinstance(node, yaml.ScalarNode):
        tag = node.tag
        value = node.value
        if tag.endswith(":str"):
            return value
        if tag.endswith(":bool"):
            return _BOOL[value.lower()]
        if tag.endswith(":int"):
            return int(value.replace("_", ""), 0)
        if tag.endswith(":float"):
            return float(value.replace("_", ""))
        if tag.endswith(":null"):
            return None
        raise InputError(f"unsupported YAML tag {tag}", file=file, line=node.start_mark.line + 1)
    if isinstance(node, yaml.SequenceNode):
        return [_construct(child, file, yaml) for child in node.value]
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            key = _construct(knode, file, yaml)
            if key in out:
                raise InputError(
                    f"duplicate key {key!r}", file=file, line=knode.start_mark.line + 1
                )
            out[key] = _construct(vnode, file, yaml)
        return out
    raise InputError("unexpected YAML node", file=file, line=node.start_mark.line + 1)


def read_entries(path: Path, *, what: str) -> list[Entry]:
    """Read a YAML file that must be a list of mappings; one :class:`Entry` per item."""
    # imported here: a run whose op database comes from the cache (opdb.cache) never needs
    # PyYAML, whose import costs 0.2 s of `conformance coverage`
    import yaml

    loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # SafeLoader: no libyaml
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {exc}", file=file) from None
    try:
        root = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise InputError(f"malformed YAML: {problem}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=file) from None
    if root is None:
        raise InputError(f"{what} is empty", file=file, line=1)
    if not isinstance(root, yaml.SequenceNode):
        raise InputError(
            f"{what} must be a YAML list of entries", file=file, line=root.start_mark.line + 1
        )
    entries: list[Entry] = []
    for item in root.value:
        line = item.start_mark.line + 1
        if not isinstance(item, yaml.MappingNode):
            raise InputError("entry is not a mapping", file=file, line=line)
        items: dict[str, tuple[Any, int]] = {}
        for knode, vnode in item.value:
            kline = knode.start_mark.line + 1
            if not isinstance(knode, yaml.ScalarNode):
                raise InputError("entry key is not a string", file=file, line=kline)
            key = knode.value
            if key in items:
                raise InputError(f"duplicate key {key!r}", file=file, line=kline)
            items[key] = (_construct(vnode, file, yaml), kline)
        entries.append(Entry(file=file, line=line, items=items))
    return entries
