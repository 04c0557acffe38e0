"""The limits of a hosted server's work, from the environment (the README's hosted section).

Per computation: memory and wall-clock seconds of a worker, its niceness. Server-wide: workers
running at once, how long a request may wait for one. Per visitor: how many may run at once and
how many new computations of each kind may be started in a window of time.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..errors import LimitError

MEMORY_ENV = "HEADFORMS_ANALYSIS_MEMORY"
SECONDS_ENV = "HEADFORMS_ANALYSIS_SECONDS"
CONCURRENT_ENV = "HEADFORMS_ANALYSIS_CONCURRENT"
NICE_ENV = "HEADFORMS_ANALYSIS_NICE"
QUEUE_ENV = "HEADFORMS_QUEUE_SECONDS"
VISITOR_CONCURRENT_ENV = "HEADFORMS_VISITOR_CONCURRENT"
VISITOR_ANALYSES_ENV = "HEADFORMS_VISITOR_ANALYSES"
VISITOR_SAMPLES_ENV = "HEADFORMS_VISITOR_SAMPLES"
WINDOW_ENV = "HEADFORMS_VISITOR_WINDOW"

DEFAULT_MEMORY = 2 * 2**30
"""Bytes of memory one analysis may allocate (a 2 GiB model's analysis needs about 1 GiB)."""
DEFAULT_SECONDS = 300.0
"""Wall-clock seconds one analysis may take."""
DEFAULT_CONCURRENT = 2
"""Contained computations running at once on one server."""
DEFAULT_NICE = 10
"""Scheduling niceness added to workers: pages and files are served before analyses run."""
DEFAULT_QUEUE_SECONDS = 60.0
"""Seconds a request may wait for a free worker before it is refused as busy."""
DEFAULT_VISITOR_CONCURRENT = 1
"""Computations of one visitor running at once (the others wait their turn)."""
DEFAULT_VISITOR_ANALYSES = 12
"""New analyses (models or RoPE positions not yet computed) one visitor may start per window."""
DEFAULT_VISITOR_SAMPLES = 20
"""New Theorem 5 samplings one visitor may start per window."""
DEFAULT_WINDOW = 3600.0
"""Seconds over which a visitor's new computations are counted."""


@dataclass(frozen=True)
class Limits:
    """The limits of contained work (see the module doc)."""

    memory: int = DEFAULT_MEMORY
    seconds: float = DEFAULT_SECONDS
    concurrent: int = DEFAULT_CONCURRENT
    nice: int = DEFAULT_NICE
    queue_seconds: float = DEFAULT_QUEUE_SECONDS
    visitor_concurrent: int = DEFAULT_VISITOR_CONCURRENT
    visitor_analyses: int = DEFAULT_VISITOR_ANALYSES
    visitor_samples: int = DEFAULT_VISITOR_SAMPLES
    window: float = DEFAULT_WINDOW

    @classmethod
    def from_env(cls) -> Limits:
        """Read the ``HEADFORMS_ANALYSIS_*``, ``HEADFORMS_QUEUE_SECONDS`` and
        ``HEADFORMS_VISITOR_*`` variables (a nonsense value: a one-line configuration error)."""
        return cls(
            memory=int(_positive(MEMORY_ENV, DEFAULT_MEMORY)),
            seconds=_positive(SECONDS_ENV, DEFAULT_SECONDS),
            concurrent=_whole(CONCURRENT_ENV, DEFAULT_CONCURRENT),
            nice=_niceness(),
            queue_seconds=_positive(QUEUE_ENV, DEFAULT_QUEUE_SECONDS),
            visitor_concurrent=_whole(VISITOR_CONCURRENT_ENV, DEFAULT_VISITOR_CONCURRENT),
            visitor_analyses=_whole(VISITOR_ANALYSES_ENV, DEFAULT_VISITOR_ANALYSES),
            visitor_samples=_whole(VISITOR_SAMPLES_ENV, DEFAULT_VISITOR_SAMPLES),
            window=_positive(WINDOW_ENV, DEFAULT_WINDOW),
        )


def _niceness() -> int:
    raw = os.environ.get(NICE_ENV, "").strip()
    if not raw:
        return DEFAULT_NICE
    if not raw.isdigit() or int(raw) > 19:
        raise LimitError(
            f"{NICE_ENV}={raw!r} is not a niceness from 0 to 19 (server configuration)"
        )
    return int(raw)


def _positive(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise LimitError(f"{name}={raw!r} is not a positive number (server configuration)")
    return value


def _whole(name: str, default: int) -> int:
    value = _positive(name, default)
    if value != int(value):
        raise LimitError(f"{name}={value:g} is not a whole number (server configuration)")
    return int(value)
