"""docs/CONTRIBUTING.md cannot drift from the tree: its module map names every module of the
library and the dashboard and nothing else; every dotted name of the library it and the other
contributor pages cite (``headforms.store.key_lock``) is defined where it says; every test file
it cites exists."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest
from repo import REPO

CONTRIBUTING = REPO / "docs" / "CONTRIBUTING.md"
CITING = [
    CONTRIBUTING,
    REPO / "docs" / "pipeline.md",
    REPO / "ui" / "__init__.py",
    REPO / "ui" / "gateway" / "__init__.py",
    REPO / "headforms" / "hosted" / "__init__.py",
]
"""The pages (and package docstrings) that tell a contributor where things are."""

MAPPED = ("headforms", "ui", "pages")
CODE = {".py", ".js", ".css", ".html"}


def map_lines(text: str) -> list[str]:
    """The indented lines of the map's block, under "## The map"."""
    section = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    section = section.split("\n### ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("    ") and line.strip()]


def mapped_paths(text: str) -> set[str]:
    """Every path the map names, from its indentation (two spaces a level)."""
    paths, parents = set(), []
    for line in map_lines(text):
        depth = (len(line) - len(line.lstrip()) - 4) // 2
        name = line.split()[0]
        del parents[depth:]
        path = "/".join([*parents, name.rstrip("/")])
        paths.add(path)
        if name.endswith("/"):
            parents.append(name.rstrip("/"))
    return paths


def tree_paths() -> set[str]:
    """Every module (and code file in another language) of the dashboard and the library, and
    every package folder."""
    found = {"app.py", "server.py"}
    for top in MAPPED:
        for path in (REPO / top).rglob("*"):
            if "__pycache__" in path.parts:
                continue
            if path.is_file() and path.suffix in CODE:
                found.add(path.relative_to(REPO).as_posix())
                found.add(path.parent.relative_to(REPO).as_posix())
    return found


def test_the_map_names_every_module_and_only_modules_that_exist() -> None:
    named, present = mapped_paths(CONTRIBUTING.read_text()), tree_paths()
    assert not named - present, f"named in the map but not in the tree: {sorted(named - present)}"
    assert not present - named, f"in the tree but not in the map: {sorted(present - named)}"


def test_the_map_reader_follows_indentation() -> None:
    text = "## The map\n\n    a/    x\n      b.py  y\n      c/    z\n        d.py  w\n    e.py  v\n"
    assert mapped_paths(text) == {"a", "a/b.py", "a/c", "a/c/d.py", "e.py"}


@cache
def defined_names(module: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level (and in TYPE_CHECKING blocks)."""
    names: set[str] = set()
    tree = ast.parse(module.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def module_file(parts: list[str]) -> Path | None:
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` names a module, or a name defined in (or imported by) the longest module
    prefix of it (what follows that name, a method or field, is not checked)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = module_file(parts[:cut])
        if module is not None:
            return cut == len(parts) or parts[cut] in defined_names(module)
    return False


DOTTED = re.compile(r"(?<![\w./-])((?:headforms|ui)(?:\.[A-Za-z_]\w*)+)")
SUBPACKAGES = sorted(
    p.name for p in (REPO / "headforms").iterdir() if (p / "__init__.py").is_file()
)
RELATIVE = re.compile(rf"(?<![\w./-])((?:{'|'.join(SUBPACKAGES)})(?:\.[A-Za-z_]\w*)+)")
"""A subpackage of the library cited without ``headforms.`` (``hosted.runs``)."""
FILES = (".py", ".js", ".css", ".md", ".html", ".toml")


BASES = ("headforms", "headforms.figures", "headforms.analyses")
"""Where a page's short name (``hosted.runs``, ``behaviour.attention_figure`` in the list of
figure builders) may live."""


def unresolved(path: Path) -> list[str]:
    """The library's and the dashboard's dotted names a page cites that the code does not
    define (file names left out). A Markdown page may leave out ``headforms.``; code (its
    examples import modules under other names) is read for whole names only."""
    text = path.read_text()
    whole = {name for name in DOTTED.findall(text) if not name.endswith(FILES)}
    short = set() if path.suffix == ".py" else set(RELATIVE.findall(text))
    missing = [name for name in whole if not resolves(name)]
    missing += [
        name
        for name in short
        if not name.endswith(FILES) and not any(resolves(f"{b}.{name}") for b in BASES)
    ]
    return sorted(missing)


@pytest.mark.parametrize("page", CITING, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_dotted_name_a_contributor_page_cites_is_defined(page: Path) -> None:
    missing = unresolved(page)
    assert not missing, f"{page.name} cites names the code does not define: {missing}"


def test_a_name_that_moved_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "`headforms.store.key_lock`, hosted.runs, behaviour.attention_figure;"
        " headforms.hosted.workers.model_workers and store.no_such_name"
    )
    assert unresolved(page) == ["headforms.hosted.workers.model_workers", "store.no_such_name"]


TEST_PATH = re.compile(r"`((?:tests/)?(?:unit|integration|system|helpers)/[\w/.]*)`")


def test_every_test_file_contributing_cites_exists() -> None:
    cited = {m.removeprefix("tests/") for m in TEST_PATH.findall(CONTRIBUTING.read_text())}
    missing = sorted(path for path in cited if not (REPO / "tests" / path).exists())
    assert not missing, f"CONTRIBUTING cites test files that do not exist: {missing}"
