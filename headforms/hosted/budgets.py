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
from enum import StrEnum

from ..errors import LimitError
from ..settings import (
    VISITOR_ANALYSES_ENV,
    VISITOR_FORWARD_PASSES_ENV,
    VISITOR_SAMPLES_ENV,
    VISITOR_SUMMARIES_ENV,
)
from .limits import Limits


class Budget(StrEnum):
    """What a visitor's new computations are counted as (each kind its own budget)."""

    ANALYSES = "analyses"
    """New analyses: models, RoPE positions, sweeps, Gaussian baselines of new shapes."""
    SAMPLES = "samples"
    """New Theorem 5 samplings."""
    FORWARD_PASSES = "forward_passes"
    """New forward passes: prompts, probes, interventions (one per ten sequence passes)."""
    SUMMARIES = "summaries"
    """New summaries of results at hand: lobe fits, clusterings, observation summaries,
    bootstrap intervals (computed in the server)."""

    @property
    def what(self) -> str:
        """What it counts, in a refusal's line."""
        return _WHAT[self]

    @property
    def variable(self) -> str:
        """Its variable (the per-window limit)."""
        return _VARIABLE[self]

    def limit(self, limits: Limits) -> int:
        """Its per-window limit."""
        return {
            Budget.ANALYSES: limits.visitor_analyses,
            Budget.SAMPLES: limits.visitor_samples,
            Budget.FORWARD_PASSES: limits.visitor_forward_passes,
            Budget.SUMMARIES: limits.visitor_summaries,
        }[self]


_WHAT = {
    Budget.ANALYSES: "new analyses (models or RoPE positions)",
    Budget.SAMPLES: "new Theorem 5 samplings",
    Budget.FORWARD_PASSES: "new forward passes (prompts or probes)",
    Budget.SUMMARIES: "new summaries (fits, clusterings, bootstraps)",
}
_VARIABLE = {
    Budget.ANALYSES: VISITOR_ANALYSES_ENV,
    Budget.SAMPLES: VISITOR_SAMPLES_ENV,
    Budget.FORWARD_PASSES: VISITOR_FORWARD_PASSES_ENV,
    Budget.SUMMARIES: VISITOR_SUMMARIES_ENV,
}

MAX_VISITORS = 100_000
"""Visitors whose recent starts are remembered."""


class Budgets:
    """Recent starts per visitor and kind (thread-safe)."""

    def __init__(self, max_visitors: int = MAX_VISITORS) -> None:
        self._lock = threading.Lock()
        self._starts: OrderedDict[tuple[str, Budget], deque[float]] = OrderedDict()
        self.max_visitors = max_visitors

    def check(self, visitor: str, kind: Budget, limits: Limits, count: int = 1) -> None:
        """A one-line :class:`LimitError` if ``visitor`` may not start ``count`` new ``kind``
        now."""
        kind = Budget(kind)  # its value too ("analyses"): one budget, however it is named
        with self._lock:
            starts = self._starts.get((visitor, kind), deque())
            self._refuse_if_spent(starts, kind, limits, time.monotonic(), count)

    def spend(self, visitor: str, kind: Budget, limits: Limits, count: int = 1) -> None:
        """Count ``count`` new ``kind`` for ``visitor`` (a computation that costs several, as an
        intervention of many sequence passes does; refused past the limit, as :meth:`check`)."""
        kind, now = Budget(kind), time.monotonic()
        with self._lock:
            starts = self._starts.setdefault((visitor, kind), deque())
            self._refuse_if_spent(starts, kind, limits, now, count)
            starts.extend([now] * count)
            self._starts.move_to_end((visitor, kind))
            while len(self._starts) > self.max_visitors * len(Budget):
                self._starts.popitem(last=False)

    def refund(self, visitor: str, kind: Budget, count: int = 1) -> None:
        """Give back the last ``count`` starts of ``kind`` (it never ran: e.g. refused as
        busy)."""
        kind = Budget(kind)
        with self._lock:
            starts = self._starts.get((visitor, kind))
            for _ in range(count):
                if starts:
                    starts.pop()

    @staticmethod
    def _refuse_if_spent(
        starts: deque[float], kind: Budget, limits: Limits, now: float, count: int = 1
    ) -> None:
        limit, what, variable = kind.limit(limits), kind.what, kind.variable
        if count > limit:
            raise LimitError(
                f"this computation counts as {count} {what}, more than the {limit} one visitor "
                f"may start within {_span(limits.window)} on this server ({variable})"
            )
        while starts and now - starts[0] > limits.window:
            starts.popleft()
        if len(starts) + count > limit:
            if starts and len(starts) < limit:
                raise LimitError(
                    f"this computation counts as {count} {what}; you have {limit - len(starts)} "
                    f"of the {limit} one visitor may start within {_span(limits.window)} left "
                    f"on this server ({variable})"
                )
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
