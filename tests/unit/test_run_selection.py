"""A run leaves out only the local runs of browser tests its container run covers, and only
where that container run cannot be skipped (CI=true); the files of minutes start first."""

from __future__ import annotations

from dataclasses import dataclass

from run_selection import CONTAINER_RUN, longest_files_first, run_in_the_container_only


@dataclass
class Item:
    nodeid: str
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


CLICK = Item("tests/system/browser/test_browser.py::test_a_click", ("browser", "container"))
DRAWN = Item("tests/system/browser/test_browser.py::test_marker_sizes", ("browser",))
IMAGE = Item(CONTAINER_RUN, ("image",))
OTHER = Item("tests/unit/test_docs.py::test_readme", ())


def test_under_ci_with_the_container_run_the_container_tests_run_only_there() -> None:
    items = [OTHER, CLICK, DRAWN, IMAGE]
    assert run_in_the_container_only(items, in_ci=True, url_given=False) == [CLICK]


def test_nothing_is_left_out_outside_ci_or_without_the_container_run() -> None:
    assert run_in_the_container_only([CLICK, DRAWN, IMAGE], in_ci=False, url_given=False) == []
    assert run_in_the_container_only([CLICK, DRAWN, OTHER], in_ci=True, url_given=False) == []


def test_the_container_run_of_the_browser_tests_keeps_them() -> None:
    """Inside the image test, the browser tests point at the container and must all run."""
    assert run_in_the_container_only([CLICK, IMAGE], in_ci=True, url_given=True) == []


def test_files_of_minutes_start_first_then_the_others_by_their_number_of_tests() -> None:
    install = Item("tests/system/install/test_install.py::test_scripts_parse", ())
    fresh = Item("tests/system/install/test_install.py::test_fresh_install", ("package",))
    readme = Item("tests/system/install/test_readme.py::test_quick_start", ("package",))
    items = [OTHER, CLICK, install, DRAWN, fresh, IMAGE, readme]
    ordered = longest_files_first(items)
    assert ordered == [install, fresh, IMAGE, readme, CLICK, DRAWN, OTHER]
