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


DATA_SUFFIXES = (".js", ".css", ".html", ".txt", ".toml")


def test_every_asset_beside_the_code_is_in_the_wheel() -> None:
    """Every browser script, style sheet, template and text beside the modules (ui/plot_*.js,
    the gallery's, the shipped texts) matches a package-data pattern, so that an installed
    dashboard finds the files its modules read."""
    import fnmatch

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]
    folders = {"headforms_dashboard.ui": REPO / "ui"}  # the root's files are the project's
    missing = []
    for package, folder in folders.items():
        for path in folder.glob("*"):
            if path.suffix in DATA_SUFFIXES:
                name = path.relative_to(folder).as_posix()
                if not any(fnmatch.fnmatch(name, p) for p in patterns.get(package, ())):
                    missing.append(f"{package}: {name}")
    for path in (REPO / "headforms").rglob("*"):
        if path.suffix in DATA_SUFFIXES and "__pycache__" not in path.parts:
            package = ".".join(path.parent.relative_to(REPO).parts)
            while not (REPO / package.replace(".", "/") / "__init__.py").exists():
                package = package.rsplit(".", 1)[0]
            folder = REPO / package.replace(".", "/")
            name = path.relative_to(folder).as_posix()
            if not any(fnmatch.fnmatch(name, p) for p in patterns.get(package, ())):
                missing.append(f"{package}: {name}")
    assert not missing, f"pyproject.toml's package-data lacks {missing}"
