"""Contained computations: each new analysis in a worker process, within limits, at its turn,
stopped when it passes them or when nobody waits for it any more.

:func:`analyze` answers from the result store when it can (no worker, no weights opened).
Otherwise it runs :func:`headforms.engine.analyze` in a fresh Python process
(``python -m headforms.hosted``: a new interpreter, never a fork of the threaded server)
whose memory (``RLIMIT_DATA``: every private writable mapping, so heap and numpy arrays but not
the read-only memory maps of safetensors and GGUF files; torch maps a ``.bin`` file privately,
so its size, bounded by the size check, is added to the limit) and CPU time (``RLIMIT_CPU``)
are capped by the kernel. :func:`sweep` does the same for a sweep over RoPE positions and
:func:`baseline` for a Gaussian baseline, when a view needs one; :func:`in_server` runs a small
bounded computation (a Theorem 5 sampling) in the server itself, at its turn. A training run's
series and a diff are analyses of their models, each contained as one.

:func:`forward_pass` runs a forward pass (:mod:`headforms.behaviour`: a prompt's attention, a
probe's head-type scores) in a *model worker*: a worker process that keeps its model loaded
between passes, so that a new prompt costs a pass (0.1-0.3 s), not a model load (3-5 s). It is
the same kind of process, within the same memory limit for its whole life and the same CPU
limit per pass; each pass takes its turn at the slots like any computation (an idle model
worker holds no slot). The model workers kept are bounded by their estimated memory in all
(``HEADFORMS_MODELS_MEMORY``, least recently used stopped first) and each is stopped after
``HEADFORMS_MODEL_IDLE_SECONDS`` with nothing to do, or at once when a pass fails or is stopped.
A model too large for the memory limit is refused before any worker starts.

A request is a *flight*: concurrent requests for one computation share it. It first waits for
a slot (:mod:`.slots`: fair turns between visitors, a bounded wait), then its worker runs. The
server kills the worker's process group when it passes its wall-clock limit, when every
visitor waiting for it has left (after :data:`ABANDON_GRACE` seconds, so that a rerun of the
same page picks it up again), or when it is cancelled. The engine stores a result only once it
is complete, so a stopped analysis leaves nothing in the cache; a finished one is read back
from the store by the server (a cache hit: no heavy import). The visitor who started it is
charged one new computation of its kind (:mod:`.budgets`), given back if it never ran.

Every outcome is one line: the engine's own :class:`~headforms.errors.HeadformsError`, or a
:class:`~headforms.errors.LimitError` naming the limit, its value and its variable.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import errors
from ..bounded import ByteLRU
from ..errors import HeadformsError, LimitError
from ..settings import MEMORY_ENV, SECONDS_ENV, THREADS_ENV, human_bytes, settings
from .budgets import Budgets
from .limits import Limits
from .policy import Policy
from .slots import server_slots, slots
from .visitors import LOCAL

if TYPE_CHECKING:
    from ..architectures import Shapes
    from ..baseline import Baseline
    from ..behaviour import AttentionPattern, HeadTypeScores
    from ..model_analysis import ModelAnalysis
    from ..options import AnalysisOptions, SweepOptions
    from ..sources import Located, Spec
    from ..sweeps import PositionSweep

T = TypeVar("T")

ABANDON_GRACE = 3.0
"""Seconds a flight keeps going with nobody waiting (a rerun re-attaches within this)."""
POLL = 0.1
"""Seconds between a waiter's checks (its ``check`` callback, the outcome)."""
MAX_LINE = 64 * 1024
"""Longest message line a worker may send."""
REAP_EVERY = 5.0
"""Seconds between checks for model workers idle past their time (or dead)."""
CLEAN_OUTCOMES = ("done", "error")
"""Outcomes after which a model worker is in a known state and may be kept."""

Progress = Callable[[int, int, str], None]

budgets = Budgets()
"""The per-visitor budgets of this server process."""


