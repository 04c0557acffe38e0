"""One computation per key at a time, across threads and processes.

``filelock`` takes an OS lock on ``<cache>/locks/<key>.lock`` (``flock`` on Unix, ``msvcrt`` on
Windows), which the operating system releases if the holder dies: a killed writer never leaves
a stale lock behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from filelock import FileLock

from .location import cache_dir


@contextmanager
def key_lock(key: str) -> Iterator[None]:
    """Hold an exclusive lock for ``key`` (waits while another thread or process holds it)."""
    lock_dir = cache_dir() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    # thread_local=False: the lock object belongs to this call, whatever thread releases it.
    with FileLock(lock_dir / f"{key}.lock", thread_local=False):
        yield
