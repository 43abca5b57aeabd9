"""Parity baselines: a team's known state of its backend, as a YAML file kept in its repository.

The file, as ``conformance baseline RESULTS... -o parity-baseline.yaml`` writes it::

    # comments anywhere survive `conformance baseline --update`
    opconform_baseline: 1
    backend: "mlu"
    torch_version: "2.13.0"
    entries:
      add.Tensor:
        forward: pass
        promotion: {verdict: fail, category: error_type, reason: "TypeError vs RuntimeError"}
        broadcast: pass
      some_op.out:
        forward: {verdict: skip, category: no_strategy}

Keys: overload → check (→ dtype, where a verdict record carries a ``dtype`` field). A leaf is
``pass`` or a flow mapping with ``verdict``, ``category`` and, for what does not pass, a
``reason`` for humans (seeded from the packaged expected-failure reason when the run had one).

``--update`` merges a new run into an existing file *line by line*: a leaf whose verdict or
category changed is rewritten in place (its reason and a trailing ``# comment`` kept), new leaves
are inserted after their overload's last line, new overloads in name order; every other line —
comments, blank lines, order, hand formatting, entries the new run did not reach — stays as it
was. (PyYAML is already a dependency and gives each node's position; a round-trip YAML library
would add one for what these few edits need.)
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import yaml

from opdb import outcomes
from opdb.errors import InputError
from reports.results import Results

FORMAT_KEY = "opconform_baseline"
FORMAT_VERSION = 1

#: (overload, check, dtype or None)
Key = tuple[str, str, "str | None"]

HEADER = """\
# Parity baseline for opconform: the known state of one backend, one line per (overload, check).
# Written by `conformance baseline`; `conformance baseline --update` merges a new run into it,
# keeping reasons, comments and order. Give every entry that does not pass a `reason`.
# `conformance gate --baseline THIS-FILE RESULTS...` fails CI on anything worse than this file.
"""

_LEAF_KEYS = ("verdict", "category", "reason")
_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it
_TOP_KEYS = (FORMAT_KEY, "backend", "torch_version", "entries")


@dataclass(frozen=True)
class State:
    """One leaf: what the (overload, check[, dtype]) did, and why (for humans)."""

    verdict: str
    category: str | None = None
    reason: str | None = None

    def same_outcome(self, other: State) -> bool:
        return (self.verdict, self.category) == (other.verdict, other.category)


@dataclass(frozen=True)
class Entry:
    """A leaf of a baseline file, with the line it sits on (1-based)."""

    key: Key
    state: State
    line: int

    @property
    def id(self) -> str:
        ov, check, dtype = self.key
        return f"{ov}::{check}" + (f"[{dtype}]" if dtype else "")


@dataclass(frozen=True)
class Baseline:
    path: str
    backend: str | None
    torch_version: str | None
    entries: Mapping[Key, Entry]
    text: str = ""
    # positions for line-preserving updates
    _spans: Mapping[Key, tuple[int, int, int]] = field(default_factory=dict)  # 0-based
    _overloads: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    _overload_indent: int = 2
    _top: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    _checks: Mapping[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def overload_lines(self) -> list[tuple[str, int]]:
        """Each overload of the file with the (1-based) line its block starts on."""
        return sorted(((ov, span[0] + 1) for ov, span in self._overloads.items()),
                      key=lambda x: x[1])


def key_of(rec: Mapping[str, Any]) -> Key:
    dtype = rec.get("dtype")
    return (str(rec["overload"]), str(rec["check"]), dtype if isinstance(dtype, str) else None)


def key_id(key: Key) -> str:
    ov, check, dtype = key
    return f"{ov}::{check}" + (f"[{dtype}]" if dtype else "")


def state_of(rec: Mapping[str, Any]) -> State:
    """The baseline state of one verdict record (a pass keeps no category: informational)."""
    verdict = str(rec["verdict"])
    if verdict == "pass":
        return State("pass")
    cat = rec.get("category")
    reason = None
    if verdict != "skip":
        expected = rec.get("expected")
        reason = f"expected failure: {expected}" if isinstance(expected, str) and expected else ""
    return State(verdict, cat if isinstance(cat, str) else None, reason)


def latest_states(results: Results) -> dict[Key, tuple[State, dict[str, Any]]]:
    """The last record per key across the results (later files and lines win)."""
    out: dict[Key, tuple[State, dict[str, Any]]] = {}
    for rec in results.verdicts:
        out[key_of(rec)] = (state_of(rec), rec)
    return out


# -- rendering ----------------------------------------------------------------------------------
def _q(s: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of YAML's)."""
    return json.dumps(s, ensure_ascii=False)


