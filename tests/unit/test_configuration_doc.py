"""docs/configuration.md lists every HEADFORMS_* variable the code reads, and no other.

The code's variables are the string constants that are a whole variable name
(``"HEADFORMS_ANALYSIS_MEMORY"``), wherever the code defines them (headforms/, the dashboard,
the scripts): moving a variable from one module to another keeps it found, and a mention in a
docstring is not a definition. The documented ones are the first cells of the page's tables.
"""

from __future__ import annotations

import ast
import re

from repo import REPO

VARIABLE = re.compile(r"HEADFORMS_[A-Z0-9]+(?:_[A-Z0-9]+)*")
CODE = ["headforms/**/*.py", "ui/**/*.py", "pages/**/*.py", "scripts/**/*.py", "*.py"]
PAGE = REPO / "docs" / "configuration.md"


def variables_in_code() -> dict[str, set[str]]:
    """Every variable name defined as a string constant, with the files defining it."""
    found: dict[str, set[str]] = {}
    for path in sorted({p for pattern in CODE for p in REPO.glob(pattern)}):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if VARIABLE.fullmatch(node.value):
                    found.setdefault(node.value, set()).add(str(path.relative_to(REPO)))
    return found


def documented_rows() -> dict[str, list[str]]:
    """Each variable of the page's tables with the cells of its row (default, meaning)."""
    rows: dict[str, list[str]] = {}
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3:
            continue
        for name in VARIABLE.findall(cells[0]):
            rows[name] = cells[1:]
    return rows


def test_the_code_defines_the_variables_it_reads() -> None:
    """The scan finds the variables (a guard against a scan that finds nothing)."""
    found = variables_in_code()
    assert {"HEADFORMS_CACHE_DIR", "HEADFORMS_HOSTED", "HEADFORMS_ANALYSIS_MEMORY"} <= set(found)


def test_every_variable_of_the_code_is_documented() -> None:
    missing = {
        name: sorted(files)
        for name, files in variables_in_code().items()
        if name not in documented_rows()
    }
    assert missing == {}, f"add these to docs/configuration.md: {missing}"


def test_every_documented_variable_is_read_by_the_code() -> None:
    gone = sorted(set(documented_rows()) - set(variables_in_code()))
    assert gone == [], f"docs/configuration.md lists variables the code no longer reads: {gone}"


def test_every_variable_has_a_default_and_a_meaning() -> None:
    empty = [name for name, cells in documented_rows().items() if not all(cells[:2])]
    assert empty == [], f"give these a default and a meaning in docs/configuration.md: {empty}"
