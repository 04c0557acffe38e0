"""Contained runs: one computation at a time in a worker, on the caller's own thread.

A :class:`RunRequest` says what to run (a task, what it is called, the limits, who asked and
what it is charged); :meth:`Runs.run` runs it and returns the finished :class:`Run`. It first
charges the visitor (:mod:`.budgets`), waits for its turn at the slots (:mod:`.slots`: fair
turns between visitors, a bounded wait), then its worker runs: a fresh worker process
(:mod:`.process`), or, for a forward pass, the model's kept worker (:mod:`.model_workers`). The
run kills the worker's process group when it passes its wall-clock limit, when it is cancelled,
or when the caller's ``check()`` raises (the caller stopped waiting; the exception is raised
again once the worker is stopped). A stopped computation leaves nothing in the store (the
engine stores a result only once it is complete); a finished one is read back by the caller
(a cache hit: no heavy import).

Sharing is not done here: two callers asking for the same computation at once are two runs
(the second usually finds the first's result stored under the store's key lock). The one layer
that shares a computation between the sessions that ask for it is the dashboard's gateway
(``ui/gateway``: one job per request, let go after a grace period when nobody waits for it),
which calls these runs from the job's thread.

The charge is given back only if no worker was asked to run it (refused as busy, left or
cancelled while waiting for its turn): once a worker is started or asked, the work has begun,
and a refusal from the worker (a prompt too long for the model) counts like a result. What can
be refused before a worker starts is checked by the caller first (:mod:`.api`), at no charge.

Every outcome (:class:`~.messages.Outcome`) becomes the stored result or one line
(:func:`result`): the worker's own :class:`~headforms.errors.HeadformsError`, or a
:class:`~headforms.errors.LimitError` naming the limit, its value and its variable.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .. import errors
from ..errors import HeadformsError, LimitError
from ..progress import Progress
from ..settings import MEMORY_ENV, SECONDS_ENV, human_bytes
from .budgets import Budget, Budgets
from .limits import Limits
from .messages import MessageKind, Outcome, OutcomeKind, WorkerMessage
from .model_workers import ModelKey, ModelWorkers
from .process import Oversized, WorkerProcess
from .slots import Slots
from .tasks import Task
from .visitors import LOCAL

POLL = 0.1
"""Seconds between a run's checks (the caller's ``check``, its limits, the worker's lines)."""

Check = Callable[[], None]
"""``check()``: called while a run waits or works; raises to stop it (the caller left)."""

R = TypeVar("R")

_SIGNALS = {int(s) for s in signal.Signals}


@dataclass(frozen=True)
class Charge:
    """What a run costs its visitor: ``cost`` new computations of ``budget``."""

    budget: Budget = Budget.ANALYSES
    cost: int = 1


@dataclass(frozen=True)
class RunRequest:
    """One contained computation to run: the ``task`` a worker runs, its ``label`` for messages
    (``the analysis of X``), the ``limits`` it runs within, the ``visitor`` whose turn it takes,
    its ``charge`` (None: free, e.g. more spectra of a model already analysed) and, for a
    forward pass, the ``model`` whose kept worker runs it (else a fresh worker)."""

    task: Task
    label: str
    limits: Limits
    visitor: str = LOCAL
    charge: Charge | None = field(default_factory=Charge)
    model: ModelKey | None = None


