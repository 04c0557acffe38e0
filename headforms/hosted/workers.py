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

A request is a *flight*: concurrent requests for one computation share it. It first waits for
a slot (:mod:`.slots`: fair turns between visitors, a bounded wait), then its worker runs. The
server kills the worker's process group when it passes its wall-clock limit, when every
visitor waiting for it has left (after :data:`ABANDON_GRACE` seconds, so that a rerun of the
same page picks it up again), or when it is cancelled. The engine stores a result only once it
is complete, so a stopped analysis leaves nothing in the cache; a finished one is read back
from the store by the server (a cache hit: no heavy import). The visitor who started it is
charged one new computation (:mod:`.budgets`), given back if it never ran.

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
from ..errors import HeadformsError, LimitError
from ..settings import MEMORY_ENV, SECONDS_ENV, human_bytes, settings
from .budgets import Budgets
from .limits import Limits
from .policy import Policy
from .slots import server_slots, slots
from .visitors import LOCAL

if TYPE_CHECKING:
    from ..architectures import Shapes
    from ..baseline import Baseline
    from ..options import AnalysisOptions, SweepOptions
    from ..results import ModelAnalysis
    from ..sources import Located
    from ..sweeps import PositionSweep

T = TypeVar("T")

ABANDON_GRACE = 3.0
"""Seconds a flight keeps going with nobody waiting (a rerun re-attaches within this)."""
POLL = 0.1
"""Seconds between a waiter's checks (its ``check`` callback, the outcome)."""
MAX_LINE = 64 * 1024
"""Longest message line a worker may send."""

Progress = Callable[[int, int, str], None]

budgets = Budgets()
"""The per-visitor budgets of this server process."""


def running() -> int:
    """Contained computations running now in this server process (workers and in-server)."""
    return slots.running() + server_slots.running()


# ---------------------------------------------------------------------------------------------
# Flights: one worker per computation, shared by everyone waiting for it


class _Flight:
    """One computation: its turn, then its worker process, and what its waiters need
    (progress, outcome, who is still waiting)."""

    def __init__(
        self,
        key: tuple,
        label: str,
        request: dict[str, Any],
        limits: Limits,
        visitor: str,
        charged: bool = True,
    ) -> None:
        self.key = key
        self.label = label
        self.request = request
        self.limits = limits
        self.visitor = visitor
        self.charged = charged
        self.proc: subprocess.Popen | None = None
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
        return None if self.proc is None else self.proc.pid

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
            self.proc, reader = _start_worker(self.request, self.limits)
        except BaseException as exc:
            slots.release(self.visitor, 0.0)
            self._finish(["failed", type(exc).__name__])
            return
        try:
            self._monitor(reader)
        finally:
            slots.release(self.visitor, time.monotonic() - self.started)
            self.done.set()

    def _refund(self) -> None:
        """Give its visitor back the new analysis it was charged (it never ran)."""
        if self.charged:
            budgets.refund(self.visitor, "analyses")

    def _finish(self, outcome: list[Any]) -> None:
        """End a flight that never ran a worker (the flight's thread)."""
        self.outcome = outcome
        with _flights_lock:
            if _flights.get(self.key) is self:
                del _flights[self.key]
        self.done.set()

    def _waiting(self, ahead: int, taken: int) -> None:
        queue = f"{ahead} ahead" if ahead else "next"
        self.progress = (0, 1, f"waiting for a worker ({taken} busy; {queue})")

    def _raise_if_stopped(self) -> None:
        stop = self._stop_reason()
        if stop is not None:
            raise _Stopped(stop)

    def _monitor(self, reader: int) -> None:
        buffer = b""
        poller = select.poll()  # not select.select: a busy server's descriptors pass 1024
        poller.register(reader, select.POLLIN | select.POLLHUP)
        try:
            while self.outcome is None:
                stop = self._stop_reason()
                if stop is not None:
                    self.outcome = stop
                    break
                if not poller.poll(POLL * 1000):
                    continue
                chunk = os.read(reader, 65536)
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
            assert self.proc is not None
            if self.outcome and self.outcome[0] == "done":  # let it exit on its own first
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=2)
            _kill(self.proc)
            os.close(reader)
            with _flights_lock:
                if _flights.get(self.key) is self:
                    del _flights[self.key]

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
            self.outcome = message
        else:
            self.outcome = ["failed", "an unknown message"]

    def _exit_outcome(self) -> list[Any]:
        assert self.proc is not None
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
        return self.started is not None and time.monotonic() - self.started >= self.limits.seconds


class _Stopped(Exception):
    """A flight was stopped while it waited for its turn."""

    def __init__(self, outcome: list[Any]) -> None:
        super().__init__(outcome[0])
        self.outcome = outcome


_SIGNALS = {int(s) for s in signal.Signals}
_flights: dict[tuple, _Flight] = {}
_flights_lock = threading.Lock()


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (it leads its own: anything it started goes
    too, even after it exited) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _start_worker(request: dict[str, Any], limits: Limits) -> tuple[subprocess.Popen, int]:
    """A new worker process for ``request`` and the read end of its message pipe."""
    reader, writer = os.pipe()
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
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
) -> _Flight:
    """Wait, attached, for the flight computing ``key`` (started if none is) to end."""
    limits = limits or Limits.from_env()
    flight = _join(key, label, request, limits, visitor, charge)
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
    key: tuple, label: str, request: dict[str, Any], limits: Limits, visitor: str, charge: bool
) -> _Flight:
    """The flight computing ``key`` (a new one, charged to ``visitor`` when ``charge``, if none
    is), with the caller attached."""
    with _flights_lock:
        flight = _flights.get(key)
        if flight is None:
            if charge:
                budgets.spend(visitor, "analyses", limits)
            flight = _Flight(key, label, request, limits, visitor, charge)
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


def _apply_limits(memory: int, cpu_seconds: float, nice: int) -> None:
    """Cap this process's memory and CPU time (the kernel enforces both); lower its priority."""
    import resource

    os.nice(nice)  # within the server's session: below the server, even under autogroup
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


def worker_main() -> None:
    """Run one computation as asked on stdin; report on the inherited pipe (one JSON per line)."""
    request = json.loads(sys.stdin.readline())
    out = os.fdopen(int(request["fd"]), "w", buffering=1)
    _watch_parent(int(request["parent"]))

    def send(*message: Any) -> None:
        out.write(json.dumps(message) + "\n")

    try:
        _apply_limits(request["memory"], request["cpu_seconds"], request["nice"])
        if request["task"] == "baseline":
            from ..architectures import Shapes
            from ..baseline import gaussian_baseline

            send("progress", 0, 1, "Gaussian baseline of the same shapes")
            gaussian_baseline(Shapes(**request["shapes"]))
            send("done")
            return
        from .. import engine
        from ..options import AnalysisOptions, SweepOptions
        from ..sources import Located

        located = Located.from_dict(request["located"])  # by the server, under its policy

        def progress(done: int, total: int, text: str) -> None:
            send("progress", done, total, text)

        if request["task"] == "sweep":
            options = SweepOptions.from_dict(request["options"])
            result = engine.sweep(located, options=options, progress=progress)
        else:
            options = AnalysisOptions.from_dict(request["options"])
            result = engine.analyze(located, options=options, progress=progress)
        if request.get("hub_repo"):  # it may have downloaded: keep the hub cache in bounds
            from ..sources.hub import evict_hub_cache

            evict_hub_cache(settings().hub_cache_bytes, keep=request["hub_repo"])
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
