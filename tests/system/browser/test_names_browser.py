"""A model name a stranger chose, as the browser draws it (issue 29, item 7): a published table's
model named like a URL or an e-mail address is text in the sidebar's caption, never a live link
(Streamlit's Markdown links such text after reading every escape)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect
from published_tables import head_rows
from servers import free_port, serving
from waiting import eventually

from ui.guard import WORD_JOINER

NAME = "https://evil.example/x www.evil.example evil@evil.example"
SIDEBAR = 'section[data-testid="stSidebar"]'

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app (scripts/start.sh) on a free loopback port, the session's cache."""
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache)}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def test_a_table_model_named_like_a_url_is_no_link_in_the_sidebar(
    page, server: str, tmp_path: Path
) -> None:
    table = tmp_path / "names.csv"
    head_rows(1, layers=2, heads=2, name=NAME).to_csv(table, index=False)
    page.goto(f"{server}/overview?model={quote(f'{table}::{NAME}')}")
    caption = page.locator(SIDEBAR).get_by_text("2 layers × 2 heads")
    caption.wait_for()
    expect(caption.locator("a")).to_have_count(0)
    eventually(
        lambda: caption.inner_text().replace(WORD_JOINER, ""),
        lambda text: text.startswith(f"{NAME}: 2 layers"),
        what="the sidebar's caption",
    )
