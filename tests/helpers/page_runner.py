"""The dashboard under Streamlit's AppTest, one way for every page test: run ``app.py`` (on a
page, with URL parameters and session-state values) and check that a run drew no error."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest
from waiting import DEADLINE_S

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = DEADLINE_S
"""Seconds a script run may take: the suite's one hang guard, never a speed check (a first run
may analyse a model in the session's empty cache, or start a hosted model worker, beside a
loaded machine: 120 s was once not enough with two other busy processes on the two cores)."""


@cache
def _components() -> Any:
    """Streamlit's registry of installed components, discovered once per test process."""
    from streamlit.components.v2.component_manager import BidiComponentManager

    manager = BidiComponentManager()
    manager.discover_and_register_components(start_file_watching=False)
    return manager


def sharing_components(at: AppTest) -> AppTest:
    """``at`` with the process's one registry of installed components, as a server has one.

    Each new AppTest otherwise scans every installed distribution's metadata for component
    manifests (0.27 s here), and the page tests make hundreds; the installed packages do not
    change within a test process. AppTest keeps the registry in a private attribute: if a
    Streamlit release renames it, this fails rather than silently scanning again."""
    if not hasattr(at, "_bidi_component_manager"):
        raise AssertionError("Streamlit's AppTest keeps its components elsewhere: update this")
    at._bidi_component_manager = _components()
    return at


def run_app(
    page: str | None = None,
    params: dict[str, str] | None = None,
    timeout: float = TIMEOUT,
    **session: Any,
) -> AppTest:
    """Run the app (on ``pages/<page>.py`` if given) with URL ``params`` and session-state
    values ``session``; ``timeout`` seconds per script run."""
    at = sharing_components(AppTest.from_file(APP, default_timeout=timeout))
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
