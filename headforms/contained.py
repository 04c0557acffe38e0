"""Contained analyses for a shared (hosted) server: each new analysis in a worker process, within
limits, stopped when it passes them or when nobody waits for it any more.

:func:`analyze` answers from the result store when it can (no worker, no weights opened).
Otherwise it runs :func:`headforms.engine.analyze` in a fresh Python process
(``python -m headforms.contained``: a new interpreter, never a fork of the threaded server) whose
memory (``RLIMIT_DATA``: every private writable mapping, so heap and numpy arrays but not the
read-only memory maps of safetensors and GGUF files; torch maps a ``.bin`` file privately, so
its size, bounded by the size check, is added to the limit) and CPU time (``RLIMIT_CPU``) are
capped by the kernel.
The server kills the worker's process group when it passes its wall-clock limit, when every
visitor waiting for it has left (after :data:`ABANDON_GRACE` seconds, so that a rerun of the
same page picks it up again), or when it is cancelled. The engine stores a result only once it
is complete, so a stopped analysis leaves nothing in the cache; a finished one is read back
from the store by the server (a cache hit: no heavy import).

Concurrent requests for one analysis share one worker. At most ``HEADFORMS_ANALYSIS_CONCURRENT``
workers (and other contained computations, :func:`slot`) run at once on a server; past that a
new one is refused at once with a one-line :class:`~headforms.errors.LimitError`, never queued.
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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import errors
from .errors import HeadformsError, LimitError
from .settings import (
    CONCURRENT_ENV,
    DEFAULT_CONCURRENT,
    DEFAULT_MEMORY,
    DEFAULT_NICE,
    DEFAULT_SECONDS,
    DEFAULT_SESSION_ANALYSES,
    DEFAULT_SESSION_SAMPLES,
    MEMORY_ENV,
    SECONDS_ENV,
    human_bytes,
    settings,
)

if TYPE_CHECKING:
    from .options import AnalysisOptions
    from .sources import Located

ABANDON_GRACE = 3.0
"""Seconds a worker keeps running with nobody waiting (a rerun re-attaches within this)."""
POLL = 0.1
"""Seconds between a waiter's checks (its ``check`` callback, the outcome)."""
MAX_LINE = 64 * 1024
"""Longest message line a worker may send."""


@dataclass(frozen=True)
class Limits:
    """The limits of contained work, from the settings (see the README's hosted section)."""

    memory: int = DEFAULT_MEMORY
    seconds: float = DEFAULT_SECONDS
    concurrent: int = DEFAULT_CONCURRENT
    session_analyses: int = DEFAULT_SESSION_ANALYSES
    session_samples: int = DEFAULT_SESSION_SAMPLES
    nice: int = DEFAULT_NICE

    @classmethod
    def from_env(cls) -> Limits:
        """The ``HEADFORMS_ANALYSIS_*`` and ``HEADFORMS_SESSION_*`` settings."""
        values = settings()
        return cls(
            memory=values.analysis_memory,
            seconds=values.analysis_seconds,
            concurrent=values.analysis_concurrent,
            session_analyses=values.session_analyses,
            session_samples=values.session_samples,
            nice=values.analysis_nice,
        )


# ---------------------------------------------------------------------------------------------
# Server-wide slots


