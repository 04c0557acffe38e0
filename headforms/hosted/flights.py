"""Computations in flight: one worker per computation, shared by everyone waiting for it.

A request is a *flight*: concurrent requests for one computation (one key) share it. It first
waits for a slot (:mod:`.slots`: fair turns between visitors, a bounded wait), then its worker
runs: a fresh worker process (:mod:`.process`), or, for a forward pass, the model's worker
(:mod:`.model_workers`). The server kills the worker's process group when it passes its
wall-clock limit, when every visitor waiting for it has left (after :data:`ABANDON_GRACE`
seconds, so that a rerun of the same page picks it up again), or when it is cancelled. A
stopped computation leaves nothing in the store (the engine stores a result only once it is
complete); a finished one is read back by the server (a cache hit: no heavy import).

The visitor who started a flight is charged one new computation of its kind (:mod:`.budgets`)
when the flight is created. The charge is given back only if no worker was asked to run it
(refused as busy, left or cancelled while waiting for its turn): once a worker is started or
asked, the work has begun, and a refusal from the worker (a prompt too long for the model) counts
like a result. What can be refused before a worker starts is checked by the caller first
(:mod:`.api`), at no charge.

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
from typing import Any

from .. import errors
from ..errors import HeadformsError, LimitError
from ..progress import Progress
from ..settings import MEMORY_ENV, SECONDS_ENV, human_bytes
from .budgets import Budgets
from .limits import Limits
from .messages import MessageKind, Outcome, OutcomeKind, WorkerMessage
from .model_workers import ModelKey, ModelWorkers
from .process import Oversized, WorkerProcess
from .slots import Slots
from .tasks import Task

ABANDON_GRACE = 3.0
"""Seconds a flight keeps going with nobody waiting (a rerun re-attaches within this)."""
POLL = 0.1
"""Seconds between a waiter's checks (its ``check`` callback, the outcome)."""


_SIGNALS = {int(s) for s in signal.Signals}


class Stopped(Exception):
    """A flight was stopped while it waited for its turn (or for its model's worker)."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.kind.value)
        self.outcome = outcome


class Flight:
    """One computation: its turn, then its worker process, and what its waiters need
    (progress, outcome, who is still waiting). ``budget``: the kind it is charged to;
    ``model``: for a forward pass, the model worker it runs in (else a fresh worker)."""

    def __init__(
        self,
        flights: Flights,
        key: tuple,
        label: str,
        task: Task,
        limits: Limits,
        visitor: str,
        charged: bool,
        budget: str,
        model: ModelKey | None,
        cost: int = 1,
    ) -> None:
        self.flights = flights
        self.cost = cost
        self.key = key
        self.label = label
        self.task = task
        self.limits = limits
        self.visitor = visitor
        self.charged = charged
        self.budget = budget
        self.model = model
        self.worker: WorkerProcess | None = None
        self.started: float | None = None
        self.progress: tuple[int, int, str] = (0, 1, "waiting for a worker")
        self.outcome: Outcome | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._waiters = 0
        self._alone_since: float | None = time.monotonic()
        self._cancelled = False

    @property
    def pid(self) -> int | None:
        """The worker's process id (its process group id too), once it runs."""
        return None if self.worker is None else self.worker.pid

    def attach(self) -> None:
        with self._lock:
            self._waiters += 1
            self._alone_since = None

    def detach(self) -> None:
        with self._lock:
            self._waiters -= 1
            if self._waiters <= 0:
                self._alone_since = time.monotonic()

    def cancel(self) -> None:
        """Stop the flight now (its waiters get a one-line LimitError)."""
        self._cancelled = True

    def fly(self) -> None:
        """Wait for a slot, run the worker, relay its messages; then clean up."""
        slots = self.flights.slots
        try:
            slots.acquire(self.visitor, self.limits, self._raise_if_stopped, self._waiting)
        except Stopped as stop:
            self._never_ran(stop.outcome)
            return
        except LimitError as busy:
            self._never_ran(Outcome(OutcomeKind.BUSY, text=str(busy)))
            return
        except BaseException as exc:  # never leave waiters hanging on a bug
            self._never_ran(Outcome(OutcomeKind.FAILED, type(exc).__name__))
            return
        self.started = time.monotonic()
        try:
            self.worker = self._start()
            self.worker.ask(self.task)
        except BaseException as exc:
            slots.release(self.visitor, time.monotonic() - self.started)
            stopped = exc.outcome if isinstance(exc, Stopped) else None
            self._never_ran(stopped or Outcome(OutcomeKind.FAILED, type(exc).__name__))
            return
        try:
            self._monitor(self.worker)
        finally:
            slots.release(self.visitor, time.monotonic() - self.started)
            self.done.set()

    def _start(self) -> WorkerProcess:
        """A fresh worker, or the model's worker (waiting for it while another pass runs)."""
        self.progress = (0, 1, f"starting {self.label}")
        mapped = self.task.mapped_bytes
        if self.model is None:
            return WorkerProcess(self.limits, mapped)
        self.progress = (0, 1, f"{self.label}: waiting for the model's worker")
        return self.flights.model_workers.take(
            self.model, self.limits, mapped, self._raise_if_stopped
        )

    def _never_ran(self, outcome: Outcome) -> None:
        """End a flight whose worker was never asked: its charge given back."""
        if self.charged:
            self.flights.budgets.refund(self.visitor, self.budget, self.cost)
        self.outcome = outcome
        self.flights.forget(self)
        self.done.set()

    def _waiting(self, ahead: int, taken: int) -> None:
        queue = f"{ahead} ahead" if ahead else "next"
        self.progress = (0, 1, f"waiting for a worker ({taken} busy; {queue})")

    def _raise_if_stopped(self) -> None:
        stop = self._stop_reason()
        if stop is not None:
            raise Stopped(stop)

    def _stop_reason(self) -> Outcome | None:
        if self._cancelled:
            return Outcome(OutcomeKind.CANCELLED)
        if self.started is not None and time.monotonic() > self.started + self.limits.seconds:
            return Outcome(OutcomeKind.TIME)
        with self._lock:
            alone = self._alone_since
        if alone is not None and time.monotonic() - alone > ABANDON_GRACE:
            return Outcome(OutcomeKind.ABANDONED)
        return None

    def _monitor(self, worker: WorkerProcess) -> None:
        try:
            while self.outcome is None:
                stop = self._stop_reason()
                if stop is not None:
                    self.outcome = stop
                    break
                lines = worker.lines(POLL)
                if lines is None:  # the worker closed its end: it exited (or died)
                    self.outcome = self._exit_outcome(worker)
                    break
                for line in lines:
                    self._message(line)
                    if self.outcome is not None:
                        break
        except Oversized as exc:
            self.outcome = Outcome(OutcomeKind.FAILED, text=str(exc))
        except Exception as exc:  # never leave waiters hanging on a monitor bug
            self.outcome = Outcome(OutcomeKind.FAILED, type(exc).__name__)
        finally:
            clean = self.outcome is not None and self.outcome.clean
            if self.model is not None:
                self.flights.model_workers.give_back(self.model, worker, clean and worker.idle())
            else:
                if self.outcome and self.outcome.kind is OutcomeKind.DONE:  # let it exit first
                    try:
                        worker.proc.wait(timeout=2)
                    except subprocess.TimeoutExpired:
                        pass
                worker.kill()
            self.flights.forget(self)

    def _message(self, line: bytes) -> None:
        message = WorkerMessage.decode(line)
        if message is None:
            self.outcome = Outcome(OutcomeKind.FAILED, text="an unreadable message")
        elif message.kind is MessageKind.PROGRESS:
            self.progress = (message.done, message.total, message.text)
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
        return self.started is not None and time.monotonic() - self.started >= self.limits.seconds