@cache
def _plain_ok(s: str) -> bool:
    """Whether ``s`` reads back as the same string when written plain (``add.Tensor`` does;
    ``null``, ``1.5`` or ``yes`` would not)."""
    return bool(s) and all(c.isalnum() or c in "_.-" for c in s) and s[0] not in "-." and (
        yaml.safe_load(s) == s)


def _name(s: str) -> str:
    return s if _plain_ok(s) else _q(s)


def render_state(state: State) -> str:
    if state.verdict == "pass" and state.category is None and not state.reason:
        return "pass"
    parts = [f"verdict: {_name(state.verdict)}"]
    if state.category is not None:
        parts.append(f"category: {_name(state.category)}")
    if state.reason is not None:
        parts.append(f"reason: {_q(state.reason)}")
    return "{" + ", ".join(parts) + "}"


def _overload_lines(ov: str, leaves: Mapping[tuple[str, str | None], State],
                    indent: int = 2) -> list[str]:
    """An overload's block: ``ov:`` then one line per check (dtype-keyed checks nest)."""
    pad = " " * (indent + 2)
    by_check: dict[str, list[tuple[str | None, State]]] = {}
    for (check, dtype), st in leaves.items():
        by_check.setdefault(check, []).append((dtype, st))
    lines = [" " * indent + f"{_name(ov)}:"]
    for check, rows in by_check.items():
        plain = [st for d, st in rows if d is None]
        if plain:
            lines.append(f"{pad}{_name(check)}: {render_state(plain[-1])}")
        dtyped = [(d, st) for d, st in rows if d is not None]
        if dtyped and not plain:
            lines.append(f"{pad}{_name(check)}:")
            lines.extend(f"{pad}  {_name(d)}: {render_state(st)}" for d, st in dtyped)
    return lines


def _grouped(states: Mapping[Key, State]) -> dict[str, dict[tuple[str, str | None], State]]:
    by: dict[str, dict[tuple[str, str | None], State]] = {}
    for (ov, check, dtype), st in states.items():
        by.setdefault(ov, {})[(check, dtype)] = st
    return by


def render(states: Mapping[Key, State], *, backend: str | None, torch_version: str | None) -> str:
    """A new baseline file: overloads in name order, checks in the order the run had them."""
    lines = [HEADER.rstrip("\n"), f"{FORMAT_KEY}: {FORMAT_VERSION}",
             f"backend: {_q(backend) if backend else 'null'}",
             f"torch_version: {_q(torch_version) if torch_version else 'null'}",
             "entries:"]
    by = _grouped(states)
    for ov in sorted(by):
        lines.extend(_overload_lines(ov, by[ov]))
    return "\n".join(lines) + "\n"


# -- reading ------------------------------------------------------------------------------------
def _err(message: str, path: str, node: yaml.Node | None) -> InputError:
    return InputError(message, file=path, line=node.start_mark.line + 1 if node else None)


def _scalar(node: yaml.Node, path: str, what: str) -> str | None:
    if not isinstance(node, yaml.ScalarNode):
        raise _err(f"{what} must be a plain value", path, node)
    return None if node.tag.endswith(":null") else str(node.value)


