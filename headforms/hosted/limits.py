"""The limits of a hosted server's work, from the environment (the README's hosted section).

Per computation: memory and wall-clock seconds of a worker, its niceness. Server-wide: workers
running at once, how long a request may wait for one. Per visitor: how many may run at once and
how many new computations of each kind may be started in a window of time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import (
    DEFAULT_CONCURRENT,
    DEFAULT_MEMORY,
    DEFAULT_NICE,
    DEFAULT_QUEUE_SECONDS,
    DEFAULT_SECONDS,
    DEFAULT_VISITOR_ANALYSES,
    DEFAULT_VISITOR_CONCURRENT,
    DEFAULT_VISITOR_SAMPLES,
    DEFAULT_WINDOW,
    settings,
)


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
        """The ``HEADFORMS_ANALYSIS_*``, ``HEADFORMS_QUEUE_SECONDS`` and ``HEADFORMS_VISITOR_*``
        settings (a nonsense value: a one-line configuration error)."""
        values = settings()
        return cls(
            memory=values.analysis_memory,
            seconds=values.analysis_seconds,
            concurrent=values.analysis_concurrent,
            nice=values.analysis_nice,
            queue_seconds=values.queue_seconds,
            visitor_concurrent=values.visitor_concurrent,
            visitor_analyses=values.visitor_analyses,
            visitor_samples=values.visitor_samples,
            window=values.visitor_window,
        )
