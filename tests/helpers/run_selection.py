"""Which collected tests a run leaves out because another test of the same run covers them, and
in which order the files start.

The browser tests marked ``container`` (tests/system/browser/test_browser.py) are also run by the
image test against the Docker image's container. Under CI=true that image test cannot be skipped
(a skip fails there), so in a run that includes it their local run repeats the same checks on the
same code: they run once, in the container. In every other run (a developer's, with or without
Docker; the container's own run of them) nothing is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

CONTAINER_RUN = "tests/system/image/test_image.py::test_browser_clicks_against_the_container"
"""The image test that runs test_browser.py's tests marked ``container`` against the container."""


class Item(Protocol):
    nodeid: str

    def get_closest_marker(self, name: str) -> object | None: ...


def run_in_the_container_only(items: Sequence[Item], in_ci: bool, url_given: bool) -> list[Item]:
    """The items marked ``container`` to leave out of this run: all of them when ``in_ci`` and
    the container run is among ``items``, and this is not the container's own run of them
    (``url_given``: the browser tests are pointed at a running server); else none."""
    if not in_ci or url_given or not any(item.nodeid == CONTAINER_RUN for item in items):
        return []
    return [item for item in items if item.get_closest_marker("container") is not None]


LONGEST = ("package", "image")
"""Markers of the tests that take minutes (a fresh install, the Docker image and its container's
browser run)."""


def longest_files_first(items: Sequence[Item]) -> list[Item]:
    """``items`` file by file (each file's tests in their order): first every file holding a
    test marked one of :data:`LONGEST`, then the others by their number of tests, most first
    (xdist's own guess, which ``--no-loadscope-reorder`` hands over to this order). Under
    ``--dist loadfile`` the workers take whole files in this order: a file of minutes taken last
    keeps one worker busy while the other has nothing left (the README's fresh install, 4 tests
    and 220 s, had been taken at 482 s of a 737 s stage, the other worker idle for its last 136 s).
    """
    files: dict[str, list[Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def long(tests: list[Item]) -> bool:
        return any(item.get_closest_marker(name) is not None for item in tests for name in LONGEST)

    order = sorted(files.values(), key=lambda tests: (not long(tests), -len(tests)))
    return [item for tests in order for item in tests]
