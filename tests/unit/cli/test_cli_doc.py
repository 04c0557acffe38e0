"""Every command and option of the command line is documented (issue 39.8: ``headforms export
--html`` was in neither docs/cli.md nor the README): docs/cli.md's table of commands has a row
for each subcommand the parser knows, linking the page that documents it, and that page names
each of the command's options; the README names every command. The author's ``dim`` column is
described as 2n wherever the docs describe it."""

from __future__ import annotations

import argparse
import re

import pytest
from repo import REPO

from headforms.cli import build_parser

CLI_DOC = REPO / "docs" / "cli.md"
ROW = re.compile(r"^\| \[`([a-z]+)[^`]*`\]\(([^)]*)\) \|", re.MULTILINE)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def table() -> dict[str, str]:
    """docs/cli.md's table of commands: command -> the page (and anchor) it links."""
    return dict(ROW.findall(CLI_DOC.read_text(encoding="utf-8")))


def test_every_command_has_a_row_in_the_table() -> None:
    assert set(subcommands()) <= set(table()), set(subcommands()) - set(table())


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_option_is_on_the_commands_page(command: str) -> None:
    target = table()[command]
    page = CLI_DOC if target.startswith("#") else REPO / "docs" / target.split("#")[0]
    text = page.read_text(encoding="utf-8")
    options = {
        option
        for action in subcommands()[command]._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    missing = sorted(option for option in options if option not in text)
    assert not missing, f"{page.name} does not name {missing} of `headforms {command}`"


def test_the_readme_names_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [c for c in subcommands() if f"headforms {c}" not in readme]
    assert not missing


@pytest.mark.parametrize("doc", ["cli.md", "published-data.md"])
def test_the_authors_dim_is_2n(doc: str) -> None:
    text = " ".join((REPO / "docs" / doc).read_text(encoding="utf-8").split())
    said = [m for m in re.finditer(r"`dim` is ([^;.]*)", text)]
    assert said and all("2n" in m.group(1) for m in said), [m.group(0) for m in said]