class Stopped(Exception):
    """A run was stopped while it waited for its turn or for its model's worker."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.kind.value)
        self.outcome = outcome


class Run:
    """One contained computation on its caller's thread (module doc): its turn, then its worker
    process, its progress and its outcome."""

    def __init__(self, request: RunRequest, runs: Runs) -> None:
        self.request = request
        self.runs = runs
        self.worker: WorkerProcess | None = None
        self.started: float | None = None
        self.outcome: Outcome | None = None
        self.done = threading.Event()
        self._cancelled = False
        self._left: BaseException | None = None

    @property
    def pid(self) -> int | None:
        """The worker's process id (its process group id too), once it runs."""
        return None if self.worker is None else self.worker.pid

    def cancel(self) -> None:
        """Stop the run now (its caller gets a one-line LimitError)."""
        self._cancelled = True

    def execute(self, progress: Progress | None, check: Check | None) -> None:
        """Charge, wait for a slot, run the worker, relay its messages to ``progress``; then
        clean up. ``check()`` raising stops the run; its exception is raised again here, once
        the worker is stopped."""
        request = self.request
        if request.charge is not None:
            charge = request.charge
            self.runs.budgets.spend(request.visitor, charge.budget, request.limits, charge.cost)
        try:
            self._fly(progress, check or (lambda: None))
        finally:
            self.done.set()
        if self._left is not None:
            raise self._left

    def _fly(self, progress: Progress | None, check: Check) -> None:
        request, slots = self.request, self.runs.slots

        def stop_if_asked() -> None:
            stop = self._stop_reason(check)
            if stop is not None:
                raise Stopped(stop)

        def waiting(ahead: int, taken: int) -> None:
            queue = f"{ahead} ahead" if ahead else "next"
            self._report(progress, f"waiting for a worker ({taken} busy; {queue})")

        self._report(progress, "waiting for a worker")
        try:
            slots.acquire(request.visitor, request.limits, stop_if_asked, waiting)
        except Stopped as stop:
            return self._never_ran(stop.outcome)
        except LimitError as busy:
            return self._never_ran(Outcome(OutcomeKind.BUSY, text=str(busy)))
        except BaseException as exc:  # never leave the caller hanging on a bug
            return self._never_ran(Outcome(OutcomeKind.FAILED, type(exc).__name__))
        self.started = time.monotonic()
        try:
            try:
                self.worker = self._start(progress, stop_if_asked)
                self.worker.ask(request.task)
            except BaseException as exc:
                stopped = exc.outcome if isinstance(exc, Stopped) else None
                return self._never_ran(stopped or Outcome(OutcomeKind.FAILED, type(exc).__name__))
            self._monitor(self.worker, progress, check)
        finally:
            slots.release(request.visitor, time.monotonic() - self.started)

    def _report(self, progress: Progress | None, message: str) -> None:
        if progress is not None:
            progress(0, 1, message)

    def _start(self, progress: Progress | None, check: Check) -> WorkerProcess:
        """A fresh worker, or the model's worker (waiting for it while another pass runs)."""
        request = self.request
        self._report(progress, f"starting {request.label}")
        mapped = request.task.mapped_bytes
        if request.model is None:
            return WorkerProcess(request.limits, mapped)
        self._report(progress, f"{request.label}: waiting for the model's worker")
        return self.runs.model_workers.take(request.model, request.limits, mapped, check)

    def _never_ran(self, outcome: Outcome) -> None:
        """End a run whose worker was never asked: its charge given back."""
        charge = self.request.charge
        if charge is not None:
            self.runs.budgets.refund(self.request.visitor, charge.budget, charge.cost)
        self.outcome = outcome

    def _stop_reason(self, check: Check) -> Outcome | None:
        """Why the run must stop now (cancelled, past its time, the caller left), or None."""
        if self._cancelled:
            return Outcome(OutcomeKind.CANCELLED)
        seconds = self.request.limits.seconds
        if self.started is not None and time.monotonic() > self.started + seconds:
            return Outcome(OutcomeKind.TIME)
        try:
            check()
        except BaseException as left:  # kept, raised again once the worker is stopped
            self._left = left
            return Outcome(OutcomeKind.ABANDONED)
        return None

    def _monitor(self, worker: WorkerProcess, progress: Progress | None, check: Check) -> None:
        try:
            while self.outcome is None:
                stop = self._stop_reason(check)
                if stop is not None:
                    self.outcome = stop
                    break
                lines = worker.lines(POLL)
                if lines is None:  # the worker closed its end: it exited (or died)
                    self.outcome = self._exit_outcome(worker)
                    break
                for line in lines:
                    self._message(line, progress)
                    if self.outcome is not None:
                        break
        except Oversized as exc:
            self.outcome = Outcome(OutcomeKind.FAILED, text=str(exc))
        except Exception as exc:  # never leave the caller hanging on a monitor bug
            self.outcome = Outcome(OutcomeKind.FAILED, type(exc).__name__)
        finally:
            clean = self.outcome is not None and self.outcome.clean
            model = self.request.model
            if model is not None:
                self.runs.model_workers.give_back(model, worker, clean and worker.idle())
            else:
                if self.outcome and self.outcome.kind is OutcomeKind.DONE:  # let it exit first
                    try:
                        worker.proc.wait(timeout=2)
                    except subprocess.TimeoutExpired:
                        pass
                worker.kill()

    def _message(self, line: bytes, progress: Progress | None) -> None:
        message = WorkerMessage.decode(line)
        if message is None:
            self.outcome = Outcome(OutcomeKind.FAILED, text="an unreadable message")
        elif message.kind is MessageKind.PROGRESS:
            if progress is not None:
                progress(message.done, message.total, message.text)
        else:
            self.outcome = Outcome.of(message)

    def _exit_outcome(self, worker: WorkerProcess) -> Outcome:
        try:
            code = worker.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return Outcome(OutcomeKind.FAILED, text="a worker that closed its pipe")
        if code == -signal.SIGXCPU or (code == -signal.SIGKILL and self._cpu_exhausted()):
            return Outcome(OutcomeKind.CPU)
        if code < 0:
            name = signal.Signals(-code).name if -code in _SIGNALS else str(-code)
            return Outcome(OutcomeKind.SIGNAL, text=name)
        return Outcome(OutcomeKind.FAILED, text=f"exit status {code}")

    def _cpu_exhausted(self) -> bool:
        seconds = self.request.limits.seconds
        return self.started is not None and time.monotonic() - self.started >= seconds


