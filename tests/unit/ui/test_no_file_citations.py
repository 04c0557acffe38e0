"""The dashboard's text cites no repository file (issue 39.8: captions said "docs/MATH.md",
"scripts/spectral_geometry.py", which a visitor of the dashboard cannot open): no string of the
pages, the ui package or the figure builders names a path of the repository or a .md/.py file,
docstrings and comments aside (a page's own path, as navigation names it, is code)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from repo import REPO

CITATION = re.compile(r"(?<![\w/])(?:docs|scripts|tests)/[\w./-]+|\b[\w-]+\.(?:md|py)\b")
PAGE_PATH = re.compile(r"pages/\w+\.py")
SOURCES = sorted(
    [
        *REPO.glob("pages/*.py"),
        *REPO.glob("ui/**/*.py"),
        REPO / "app.py",
        *REPO.glob("headforms/figures/*.py"),
        *REPO.glob("headforms/gallery/*.py"),
    ]
)


def citations(path: Path) -> list[str]:
    """The file citations of ``path``'s strings that are not docstrings (line: the citation)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documentation = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        f"{node.lineno}: {match.group(0)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in documentation
        and not PAGE_PATH.fullmatch(node.value)
        for match in CITATION.finditer(node.value)
    ]


def test_the_check_finds_a_citation(tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text(
        '"""Module, docs/x.md."""\nst.caption("see docs/MATH.md")\nst.page_link("pages/head.py")\n'
        'X = 1\n"""Its doc: scripts/y.py."""\nst.caption(f"{X} (scripts/spectral_geometry.py)")\n',
        encoding="utf-8",
    )
    assert citations(source) == ["2: docs/MATH.md", "6: scripts/spectral_geometry.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(REPO)))
def test_no_ui_text_cites_a_repository_file(path: Path) -> None:
    assert citations(path) == []