def running() -> int:
    """Contained computations running now in this server process (workers and in-server)."""
    return slots.running() + server_slots.running()


# ---------------------------------------------------------------------------------------------
# Flights: one worker per computation, shared by everyone waiting for it


class _Worker:
    """One worker process: the pipe it is asked on (its stdin: a setup line, then one task per
    line) and the pipe it answers on (progress, then one outcome per task)."""

    def __init__(self, limits: Limits, mapped_bytes: int = 0, keep: bool = False) -> None:
        self.proc, self._reader = _start_worker(limits, mapped_bytes, keep)
        self.keep = keep
        self._buffer = b""
        self._poller = select.poll()  # not select.select: a busy server's descriptors pass 1024
        self._poller.register(self._reader, select.POLLIN | select.POLLHUP)
        self._closed = False

    @property
    def pid(self) -> int:
        """The worker's process id (its process group id too)."""
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the process still runs."""
        return not self._closed and self.proc.poll() is None

    def ask(self, task: dict[str, Any]) -> None:
        """Send one task (a worker that is not kept is then told there is no other)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(task).encode() + b"\n")
            self.proc.stdin.flush()
            if not self.keep:
                self.proc.stdin.close()
        except OSError:  # it died at once; reading its pipe reports how
            pass

    def lines(self, timeout: float) -> list[bytes] | None:
        """The message lines that arrived within ``timeout`` seconds (maybe none); None once
        the worker has closed its end (it exited or died)."""
        if not self._poller.poll(timeout * 1000):
            return []
        chunk = os.read(self._reader, 65536)
        if not chunk:
            return None
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > MAX_LINE:
            raise _Oversized("an oversized message")
        return lines

    def idle(self) -> bool:
        """Whether nothing is left unread (a kept worker between tasks)."""
        return not self._buffer

    def kill(self) -> None:
        """Stop the process group and close the pipes (idempotent)."""
        if self._closed:
            return
        self._closed = True
        _kill(self.proc)
        with contextlib.suppress(OSError):
            os.close(self._reader)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


