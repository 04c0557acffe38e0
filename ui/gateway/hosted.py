"""The gateway of a hosted server (``HEADFORMS_HOSTED=1``): every computation contained by
:mod:`headforms.hosted` (``analyze``, ``sweep``, ``baseline``, ``forward_pass`` in its worker
processes, within their limits, at the visitor's fair turn, charged to its budget;
``in_server`` for small bounded ones), and memory bounded per visitor.

A job runs on a thread of its own, which runs the contained computation (waiting for its turn,
then for its worker): how many run at once is the workers' slots' business (fair turns between
visitors, a bounded wait), never a queue here; one thread and (for a worker's computation) one
process per job. The gateway's job table is the one place where a computation is shared between
the sessions that ask for it: a job nobody has waited for during :data:`ABANDON_GRACE` seconds
is let go (its ``check`` raises :class:`~ui.gateway.base.Abandoned`: the hosted run stops its
worker, nothing is stored, and the visitor's charge is given back if no worker had been
asked); a rerun of the same page within the grace period joins the same job and worker. Each
visitor holds at most :data:`VISITOR_BYTES` of the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from headforms import hosted
from headforms.hosted import LOCAL, Budget

from .base import Abandoned, Gateway, Job
from .cache import ResultCache
from .computation import Check, Computation
from .local import RESULT_BYTES

R = TypeVar("R")
T = TypeVar("T")

ABANDON_GRACE = 3.0
"""Seconds a job goes on with nobody waiting for it (a rerun of its page joins it within this)."""
VISITOR_BYTES = 128 * 2**20
"""Bytes of the cache one visitor holds at most: its newest result is always kept (one prompt's
pattern takes up to :data:`headforms.behaviour.limits.MAX_PATTERN_BYTES`, 192 MiB; SmolLM2's of
170 tokens 60 MiB), the older ones go first (read again from the store if asked again)."""


class ThreadPerJob(Executor):
    """Each job on a daemon thread of its own (the hosted workers' slots bound how many run)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()

        def work() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as error:
                future.set_exception(error)

        threading.Thread(target=work, name="headforms-hosted-job", daemon=True).start()
        return future


class HostedGateway(Gateway):
    """Computations contained by :mod:`headforms.hosted` (module doc)."""

    first_message = "waiting for a worker"

    def __init__(self, cache: ResultCache[Any] | None = None) -> None:
        super().__init__(cache or ResultCache(RESULT_BYTES, VISITOR_BYTES), ThreadPerJob())

    def compute(self, job: Job[R]) -> R:
        def check() -> None:
            if job.alone_for() > ABANDON_GRACE:
                raise Abandoned(f"nobody waits for {type(job.computation).__name__} any more")

        return job.computation.hosted(job.report, check, job.visitor)

    def prepare(self, *computations: Computation[Any]) -> None:
        """Nothing: a hosted model loads in its worker, at the visitor's turn."""

    def in_server(
        self,
        budget: Budget,
        build: Callable[[], T],
        *,
        visitor: str = LOCAL,
        check: Check | None = None,
    ) -> T:
        return hosted.in_server(budget, build, visitor=visitor, check=check)
