"""The wheel holds every package of the library and the dashboard: pyproject.toml lists the
packages by name (the dashboard is mapped from the repository's root), so a new sub-package
left out of the list would be missing from an installed ``headforms serve``."""

from __future__ import annotations

import tomllib

from repo import REPO

DASHBOARD_PARTS = ("pages", "ui")


def _packages_on_disk() -> set[str]:
    found = set()
    for path in (REPO / "headforms").rglob("__init__.py"):
        parts = path.parent.relative_to(REPO).parts
        found.add(".".join(parts))
    for part in DASHBOARD_PARTS:  # pages/ has no __init__.py: any folder of modules counts
        for path in (REPO / part).rglob("*.py"):
            parts = path.parent.relative_to(REPO).parts
            found.add(".".join(("headforms_dashboard", *parts)))
    found.add("headforms_dashboard")
    return {name for name in found if "__pycache__" not in name}


def test_every_package_is_in_the_wheel() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    missing = _packages_on_disk() - listed
    assert not missing, f"pyproject.toml's [tool.setuptools] packages lacks {sorted(missing)}"
    stale = {name for name in listed if name not in _packages_on_disk()}
    assert not stale, f"pyproject.toml lists packages that do not exist: {sorted(stale)}"
