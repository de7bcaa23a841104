"""The floor plan holds: layers import downwards only, and no modules import each other in a circle.

Imports are read with :mod:`ast` from every module of ``rag``, ``commands`` and ``bot`` at any
depth, wherever they are written (module top, ``TYPE_CHECKING`` blocks, function bodies), so a
circle held together by a type-only or a deferred import still fails.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag", "commands", "bot", "prompts")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules that ``name`` imports (``from a.b import c`` counts ``a.b.c`` when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            # the deepest project module the target names
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package, forbidden", [
    ("rag", {"bot", "commands", "slack_bolt", "slack_sdk"}),
    ("commands", {"bot", "slack_bolt", "slack_sdk"}),
])
def test_lower_layers_never_import_upper_ones_at_any_depth(package: str, forbidden: set[str]) -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_third_party(p) & forbidden)
        for p in sorted((ROOT / package).rglob("*.py")) if _third_party(p) & forbidden
    }
    assert offenders == {}


def test_the_import_reader_sees_nested_modules() -> None:
    # A guard for the guard: the graph must reach into sub-packages and resolve module imports.
    graph = _graph()
    assert any(name.count(".") >= 2 for name in graph)
    assert any(len(targets) > 3 for targets in graph.values())


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_between_modules() -> None:
    graph = _graph()
    # A package's __init__ importing its own submodules is how packages expose names;
    # only module-to-module edges are checked.
    edges = {name: {t for t in targets if not name.startswith(t + ".") and not t.startswith(name + ".")}
             for name, targets in graph.items()}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
