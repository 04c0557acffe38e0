"""Shared test setup: an isolated cache, no silent skips under CI, the fake hub fixtures, each
large GGUF file parsed once by gguf's reader.

Tests live in folders named for the stages of headforms/ and the dashboard; the shared helpers in
tests/helpers/, which pyproject.toml puts on sys.path (``import tiny_models``). Test files are
imported with ``--import-mode=importlib``: two folders may hold files of the same name, and a
test file never imports another (what two files share is a helper).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_diagnostics import watch_contexts
from chromium_launch import BROWSER_TEST_URL_ENV, CHROMIUM, CHROMIUM_ARGS
from ci_env import IN_CI
from run_selection import longest_files_first, run_in_the_container_only
from waiting import DEADLINE_MS


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Every test session uses its own cache directory (never the repository's cache/)."""
    path = tmp_path_factory.mktemp("headforms-cache")
    old = os.environ.get("HEADFORMS_CACHE_DIR")
    os.environ["HEADFORMS_CACHE_DIR"] = str(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield path
    if old is None:
        os.environ.pop("HEADFORMS_CACHE_DIR", None)
    else:
        os.environ["HEADFORMS_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def gguf_parsed_once() -> Iterator[None]:
    """gguf's reader parses each large GGUF file once per process (helpers/gguf_reference.py):
    transformers' GGUF loading, the reference of many tests, parses it whole on each call."""
    from gguf_reference import parsed_once

    with parsed_once():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Under CI=true a skipped test is a failed test: nothing may be skipped silently. Each
    phase's report is kept on the item (``item.rep_call``) for the fixtures' teardown."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)  # a fixture's teardown reads whether it failed
    if IN_CI and report.skipped:
        report.outcome = "failed"
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped under CI=true (not allowed): {reason}"


@pytest.hookimpl(trylast=True)  # after -m and -k: the container run must really be in this run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under CI=true, in a run that also tests the Docker image, the browser tests marked
    ``container`` run once, against the image's container; the files of minutes start first
    (helpers/run_selection.py)."""
    moved = run_in_the_container_only(
        items, IN_CI, url_given=bool(os.environ.get(BROWSER_TEST_URL_ENV))
    )
    if moved:
        config.hook.pytest_deselected(items=moved)
        left = set(map(id, moved))
        items[:] = [item for item in items if id(item) not in left]
    items[:] = longest_files_first(items)  # whole files of minutes start first (xdist loadfile)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Debian chromium through Playwright (never `playwright install`), for a module's
    browser tests; its pages ask nothing of another host on their own."""
    if not CHROMIUM.exists():
        pytest.skip("browser tests need Debian chromium: run `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        from playwright.sync_api import expect

        expect.set_options(timeout=DEADLINE_MS)  # every wait is a hang guard (helpers/waiting.py)
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield watch_contexts(chromium, DEADLINE_MS)  # a failure prints what its pages showed
        chromium.close()


@pytest.fixture(scope="session")
def fake_hub_server():
    """One loopback fake Hugging Face hub for the session (helpers/fake_hub.py), behind fake_hub."""
    from fake_hub import FakeHub

    hub = FakeHub().start()
    yield hub
    hub.stop()


@pytest.fixture
def fake_hub(fake_hub_server, tmp_path: Path):
    """The fake hub, used by huggingface_hub for this test (empty hub cache, offline mode off).

    Add repos with ``fake_hub.add_repo(...)`` / ``fake_hub.add_model(...)``; they and the request
    counts are cleared after the test.
    """
    fake_hub_server.clear()
    with fake_hub_server.activate(tmp_path / "hf-hub-cache"):
        yield fake_hub_server
    fake_hub_server.clear()
