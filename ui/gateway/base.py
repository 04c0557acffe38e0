"""The gateway: the one interface between the dashboard and the library's computations.

:class:`Gateway` answers a :class:`~ui.gateway.computation.Computation` from, in order:

1. its cache (:class:`~ui.gateway.cache.ResultCache`: by content, bounded in bytes in all and
   per visitor, shared by every session);
2. a copy still alive elsewhere (a result dropped from the cache while a page still uses it is
   not read a second time: one copy per result in the process);
3. the library's result store (read, never computed);
4. one *job* per :attr:`~ui.gateway.computation.Computation.job_key` in its job table:
   concurrent identical requests share it, and its result goes to the cache when it ends, even
   if every page that asked was left meanwhile. This table is the only place where a
   computation is shared: in hosted mode too (:mod:`headforms.hosted` runs one computation for
   one job, on the job's thread, and shares nothing itself).

The caller waits on its own thread, and its ``progress(done, total, message)`` is called there
every :data:`POLL_S` seconds with what the job last reported (also when nothing changed: the
caller can show for how long); an exception it raises (a Streamlit stop) stops the wait, never
the job. How a job runs is the implementation's: :class:`ui.gateway.local.LocalGateway` (in this
process, on a pool of threads) or :class:`ui.gateway.hosted.HostedGateway` (contained by
:mod:`headforms.hosted`; a job nobody has waited for during its grace period is let go, a rerun
within it joins the same job). A result is answered as :meth:`Computation.answer` makes it for
the request (a forward pass named after the model asked for: a copy, the kept one unchanged).
No Streamlit here.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from headforms.hosted import LOCAL, Budget

from .cache import ResultCache
from .computation import Check, Computation, Progress
from .kinds import Analysis, GaussianBaseline, ProbeScores, PromptAttention, RopeSweep

if TYPE_CHECKING:
    from headforms import ModelAnalysis
    from headforms.architectures import Shapes
    from headforms.baseline import Baseline
    from headforms.behaviour import AttentionPattern, HeadTypeScores
    from headforms.options import AnalysisOptions, SweepOptions
    from headforms.sources import Located
    from headforms.sweeps import PositionSweep

R = TypeVar("R")
T = TypeVar("T")

POLL_S = 0.25
"""Seconds between a waiting caller's ``progress`` calls."""
AHEAD_BATCHES = 2
"""Batches of :meth:`Gateway.ahead` waiting at most (in the whole server); a further one is
dropped: a guess at the next step is worth nothing once the visitor has moved on."""
LOGGER = logging.getLogger(__name__)


class Abandoned(Exception):
    """A job that nobody waits for any more was let go (hosted: its worker is stopped)."""


class Job(Generic[R]):
    """One computation running for everyone who asked for it: its progress, its outcome and
    how many callers wait for it now."""

    def __init__(self, computation: Computation[R], visitor: str, first_message: str) -> None:
        self.computation = computation
        self.visitor = visitor
        """Who asked first (whose turn and budget a hosted job takes)."""
        self.future: Future[R] = Future()
        self.progress: tuple[int, int, str] = (0, 1, first_message)
        self._waiters = 0
        self._alone_since: float | None = time.monotonic()
        self._lock = threading.Lock()

    def report(self, done: int, total: int, message: str) -> None:
        """The computation's progress callback (called on the job's thread)."""
        self.progress = (done, total, message)

    @property
    def waiters(self) -> int:
        """Callers waiting for this job now."""
        return self._waiters

    def alone_for(self) -> float:
        """Seconds since the last caller stopped waiting (0 while someone waits)."""
        with self._lock:
            since = self._alone_since
        return 0.0 if since is None else time.monotonic() - since

    def attach(self) -> None:
        with self._lock:
            self._waiters += 1
            self._alone_since = None

    def detach(self) -> None:
        with self._lock:
            self._waiters -= 1
            if self._waiters <= 0:
                self._alone_since = time.monotonic()


