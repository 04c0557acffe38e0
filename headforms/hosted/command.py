"""The command line in hosted mode: each command (``serve`` aside) runs in a child process within
the limits of a worker, so that a hostile file named on a shared machine's command line costs
what it would cost the server.

The child (``python -m headforms.hosted.command ARGS``: the command line without this step) caps
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

from ..errors import HeadformsError
from ..settings import MEMORY_ENV, SECONDS_ENV, human_bytes
from .limits import Limits

_SIGNALS = {int(s) for s in signal.Signals}


def run_contained(argv: list[str]) -> int:
    """Run the command line ``argv`` in a contained child (see the module doc); its exit
    status, or 2 after one line when a limit stopped it."""
    try:
        limits = Limits.from_env()
    except HeadformsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    child = subprocess.Popen(
        [sys.executable, "-m", "headforms.hosted.command", *argv], process_group=0
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


def main(argv: list[str]) -> int:
    """The contained child: the limits on itself, then the command; running out of memory is
    one line."""
    from ..cli import build_parser, run
    from ..settings import settings
    from .child import apply_limits, limit_cpu, out_of_memory

    limits = Limits.from_env()
    apply_limits(limits.memory + limits.max_model_bytes, limits.nice)
    limit_cpu(limits.seconds * settings().threads, last=True)
    try:
        code = run(build_parser().parse_args(argv))
    except BaseException as exc:
        if not out_of_memory(exc):
            raise
        return _fail(
            f"the command needed more memory than this server's limit of "
            f"{human_bytes(limits.memory)} ({MEMORY_ENV}); it was stopped"
        )
    from ..sources.hub import evict_hub_cache

    evict_hub_cache(limits.hub_cache_bytes)  # what it downloaded: the least recently used go
    return code


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
