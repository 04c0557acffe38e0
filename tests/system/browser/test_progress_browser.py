"""In headless Debian chromium: a new server's first page says what it is doing from its first
second (the dashboard's imports, then the model's analysis with its layers), never only grey
placeholders. The server is scripts/start.sh on a free loopback port with an empty cache."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from servers import free_port, serving

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cache = tmp_path_factory.mktemp("cold-cache")  # nothing analysed: the first page waits
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def test_a_cold_first_page_says_what_it_is_doing(page, server: str) -> None:
    page.goto(server)
    main = page.locator("[data-testid=stMain]")
    main.get_by_text("Starting headforms: loading its libraries").wait_for()
    main.get_by_text("Analysing the heads of").wait_for()  # the model's layers
    page.locator("h1", has_text="Profiles on the simplex").wait_for()
    expect(main.get_by_text("Starting headforms")).to_have_count(0)  # gone once it is drawn