class Gateway(ABC):
    """The dashboard's computations (module doc): ``run`` any computation, ``peek`` at one
    without computing, ``cached`` for what a page builds itself (figures, tables), and
    ``in_server`` for a small bounded computation at the visitor's turn. The named methods
    (``analysis``, ``baseline``, ``sweep``, ``attention``, ``head_scores``) are ``run`` of the
    kinds of :mod:`ui.gateway.kinds`."""

    first_message: ClassVar[str | None] = None
    """What every job reports first (None: each kind's own)."""

    def __init__(self, cache: ResultCache[Any], executor: Executor) -> None:
        self.cache = cache
        self._executor = executor
        self._jobs: dict[Hashable, Job[Any]] = {}
        self._live: weakref.WeakValueDictionary[Hashable, Any] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="headforms-ahead")
        self._ahead_waiting = 0

    # The interface ----------------------------------------------------------------------------

    def run(
        self, computation: Computation[R], progress: Progress | None = None, *, visitor: str = LOCAL
    ) -> R:
        """The result of ``computation`` (module doc: the cache, a live copy, the store, else
        one shared job waited for here). Raises what the computation raised."""
        while True:
            found = self._find(computation, visitor)
            if found is not None and computation.accepts(found):
                return computation.answer(found)
            request = computation if found is None else computation.widened(found)
            job, new = self._join(request, visitor)
            if new:
                self._start(job)
            try:
                result = self._wait(job, progress)
            except Abandoned:  # let go just before this caller attached: start again
                continue
            return computation.answer(self.cache.put(request.key, result, visitor))

    def peek(self, computation: Computation[R], *, visitor: str = LOCAL) -> R | None:
        """The result of ``computation`` if nothing needs computing (cached, alive, stored),
        else None."""
        found = self._find(computation, visitor)
        if found is None or not computation.accepts(found):
            return None
        return computation.answer(found)

    def cached(self, key: Hashable, build: Callable[[], T], *, visitor: str = LOCAL) -> T:
        """``build()`` kept in the cache under ``key`` (which names every input, the weights'
        fingerprint included), built here on a miss."""
        found = self.cache.get(key, visitor)
        if found is None:
            with self._lock:
                found = self._live.get(key)
            if found is None:
                found = build()
            self._remember(key, found)
            self.cache.put(key, found, visitor)
        return found

    def ahead(
        self, builds: Iterable[tuple[Hashable, Callable[[], Any]]], *, visitor: str = LOCAL
    ) -> bool:
        """Build in the background, one thread for the server, what :meth:`cached` will
        probably be asked for next (``(key, build)`` pairs not in the cache yet: the figures
        of the neighbouring heads), so that the next step finds them. At most
        :data:`AHEAD_BATCHES` batches wait; a further one is dropped. A build that fails is
        logged and left for the step that needs it. True if a batch was queued."""
        missing = [(key, build) for key, build in builds if key not in self.cache]
        if not missing:
            return False
        with self._lock:
            if self._ahead_waiting >= AHEAD_BATCHES:
                return False
            self._ahead_waiting += 1
        self._ahead.submit(self._build_ahead, missing, visitor)
        return True

    def _build_ahead(self, builds: list[tuple[Hashable, Callable[[], Any]]], visitor: str) -> None:
        try:
            for key, build in builds:
                try:
                    self.cached(key, build, visitor=visitor)
                except Exception:  # the step that needs it builds it again, and says why
                    LOGGER.exception("building %r ahead failed", key)
        finally:
            with self._lock:
                self._ahead_waiting -= 1

    def clear(self) -> None:
        """Forget every result and figure kept (jobs running go on)."""
        with self._lock:
            self._live.clear()
        self.cache.clear()

    def in_server(
        self,
        budget: Budget,
        build: Callable[[], T],
        *,
        visitor: str = LOCAL,
        check: Check | None = None,
    ) -> T:
        """``build()``, a computation bounded by its inputs' sizes, run here on the caller's
        thread (hosted: at the visitor's turn, charged to its ``budget``)."""
        return build()

    @abstractmethod
    def prepare(self, *computations: Computation[Any]) -> None:
        """Start loading, in the background, what the first of ``computations`` that is
        neither cached nor stored will need (a local gateway: its model), or nothing."""

    def analysis(
        self,
        located: Located,
        options: AnalysisOptions,
        progress: Progress | None = None,
        *,
        visitor: str = LOCAL,
    ) -> ModelAnalysis:
        """``located``'s analysis at ``options`` (the RoPE position, the extra spectra)."""
        return self.run(Analysis(located, options), progress, visitor=visitor)

    def baseline(
        self, shapes: Shapes, progress: Progress | None = None, *, visitor: str = LOCAL
    ) -> Baseline:
        """The Gaussian baseline of a model's ``shapes``."""
        return self.run(GaussianBaseline(shapes), progress, visitor=visitor)

    def sweep(
        self,
        located: Located,
        options: SweepOptions,
        progress: Progress | None = None,
        *,
        visitor: str = LOCAL,
    ) -> PositionSweep:
        """Every head of ``located`` at every RoPE position of ``options``."""
        return self.run(RopeSweep(located, options), progress, visitor=visitor)

    def attention(
        self, located: Located, prompt: str, progress: Progress | None = None, *, visitor: str
    ) -> AttentionPattern:
        """A forward pass's attention patterns of ``prompt``."""
        return self.run(PromptAttention(located, prompt), progress, visitor=visitor)

    def head_scores(
        self,
        located: Located,
        probe: tuple[int, int],
        progress: Progress | None = None,
        *,
        visitor: str,
    ) -> HeadTypeScores:
        """A forward pass's head-type scores on the probe ``(length, seed)``."""
        return self.run(ProbeScores(located, *probe), progress, visitor=visitor)

    # For the implementations ------------------------------------------------------------------

    @abstractmethod
    def compute(self, job: Job[R]) -> R:
        """Run ``job``'s computation to its result (on the job's thread)."""

    # Inside -----------------------------------------------------------------------------------

    def _find(self, computation: Computation[R], visitor: str) -> R | None:
        """What is kept for ``computation.key`` (accepted or not): cached, alive, stored."""
        key = computation.key
        found = self.cache.get(key, visitor)
        if found is not None:
            return found
        with self._lock:
            found = self._live.get(key)
        if found is None:
            found = computation.stored()
        if found is not None:
            self._remember(key, found)
            self.cache.put(key, found, visitor)
        return found

    def _remember(self, key: Hashable, value: Any) -> None:
        """Know ``value`` under ``key`` while anything keeps it alive."""
        try:
            with self._lock:
                self._live[key] = value
        except TypeError:  # a value without weak references (a tuple, a number): not tracked
            pass

    def _join(self, computation: Computation[R], visitor: str) -> tuple[Job[R], bool]:
        """The job computing ``computation`` with the caller attached, and whether it is new
        (then the caller starts it, :meth:`_start`): attached before a new job starts, so that
        it never sees nobody waiting for it."""
        with self._lock:
            job = self._jobs.get(computation.job_key)
            if job is not None:
                job.attach()
                return job, False
            first = self.first_message or computation.first_message
            job = Job(computation, visitor, first)
            job.attach()
            self._jobs[computation.job_key] = job
        return job, True

    def _start(self, job: Job[Any]) -> None:
        """Start a new job (the caller that made it is attached): on the gateway's executor."""
        self._executor.submit(self._work, job)

    def _work(self, job: Job[Any]) -> None:
        """Run ``job``; its result is kept before it leaves the job table; then its waiters
        have it (or its error)."""
        key = job.computation.job_key
        try:
            result = self.compute(job)
        except BaseException as error:  # delivered to every waiter, the job not kept
            with self._lock:
                self._jobs.pop(key, None)
            job.future.set_exception(error)
            return
        self._remember(job.computation.key, result)
        self.cache.put(job.computation.key, result, job.visitor)
        with self._lock:
            self._jobs.pop(key, None)
        job.future.set_result(result)

    @staticmethod
    def _wait(job: Job[R], progress: Progress | None) -> R:
        """``job``'s result, waited for here; ``progress`` relayed every :data:`POLL_S`."""
        try:
            while True:
                try:
                    return job.future.result(timeout=POLL_S)
                except FutureTimeout:
                    if progress is not None:
                        progress(*job.progress)
        finally:
            job.detach()
