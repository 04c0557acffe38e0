"""Where a study's intervention requests run: one after the other in this process, or on ``jobs``
worker processes that each load the model once.

A study is some hundred independent requests (each whole-model edit and each layer of each
per-head sweep, on each text), each a few to some tens of seconds of forward passes of one
sequence. One process with two torch threads gains little from the second core (its GEMMs of
128 rows meet at barriers after every layer); two processes of one thread each run two requests
at once. Measured on SmolLM2's default study (benchmarks/README.md, "The study"): 1,511 s with
one process of two threads (2,879 CPU s), 977 s with two processes of one (1,934 CPU s). A
request's result does not depend on where it ran (each is seeded by its own options): a study
with ``jobs = 2`` equals the study with ``jobs = 1`` (the same tables, to the last digit).

Each worker holds its own copy of the model (the parent holds one too), so the default is at
most :data:`DEFAULT_MAX_JOBS` processes, each with ``cores // jobs`` torch threads; in hosted
mode a study runs in its own process only (the visitor's worker is what the server bounds).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .errors import HeadformsError, OptionError
from .settings import THREADS_ENV, settings, usable_cpus

DEFAULT_MAX_JOBS = 4
"""Worker processes of a study when ``jobs`` is not given (fewer on fewer cores): each holds
the model."""

Run = Callable[[Any], Any]
"""Runs one request in this process (with its own progress relay) and returns its result."""
Done = Callable[[int, Any], None]
"""Told each finished request: its index and its result, in the order they finish."""


def default_jobs() -> int:
    """Worker processes when none are asked: the usable cores, at most :data:`DEFAULT_MAX_JOBS`;
    one in hosted mode (module doc)."""
    if settings().hosted:
        return 1
    return max(1, min(usable_cpus(), DEFAULT_MAX_JOBS))


def check_jobs(jobs: int) -> int:
    """``jobs``, or a one-line :class:`OptionError` (a whole number from 1; 1 in hosted mode)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise OptionError(f"--jobs {jobs!r}: a whole number of processes, 1 or more")
    if jobs > 1 and settings().hosted:
        raise OptionError(
            f"--jobs {jobs}: in hosted mode a study runs in its own process only (--jobs 1)"
        )
    return jobs


def run_requests(
    spec: Any, requests: Sequence[Any], jobs: int, run_here: Run, done: Done
) -> list[Any]:
    """The result of each of ``requests``, in their order: run by ``run_here`` when ``jobs`` is
    1 (or there is one request), else on ``jobs`` worker processes that load the model of
    ``spec`` (a string: the command line's model) with ``cores // jobs`` torch threads each,
    the requests handed out in their order (put the longest first); ``done`` is told each
    finished request."""
    results: list[Any] = [None] * len(requests)
    jobs = min(check_jobs(jobs), len(requests))
    if jobs <= 1:
        for index, request in enumerate(requests):
            results[index] = run_here(request)
            done(index, results[index])
        return results
    if not isinstance(spec, str):
        raise OptionError("a study on worker processes names its model by a string (--jobs 1)")
    threads = max(1, usable_cpus() // jobs)
    context = multiprocessing.get_context("spawn")  # never fork a process that holds torch
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=_start_worker, initargs=(spec, threads)
    ) as pool:
        running: dict[Future, int] = {}
        waiting = list(range(len(requests)))
        try:
            while waiting or running:
                while waiting and len(running) < 2 * jobs:  # a few queued, the rest held back
                    index = waiting.pop(0)
                    running[pool.submit(_run_in_worker, requests[index])] = index
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    index = running.pop(future)
                    results[index] = future.result()
                    done(index, results[index])
        except BrokenProcessPool as exc:
            raise HeadformsError(
                "a study worker process died (killed, or out of memory?): --jobs 1 runs the "
                "study in this process"
            ) from exc
        finally:
            for future in running:
                future.cancel()
    return results


_MODEL: Any = None
"""The model a worker process loaded (:func:`_start_worker`)."""


def _start_worker(spec: str, threads: int) -> None:
    """A worker process: ``threads`` torch and BLAS threads, the model loaded once."""
    global _MODEL
    os.environ[THREADS_ENV] = str(threads)  # the library's passes take theirs from here
    import torch
    from threadpoolctl import threadpool_limits

    from .behaviour.run import locate_runnable
    from .behaviour.runnable import runnable

    torch.set_num_threads(threads)
    threadpool_limits(limits=threads)
    _MODEL = runnable(locate_runnable(spec, what="interventions"))


def _run_in_worker(request: Any) -> Any:
    """One request on the worker's model."""
    from .interventions.compute import compute_intervention

    return compute_intervention(_MODEL, request)
