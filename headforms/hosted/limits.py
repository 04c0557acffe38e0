"""The limits of a hosted server's work, from the environment (the README's hosted section).

Per computation: memory and wall-clock seconds of a worker, its niceness. Server-wide: workers
running at once, how long a request may wait for one, the model workers kept between forward
passes (their memory in all, how long one idles). Per visitor: how many may run at once and how
many new computations of each kind may be started in a window of time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import (
    DEFAULT_CONCURRENT,
    DEFAULT_MEMORY,
    DEFAULT_MODEL_IDLE_SECONDS,
    DEFAULT_MODELS_MEMORY,
    DEFAULT_NICE,
    DEFAULT_QUEUE_SECONDS,
    DEFAULT_SECONDS,
    DEFAULT_VISITOR_ANALYSES,
    DEFAULT_VISITOR_CONCURRENT,
    DEFAULT_VISITOR_FORWARD_PASSES,
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
    visitor_forward_passes: int = DEFAULT_VISITOR_FORWARD_PASSES
    window: float = DEFAULT_WINDOW
    models_memory: int = DEFAULT_MODELS_MEMORY
    model_idle_seconds: float = DEFAULT_MODEL_IDLE_SECONDS

    @classmethod
    def from_env(cls) -> Limits:
        """The ``HEADFORMS_ANALYSIS_*``, ``HEADFORMS_QUEUE_SECONDS``, ``HEADFORMS_VISITOR_*``,
        ``HEADFORMS_MODELS_MEMORY`` and ``HEADFORMS_MODEL_IDLE_SECONDS`` settings (a nonsense
        value: a one-line configuration error)."""
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
            visitor_forward_passes=values.visitor_forward_passes,
            window=values.visitor_window,
            models_memory=values.models_memory,
            model_idle_seconds=values.model_idle_seconds,
        )
