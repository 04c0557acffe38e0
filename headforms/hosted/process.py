"""One worker process as the server holds it: started within its limits, asked tasks on its
stdin, read on a pipe of its own, killed with its whole process group.

The worker is a fresh Python interpreter (``python -m headforms.hosted``, :mod:`.child`), never
a fork of the threaded server; it leads its own process group (killed whole, whatever it
started) in the server's session (where the kernel groups sessions for scheduling, autogroup,
the worker then shares the server's group, below the server by its niceness, and the two
together get the group's fair share of a machine run by others too: benchmarks/bench_nice.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from ..settings import THREADS_ENV
from .limits import Limits
from .messages import WorkerSetup
from .tasks import Task

MAX_LINE = 64 * 1024
"""Longest message line a worker may send."""


class Oversized(Exception):
    """A worker sent a message line longer than :data:`MAX_LINE`."""


class WorkerProcess:
    """One worker process: the pipe it is asked on (its stdin: a setup line, then one task per
    line) and the pipe it answers on (progress, then one outcome per task)."""

    def __init__(self, limits: Limits, mapped_bytes: int = 0, keep: bool = False) -> None:
        self.proc, self._reader = start_worker(limits, mapped_bytes, keep)
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

    def ask(self, task: Task) -> None:
        """Send one task (a worker that is not kept is then told there is no other)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(task.encode())
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
            raise Oversized("an oversized message")
        return lines

    def idle(self) -> bool:
        """Whether nothing is left unread (a kept worker between tasks)."""
        return not self._buffer

    def kill(self) -> None:
        """Stop the process group and close the pipes (idempotent)."""
        if self._closed:
            return
        self._closed = True
        kill_group(self.proc)
        with contextlib.suppress(OSError):
            os.close(self._reader)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's whole process group (it leads its own: anything it started goes
    too, even after it exited) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
"""glibc's allocator in a contained process: blocks of 128 KiB and more are mapped, and unmapped
when freed. By default glibc raises that threshold as large blocks are freed and keeps them in its
heap, so a process's data size (what ``RLIMIT_DATA`` caps) stays at a peak it no longer holds:
SmolLM2's whole-model flip with 8 controls peaked at 1.77-1.94 GiB of VmData without it and at
1.46 GiB with it, in the same CPU time (benchmarks/README.md)."""


def start_worker(
    limits: Limits, mapped_bytes: int = 0, keep: bool = False
) -> tuple[subprocess.Popen, int]:
    """A new worker process within ``limits`` (its :class:`WorkerSetup` sent; ``keep``: it
    serves task after task until its stdin closes) and the read end of its message pipe.
    ``mapped_bytes``: a ``.bin`` checkpoint's size, which torch maps privately and writably, so
    ``RLIMIT_DATA`` counts it whole: added to the memory limit."""
    reader, writer = os.pipe()
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    threads = limits.worker_threads
    env[THREADS_ENV] = str(threads)  # the workers together never ask for more threads than cores
    env.update(WORKER_MALLOC)
    setup = WorkerSetup(
        fd=writer,
        memory=limits.memory + int(mapped_bytes),
        cpu_seconds=limits.seconds * threads,
        nice=limits.nice,
        parent=os.getpid(),
        keep=keep,
        hub_cache_bytes=limits.hub_cache_bytes,
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "headforms.hosted"],
            stdin=subprocess.PIPE,
            pass_fds=(writer,),
            env=env,
            process_group=0,  # its own process group, in the server's session (module doc)
        )
    except BaseException:
        os.close(reader)
        raise
    finally:
        os.close(writer)
    assert proc.stdin is not None
    try:
        proc.stdin.write(json.dumps(setup.as_dict()).encode() + b"\n")
        proc.stdin.flush()
    except OSError:  # it died at once; the monitor reports how
        pass
    return proc, reader
