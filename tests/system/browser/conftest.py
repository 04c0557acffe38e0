"""The browser tests' page: a fresh context at 1280 x 800 on the module's ``server`` (the
``browser`` fixture is the suite's, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_diagnostics import failed, report


@pytest.fixture
def page(request: pytest.FixtureRequest, browser, server: str) -> Iterator[object]:
    """A fresh page of the app at 1280 x 800 (a module may define its own size)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    yield page
    if failed(request.node):
        report(context, "the test failed")
    context.close()
