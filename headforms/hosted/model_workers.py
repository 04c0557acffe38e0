"""Model workers: a worker process that keeps its model loaded between forward passes, so that a
new prompt costs a pass (0.1-0.3 s), not a model load (3-5 s).

It is the same kind of process as any worker (:mod:`.process`), within the same memory limit for
its whole life and the same CPU limit per pass (:mod:`.child`); each pass takes its turn at the
slots like any computation (an idle model worker holds no slot). The model workers kept are
bounded by their estimated memory in all (``HEADFORMS_MODELS_MEMORY``, least recently used
stopped first) and each is stopped after ``HEADFORMS_MODEL_IDLE_SECONDS`` with nothing to do,
or at once when a pass fails or is stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..bounded import ByteLRU
from .limits import Limits
from .process import WorkerProcess

REAP_EVERY = 5.0
"""Seconds between checks for model workers idle past their time (or dead)."""
POLL = 0.1
"""Seconds between checks of a pass waiting for its model's worker."""

ModelKey = tuple[str, int]
"""``(fingerprint, estimated bytes)`` of the model a model worker holds."""


class _Kept:
    """A model worker and its state: busy with a pass, or idle since ``last_used``."""

    def __init__(self, fingerprint: str, size: int, worker: WorkerProcess) -> None:
        self.fingerprint = fingerprint
        self.size = size
        self.worker = worker
        self.busy = True
        self.retired = False
        self.last_used = time.monotonic()


class ModelWorkers:
    """The model workers of one server process, one per model at most, kept in a
    :class:`~headforms.bounded.ByteLRU` of their estimated memory (``HEADFORMS_MODELS_MEMORY``;
    one evicted while busy is stopped when its pass ends), stopped when idle for
    ``HEADFORMS_MODEL_IDLE_SECONDS`` (a reaper thread checks every :data:`REAP_EVERY` s)."""

    def __init__(self) -> None:
        self._kept: ByteLRU[_Kept] = ByteLRU(
            0, sizer=lambda kept: kept.size, on_evict=lambda _, kept: self._retire(kept)
        )
        self._cond = threading.Condition()
        self._reaper: threading.Thread | None = None
        self._limits = Limits()
        self.started = 0
        """Model workers started (each a model load) since this object was made."""

    def take(
        self, model: ModelKey, limits: Limits, mapped_bytes: int, check: Callable[[], None]
    ) -> WorkerProcess:
        """The model's worker, marked busy: the one kept (waiting while another pass uses it;
        ``check()`` may raise to stop waiting), else a new one (:attr:`started` counts them),
        kept if it fits the budget."""
        fingerprint, size = model
        with self._cond:
            self._limits = limits
            while True:
                kept = self._kept.get(fingerprint)
                if kept is None:
                    break
                if not kept.worker.alive():
                    self._kept.pop(fingerprint)
                    kept.worker.kill()
                    break
                if not kept.busy:
                    kept.busy = True
                    return kept.worker
                self._cond.wait(POLL)
                check()
            # Started under the lock (a process start, not a model load: milliseconds), so that
            # a second pass of the model waits for this worker instead of starting another.
            kept = _Kept(fingerprint, size, WorkerProcess(limits, mapped_bytes, keep=True))
            self.started += 1
            self._kept.max_bytes = limits.models_memory
            self._kept.put(fingerprint, kept)  # not kept when larger than the budget alone
            self._start_reaper()
            return kept.worker

    def give_back(self, model: ModelKey, worker: WorkerProcess, clean: bool) -> None:
        """The pass in ``worker`` ended: keep it for the next (``clean``: its task ended in a
        known state), or stop it."""
        with self._cond:
            kept = self._kept.get(model[0])
            ours = kept is not None and kept.worker is worker
            if ours and clean and not kept.retired and worker.alive():
                kept.busy = False
                kept.last_used = time.monotonic()
                self._cond.notify_all()
                return
            if ours:
                self._kept.pop(model[0])
            self._cond.notify_all()
        worker.kill()

    def pids(self) -> list[int]:
        """Process ids of the model workers kept now (busy or idle)."""
        return [kept.worker.pid for kept in self._kept.values()]

    def stop_all(self) -> None:
        """Stop every idle model worker now (a busy one when its pass ends)."""
        with self._cond:
            self._kept.clear()

    def reap(self, idle_seconds: float) -> int:
        """Stop the dead workers and the idle ones unused for ``idle_seconds``; how many."""
        now = time.monotonic()
        stopped = []
        with self._cond:
            for kept in self._kept.values():
                if not kept.worker.alive() or (
                    not kept.busy and now - kept.last_used > idle_seconds
                ):
                    self._kept.pop(kept.fingerprint)
                    stopped.append(kept.worker)
        for worker in stopped:
            worker.kill()
        return len(stopped)

    @staticmethod
    def _retire(kept: _Kept) -> None:
        """Evicted: stopped now if idle, else when its pass ends."""
        kept.retired = True
        if not kept.busy:
            kept.worker.kill()

    def _start_reaper(self) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return

        def reap_forever() -> None:  # by the limits of the latest pass asked
            while True:
                time.sleep(min(REAP_EVERY, self._limits.model_idle_seconds / 4))
                self.reap(self._limits.model_idle_seconds)

        self._reaper = threading.Thread(target=reap_forever, name="headforms-reaper", daemon=True)
        self._reaper.start()
