"""Imports in headforms/ run one way: no circle, at module level or inside functions.

Every module's imports are read from its syntax tree (``import`` and ``from ... import``
anywhere in the file, relative ones resolved; ``from pkg import name`` counts as an import of
``pkg.name`` when that is a module). Imports under ``if TYPE_CHECKING:`` are annotations only,
never executed, and are left out. A package's ``__init__`` run on the way to a submodule is not
counted as an import of the package by the importer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import headforms

PACKAGE = Path(headforms.__file__).resolve().parent
ROOT = PACKAGE.name


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a tree, at any depth, except under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if _type_checking_only(node):
            pending.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that module ``name`` (file ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            targets.add(submodule if submodule in modules else source)
    return {t for t in targets if t in modules and t != name}


def import_graph() -> dict[str, set[str]]:
    """``module -> the package's modules it imports``."""
    names = module_names()
    return {name: imports_of(name, path, set(names)) for name, path in names.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_detector_finds_a_circle_and_its_members() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_function_level_imports_are_read(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import errors\n"
        "from .sources import locate\n"
        "if TYPE_CHECKING:\n"
        "    from .engine import analyze\n"
        "def f():\n"
        "    from .store.keys import cache_key\n"
        "    import headforms.tables\n"
    )
    modules = set(module_names())
    found = imports_of(f"{ROOT}.mod", source, modules)
    expected = {"errors", "sources", "store.keys", "tables"}
    assert found == {f"{ROOT}.{m}" for m in expected}


def test_no_import_circle_in_the_package() -> None:
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_lower_stages_never_import_the_engine_nor_hosted_mode() -> None:
    """The results, tables and the baseline come before the engine; the sources and the engine
    apply a policy handed in and never import hosted mode's (headforms.hosted)."""
    graph = import_graph()
    engine = f"{ROOT}.engine"
    for name in ("model_analysis", "tables", "baseline", "heads", "card", "columns", "streaming"):
        assert engine not in graph[f"{ROOT}.{name}"], name
    hosted = f"{ROOT}.hosted"
    for name, targets in graph.items():
        if name.startswith(f"{ROOT}.sources") or name in (engine, f"{ROOT}.streaming"):
            assert not any(t == hosted or t.startswith(hosted + ".") for t in targets), name