def _last_line(node: yaml.Node) -> int:
    """0-based last line a value node occupies."""
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def _leaf(node: yaml.Node, path: str) -> State:
    if isinstance(node, yaml.ScalarNode):
        verdict = node.value
        if verdict not in outcomes.VERDICTS:
            raise _err(f"unknown verdict {verdict!r}; expected one of "
                       f"{', '.join(outcomes.VERDICTS)}", path, node)
        return State(verdict)
    assert isinstance(node, yaml.MappingNode)
    got: dict[str, str | None] = {}
    for k, v in node.value:
        name = k.value if isinstance(k, yaml.ScalarNode) else None
        if name not in _LEAF_KEYS:
            raise _err(f"unknown key {name!r} in a baseline entry; expected "
                       f"{', '.join(_LEAF_KEYS)}", path, k)
        got[name] = _scalar(v, path, name)
    verdict = got.get("verdict")
    if verdict is None:
        raise _err("baseline entry without 'verdict'", path, node)
    if verdict not in outcomes.VERDICTS:
        raise _err(f"unknown verdict {verdict!r}; expected one of "
                   f"{', '.join(outcomes.VERDICTS)}", path, node)
    return State(verdict, got.get("category"), got.get("reason"))


def _is_leaf_map(node: yaml.MappingNode) -> bool:
    return any(isinstance(k, yaml.ScalarNode) and k.value == "verdict" for k, _ in node.value)


def parse(text: str, path: str) -> Baseline:
    """Parse a baseline file's text; every problem is an InputError naming ``path:line``."""
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError(f"malformed YAML: {exc.problem or exc.context}", file=path,
                         line=mark.line + 1 if mark else None) from None
    if not isinstance(root, yaml.MappingNode):
        raise InputError(f"not a parity baseline: expected a mapping with '{FORMAT_KEY}'",
                         file=path, line=root.start_mark.line + 1 if root is not None else 1)
    top: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for k, v in root.value:
        name = k.value if isinstance(k, yaml.ScalarNode) else None
        if name not in _TOP_KEYS:
            raise _err(f"unknown key {name!r}; a baseline has {', '.join(_TOP_KEYS)}", path, k)
        if name in top:
            raise _err(f"duplicate key {name!r}", path, k)
        top[name] = (k, v)
    if FORMAT_KEY not in top:
        raise InputError(f"not a parity baseline: no '{FORMAT_KEY}: {FORMAT_VERSION}' key",
                         file=path, line=1)
    version = top[FORMAT_KEY][1]
    if not isinstance(version, yaml.ScalarNode) or version.value != str(FORMAT_VERSION):
        raise _err(f"unsupported baseline version {getattr(version, 'value', '?')!r}; this "
                   f"opconform reads version {FORMAT_VERSION}", path, version)
    backend = _scalar(top["backend"][1], path, "backend") if "backend" in top else None
    torch_version = (_scalar(top["torch_version"][1], path, "torch_version")
                     if "torch_version" in top else None)
    entries: dict[Key, Entry] = {}
    spans: dict[Key, tuple[int, int, int]] = {}
    overloads: dict[str, tuple[int, int, int]] = {}
    checks: dict[tuple[str, str], tuple[int, int]] = {}
    indent = 2
    ent = top.get("entries")
    if ent is not None and not (isinstance(ent[1], yaml.ScalarNode) and ent[1].tag.endswith(
            ":null")):
        node = ent[1]
        if not isinstance(node, yaml.MappingNode):
            raise _err("'entries' must be a mapping: overload -> check -> state", path, node)
        if node.value:
            indent = node.value[0][0].start_mark.column
        for ok, ov_node in node.value:
            ov = _scalar(ok, path, "overload name")
            if not ov:
                raise _err("empty overload name", path, ok)
            if ov in overloads:
                raise _err(f"duplicate overload {ov!r}", path, ok)
            if not isinstance(ov_node, yaml.MappingNode):
                raise _err(f"{ov}: expected a mapping check -> state", path, ov_node)
            last = ok.start_mark.line
            child_indent = indent + 2
            if ov_node.value:
                child_indent = ov_node.value[0][0].start_mark.column
            for ck, c_node in ov_node.value:
                check = _scalar(ck, path, "check name") or ""
                pairs: list[tuple[str | None, yaml.Node, yaml.Node]]
                if isinstance(c_node, yaml.MappingNode) and not _is_leaf_map(c_node):
                    pairs = [(_scalar(dk, path, "dtype"), dk, dv) for dk, dv in c_node.value]
                    checks[(ov, check)] = (ck.start_mark.line, _last_line(c_node))
                else:
                    pairs = [(None, ck, c_node)]
                for dtype, knode, vnode in pairs:
                    if not isinstance(vnode, (yaml.ScalarNode, yaml.MappingNode)):
                        raise _err(f"{ov}::{check}: expected 'pass' or a mapping with a "
                                   f"verdict", path, vnode)
                    key: Key = (ov, check, dtype)
                    if key in entries:
                        raise _err(f"duplicate entry {key_id(key)}", path, knode)
                    entries[key] = Entry(key, _leaf(vnode, path), knode.start_mark.line + 1)
                    spans[key] = (knode.start_mark.line, _last_line(vnode),
                                  vnode.end_mark.column)
                    last = max(last, _last_line(vnode))
            overloads[ov] = (ok.start_mark.line, last, child_indent)
    top_spans = {name: (v.start_mark.line, _last_line(v), v.end_mark.column)
                 for name, (_, v) in top.items()}
    return Baseline(path, backend, torch_version, entries, text, spans, overloads, indent,
                    top_spans, checks)


