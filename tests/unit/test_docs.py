"""The README stays short and the documentation's links lead somewhere.

The README is for users (what it is, the two commands, a quick start per way in, links) and
stays under 15 KB; the reference lives in docs/. Every relative link of README.md and
docs/*.md names a file of the repository, and its #anchor a heading of that file (GitHub's
anchors); nothing points outside the project.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo import REPO

README_LIMIT_BYTES = 15 * 1024

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


UPWARD = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-][\w./-]*")
"""A relative path that goes up (``../x``), wherever it is written."""


def documents() -> list[Path]:
    """The README and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def links(page: Path) -> list[str]:
    """The targets of the page's Markdown links and images, outside code."""
    text = INLINE_CODE.sub("", FENCED.sub("", page.read_text()))
    return LINK.findall(text)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped (hyphens
    and underscores kept), spaces as hyphens, a repeated heading numbered."""
    found: set[str] = set()
    for heading in HEADING.findall(FENCED.sub("", page.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


def test_the_readme_is_under_15_kb() -> None:
    size = (REPO / "README.md").stat().st_size
    assert size < README_LIMIT_BYTES, f"README.md is {size} bytes; the reference goes to docs/"


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    root = REPO.resolve()
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a repository file
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        inside = linked.is_relative_to(root)
        name = linked.relative_to(root).as_posix() if inside else str(linked)
        if not inside or not linked.exists():
            broken.append(f"{target}: no file {name}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {name}")
    assert broken == [], f"{page.name}: " + "; ".join(broken)


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(REPO)))
def test_the_documentation_stands_alone(page: Path) -> None:
    """No page points outside the project: a relative path that goes up names a file of the
    repository, and no page names the checkout's own absolute location (links or plain text)."""
    text = page.read_text()
    outside = [
        path
        for path in UPWARD.findall(text)
        if not (target := (page.parent / path).resolve()).is_relative_to(REPO.resolve())
        or not target.exists()
    ]
    assert outside == []
    assert str(REPO.resolve()) not in text
