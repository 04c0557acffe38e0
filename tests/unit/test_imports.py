"""Imports in headforms/ run one way: the layers and the bans declared in pyproject.toml
(``[tool.importlinter]``) are kept, and no module imports itself back through others.

Both read every module's imports from its syntax tree with grimp (import-linter's graph):
inside functions too, relative ones resolved; imports under ``if TYPE_CHECKING:`` are
annotations only, never executed, and are left out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest
from importlinter import cli

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
SHOWN_CIRCLES = 5


def modules_on_a_circle(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every direct import ``a -> b`` that ``b`` leads back from, as the shortest circle
    ``[a, b, ..., a]`` (a circle of k modules shows once from each of its k imports; a package
    and its own submodules included)."""
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                circles.append([importer, *back])
    return circles


def test_the_declared_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    """The pipeline's layers (a lower stage never imports a higher one, whether the import is
    at the top of a module or inside a function) and the library never importing the
    dashboard nor Streamlit; every module of the package has its declared layer."""
    status = cli.lint_imports(config_filename=str(PYPROJECT), no_cache=True)
    assert status == cli.EXIT_STATUS_SUCCESS, capsys.readouterr().out


def test_no_import_circle_in_the_package() -> None:
    graph = grimp.build_graph("headforms", exclude_type_checking_imports=True, cache_dir=None)
    circles = sorted(modules_on_a_circle(graph), key=len)
    shown = "; ".join(" -> ".join(c) for c in circles[:SHOWN_CIRCLES])
    assert not circles, f"{len(circles)} import circles, the shortest: {shown}"


def test_a_circle_through_a_function_or_a_package_is_found_and_annotations_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check itself, on a package written here: a circle closed by an import inside a
    function and one between a package and its submodule are found; an import under
    ``TYPE_CHECKING`` closes none."""
    root = tmp_path / "circles"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("from . import b\n")
    (root / "b.py").write_text("def f():\n    from .a import f\n")
    (root / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import d\n"
    )
    (root / "d.py").write_text("from . import c\n")
    (root / "sub" / "__init__.py").write_text("from .leaf import x\n")
    (root / "sub" / "leaf.py").write_text("from circles.sub import y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "circles", raising=False)
    graph = grimp.build_graph("circles", exclude_type_checking_imports=True, cache_dir=None)
    found = {tuple(c) for c in modules_on_a_circle(graph)}
    assert found == {
        ("circles.a", "circles.b", "circles.a"),
        ("circles.b", "circles.a", "circles.b"),
        ("circles.sub", "circles.sub.leaf", "circles.sub"),
        ("circles.sub.leaf", "circles.sub", "circles.sub.leaf"),
    }