def read(path: str | os.PathLike[str]) -> Baseline:
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise InputError("baseline file not found", file=name) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a baseline file (YAML)", file=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read baseline: {exc}", file=name) from None
    return parse(text, name)


# -- line-preserving update ---------------------------------------------------------------------
@dataclass(frozen=True)
class UpdateSummary:
    changed: tuple[Key, ...]
    added: tuple[Key, ...]
    kept_unrun: int
    pruned: int = 0


def _trailing_comment(line: str, col: int) -> str:
    rest = line[col:].strip()
    return f"  {rest}" if rest.startswith("#") else ""


def update(base: Baseline, states: Mapping[Key, State], *, backend: str | None,
           torch_version: str | None, prune: Collection[Key] = ()
           ) -> tuple[str, UpdateSummary]:
    """Merge ``states`` (a new run) into ``base``; returns the new text and what changed.
    ``prune``: entries to delete (an overload or dtype-keyed check left empty goes too)."""
    lines = base.text.splitlines()
    replace: dict[int, tuple[int, list[str]]] = {}  # first line -> (last line, new lines)
    insert: dict[int, list[str]] = {}  # before line -> new lines
    gone = {k for k in prune if k in base.entries and k not in states}
    by_ov: dict[str, set[Key]] = {}
    for k in base.entries:
        by_ov.setdefault(k[0], set()).add(k)
    run_ovs = {k[0] for k in states}
    for ov, keys in by_ov.items():
        if keys <= gone and ov not in run_ovs:
            start, last, _ = base._overloads[ov]
            replace[start] = (last, [])
            continue
        for (o, check), (start, last) in base._checks.items():
            dkeys = {k for k in keys if k[1] == check and k[2] is not None}
            if o == ov and dkeys and dkeys <= gone:
                replace[start] = (last, [])
                keys = keys - dkeys
        for k in keys & gone:
            start, end, _ = base._spans[k]
            replace[start] = (end, [])
    changed: list[Key] = []
    added: list[Key] = []
    entries_at = base._top["entries"][0] - 1 if "entries" in base._top else len(lines)
    for name, value in (("backend", backend), ("torch_version", torch_version)):
        if value is None:
            continue
        span = base._top.get(name)
        if span is None:
            insert.setdefault(entries_at, []).append(f"{name}: {_q(value)}")
        elif (base.backend if name == "backend" else base.torch_version) != value:
            start, end, col = span
            prefix = lines[start][: lines[start].index(":") + 1]
            replace[start] = (end, [f"{prefix} {_q(value)}"
                                    f"{_trailing_comment(lines[end], col)}"])
    new_by_ov: dict[str, dict[tuple[str, str | None], State]] = {}
    for key, st in states.items():
        old = base.entries.get(key)
        if old is None:
            new_by_ov.setdefault(key[0], {})[(key[1], key[2])] = st
            added.append(key)
            continue
        if old.state.same_outcome(st):
            continue
        reason = st.reason
        if st.verdict not in ("pass", "skip") and old.state.reason:
            reason = old.state.reason  # a human's words outlive a change of category
        new = State(st.verdict, st.category, reason)
        start, end, col = base._spans[key]
        line = lines[start]
        prefix = line[: len(line) - len(line.lstrip())] + _name(key[2] or key[1]) + ":"
        replace[start] = (end, [f"{prefix} {render_state(new)}"
                                f"{_trailing_comment(lines[end], col)}"])
        changed.append(key)
    if "entries" not in base._top:
        insert.setdefault(len(lines), []).append("entries:")
    order = sorted(base._overloads, key=lambda o: base._overloads[o][0])
    starts = [base._overloads[o][0] for o in order]
    sorted_file = order == sorted(order)
    for ov in sorted(new_by_ov):
        leaves = new_by_ov[ov]
        if ov in base._overloads:
            _, last, child = base._overloads[ov]
            insert.setdefault(last + 1, []).extend(_overload_lines(ov, leaves, child - 2)[1:])
            continue
        at = len(lines)
        if sorted_file and order:
            i = bisect.bisect_right(order, ov)
            if i < len(order):
                at = starts[i]
                while at > 0 and lines[at - 1].lstrip().startswith("#"):
                    at -= 1  # comments right above an overload belong to it
        insert.setdefault(at, []).extend(_overload_lines(ov, leaves, base._overload_indent))
    for at in sorted({*replace, *insert}, reverse=True):
        if at in replace:
            end, repl = replace[at]
            lines[at:end + 1] = repl
        if at in insert:
            lines[at:at] = insert[at]
    kept = sum(1 for k in base.entries if k not in states and k not in gone)
    return "\n".join(lines) + "\n", UpdateSummary(tuple(changed), tuple(added), kept,
                                                  len(gone))


