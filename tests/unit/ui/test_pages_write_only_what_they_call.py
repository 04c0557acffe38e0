"""A page shows only what it calls Streamlit to show: Streamlit's "magic" (turned off in the
app's config) would write every bare expression of a page script, and the pages document their
constants with docstrings (issue 39.5: the Heads table page printed the docstring of its
TABLE_HEIGHT above its title). Checked with Streamlit's own magic transform, which rewrites each
expression it would write into a call of its own."""

from __future__ import annotations

import ast
import tomllib

import pytest
from repo import REPO
from streamlit.runtime.scriptrunner.magic import add_magic

SCRIPTS = sorted(REPO.glob("pages/*.py")) + [REPO / "app.py"]
MAGIC_MODULE = "__streamlitmagic__"
"""The name Streamlit's magic imports Streamlit as, in the writes it adds."""


def magic_writes(path) -> list[str]:
    """The expressions of ``path`` that magic would write to the page (line: source)."""
    tree = add_magic(path.read_text(encoding="utf-8"), str(path))
    return [
        f"{node.lineno}: {ast.unparse(node.args[0])[:80] if node.args else ''}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == MAGIC_MODULE
    ]


def test_the_check_finds_what_magic_would_write(tmp_path) -> None:
    """The check itself: a constant's docstring and a bare name are found, a docstring of the
    module or of a function and a call are not."""
    script = tmp_path / "page.py"
    script.write_text(
        '"""Module."""\nHEIGHT = 1\n"""Its height."""\n\n\ndef f():\n    """Doc."""\n\n\n'
        "HEIGHT\nprint(HEIGHT)\n",
        encoding="utf-8",
    )
    assert [line.split(":")[0] for line in magic_writes(script)] == ["3", "10"]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.name)
def test_no_page_has_an_expression_magic_would_write(path) -> None:
    assert magic_writes(path) == []


def test_magic_is_off_in_the_apps_config() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["magicEnabled"] is False
