"""The dashboard under Streamlit's AppTest, one way for every page test: run ``app.py`` (on a
page, with URL parameters and session-state values) and check that a run drew no error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120.0  # the first run may analyse a model in the session's empty cache


def run_app(
    page: str | None = None,
    params: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
    **session: Any,
) -> AppTest:
    """Run the app (on ``pages/<page>.py`` if given) with URL ``params`` and session-state
    values ``session``; ``timeout`` seconds per script run."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params.update(params or {})
    for key, value in session.items():
        at.session_state[key] = value
    if page:
        at.switch_page(f"pages/{page}.py")
    return at.run()


def assert_clean(at: AppTest) -> None:
    """No exception and no error message on the page."""
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def plain(text: str) -> str:
    """A line as the visitor reads it: ui/notices.py escapes Markdown in its notices, and
    breaks what GFM would link with an invisible word joiner (ui.guard.WORD_JOINER)."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


def notice_lines(at: AppTest) -> list[str]:
    """The one-line notices (ui/notices.py) and errors a run shows, as the visitor reads them."""
    return [plain(e.value) for e in (*at.warning, *at.error)]