def states_from(results: Results) -> dict[Key, State]:
    return {k: st for k, (st, _) in latest_states(results).items()}


def run_facts(results: Results) -> tuple[str | None, str | None]:
    """(backend, torch_version) of the results (the last run header that names them)."""
    backend = torch_version = None
    for run in results.runs:
        backend = run.get("backend") or backend
        torch_version = run.get("torch_version") or torch_version
    for rec in results.verdicts:
        backend = backend or rec.get("backend")
        torch_version = torch_version or rec.get("torch_version")
    return backend, torch_version


def entries_of(base: Baseline) -> Iterable[Entry]:
    return sorted(base.entries.values(), key=lambda e: e.line)


def scope_of(results: Results) -> Callable[[Key], bool]:
    """Whether a key lies within what the results' runs covered: their ``--ops`` (as
    ``conformance run`` selects: name, base name or family) and their checks."""
    from reports.ops import scope

    patterns: list[str | None] = [r.get("ops") for r in results.runs]
    checks: set[str] | None = set() if results.runs else None
    for r in results.runs:
        cs = r.get("checks")
        if not isinstance(cs, list):
            checks = None
            break
        assert checks is not None
        checks.update(str(c) for c in cs)
    cache: dict[str, bool] = {}

    def inside(key: Key) -> bool:
        ov = key[0]
        if ov not in cache:
            cache[ov] = bool(scope([ov], patterns)) if patterns else True
        return cache[ov] and (checks is None or key[1] in checks)

    return inside