class _Slots:
    """Counts contained computations running in this process against the configured limit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0

    def try_acquire(self, limit: int) -> bool:
        with self._lock:
            if self.running >= limit:
                return False
            self.running += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


_slots = _Slots()


def running() -> int:
    """Contained computations running now in this server process."""
    return _slots.running


def _busy(limits: Limits) -> LimitError:
    return LimitError(
        f"the server is busy: {_slots.running} analyses are running (at most "
        f"{limits.concurrent} at once, {CONCURRENT_ENV}); try again in a moment"
    )


def _acquire(limits: Limits) -> None:
    if not _slots.try_acquire(limits.concurrent):
        raise _busy(limits)


@contextlib.contextmanager
def slot(limits: Limits | None = None) -> Iterator[None]:
    """Hold one of the server's slots for an in-process computation (e.g. a Theorem 5 sampling);
    refused at once with a :class:`LimitError` when all are taken."""
    limits = limits or Limits.from_env()
    _acquire(limits)
    try:
        yield
    finally:
        _slots.release()


# ---------------------------------------------------------------------------------------------
# Flights: one worker per analysis, shared by everyone waiting for it

Progress = Callable[[int, int, str], None]


class _Flight:
    """One worker process and what its waiters need: progress, outcome, who is still waiting."""

    def __init__(self, key: tuple, label: str, proc: subprocess.Popen, reader: int, limits: Limits):
        self.key = key
        self.label = label
        self.proc = proc
        self.limits = limits
        self.started = time.monotonic()
        self.deadline = self.started + limits.seconds
        self.progress: tuple[int, int, str] = (0, 1, f"starting {label}")
        self.outcome: list[Any] | None = None
        self.done = threading.Event()
        self._reader = reader
        self._lock = threading.Lock()
        self._waiters = 0
        self._alone_since: float | None = time.monotonic()
        self._cancelled = False

    @property
    def pid(self) -> int:
        """The worker's process id (its process group id too)."""
        return self.proc.pid

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
        """Stop the worker now (its waiters get a one-line LimitError)."""
        self._cancelled = True

    def _abandoned(self) -> bool:
        with self._lock:
            alone = self._alone_since
        return alone is not None and time.monotonic() - alone > ABANDON_GRACE

    def monitor(self) -> None:
        """Relay the worker's messages until it finishes or must be stopped; then clean up."""
        buffer = b""
        poller = select.poll()  # not select.select: a busy server's descriptors pass 1024
        poller.register(self._reader, select.POLLIN | select.POLLHUP)
        try:
            while self.outcome is None:
                stop = self._stop_reason()
                if stop is not None:
                    self.outcome = stop
                    break
                if not poller.poll(POLL * 1000):
                    continue
                chunk = os.read(self._reader, 65536)
                if not chunk:  # the worker closed its end: it exited (or died)
                    self.outcome = self._exit_outcome()
                    break
                buffer += chunk
                while b"\n" in buffer and self.outcome is None:
                    line, buffer = buffer.split(b"\n", 1)
                    self._message(line)
                if len(buffer) > MAX_LINE:
                    self.outcome = ["failed", "an oversized message"]
        except Exception as exc:  # never leave waiters hanging on a monitor bug
            self.outcome = ["failed", type(exc).__name__]
        finally:
            if self.outcome and self.outcome[0] == "done":  # let it exit on its own first
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=2)
            _kill(self.proc)
            os.close(self._reader)
            _slots.release()
            with _flights_lock:
                if _flights.get(self.key) is self:
                    del _flights[self.key]
            self.done.set()

    def _stop_reason(self) -> list[Any] | None:
        if self._cancelled:
            return ["cancelled"]
        if time.monotonic() > self.deadline:
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
            self.outcome = message
        else:
            self.outcome = ["failed", "an unknown message"]

    def _exit_outcome(self) -> list[Any]:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return ["failed", "a worker that closed its pipe"]
        if code == -signal.SIGXCPU or (code == -signal.SIGKILL and self._cpu_exhausted()):
            return ["cpu"]
        if code < 0:
            return ["signal", signal.Signals(-code).name if -code in _SIGNALS else str(-code)]
        return ["failed", f"exit status {code}"]

    def _cpu_exhausted(self) -> bool:
        return time.monotonic() - self.started >= self.limits.seconds


_SIGNALS = {int(s) for s in signal.Signals}
_flights: dict[tuple, _Flight] = {}
_flights_lock = threading.Lock()


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (it leads its own session: anything it started
    goes too, even after it exited) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _start_worker(request: dict[str, Any], limits: Limits) -> tuple[subprocess.Popen, int]:
    """A new worker process for ``request`` and the read end of its message pipe."""
    reader, writer = os.pipe()
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    request = {
        **request,
        "fd": writer,
        "memory": limits.memory + int(request.get("mapped_bytes", 0)),
        "cpu_seconds": limits.seconds * _threads(),
        "nice": limits.nice,
        "parent": os.getpid(),
    }
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headforms.contained"],
            stdin=subprocess.PIPE,
            pass_fds=(writer,),
            env=env,
            start_new_session=True,  # its own process group: killed whole
        )
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.close()
    except OSError:  # it died at once; the monitor reports how
        pass
    return proc, reader


