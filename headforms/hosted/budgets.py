"""Per-visitor budgets: how many new computations of each kind one visitor may start.

Counted per visitor (:mod:`.visitors`: the client's address), over a sliding window of
``HEADFORMS_VISITOR_WINDOW`` seconds, in this server process; a new websocket, a new tab or a
reload resets nothing. Results already computed never count: only a computation that really
starts is spent. What is kept is bounded: at most the limit's count of start times per visitor
and kind, for at most :data:`MAX_VISITORS` visitors (the least recently active forgotten first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

from ..errors import LimitError
from ..settings import VISITOR_ANALYSES_ENV, VISITOR_SAMPLES_ENV
from .limits import Limits

KINDS = {
    "analyses": ("new analyses (models or RoPE positions)", VISITOR_ANALYSES_ENV),
    "samples": ("new Theorem 5 samplings", VISITOR_SAMPLES_ENV),
}
"""kind -> (what is counted, its variable)."""

MAX_VISITORS = 100_000
"""Visitors whose recent starts are remembered."""


def limit_of(kind: str, limits: Limits) -> int:
    """The per-window limit of ``kind``."""
    return {"analyses": limits.visitor_analyses, "samples": limits.visitor_samples}[kind]


class Budgets:
    """Recent starts per visitor and kind (thread-safe)."""

    def __init__(self, max_visitors: int = MAX_VISITORS) -> None:
        self._lock = threading.Lock()
        self._starts: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self.max_visitors = max_visitors

    def check(self, visitor: str, kind: str, limits: Limits) -> None:
        """A one-line :class:`LimitError` if ``visitor`` may start no new ``kind`` now."""
        with self._lock:
            starts = self._starts.get((visitor, kind))
            if starts is not None:
                self._refuse_if_spent(starts, kind, limits, time.monotonic())

    def spend(self, visitor: str, kind: str, limits: Limits) -> None:
        """Count one new ``kind`` for ``visitor`` (refused past the limit, as :meth:`check`)."""
        now = time.monotonic()
        with self._lock:
            starts = self._starts.setdefault((visitor, kind), deque())
            self._refuse_if_spent(starts, kind, limits, now)
            starts.append(now)
            self._starts.move_to_end((visitor, kind))
            while len(self._starts) > self.max_visitors * len(KINDS):
                self._starts.popitem(last=False)

    def refund(self, visitor: str, kind: str) -> None:
        """Give back the last start of ``kind`` (it never ran: e.g. refused as busy)."""
        with self._lock:
            starts = self._starts.get((visitor, kind))
            if starts:
                starts.pop()

    @staticmethod
    def _refuse_if_spent(starts: deque[float], kind: str, limits: Limits, now: float) -> None:
        limit = limit_of(kind, limits)
        while starts and now - starts[0] > limits.window:
            starts.popleft()
        if len(starts) >= limit:
            what, variable = KINDS[kind]
            wait = max(1, round((limits.window - (now - starts[0])) / 60))
            raise LimitError(
                f"you have started {limit} {what} within {_span(limits.window)}, the most one "
                f"visitor may start on this server ({variable}); results already computed "
                f"still open, and a new one may start in about {wait} min"
            )


def _span(seconds: float) -> str:
    if seconds % 3600 == 0:
        hours = int(seconds // 3600)
        return "an hour" if hours == 1 else f"{hours} hours"
    if seconds >= 60:
        return f"{seconds / 60:g} minutes"
    return f"{seconds:g} s"
