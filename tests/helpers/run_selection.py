"""Which collected tests a run leaves out because another test of the same run covers them.

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
