"""What the server and a worker process tell each other, as typed values on a JSON line each.

- :class:`WorkerSetup`: the first line a worker reads (its limits, where to answer).
- A task (:mod:`.tasks`): each later line, one computation to run.
- :class:`WorkerMessage`: each line a worker answers, of a :class:`MessageKind`: progress, then
  one outcome per task (done, a one-line error, out of memory, failed).
- :class:`Outcome`: how a computation ended, as the server sees it: a worker's outcome, or the
  server's own (refused as busy, past its time, stopped by a signal, cancelled, abandoned).

Every value has ``as_dict``/``from_dict`` (plain JSON, the project's convention); a line a
worker sends that does not decode is a failure of that worker, never an exception in the server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

MAX_TEXT = 2000
"""Characters of a worker's error line kept (a progress line keeps :data:`MAX_PROGRESS`)."""
MAX_PROGRESS = 300


@dataclass(frozen=True)
class WorkerSetup:
    """A worker's limits and pipes: ``fd`` its message pipe's write end, ``memory`` its
    ``RLIMIT_DATA`` (bytes), ``cpu_seconds`` its CPU time per task, ``nice`` the niceness added,
    ``parent`` the server's pid (it exits when the server goes), ``keep`` whether it serves task
    after task (a model worker), ``hub_cache_bytes`` the hub cache's bound after a download."""

    fd: int
    memory: int
    cpu_seconds: float
    nice: int
    parent: int
    keep: bool
    hub_cache_bytes: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerSetup:
        """The setup of :meth:`as_dict`."""
        return cls(
            fd=int(data["fd"]),
            memory=int(data["memory"]),
            cpu_seconds=float(data["cpu_seconds"]),
            nice=int(data["nice"]),
            parent=int(data["parent"]),
            keep=bool(data["keep"]),
            hub_cache_bytes=int(data["hub_cache_bytes"]),
        )


class MessageKind(Enum):
    """What a worker's message says."""

    PROGRESS = "progress"
    """Work going on: ``done`` of ``total`` steps, ``text`` what."""
    DONE = "done"
    """The task finished; its result is in the store."""
    ERROR = "error"
    """The task was refused or failed with a :class:`~headforms.errors.HeadformsError` of class
    ``error`` and message ``text`` (one line for the visitor)."""
    MEMORY = "memory"
    """An allocation failed (the worker's memory limit)."""
    FAILED = "failed"
    """An unexpected exception of class ``error`` (the server's log has the rest)."""


@dataclass(frozen=True)
class WorkerMessage:
    """One line from a worker (see :class:`MessageKind` for each kind's fields)."""

    kind: MessageKind
    done: int = 0
    total: int = 1
    text: str = ""
    error: str = ""

    @property
    def final(self) -> bool:
        """Whether it ends its task (every kind but progress)."""
        return self.kind is not MessageKind.PROGRESS

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON."""
        return {**asdict(self), "kind": self.kind.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerMessage:
        """The message of :meth:`as_dict` (texts cut to their bounds)."""
        kind = MessageKind(data["kind"])
        limit = MAX_PROGRESS if kind is MessageKind.PROGRESS else MAX_TEXT
        return cls(
            kind,
            int(data.get("done", 0)),
            int(data.get("total", 1)),
            str(data.get("text", ""))[:limit],
            str(data.get("error", ""))[:100],
        )

    def encode(self) -> bytes:
        """The message as one line."""
        return json.dumps(self.as_dict()).encode() + b"\n"

    @classmethod
    def decode(cls, line: bytes) -> WorkerMessage | None:
        """The message of one line, or None if it is not one."""
        try:
            data = json.loads(line)
            return cls.from_dict(data) if isinstance(data, dict) else None
        except (ValueError, TypeError, KeyError):
            return None


class OutcomeKind(Enum):
    """How a computation ended."""

    DONE = "done"
    ERROR = "error"
    MEMORY = "memory"
    FAILED = "failed"
    BUSY = "busy"
    """Refused while waiting for a worker (the server busy, a visitor's queue full)."""
    TIME = "time"
    """Past its wall-clock limit (the server stopped it)."""
    CPU = "cpu"
    """Past its CPU limit (the kernel stopped it)."""
    SIGNAL = "signal"
    """Stopped by another signal (``text``: its name)."""
    CANCELLED = "cancelled"
    ABANDONED = "abandoned"
    """Nobody waited for it any more."""


CLEAN = (OutcomeKind.DONE, OutcomeKind.ERROR)
"""Outcomes after which a model worker is in a known state and may be kept."""


@dataclass(frozen=True)
class Outcome:
    """How one computation ended: its kind, the error class (``ERROR``, ``FAILED``) and a text
    (an error's message, a refusal's line, a signal's name)."""

    kind: OutcomeKind
    error: str = ""
    text: str = ""

    @classmethod
    def of(cls, message: WorkerMessage) -> Outcome:
        """The outcome a worker's final message reports."""
        return cls(OutcomeKind(message.kind.value), message.error, message.text)

    @property
    def clean(self) -> bool:
        """Whether the worker is left in a known state (:data:`CLEAN`)."""
        return self.kind in CLEAN