class _Flight:
    """One computation: its turn, then its worker process, and what its waiters need
    (progress, outcome, who is still waiting). ``kind``: the budget it is charged to;
    ``model``: for a forward pass, the model worker it runs in (else a fresh worker)."""

    def __init__(
        self,
        key: tuple,
        label: str,
        request: dict[str, Any],
        limits: Limits,
        visitor: str,
        charged: bool = True,
        kind: str = "analyses",
        model: _ModelKey | None = None,
    ) -> None:
        self.key = key
        self.label = label
        self.request = request
        self.limits = limits
        self.visitor = visitor
        self.charged = charged
        self.kind = kind
        self.model = model
        self.worker: _Worker | None = None
        self.started: float | None = None
        self.progress: tuple[int, int, str] = (0, 1, "waiting for a worker")
        self.outcome: list[Any] | None = None
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

    def _abandoned(self) -> bool:
        with self._lock:
            alone = self._alone_since
        return alone is not None and time.monotonic() - alone > ABANDON_GRACE

    def fly(self) -> None:
        """Wait for a slot, run the worker, relay its messages; then clean up."""
        try:
            slots.acquire(self.visitor, self.limits, self._raise_if_stopped, self._waiting)
        except _Stopped as stop:
            self._refund()
            self._finish(stop.outcome)
            return
        except LimitError as busy:
            self._refund()
            self._finish(["busy", str(busy)])
            return
        except BaseException as exc:  # never leave waiters hanging on a bug
            self._refund()
            self._finish(["failed", type(exc).__name__])
            return
        self.started = time.monotonic()
        try:
            self.progress = (0, 1, f"starting {self.label}")
            mapped = int(self.request.get("mapped_bytes", 0))
            if self.model is None:
                self.worker = _Worker(self.limits, mapped)
            else:
                self.progress = (0, 1, f"{self.label}: waiting for the model's worker")
                self.worker = model_workers.take(
                    self.model, self.limits, mapped, self._raise_if_stopped
                )
            self.worker.ask(self.request)
        except BaseException as exc:
            slots.release(self.visitor, time.monotonic() - self.started)
            outcome = exc.outcome if isinstance(exc, _Stopped) else ["failed", type(exc).__name__]
            self._finish(outcome)
            return
        try:
            self._monitor(self.worker)
        finally:
            slots.release(self.visitor, time.monotonic() - self.started)
            self.done.set()

    def _refund(self) -> None:
        """Give its visitor back the new computation it was charged (it never ran)."""
        if self.charged:
            budgets.refund(self.visitor, self.kind)

    def _finish(self, outcome: list[Any]) -> None:
        """End a flight whose worker never ran its task (the flight's thread)."""
        self.outcome = outcome
        self._forget()
        self.done.set()

    def _forget(self) -> None:
        with _flights_lock:
            if _flights.get(self.key) is self:
                del _flights[self.key]

    def _waiting(self, ahead: int, taken: int) -> None:
        queue = f"{ahead} ahead" if ahead else "next"
        self.progress = (0, 1, f"waiting for a worker ({taken} busy; {queue})")

    def _raise_if_stopped(self) -> None:
        stop = self._stop_reason()
        if stop is not None:
            raise _Stopped(stop)

    def _monitor(self, worker: _Worker) -> None:
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
        except _Oversized as exc:
            self.outcome = ["failed", str(exc)]
        except Exception as exc:  # never leave waiters hanging on a monitor bug
            self.outcome = ["failed", type(exc).__name__]
        finally:
            clean = self.outcome is not None and self.outcome[0] in CLEAN_OUTCOMES
            if self.model is not None:
                model_workers.give_back(self.model, worker, clean and worker.idle())
            else:
                if self.outcome and self.outcome[0] == "done":  # let it exit on its own first
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        worker.proc.wait(timeout=2)
                worker.kill()
            self._forget()

    def _stop_reason(self) -> list[Any] | None:
        if self._cancelled:
            return ["cancelled"]
        if self.started is not None and time.monotonic() > self.started + self.limits.seconds:
            return ["time"]
        if self._abandoned():
            return ["abandoned"]
        return None

    def _message(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            kind = message[0]
        except (ValueError, TypeError, IndexError):
            self.outcome = ["failed", "an unreadable message"]
            return
        if kind == "progress" and len(message) == 4:
            done, total, text = message[1:]
            self.progress = (int(done), int(total), str(text)[:300])
        elif kind in ("done", "error", "memory", "failed"):
            if kind == "error" and message[1:2] == ["OptionError"]:
                # refused before the work began (a prompt too long for the model, a sweep of a
                # model without rotation): the visitor is not charged for it
                self._refund()
            self.outcome = message
        else:
            self.outcome = ["failed", "an unknown message"]

    def _exit_outcome(self, worker: _Worker) -> list[Any]:
        try:
            code = worker.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return ["failed", "a worker that closed its pipe"]
        if code == -signal.SIGXCPU or (code == -signal.SIGKILL and self._cpu_exhausted()):
            return ["cpu"]
        if code < 0:
            return ["signal", signal.Signals(-code).name if -code in _SIGNALS else str(-code)]
        return ["failed", f"exit status {code}"]

    def _cpu_exhausted(self) -> bool:
        return self.started is not None and time.monotonic() - self.started >= self.limits.seconds


class _Oversized(Exception):
    """A worker sent a message line longer than :data:`MAX_LINE`."""


class _Stopped(Exception):
    """A flight was stopped while it waited for its turn (or for its model's worker)."""

    def __init__(self, outcome: list[Any]) -> None:
        super().__init__(outcome[0])
        self.outcome = outcome


_SIGNALS = {int(s) for s in signal.Signals}
_flights: dict[tuple, _Flight] = {}
_flights_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------
# Model workers: a model kept loaded in its worker between forward passes


_ModelKey = tuple[str, int]
"""``(fingerprint, estimated bytes)`` of the model a model worker holds."""


class _Kept:
    """A model worker and its state: busy with a pass, or idle since ``last_used``."""

    def __init__(self, fingerprint: str, size: int, worker: _Worker) -> None:
        self.fingerprint = fingerprint
        self.size = size
        self.worker = worker
        self.busy = True
        self.retired = False
        self.last_used = time.monotonic()


class ModelWorkers:
    """The model workers of this server process, one per model at most, kept in a
    :class:`~headforms.bounded.ByteLRU` of their estimated memory (``HEADFORMS_MODELS_MEMORY``;
    one evicted while busy is stopped when its pass ends), stopped when idle for
    ``HEADFORMS_MODEL_IDLE_SECONDS`` (a reaper thread checks every :data:`REAP_EVERY` s)."""

    def __init__(self) -> None:
        self._kept: ByteLRU[_Kept] = ByteLRU(
            0, sizer=lambda kept: kept.size, on_evict=lambda _, kept: self._retire(kept)
        )
        self._cond = threading.Condition()
        self._reaper: threading.Thread | None = None

    def take(
        self, model: _ModelKey, limits: Limits, mapped_bytes: int, check: Callable[[], None]
    ) -> _Worker:
        """The model's worker, marked busy: the one kept (waiting while another pass uses it;
        ``check()`` may raise to stop waiting), else a new one, kept if it fits the budget."""
        fingerprint, size = model
        with self._cond:
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
            kept = _Kept(fingerprint, size, _Worker(limits, mapped_bytes, keep=True))
            self._kept.max_bytes = limits.models_memory
            self._kept.put(fingerprint, kept)  # not kept when larger than the budget alone
            self._start_reaper(limits)
            return kept.worker

    def give_back(self, model: _ModelKey, worker: _Worker, clean: bool) -> None:
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

    def _start_reaper(self, limits: Limits) -> None:
        if self._reaper is not None and self._reaper.is_alive():
            return

        def reap_forever() -> None:
            while True:
                time.sleep(min(REAP_EVERY, limits.model_idle_seconds / 4))
                with contextlib.suppress(HeadformsError):  # a bad setting: the next round
                    self.reap(settings().model_idle_seconds)

        self._reaper = threading.Thread(target=reap_forever, name="headforms-reaper", daemon=True)
        self._reaper.start()


model_workers = ModelWorkers()
"""The model workers of this server process."""


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (it leads its own: anything it started goes
    too, even after it exited) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _start_worker(
    limits: Limits, mapped_bytes: int = 0, keep: bool = False
) -> tuple[subprocess.Popen, int]:
    """A new worker process within ``limits`` (its setup line sent; ``keep``: it serves task
    after task until its stdin closes) and the read end of its message pipe."""
    reader, writer = os.pipe()
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    threads = settings().worker_threads
    env[THREADS_ENV] = str(threads)  # the workers together never ask for more threads than cores
    setup = {
        "fd": writer,
        "memory": limits.memory + int(mapped_bytes),
        "cpu_seconds": limits.seconds * threads,
        "nice": limits.nice,
        "parent": os.getpid(),
        "keep": keep,
    }
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headforms.hosted"],
            stdin=subprocess.PIPE,
            pass_fds=(writer,),
            env=env,
            # Its own process group (killed whole), in the server's session: where the kernel
            # groups sessions for scheduling (autogroup), the worker then shares the server's
            # group, below the server by its niceness, and the two together get the group's
            # fair share of a machine run by others too (benchmarks/bench_nice.py).
            process_group=0,
        )
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(setup).encode() + b"\n")
        proc.stdin.flush()
    except OSError:  # it died at once; the monitor reports how
        pass
    return proc, reader