class Runs:
    """The contained runs of one server process (thread-safe), and what they use: the visitors'
    budgets, the slots, the model workers."""

    def __init__(self, budgets: Budgets, slots: Slots, model_workers: ModelWorkers) -> None:
        self.budgets = budgets
        self.slots = slots
        self.model_workers = model_workers
        self._running: set[Run] = set()
        self._lock = threading.Lock()

    def run(
        self, request: RunRequest, progress: Progress | None = None, check: Check | None = None
    ) -> Run:
        """Run ``request`` here, to its end (module doc): the finished run. ``progress(done,
        total, message)`` hears its wait and then its worker; ``check()`` is called every
        :data:`POLL` seconds and may raise to stop it (raised again here once it stopped).
        Raises a one-line LimitError at once when the visitor's budget is spent."""
        run = Run(request, self)
        with self._lock:
            self._running.add(run)
        try:
            run.execute(progress, check)
        finally:
            with self._lock:
                self._running.discard(run)
        return run

    def in_flight(self) -> list[Run]:
        """The runs going on now."""
        with self._lock:
            return list(self._running)

    def pids(self) -> list[int]:
        """Process ids of the workers running now."""
        return [run.pid for run in self.in_flight() if run.pid is not None]


def result(run: Run, stored: Callable[[], R | None]) -> R:
    """The stored result of a finished run, or its outcome as one line."""
    outcome = run.outcome or Outcome(OutcomeKind.FAILED, text="no outcome")
    kind, what, limits = outcome.kind, run.request.label, run.request.limits
    stopped = "it was stopped and nothing was cached"
    if kind is OutcomeKind.DONE:
        hit = stored()
        if hit is None:
            raise LimitError(
                f"{what} finished but its result is not in the server's cache (the model "
                "changed meanwhile, or the cache is full); try again"
            )
        return hit
    if kind is OutcomeKind.BUSY:
        raise LimitError(outcome.text)
    if kind is OutcomeKind.ERROR:
        cls = getattr(errors, outcome.error, HeadformsError)
        if not (isinstance(cls, type) and issubclass(cls, HeadformsError)):
            cls = HeadformsError
        raise cls(outcome.text)
    if kind is OutcomeKind.MEMORY:
        raise LimitError(
            f"{what} needed more memory than this server's limit of "
            f"{human_bytes(limits.memory)} per analysis ({MEMORY_ENV}); {stopped}"
        )
    if kind is OutcomeKind.SIGNAL:
        raise LimitError(
            f"{what} stopped unexpectedly ({outcome.text}), perhaps at this server's memory "
            f"limit of {human_bytes(limits.memory)} per analysis ({MEMORY_ENV}); nothing was "
            "cached"
        )
    if kind in (OutcomeKind.TIME, OutcomeKind.CPU):
        raise LimitError(
            f"{what} took longer than this server's limit of {limits.seconds:g} s per analysis "
            f"({SECONDS_ENV}); {stopped}"
        )
    if kind in (OutcomeKind.CANCELLED, OutcomeKind.ABANDONED):
        raise LimitError(f"{what} was cancelled; nothing was cached")
    raise LimitError(
        f"{what} failed with an internal error ({outcome.error or outcome.text}); the server's "
        "log has the details; nothing was cached"
    )
