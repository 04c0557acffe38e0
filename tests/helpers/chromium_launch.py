"""How the tests and the benchmarks launch Debian's chromium through Playwright (never
`playwright install`, which downloads): its path and the flags that keep it headless, off the
GPU and quiet on the network (no background requests of its own)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
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
