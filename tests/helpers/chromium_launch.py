"""How the tests and the benchmarks launch Debian's chromium through Playwright (never
`playwright install`, which downloads): its path and the flags that keep it headless, off the
GPU and quiet on the network (no background requests of its own)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_TEST_URL_ENV = "HEADFORMS_BROWSER_TEST_URL"
"""Base URL of an already-running app for test_browser.py to test instead of starting one (the
Docker image test sets it to its container's URL)."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
