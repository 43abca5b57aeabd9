"""The house rules of conformance/, checked on its source: imports run one way (no cycle, function-
level imports included), no private name crosses a module, no function hides its steps in over
100 lines, every sub-package says what it owns. The order of the layers themselves is
import-linter's contract in pyproject.toml (`lint-imports`, run by .ci/run)."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "conformance"
MAX_FUNCTION_LINES = 100


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    return skip


def _imports(module: str) -> Iterator[tuple[str, str | None]]:
    """``(imported conformance module, imported name or None)`` of every import in ``module``,
    those inside functions too, ``if TYPE_CHECKING:`` ones not."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (full, None) if full in MODULES else (base, alias.name)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module in MODULES:
        for target, _ in _imports(module):
            while target not in MODULES and "." in target:
                target = target.rpartition(".")[0]
            if target in MODULES and target != module and target != "conformance":
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(set(graph) | {w for targets in graph.values() for w in targets}):
        if v not in index:
            visit(v)
    return found


def test_imports_inside_conformance_have_no_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_from_another_module():
    crossing = [(module, target, name) for module in MODULES
                for target, name in _imports(module)
                if target.startswith("conformance") and name and name.startswith("_")
                and not name.startswith("__") and target != module]
    assert crossing == []


def _long_functions() -> list[str]:
    out = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    out.append(f"{module}.{node.name}: {lines} lines")
    return out


def test_no_function_is_over_100_lines():
    assert _long_functions() == []


@pytest.mark.parametrize("package", sorted(
    p.parent.name for p in ROOT.glob("*/__init__.py")))
def test_every_sub_package_says_what_it_owns(package):
    doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text()))
    assert doc and len(doc) > 40, f"conformance/{package}/__init__.py needs a docstring"