def _threads() -> int:
    return settings().threads


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
    check: Callable[[], None] | None = None,
    on_new: Callable[[], None] | None = None,
    limits: Limits | None = None,
) -> Any:
    """:func:`headforms.engine.analyze` within the limits (a :class:`ModelAnalysis`, with its
    Gaussian baseline stored).

    ``spec``: a spec's text (located here under the policy in force) or a located model, which
    the worker opens as it is. ``options``: as for the engine (else made from
    ``rope_position``, ``fold_qk_norm`` and ``spectra``). ``progress(done, total, message)``
    relays the worker's progress. ``check()`` is called every :data:`POLL` seconds while
    waiting: it may raise to stop waiting (a Streamlit rerun or stop; the worker then runs on
    for :data:`ABANDON_GRACE` seconds in case someone comes back). ``on_new()`` is called just
    before a new worker is started (not when the result is stored or already being computed):
    it may raise to refuse (a session's budget).
    """
    from . import engine
    from .options import AnalysisOptions
    from .sources import Located, locate

    if options is None:
        options = AnalysisOptions(rope_position, fold_qk_norm, tuple(spectra))
    located = spec if isinstance(spec, Located) else locate(spec, engine.policy_in_force())

    def stored() -> Any:
        return engine.stored_analysis(located, options, baseline=True)

    hit = stored()
    if hit is not None:
        if progress:
            progress(hit.card.n_layers, hit.card.n_layers, "loaded from cache")
        return hit
    request = {
        "located": located.as_dict(),
        "options": options.as_dict(),
        # torch maps a .bin file privately and writably: RLIMIT_DATA counts it whole
        "mapped_bytes": sum(f.size or 0 for f in located.weights) if located.format == "bin" else 0,
    }
    key = ("analysis", located.fingerprint, options)
    flight = _run(key, f"the analysis of {located.spec}", request, limits, progress, check, on_new)
    return _result(flight, stored)


def _run(
    key: tuple,
    label: str,
    request: dict[str, Any],
    limits: Limits | None,
    progress: Progress | None,
    check: Callable[[], None] | None,
    on_new: Callable[[], None] | None,
) -> _Flight:
    """Wait, attached, for the flight computing ``key`` (started if none is) to end."""
    limits = limits or Limits.from_env()
    flight = _join(key, label, request, limits, on_new)
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
    on_new: Callable[[], None] | None,
) -> _Flight:
    """The flight computing ``key`` (a new worker if none is), with the caller attached."""
    with _flights_lock:
        flight = _flights.get(key)
        if flight is None:
            if on_new:
                on_new()
            _acquire(limits)
            try:
                proc, reader = _start_worker(request, limits)
            except BaseException:
                _slots.release()
                raise
            flight = _Flight(key, label, proc, reader, limits)
            _flights[key] = flight
            threading.Thread(target=flight.monitor, name="headforms-worker", daemon=True).start()
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


def cancel_all() -> int:
    """Stop every running worker of this process (their waiters get one line); the count."""
    with _flights_lock:
        flights = list(_flights.values())
    for flight in flights:
        flight.cancel()
    return len(flights)


def worker_pids() -> list[int]:
    """Process ids of the workers running now (for tests and the benchmark)."""
    with _flights_lock:
        return [f.pid for f in _flights.values()]


# ---------------------------------------------------------------------------------------------
# The worker process


def _apply_limits(memory: int, cpu_seconds: float, nice: int) -> None:
    """Cap this process's memory and CPU time (the kernel enforces both); lower its priority."""
    import resource

    os.nice(nice)
    resource.setrlimit(resource.RLIMIT_DATA, (int(memory), int(memory)))
    cpu = max(1, math.ceil(cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))


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


def _worker_main() -> None:
    """Run one analysis as asked on stdin; report on the inherited pipe (one JSON per line)."""
    request = json.loads(sys.stdin.readline())
    out = os.fdopen(int(request["fd"]), "w", buffering=1)
    _watch_parent(int(request["parent"]))

    def send(*message: Any) -> None:
        out.write(json.dumps(message) + "\n")

    try:
        _apply_limits(request["memory"], request["cpu_seconds"], request["nice"])
        from . import engine
        from .errors import UnavailableDataError
        from .options import AnalysisOptions
        from .sources import Located

        located = Located.from_dict(request["located"], engine.policy_in_force())
        result = engine.analyze(
            located,
            options=AnalysisOptions.from_dict(request["options"]),
            progress=lambda done, total, text: send("progress", done, total, text),
        )
        with contextlib.suppress(UnavailableDataError):
            result.baseline  # noqa: B018 - computed and stored here, not in the server
        send("done", result.card.fingerprint)
    except BaseException as exc:  # every outcome is one line for the server
        if _out_of_memory(exc):
            send("memory")
        elif isinstance(exc, HeadformsError):
            send("error", type(exc).__name__, str(exc)[:2000])
        else:
            traceback.print_exc()  # the server's log; the visitor gets one line
            send("failed", type(exc).__name__)
    finally:
        out.flush()


if __name__ == "__main__":
    _worker_main()
