"""Waiting for a condition in a browser test, never reading once: what is still rendering (a
script's rerun, a redraw, a download's caption) is read again until it holds or a deadline
passes, and a failure says what was last seen."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.25

DEADLINE_S = 240.0
"""How long a browser test waits for a condition before it fails: a hang guard, never a speed
check. A loaded 2-core CI machine (the container's server and workers, two browsers and two test
workers at once) stretches a 3D scene's 8-11 s several times; a model analysed on its first
visit takes minutes there. What a page does fast enough is measured by benchmarks/, not here."""
DEADLINE_MS = int(DEADLINE_S * 1000)


def eventually(
    read: Callable[[], T], holds: Callable[[T], bool], timeout_s: float = DEADLINE_S, what: str = ""
) -> T:
    """``read()`` again every :data:`POLL_S` seconds until ``holds(value)``; that value. After
    ``timeout_s`` seconds an ``AssertionError`` names ``what`` and the last value read."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = read()
        if holds(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what or 'condition'} did not hold within {timeout_s:.0f} s; last read: {value!r}"
            )
        time.sleep(POLL_S)
