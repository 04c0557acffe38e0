"""The command line in hosted mode: each command (``serve`` aside) runs in a child process within
the limits of a worker, so that a hostile file named on a shared machine's command line costs
what it would cost the server.

The child (``python -m headforms.cli.contained ARGS``: the command line without this step) caps
its own memory (``RLIMIT_DATA`` at ``HEADFORMS_ANALYSIS_MEMORY``, plus
``HEADFORMS_MAX_MODEL_BYTES`` for a ``.bin`` checkpoint torch maps privately) and CPU time
(``HEADFORMS_ANALYSIS_SECONDS`` x its threads) and lowers its priority
(``HEADFORMS_ANALYSIS_NICE``), as a worker does (:mod:`.child`); its output goes straight to the
terminal; afterwards the hub cache is evicted to ``HEADFORMS_HUB_CACHE_BYTES``, as after a
worker's task. The parent stops its process group past ``HEADFORMS_ANALYSIS_SECONDS`` of
wall-clock time. Every stop is one line on stderr, exit status 2: past the time, out of memory,
stopped by a signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import HeadformsError
from ..settings import MEMORY_ENV, SECONDS_ENV, human_bytes, settings
from .limits import Limits
from .process import WORKER_MALLOC

_SIGNALS = {int(s) for s in signal.Signals}


def run_contained(argv: list[str]) -> int:
    """Run the command line ``argv`` in a contained child (see the module doc); its exit
    status, or 2 after one line when a limit stopped it."""
    try:
        limits = Limits.from_env()
    except HeadformsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])  # this headforms, wherever it runs
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env.update(WORKER_MALLOC)
    child = subprocess.Popen(  # headforms.cli.contained: the command line within the limits
        [sys.executable, "-m", "headforms.cli.contained", *argv], env=env, process_group=0
    )
    try:
        code = child.wait(timeout=limits.seconds)
    except subprocess.TimeoutExpired:
        _stop(child)
        return _fail(_too_long(limits))
    except KeyboardInterrupt:
        _stop(child)
        print("interrupted", file=sys.stderr)
        return 130
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return _fail(_too_long(limits))
    if code < 0:
        name = signal.Signals(-code).name if -code in _SIGNALS else str(-code)
        return _fail(
            f"the command stopped unexpectedly ({name}), perhaps at this server's memory limit of "
            f"{human_bytes(limits.memory)} ({MEMORY_ENV})"
        )
    return code


def contain_this_process() -> Limits:
    """In the contained child: cap its memory and CPU time, lower its priority (see the module
    doc); the limits applied."""
    from .child import apply_limits, limit_cpu

    limits = Limits.from_env()
    apply_limits(limits.memory + limits.max_model_bytes, limits.nice)
    limit_cpu(limits.seconds * settings().threads, last=True)
    return limits


def out_of_memory_line(limits: Limits) -> str:
    """What the command line says when a contained command ran out of memory."""
    return (
        f"the command needed more memory than this server's limit of "
        f"{human_bytes(limits.memory)} ({MEMORY_ENV}); it was stopped"
    )


def bound_hub_cache(limits: Limits) -> None:
    """After a contained command: the hub cache within its bound (what it downloaded stays
    last: the least recently used go first)."""
    from ..sources.hub import evict_hub_cache

    evict_hub_cache(limits.hub_cache_bytes)


def _too_long(limits: Limits) -> str:
    return (
        f"the command took longer than this server's limit of {limits.seconds:g} s "
        f"({SECONDS_ENV}); it was stopped"
    )


def _fail(line: str) -> int:
    print(f"error: {line}", file=sys.stderr)
    return 2


def _stop(child: subprocess.Popen) -> None:
    """Kill the child's whole process group and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=10)
