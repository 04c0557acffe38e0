"""What the hosted attack suites (tests/system/hosted/attacks) share: their limits, a hang guard
that runs a call in a thread, the one-line check of an error, and the state of the contained
workers and the store."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from headforms import engine, hosted, sources
from headforms.hosted import api
from headforms.options import AnalysisOptions

HANG_GUARD = 180.0  # seconds before a call that should answer is declared hung
SLOW_PAIRS = 5_000_000  # metadata entries of the slow GGUF: ~85 MB, several seconds to parse
SLOW_LIMIT = "2"  # HEADFORMS_ANALYSIS_SECONDS while the slow GGUF is analysed


def write_config(directory: Path, **changes: Any) -> None:
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def worker_pids() -> list[int]:
    """Process ids of the workers running now in this process."""
    return api.hosting.runs.pids()


def cancel_all() -> int:
    """Stop every run of this process (their callers get one line); how many there were."""
    in_flight = api.hosting.runs.in_flight()
    for flight in in_flight:
        flight.cancel()
    return len(in_flight)


def assert_no_worker_left() -> None:
    deadline = time.monotonic() + 30
    while worker_pids() or hosted.running():
        assert time.monotonic() < deadline, f"workers left running: {worker_pids()}"
        time.sleep(0.1)


def answer(call: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    """Run ``call`` in a thread; its result or exception (a hang fails the test)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - the outcome under test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), f"no answer within {HANG_GUARD} s (hung)"
    return out.get("result"), out.get("error")


def one_line(error: BaseException | None, kind: type[BaseException], pattern: str) -> str:
    """The error's message, checked: the expected class, one line, matching ``pattern``."""

    assert isinstance(error, kind), f"expected {kind.__name__}, got {error!r}"
    message = str(error)
    assert "\n" not in message and "Traceback" not in message, message
    assert re.search(pattern, message), message
    return message


def nothing_stored(spec: str, rope: int = 0) -> bool:
    """Whether the store holds no analysis of ``spec`` (whatever spectra)."""
    return engine.stored_analysis(sources.locate(spec), AnalysisOptions(rope)) is None


def rss(pid: int | None = None) -> int:
    """Resident memory of a process (this one by default), in bytes."""
    return psutil.Process(pid or os.getpid()).memory_info().rss
