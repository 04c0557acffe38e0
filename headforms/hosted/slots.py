"""Fair turns at the server's few workers: who runs next when every slot is taken.

At most ``HEADFORMS_ANALYSIS_CONCURRENT`` contained computations run at once in workers (and as
many in the server itself: Theorem 5 samplings, in a lane of their own), and at most
``HEADFORMS_VISITOR_CONCURRENT`` of one visitor in each. A request that finds no free slot waits
in a queue, for at most ``HEADFORMS_QUEUE_SECONDS`` (then it is refused as busy, in one line);
when a slot frees, the waiting visitor who has used the slots least recently goes first
(slot-seconds, halved every :data:`USAGE_HALF_LIFE` seconds; ties in order of arrival), so one
or two clients looping over new computations cannot keep anyone else out: a newcomer overtakes
them at the next free slot.
A visitor may have at most :data:`MAX_WAITING_PER_VISITOR` requests waiting, the server at most
:data:`MAX_WAITING`; past either a request is refused at once.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import LimitError
from ..settings import CONCURRENT_ENV, QUEUE_ENV
from .limits import Limits

USAGE_HALF_LIFE = 300.0
"""Seconds after which a visitor's past use of the workers counts half."""
MAX_WAITING_PER_VISITOR = 2
"""Requests of one visitor waiting at once."""
MAX_WAITING = 64
"""Requests waiting at once on the server."""
MAX_USAGE_ENTRIES = 100_000
"""Visitors whose past use is remembered."""
POLL = 0.1
"""Seconds between a waiter's checks (its ``check`` callback, its deadline)."""

Waiting = Callable[[int, int], None]
"""``waiting(ahead, running)``: called while a request waits (requests ahead, slots taken)."""


@dataclass(eq=False)
class _Ticket:
    visitor: str
    arrived: float
    order: int
    granted: bool = field(default=False)


class Slots:
    """The slots of one server process and its queue (thread-safe)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: dict[str, int] = {}
        self._queue: list[_Ticket] = []
        self._usage: dict[str, tuple[float, float]] = {}  # visitor -> (slot-seconds, when)
        self._order = itertools.count()
        self._limits = Limits()

    def running(self) -> int:
        """Slots taken now."""
        with self._cond:
            return sum(self._running.values())

    def waiting(self) -> int:
        """Requests waiting now."""
        with self._cond:
            return len(self._queue)

    @contextlib.contextmanager
    def hold(
        self,
        visitor: str,
        limits: Limits,
        check: Callable[[], None] | None = None,
        waiting: Waiting | None = None,
        what: str = "analyses",
    ) -> Iterator[None]:
        """Hold one slot for ``visitor`` while the block runs (see :meth:`acquire`)."""
        self.acquire(visitor, limits, check, waiting, what)
        started = time.monotonic()
        try:
            yield
        finally:
            self.release(visitor, time.monotonic() - started)

    def acquire(
        self,
        visitor: str,
        limits: Limits,
        check: Callable[[], None] | None = None,
        waiting: Waiting | None = None,
        what: str = "analyses",
    ) -> None:
        """Take a slot for ``visitor``, waiting for its turn (at most ``limits.queue_seconds``;
        ``check()`` is called every :data:`POLL` seconds and may raise to stop waiting); a
        one-line :class:`LimitError` when refused. Pair with :meth:`release`."""
        now = time.monotonic()
        with self._cond:
            self._limits = limits
            if sum(t.visitor == visitor for t in self._queue) >= MAX_WAITING_PER_VISITOR:
                raise LimitError(
                    f"you already have {MAX_WAITING_PER_VISITOR} requests waiting for this "
                    "server's workers; wait for them (or close their pages) first"
                )
            if len(self._queue) >= MAX_WAITING:
                raise self._busy(limits, what, queued=True)
            ticket = _Ticket(visitor, now, next(self._order))
            self._queue.append(ticket)
            self._grant(limits)
        deadline = now + limits.queue_seconds
        try:
            while True:
                with self._cond:
                    if ticket.granted:
                        return
                    if time.monotonic() > deadline:
                        raise self._busy(limits, what)
                    ahead = self._ahead(ticket)
                    running = sum(self._running.values())
                    self._cond.wait(POLL)
                if waiting:
                    waiting(ahead, running)
                if check:
                    check()
        except BaseException:
            with self._cond:
                if ticket.granted:  # granted meanwhile: hand it back
                    self._running[visitor] -= 1
                    if not self._running[visitor]:
                        del self._running[visitor]
                else:
                    self._queue.remove(ticket)
                self._grant(limits)
            raise

    def release(self, visitor: str, seconds: float) -> None:
        """Give back a slot of ``visitor`` that was held ``seconds`` (its use, remembered)."""
        with self._cond:
            count = self._running.get(visitor, 0) - 1
            if count > 0:
                self._running[visitor] = count
            else:
                self._running.pop(visitor, None)
            now = time.monotonic()
            self._usage[visitor] = (self._score(visitor, now) + max(seconds, 0.0), now)
            if len(self._usage) > MAX_USAGE_ENTRIES:
                self._forget(now)
            self._grant(self._limits)

    # --- inside the lock ---------------------------------------------------------------------

    def _grant(self, limits: Limits) -> None:
        """Grant free slots to the waiting tickets whose turn it is."""
        granted = False
        while self._queue and sum(self._running.values()) < limits.concurrent:
            now = time.monotonic()
            per_visitor = limits.visitor_concurrent
            eligible = [t for t in self._queue if self._running.get(t.visitor, 0) < per_visitor]
            if not eligible:
                break
            ticket = min(eligible, key=lambda t: (self._score(t.visitor, now), t.order))
            self._queue.remove(ticket)
            self._running[ticket.visitor] = self._running.get(ticket.visitor, 0) + 1
            ticket.granted = granted = True
        if granted:
            self._cond.notify_all()

    def _ahead(self, ticket: _Ticket) -> int:
        now = time.monotonic()
        mine = (self._score(ticket.visitor, now), ticket.order)
        return sum((self._score(t.visitor, now), t.order) < mine for t in self._queue)

    def _score(self, visitor: str, now: float) -> float:
        used, when = self._usage.get(visitor, (0.0, now))
        return used * 0.5 ** ((now - when) / USAGE_HALF_LIFE)

    def _forget(self, now: float) -> None:
        ranked = sorted(self._usage, key=lambda v: self._score(v, now))
        for visitor in ranked[: len(ranked) - MAX_USAGE_ENTRIES // 2]:
            del self._usage[visitor]

    def _busy(self, limits: Limits, what: str, queued: bool = False) -> LimitError:
        running = sum(self._running.values())
        waited = (
            "too many requests are waiting"
            if queued
            else f"none became free within {limits.queue_seconds:g} s ({QUEUE_ENV})"
        )
        return LimitError(
            f"the server is busy: {running} {what} are running (at most {limits.concurrent} at "
            f"once, {CONCURRENT_ENV}) and {waited}; try again in a moment"
        )


slots = Slots()
"""The slots of this server process's workers."""
server_slots = Slots()
"""The slots of computations run in the server itself (Theorem 5 samplings: small and bounded,
so they need not wait behind a worker's analysis; the same limits, a lane of their own)."""