# ---------------------------------------------------------------------------------------------
# The API


def analyze(
    spec: str | Located,
    rope_position: int = 0,
    fold_qk_norm: bool = True,
    spectra: Iterable[str] = (),
    progress: Progress | None = None,
    *,
    options: AnalysisOptions | None = None,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> ModelAnalysis:
    """:func:`headforms.engine.analyze` within the server's policy and limits.

    ``spec``: a spec's text, located here under ``policy`` (default: this server's), or a model
    already located under it, which the worker opens as it is (never located again).
    ``options``: the analysis's options as one value (else made from ``rope_position``,
    ``fold_qk_norm`` and ``spectra``). ``progress(done, total, message)`` relays the flight's
    progress (its wait for a worker, then the worker's). ``check()`` is called every
    :data:`POLL` seconds while waiting: it may raise to stop waiting (a Streamlit rerun or stop;
    the flight then goes on for :data:`ABANDON_GRACE` seconds in case someone comes back). A new
    computation is charged to ``visitor`` (refused at once past its budget). A published table
    holds its metrics already: it is read here, no worker needed.
    """
    from .. import engine
    from ..options import AnalysisOptions
    from ..sources import Located, locate

    if options is None:
        options = AnalysisOptions(rope_position, fold_qk_norm, tuple(spectra))
    if isinstance(spec, Located):
        located = spec
    else:
        located = locate(spec, policy or Policy.from_env())

    def stored() -> Any:
        return engine.stored_analysis(located, options)

    hit = stored()
    if hit is not None:
        if progress:
            progress(hit.card.n_layers, hit.card.n_layers, "loaded from cache")
        return hit
    request = _model_request("analysis", located, options.as_dict())
    key = ("analysis", located.fingerprint, options)
    label = f"the analysis of {located.spec}"
    # More spectra of a model already analysed at these options are not a new analysis (they
    # come from its stored factors, as cheap as a reread): no charge to the visitor.
    core = AnalysisOptions(options.rope_position, options.fold_qk_norm)
    charge = core == options or engine.stored_analysis(located, core) is None
    flight = _run(key, label, request, limits, progress, check, visitor, charge)
    return _result(flight, stored)


def sweep(
    spec: str | Located,
    options: SweepOptions,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> PositionSweep:
    """:func:`headforms.engine.sweep` within the server's policy and limits: read from the
    store, else computed in a worker, contained and charged as one new analysis (``spec``,
    ``progress``, ``visitor``, ``check``: as for :func:`analyze`)."""
    from .. import engine
    from ..sources import Located, locate

    located = spec if isinstance(spec, Located) else locate(spec, policy or Policy.from_env())

    def stored() -> Any:
        return engine.stored_sweep(located, options)

    hit = stored()
    if hit is not None:
        return hit
    request = _model_request("sweep", located, options.as_dict())
    key = ("sweep", located.fingerprint, options)
    label = f"the sweep of {located.spec} over {len(options.positions)} RoPE positions"
    return _result(_run(key, label, request, limits, progress, check, visitor), stored)


def _model_request(task: str, located: Located, options: dict[str, Any]) -> dict[str, Any]:
    """A worker's request to compute ``task`` (an analysis, a sweep) of a located model."""
    return {
        "task": task,
        "located": located.as_dict(),
        "options": options,
        "hub_repo": located.hub.repo_id if located.hub is not None else None,
        # torch maps a .bin file privately and writably: RLIMIT_DATA counts it whole
        "mapped_bytes": sum(f.size or 0 for f in located.weights) if located.format == "bin" else 0,
    }


def baseline(
    shapes: Shapes,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> Baseline:
    """:func:`headforms.baseline.gaussian_baseline` of ``shapes`` within the limits: read from
    the store, else computed in a worker (its size follows the model's shapes, so it is
    contained like an analysis and charged as one)."""
    from dataclasses import asdict

    from ..baseline import baseline_key, stored_baseline

    def stored() -> Any:
        return stored_baseline(shapes)

    hit = stored()
    if hit is not None:
        return hit
    request = {"task": "baseline", "shapes": asdict(shapes)}
    key = ("baseline", baseline_key(shapes))
    label = "the Gaussian baseline"
    return _result(_run(key, label, request, limits, progress, check, visitor), stored)


def forward_pass(
    spec: str | Spec | Located,
    prompt: str | None = None,
    probe: tuple[int, int] | None = None,
    progress: Progress | None = None,
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
    policy: Policy | None = None,
) -> AttentionPattern | HeadTypeScores:
    """:func:`headforms.behaviour.attention` of ``prompt``, or (``probe = (R, seed)``)
    :func:`headforms.behaviour.head_type_scores` of that probe, within the server's policy and
    limits: answered from the result store when it can; otherwise the model's worker (kept
    loaded between passes, see the module doc) runs it at ``visitor``'s turn and stores it,
    charged as one of the visitor's new forward passes. A model whose estimated forward-pass
    memory (:func:`headforms.behaviour.runnable.forward_memory` at the token cap) passes the
    memory limit is refused in one line before any worker starts. ``progress`` and ``check``
    as in :func:`analyze`."""
    from ..behaviour import cache
    from ..behaviour.limits import check_probe, check_prompt
    from ..behaviour.run import locate_runnable
    from ..behaviour.runnable import fingerprint, forward_memory
    from ..store import ResultStore

    if (prompt is None) == (probe is None):
        raise ValueError("forward_pass needs a prompt or a probe")
    if prompt is not None:
        prompt = check_prompt(prompt)
    else:
        probe = check_probe(*probe)  # type: ignore[misc]
    located = locate_runnable(spec, policy or Policy.from_env())
    model_fingerprint = fingerprint(located)
    if prompt is not None:
        key = cache.pattern_key(model_fingerprint, prompt)
        label = f"the forward pass of {located.spec} on the prompt"

        def stored() -> Any:
            return cache.get_pattern(ResultStore(), key)
    else:
        key = cache.scores_key(model_fingerprint, *probe)  # type: ignore[misc]
        label = f"the head-type scores of {located.spec}"

        def stored() -> Any:
            return cache.get_scores(ResultStore(), key)

    hit = stored()
    if hit is None:
        limits = limits or Limits.from_env()
        need = forward_memory(located, settings().prompt_tokens)
        if need is None or need > limits.memory:
            size = f"an estimated {human_bytes(need)} of" if need else "an unknown amount of"
            raise LimitError(
                f"{located.spec} is too large to run on this server: a forward pass needs {size} "
                f"memory, more than its limit of {human_bytes(limits.memory)} per analysis "
                f"({MEMORY_ENV}); the geometry views still work"
            )
        request = {
            "task": "behaviour",
            "located": located.as_dict(),
            "prompt": prompt,
            "probe": probe,
            "hub_repo": located.hub.repo_id if located.hub is not None else None,
            "mapped_bytes": (located.weight_bytes or 0) if located.format == "bin" else 0,
        }
        flight = _run(
            ("behaviour", key),
            label,
            request,
            limits,
            progress,
            check,
            visitor,
            kind="forward_passes",
            model=(model_fingerprint, need),
        )
        hit = _result(flight, stored)
    hit.model = located.spec
    return hit


def model_worker_pids() -> list[int]:
    """Process ids of this server's model workers (for tests and benchmarks)."""
    return model_workers.pids()


def in_server(
    kind: str,
    build: Callable[[], T],
    *,
    visitor: str = LOCAL,
    check: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> T:
    """``build()`` run in this process at ``visitor``'s turn (a slot held while it runs),
    charged to its ``kind`` budget: for computations bounded by their inputs' sizes (a Theorem 5
    sampling), which need no worker of their own."""
    limits = limits or Limits.from_env()
    budgets.check(visitor, kind, limits)
    with server_slots.hold(visitor, limits, check, what="computations"):
        budgets.spend(visitor, kind, limits)
        return build()


def _run(
    key: tuple,
    label: str,
    request: dict[str, Any],
    limits: Limits | None,
    progress: Progress | None,
    check: Callable[[], None] | None,
    visitor: str,
    charge: bool = True,
    kind: str = "analyses",
    model: _ModelKey | None = None,
) -> _Flight:
    """Wait, attached, for the flight computing ``key`` (started if none is) to end."""
    limits = limits or Limits.from_env()
    flight = _join(key, label, request, limits, visitor, charge, kind, model)
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
    key: tuple,
    label: str,
    request: dict[str, Any],
    limits: Limits,
    visitor: str,
    charge: bool,
    kind: str,
    model: _ModelKey | None,
) -> _Flight:
    """The flight computing ``key`` (a new one, charged to ``visitor``'s ``kind`` when
    ``charge``, if none is), with the caller attached."""
    with _flights_lock:
        flight = _flights.get(key)
        if flight is None:
            if charge:
                budgets.spend(visitor, kind, limits)
            flight = _Flight(key, label, request, limits, visitor, charge, kind, model)
            _flights[key] = flight
            threading.Thread(target=flight.fly, name="headforms-flight", daemon=True).start()
        flight.attach()
    return flight


def _result(flight: _Flight, stored: Callable[[], Any]) -> Any:
    """The stored result of a finished flight, or its outcome as one line."""
    outcome = flight.outcome or ["failed", "no outcome"]
    kind, what, limits = outcome[0], flight.label, flight.limits
    stopped = "it was stopped and nothing was cached"
    if kind == "done":
        hit = stored()
        if hit is None:
            raise LimitError(
                f"{what} finished but its result is not in the server's cache (the model "
                "changed meanwhile, or the cache is full); try again"
            )
        return hit
    if kind == "busy":
        raise LimitError(str(outcome[1]))
    if kind == "error":
        cls = getattr(errors, str(outcome[1]), HeadformsError)
        if not (isinstance(cls, type) and issubclass(cls, HeadformsError)):
            cls = HeadformsError
        raise cls(str(outcome[2]))
    if kind == "memory":
        raise LimitError(
            f"{what} needed more memory than this server's limit of "
            f"{human_bytes(limits.memory)} per analysis ({MEMORY_ENV}); {stopped}"
        )
    if kind == "signal":
        raise LimitError(
            f"{what} stopped unexpectedly ({outcome[1]}), perhaps at this server's memory limit "
            f"of {human_bytes(limits.memory)} per analysis ({MEMORY_ENV}); nothing was cached"
        )
    if kind in ("time", "cpu"):
        raise LimitError(
            f"{what} took longer than this server's limit of {limits.seconds:g} s per analysis "
            f"({SECONDS_ENV}); {stopped}"
        )
    if kind in ("cancelled", "abandoned"):
        raise LimitError(f"{what} was cancelled; nothing was cached")
    raise LimitError(
        f"{what} failed with an internal error ({outcome[1]}); the server's log has the details; "
        "nothing was cached"
    )


# ---------------------------------------------------------------------------------------------
# The worker process


def _apply_limits(memory: int, nice: int) -> None:
    """Cap this process's memory for its whole life (the kernel enforces it); lower its
    priority."""
    import resource

    os.nice(nice)  # within the server's session: below the server, even under autogroup
    resource.setrlimit(resource.RLIMIT_DATA, (int(memory), int(memory)))


def _limit_cpu(cpu_seconds: float, last: bool) -> None:
    """Allow the next task ``cpu_seconds`` of CPU time from now (the kernel stops the process
    past them: SIGXCPU); ``last``: no task follows, so the hard limit comes down too."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + max(1.0, cpu_seconds))
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5 if last else hard))


def _watch_parent(parent: int) -> None:
    """Exit if the server that started this worker goes away (nobody would read the result)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def _out_of_memory(exc: BaseException | None) -> bool:
    """Whether an exception (or one it came from) means an allocation failed."""
    seen = 0
    while exc is not None and seen < 20:
        text = str(exc).lower()
        if (
            isinstance(exc, MemoryError)
            or (isinstance(exc, OSError) and exc.errno == 12)  # ENOMEM
            or "allocate memory" in text
            or "out of memory" in text
            or "can't start new thread" in text  # its stack could not be mapped
        ):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def worker_main() -> None:
    """Run the tasks asked on stdin (a setup line, then one task per line; a worker that is not
    kept gets one); report on the inherited pipe (one JSON per line, an outcome per task)."""
    setup = json.loads(sys.stdin.readline())
    out = os.fdopen(int(setup["fd"]), "w", buffering=1)
    _watch_parent(int(setup["parent"]))
    keep = bool(setup.get("keep"))

    def send(*message: Any) -> None:
        out.write(json.dumps(message) + "\n")

    try:
        _apply_limits(setup["memory"], setup["nice"])
    except BaseException as exc:
        send("failed", type(exc).__name__)
        return
    for line in sys.stdin:
        _limit_cpu(setup["cpu_seconds"], last=not keep)
        if not _serve(json.loads(line), send) or not keep:
            break
    out.flush()


def _serve(task: dict[str, Any], send: Callable[..., None]) -> bool:
    """Run one task and send its outcome; whether the process is still fit for another (a
    failed allocation or an unexpected error leave it in an unknown state)."""
    try:
        if task["task"] == "baseline":
            _baseline_task(task, send)
        elif task["task"] == "behaviour":
            _behaviour_task(task, send)
        else:
            _analysis_task(task, send)
        if task.get("hub_repo"):  # it may have downloaded: keep the hub cache in bounds
            from ..sources.hub import evict_hub_cache

            evict_hub_cache(settings().hub_cache_bytes, keep=task["hub_repo"])
        return True
    except BaseException as exc:  # every outcome is one line for the server
        if _out_of_memory(exc):
            send("memory")
        elif isinstance(exc, HeadformsError):
            send("error", type(exc).__name__, str(exc)[:2000])
            return True
        else:
            traceback.print_exc()  # the server's log; the visitor gets one line
            send("failed", type(exc).__name__)
        return False


def _baseline_task(task: dict[str, Any], send: Callable[..., None]) -> None:
    from ..architectures import Shapes
    from ..baseline import gaussian_baseline

    send("progress", 0, 1, "Gaussian baseline of the same shapes")
    gaussian_baseline(Shapes(**task["shapes"]))
    send("done")


def _analysis_task(task: dict[str, Any], send: Callable[..., None]) -> None:
    """Run an analysis, or a sweep over RoPE positions, of a model located by the server."""
    from .. import engine
    from ..options import AnalysisOptions, SweepOptions
    from ..sources import Located

    located = Located.from_dict(task["located"])  # by the server, under its policy: as it is

    def progress(done: int, total: int, text: str) -> None:
        send("progress", done, total, text)

    if task["task"] == "sweep":
        options = SweepOptions.from_dict(task["options"])
        result = engine.sweep(located, options=options, progress=progress)
    else:
        result = engine.analyze(
            located, options=AnalysisOptions.from_dict(task["options"]), progress=progress
        )
    send("done", result.card.fingerprint)


def _behaviour_task(task: dict[str, Any], send: Callable[..., None]) -> None:
    """Run the forward pass asked for (the model stays loaded for the next) and store it."""
    from .. import behaviour
    from ..sources import Located

    located = Located.from_dict(task["located"])  # located by the server: opened as it is

    def report(message: str) -> None:
        send("progress", 0, 1, message)

    if task["prompt"] is not None:
        behaviour.attention(located, task["prompt"], progress=report)
    else:
        length, seed = task["probe"]
        behaviour.head_type_scores(located, probe_length=length, seed=seed, progress=report)
    send("done")
