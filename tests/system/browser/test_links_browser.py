"""In headless Debian chromium, the URL parameters Streamlit binds (ui/links.py ``check``): a
visitor's change of their widgets is written to the URL by the browser (AppTest, which runs no
browser, cannot see it: tests/system/ui/test_links.py opens links), is kept while the visitor
is on other pages, and a new session opening that URL shows the same; a link's bad values are
corrected with a notice, in the page and in the URL. The server is scripts/start.sh on a free
loopback port, on the bundled SmolLM2."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect
from servers import free_port, serving
from waiting import eventually

from headforms import DEFAULT_MODEL, analyze

pytestmark = pytest.mark.browser

TOLERANCE = "Type II tolerance"


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ui.loading import warm

    warm()  # the default model's analysis, as the install does
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query, keep_blank_values=True)


def link_holds(page, **wanted: list[str] | None) -> dict[str, list[str]]:
    """Wait until the page's URL has each ``name=[values]`` (``None``: the parameter is absent);
    the URL's parameters. A run writes the URL when it ends, which on a busy machine can be
    after the run that the last action started has been seen to finish."""

    def holds(link: dict[str, list[str]]) -> bool:
        return all(link.get(name) == values for name, values in wanted.items())

    return eventually(lambda: query(page), holds, what=f"the link's {wanted}")


def settled(page) -> None:
    """Wait until the script run the last action started has finished."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')")
    page.wait_for_timeout(500)


def open_page(page, url: str, title: str) -> None:
    page.goto(url)
    page.locator("h1", has_text=title).wait_for()
    settled(page)


def type_into(page, name: str, value: str) -> None:
    box = page.get_by_role("spinbutton", name=name, exact=True)
    box.fill(value)
    box.press("Enter")
    settled(page)


def in_menu(page, name: str, title: str) -> None:
    """Open the page called ``name`` in the sidebar's menu (its last pages behind "View ...
    more"), headed ``title``."""
    menu = page.get_by_test_id("stSidebarNav")
    link = menu.get_by_role("link", name=name)
    more = menu.get_by_text(re.compile(r"^View \d+ more$"))
    expect(link.or_(more).first).to_be_visible()  # the menu is drawn (collapsed or not)
    if not link.is_visible():
        more.click()
    link.click()
    page.locator("h1", has_text=title).wait_for()
    settled(page)


def test_widgets_streamlit_binds_write_the_url_and_a_link_brings_them_back(
    browser, page, server: str
) -> None:
    open_page(page, f"{server}/theorem5?model={DEFAULT_MODEL}", "Theorem 5")
    assert set(query(page)) == {"model", "layer", "head"}
    type_into(page, "seed", "7")
    type_into(page, f"{TOLERANCE} (c_S + d_S ≤)", "0.05")
    link_holds(page, seed=["7"], tol=["0.05"])

    in_menu(page, "Overview", "Model overview")  # the sidebar's tolerance stays
    link_holds(page, tol=["0.05"], seed=None)
    in_menu(page, "Theorem 5", "Theorem 5")  # and the page's seed comes back
    link_holds(page, seed=["7"])
    expect(page.get_by_role("spinbutton", name="seed", exact=True)).to_have_value("7")

    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_page(other, page.url, "Theorem 5")
    expect(other.get_by_role("spinbutton", name="seed", exact=True)).to_have_value("7")
    tolerance = other.get_by_role("spinbutton", name=f"{TOLERANCE} (c_S + d_S ≤)", exact=True)
    expect(tolerance).to_have_value("0.050")
    other.context.close()


def test_a_parity_chosen_on_the_table_is_in_its_link(browser, page, server: str) -> None:
    heads = analyze(DEFAULT_MODEL).heads
    kept = int((heads["parity"] != "II").sum())
    open_page(page, f"{server}/table?model={DEFAULT_MODEL}", "Heads table")
    page.get_by_test_id("stButtonGroup").first.get_by_role("button", name="II", exact=True).click()
    link_holds(page, parity=["I+", "I-"])
    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_page(other, page.url, "Heads table")
    other.get_by_text(f"{kept} of {len(heads)} heads shown").wait_for()
    other.context.close()


def test_a_links_bad_values_are_corrected_in_the_page_and_the_url(page, server: str) -> None:
    open_page(
        page, f"{server}/theorem5?model={DEFAULT_MODEL}&mu=5&seed=x&tol=2&color=purple", "Theorem 5"
    )
    notices = page.get_by_test_id("stAlert").first
    for words in (
        "The link's mu=5 is not a negative lobe scale",
        "The link's seed=x is not a seed",
        "The link's tol=2 is not a Type II tolerance (a number from 0 to 1): showing tolerance 1",
        "The link's color=purple is not a colouring",
    ):
        expect(notices).to_contain_text(words)
    link_holds(page, mu=["-0.01"], tol=["1"], seed=None, color=None)
    # the corrected value reaches the widget on the run the correction restarts, which can
    # begin after the first run's status has gone on a loaded machine
    expect(page.get_by_role("spinbutton", name="μ (negative lobe)")).to_have_value("-0.01")