class Flights:
    """The flights of one server process (thread-safe), and what they use: the visitors'
    budgets, the slots, the model workers."""

    def __init__(self, budgets: Budgets, slots: Slots, model_workers: ModelWorkers) -> None:
        self.budgets = budgets
        self.slots = slots
        self.model_workers = model_workers
        self._table: dict[tuple, Flight] = {}
        self._lock = threading.Lock()

    def run(
        self,
        key: tuple,
        label: str,
        task: Task,
        limits: Limits,
        progress: Progress | None,
        check: Callable[[], None] | None,
        visitor: str,
        charge: bool = True,
        budget: str = "analyses",
        model: ModelKey | None = None,
        cost: int = 1,
    ) -> Flight:
        """Wait, attached, for the flight computing ``key`` (started if none is: ``task``,
        charged ``cost`` of ``visitor``'s ``budget`` when ``charge``) to end; ``progress``
        relays its progress, ``check()`` is called every :data:`POLL` seconds and may raise to stop
        waiting (the flight then goes on for :data:`ABANDON_GRACE` seconds)."""
        flight = self._join(key, label, task, limits, visitor, charge, budget, model, cost)
        shown = None
        try:
            while not flight.done.wait(POLL):
                if progress and flight.progress != shown:
                    shown = flight.progress
                    progress(*shown)
                if check:
                    check()
        finally:
            flight.detach()
        return flight

    def _join(
        self,
        key: tuple,
        label: str,
        task: Task,
        limits: Limits,
        visitor: str,
        charge: bool,
        budget: str,
        model: ModelKey | None,
        cost: int,
    ) -> Flight:
        with self._lock:
            flight = self._table.get(key)
            if flight is None:
                if charge:
                    self.budgets.spend(visitor, budget, limits, cost)
                flight = Flight(
                    self, key, label, task, limits, visitor, charge, budget, model, cost
                )
                self._table[key] = flight
                threading.Thread(target=flight.fly, name="headforms-flight", daemon=True).start()
            flight.attach()
        return flight

    def forget(self, flight: Flight) -> None:
        """Drop a flight that ended from the table (a new request starts a new one)."""
        with self._lock:
            if self._table.get(flight.key) is flight:
                del self._table[flight.key]

    def in_flight(self) -> list[Flight]:
        """The flights in the table now."""
        with self._lock:
            return list(self._table.values())

    def pids(self) -> list[int]:
        """Process ids of the workers running flights now."""
        return [f.pid for f in self.in_flight() if f.pid is not None]


def result(flight: Flight, stored: Callable[[], Any]) -> Any:
    """The stored result of a finished flight, or its outcome as one line."""
    outcome = flight.outcome or Outcome(OutcomeKind.FAILED, text="no outcome")
    kind, what, limits = outcome.kind, flight.label, flight.limits
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
