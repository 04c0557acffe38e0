"""In-memory caches bounded in bytes, not entries: a server's memory follows what it keeps.

A count of entries bounds nothing when one entry may be a few KB or hundreds of MB (a figure of
a million points, a table, a large model's spectra). :class:`ByteLRU` keeps the most recently
used entries whose estimated sizes (:func:`sizeof`) add up to at most its budget; an entry
larger than the budget is not kept at all.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import numpy as np

V = TypeVar("V")

MAX_DEPTH = 12
"""How deep :func:`sizeof` follows containers and attributes."""


def sizeof(obj: Any) -> int:
    """An estimate of the bytes ``obj`` holds: numpy arrays by their buffers, pandas objects by
    ``memory_usage(deep=True)``, strings by their length, containers and plain objects (their
    ``__dict__``, e.g. a Plotly figure's data) by their parts; each object counted once."""
    return _sizeof(obj, set(), 0)


def _sizeof(obj: Any, seen: set[int], depth: int) -> int:
    if id(obj) in seen or depth > MAX_DEPTH:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj if obj.base is None else obj.base
        if obj.base is not None and id(base) in seen:
            return 0
        seen.add(id(base))
        return int(getattr(base, "nbytes", obj.nbytes)) + 112
    if isinstance(obj, str | bytes | bytearray | memoryview):
        return len(obj) + 49
    if isinstance(obj, int | float | bool | complex) or obj is None:
        return 32
    memory_usage = getattr(obj, "memory_usage", None)
    if callable(memory_usage) and type(obj).__module__.startswith("pandas"):
        usage = memory_usage(deep=True)
        return int(usage.sum() if hasattr(usage, "sum") else usage)
    if isinstance(obj, dict):
        return 64 + sum(
            _sizeof(k, seen, depth + 1) + _sizeof(v, seen, depth + 1) for k, v in obj.items()
        )
    if isinstance(obj, list | tuple | set | frozenset):
        return 56 + 8 * len(obj) + sum(_sizeof(item, seen, depth + 1) for item in obj)
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        return 64 + _sizeof(state, seen, depth + 1)
    slots = getattr(type(obj), "__slots__", ())
    if slots:
        return 64 + sum(_sizeof(getattr(obj, n, None), seen, depth + 1) for n in slots)
    return sys.getsizeof(obj, 64)


class ByteLRU(Generic[V]):
    """A thread-safe least-recently-used cache holding at most ``max_bytes`` (estimated)."""

    def __init__(self, max_bytes: int, sizer: Callable[[Any], int] = sizeof) -> None:
        self.max_bytes = int(max_bytes)
        self._sizer = sizer
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """The estimated bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> V | None:
        """The cached value (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` (unless it alone exceeds the budget), evicting the least recently used
        entries beyond the budget; returns ``value``."""
        size = self._sizer(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size <= self.max_bytes:
                self._items[key] = (value, size)
                self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, (_, evicted) = self._items.popitem(last=False)
                self._bytes -= evicted
        return value

    def get_or_build(self, key: Hashable, build: Callable[[], V]) -> V:
        """The cached value of ``key``, or ``build()`` kept under it."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
                return item[0]
        return self.put(key, build())

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._items.clear()
            self._bytes = 0
