"""The gateway of a private server: every computation in this process, by the library itself.

Jobs run on one pool of :data:`THREADS` threads (analyses, sweeps, baselines and forward passes
alike); a job goes on when every page that asked for it was left, and its result is kept for
the next one. A computation from results at hand (``inline``: :mod:`.derived`) runs on the
thread of the caller that starts it; others asking meanwhile join its job.
:meth:`LocalGateway.prepare` loads a forward pass's model on a thread of its own while the page
draws.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .base import Gateway, Job
from .cache import ResultCache
from .computation import Computation

R = TypeVar("R")

THREADS = 4
"""Jobs running at once (each analysis also spreads its layers over ``HEADFORMS_THREADS``)."""
RESULT_BYTES = 768 * 2**20
"""Bytes of results and figures kept in memory (a 30-layer model's analysis is a few MB,
SmolLM2's sweep of 129 positions 9 MB, its pattern of a 180-token prompt 75 MB)."""


class LocalGateway(Gateway):
    """Computations in this process (module doc)."""

    def __init__(self, cache: ResultCache[Any] | None = None, threads: int = THREADS) -> None:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="headforms-gateway")
        super().__init__(cache or ResultCache(RESULT_BYTES), pool)
        self._preparing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="headforms-prepare")

    def compute(self, job: Job[R]) -> R:
        return job.computation.local(job.report)

    def _start(self, job: Job[Any]) -> None:
        """An ``inline`` computation (from results at hand) runs on the thread of the caller
        that starts it, as a page's own code would (no hand-over to the pool: a loaded machine
        makes each one cost a scheduler's wait); concurrent requests still join its job."""
        if job.computation.inline:
            self._work(job)
        else:
            super()._start(job)

    def prepare(self, *computations: Computation[Any]) -> None:
        for computation in computations:
            if computation.key not in self.cache and not computation.in_store():
                self._preparing.submit(computation.prepare)
                return
