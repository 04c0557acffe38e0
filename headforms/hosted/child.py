"""The worker process (``python -m headforms.hosted``, started by the server, never by hand).

It reads a :class:`.WorkerSetup` line, caps its own memory (``RLIMIT_DATA``: every private
writable mapping, so heap and numpy arrays but not the read-only memory maps of safetensors and
GGUF files) for its whole life and lowers its priority, then runs the tasks asked on its stdin
(:mod:`.tasks`, one per line; a worker that is not kept gets one), each within its CPU time
(``RLIMIT_CPU``, renewed per task), and answers on its pipe: progress, then one outcome per task
(:class:`.WorkerMessage`). Every outcome is one line: a task's
:class:`~headforms.errors.HeadformsError` as it is, a failed allocation as ``memory``, anything
else by its class name (its traceback goes to the server's log). After a task of a hub model
the hub cache is evicted to its bound. It exits when the server that started it goes.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable

from ..errors import HeadformsError
from .messages import MessageKind, WorkerMessage, WorkerSetup
from .tasks import Task, decode_task

Send = Callable[[WorkerMessage], None]


def main() -> None:
    """Run the tasks asked on stdin (see the module doc)."""
    setup = WorkerSetup.from_dict(json.loads(sys.stdin.readline()))
    out = os.fdopen(setup.fd, "wb", buffering=0)
    _watch_parent(setup.parent)

    def send(message: WorkerMessage) -> None:
        out.write(message.encode())

    try:
        apply_limits(setup.memory, setup.nice)
    except BaseException as exc:
        send(WorkerMessage(MessageKind.FAILED, error=type(exc).__name__))
        return
    for line in sys.stdin:
        limit_cpu(setup.cpu_seconds, last=not setup.keep)
        if not serve(line, send, setup.hub_cache_bytes) or not setup.keep:
            break
    out.flush()


def serve(line: str, send: Send, hub_cache_bytes: int) -> bool:
    """Run the task of one line and send its outcome; whether the process is still fit for
    another (a failed allocation or an unexpected error leave it in an unknown state)."""

    def report(done: int, total: int, text: str) -> None:
        send(WorkerMessage(MessageKind.PROGRESS, done, total, text))

    try:
        task = decode_task(line)
        task.run(report)
        _bound_hub_cache(task, hub_cache_bytes)
        send(WorkerMessage(MessageKind.DONE))
        return True
    except BaseException as exc:  # every outcome is one line for the server
        if out_of_memory(exc):
            send(WorkerMessage(MessageKind.MEMORY))
        elif isinstance(exc, HeadformsError):
            send(WorkerMessage(MessageKind.ERROR, text=str(exc), error=type(exc).__name__))
            return True
        else:
            traceback.print_exc()  # the server's log; the visitor gets one line
            send(WorkerMessage(MessageKind.FAILED, error=type(exc).__name__))
        return False


def _bound_hub_cache(task: Task, hub_cache_bytes: int) -> None:
    """After a task that may have downloaded, keep the hub cache within its bound."""
    if task.hub_repo:
        from ..sources.hub import evict_hub_cache

        evict_hub_cache(hub_cache_bytes, keep=task.hub_repo)


def apply_limits(memory: int, nice: int) -> None:
    """Cap this process's memory for its whole life (the kernel enforces it); lower its
    priority (within the server's session: below the server, even under autogroup)."""
    import resource

    os.nice(nice)
    resource.setrlimit(resource.RLIMIT_DATA, (int(memory), int(memory)))


def limit_cpu(cpu_seconds: float, last: bool) -> None:
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


def out_of_memory(exc: BaseException | None) -> bool:
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
