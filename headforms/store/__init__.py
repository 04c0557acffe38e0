"""The on-disk result cache: one key function, atomic checksummed entries, one writer per key.

Entries live in a ``diskcache.Cache`` under :func:`cache_dir` (``$HEADFORMS_CACHE_DIR``, default
``cache/`` at the project root). A value is ``sha256 || payload``: diskcache commits the row only
after the value is fully written, and a checksum mismatch on read (a damaged file) is treated
as a miss, so an interrupted or corrupted write is never trusted. ``key_lock`` serialises the
computation of one key across processes (``flock``, released by the kernel if a holder dies).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ENGINE_VERSION = "2"
"""Bump when a change to the engine alters any cached number."""

CACHE_DIR_ENV = "HEADFORMS_CACHE_DIR"


def cache_dir() -> Path:
    """The cache directory (created on first use)."""
    default = Path(__file__).resolve().parents[2] / "cache"
    path = Path(os.environ.get(CACHE_DIR_ENV) or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(fingerprint: str, options: dict[str, Any]) -> str:
    """The one cache key: weight fingerprint + analysis options + engine version."""
    blob = json.dumps(
        {"engine": ENGINE_VERSION, "weights": fingerprint, "options": options}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class ResultCache:
    """Checksummed pickled results in a diskcache store."""

    def __init__(self, directory: Path | None = None):
        import diskcache

        self.directory = Path(directory) if directory else cache_dir() / "results"
        self._store = diskcache.Cache(str(self.directory), size_limit=8 * 2**30)

    def get(self, key: str) -> Any | None:
        """The cached value, or None on a miss or a damaged entry (which is then deleted)."""
        try:
            blob = self._store.get(key, default=None, read=False)
        except Exception:  # an unreadable entry file: recompute
            blob = None
        if blob is None:
            return None
        if not isinstance(blob, bytes) or len(blob) < 32:
            self._store.delete(key)
            return None
        digest, payload = blob[:32], blob[32:]
        if hashlib.sha256(payload).digest() != digest:
            self._store.delete(key)
            return None
        try:
            return pickle.loads(payload)
        except Exception:
            self._store.delete(key)
            return None

    def set(self, key: str, value: Any) -> None:
        """Store a value (atomically: readers see the old state or the whole new entry)."""
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        self._store.set(key, hashlib.sha256(payload).digest() + payload)

    def delete(self, key: str) -> None:
        """Forget one entry."""
        self._store.delete(key)

    def __contains__(self, key: str) -> bool:
        return key in self._store

    def close(self) -> None:
        """Close the underlying database."""
        self._store.close()


@contextmanager
def key_lock(key: str) -> Iterator[None]:
    """Hold an exclusive, process-wide lock for one key (waits while another process holds it)."""
    lock_dir = cache_dir() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{key}.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
