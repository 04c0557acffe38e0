"""A long-running process's heap (the dashboard's server): C's allocator kept to few arenas,
and the start-up heap kept out of the garbage collector's full passes.

Streamlit collects garbage fully after every script run (``runner.postScriptGC``, on), so that
what a finished run or a closed session leaves in reference cycles (Plotly figures, tables) is
freed at once rather than whenever Python's own generational collection next runs a full pass.
A full pass walks every object the collector tracks: on a server that has imported numpy,
pandas, Plotly, Streamlit and the library (about 290,000 objects) it took 0.1-0.2 s of the
interpreter per run, three runs a visit (benchmarks/README.md, section 8).

Those objects live as long as the server. After the server's first script run has imported the
app's modules, :func:`settle` moves everything alive into the collector's permanent generation
(:func:`gc.freeze`); later passes walk only what sessions made since, so each takes
milliseconds. What the first run holds beyond the modules (its session's state, the default
model's results) is frozen with them: it is kept until the server stops, a bounded once-only
cost.

Only the server arms this (``server.py``, :func:`freeze_after_first_run`): a test process
running the app (Streamlit's ``AppTest``) keeps its heap as it is.

The server also limits C's allocator to :data:`ARENAS` arenas (:func:`limit_arenas`). glibc gives
each thread that contends for the allocator an arena of its own, up to eight per core; a hosted
server receives each forward pass's pattern (tens of MB) on a job thread of its own, and memory
freed inside an arena mostly stays with the process. A prompt flood of 15 patterns grew the
server by 414-563 MiB with the default arenas and by 162 MiB with two (benchmarks/README.md,
section 8). Python code allocates under the interpreter lock, one thread at a time, so two
arenas cost the server little waiting.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os

ARENAS = 2
"""Arenas of C's allocator in the dashboard's server (:func:`limit_arenas`)."""
M_ARENA_MAX = -8
"""``mallopt``'s parameter for the most arenas (glibc's ``malloc.h``)."""

_armed = False
_frozen = False


def freeze_after_first_run() -> None:
    """Arms :func:`settle` in this process (the dashboard's server, at start-up)."""
    global _armed
    _armed = True


def settle() -> None:
    """After a script run (``app.py``): the first time in an armed process, a full collection,
    then every object alive frozen out of later collections; afterwards nothing."""
    global _frozen
    if not _armed or _frozen:
        return
    _frozen = True
    gc.collect()
    gc.freeze()


def frozen() -> bool:
    """Whether :func:`settle` has frozen this process's heap."""
    return _frozen


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most ``arenas`` arenas for C's allocator in this process from now on (glibc's
    ``mallopt``; ``MALLOC_ARENA_MAX`` in the environment, if set, wins). Whether it was set:
    not on another C library."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, arenas) == 1
