"""The one cache of results and figures: by content, bounded in bytes in all and per visitor.

Every session asks the same cache, so two sessions asking for one result share one copy. Each
entry is *held* by the visitors who asked for it; a visitor's bytes are those of the entries it
holds (an entry it shares counts for each holder). Past :attr:`ResultCache.visitor_bytes`, the
visitor lets go of its least recently used entries (its newest is always kept: a result one
view needs is not dropped while that view draws), and an entry nobody holds any more is
dropped: one visitor cannot fill the cache, nor push out what others use. Past
:attr:`ResultCache.max_bytes`, the least recently used entries go, whoever holds them; an entry
larger than that is not kept at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from headforms.bounded import sizeof

V = TypeVar("V")


@dataclass
class _Entry:
    value: Any
    size: int
    holders: set[str] = field(default_factory=set)


class ResultCache(Generic[V]):
    """A thread-safe cache of values by key, at most ``max_bytes`` (estimated by ``sizer``) in
    all and ``visitor_bytes`` (default: ``max_bytes``) held per visitor (module doc)."""

    def __init__(
        self,
        max_bytes: int,
        visitor_bytes: int | None = None,
        sizer: Callable[[Any], int] = sizeof,
    ) -> None:
        self.max_bytes = int(max_bytes)
        self.visitor_bytes = int(max_bytes if visitor_bytes is None else visitor_bytes)
        self._sizer = sizer
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._held: dict[str, OrderedDict[Hashable, None]] = {}
        self._held_bytes: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """The estimated bytes kept now."""
        return self._bytes

    def held_bytes(self, visitor: str) -> int:
        """The bytes of the entries ``visitor`` holds now."""
        with self._lock:
            return self._held_bytes.get(visitor, 0)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, visitor: str) -> V | None:
        """The value kept under ``key`` (now held by ``visitor``, its most recent), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            self._hold(key, entry, visitor)
            return entry.value

    def put(self, key: Hashable, value: V, visitor: str) -> V:
        """Keep ``value`` under ``key``, held by ``visitor`` (a value kept already under ``key``
        is replaced, its holders kept); returns ``value``."""
        size = self._sizer(value)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.value is not value:
                self._drop(key)
                entry = _Entry(value, size, set(entry.holders))
            elif entry is None:
                entry = _Entry(value, size)
            if size > self.max_bytes:
                for holder in entry.holders:
                    self._let_go(key, holder, size)
                return value
            if key not in self._entries:
                self._entries[key] = entry
                self._bytes += size
                for holder in entry.holders:
                    self._count(key, holder, size)
            self._entries.move_to_end(key)
            self._hold(key, entry, visitor)
            while self._bytes > self.max_bytes and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))
            return value

    def get_or_build(self, key: Hashable, build: Callable[[], V], visitor: str) -> V:
        """The value kept under ``key``, or ``build()`` kept under it."""
        found = self.get(key, visitor)
        return found if found is not None else self.put(key, build(), visitor)

    def pop(self, key: Hashable) -> V | None:
        """Forget ``key``; its value or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._drop(key)
            return entry.value

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
            self._held.clear()
            self._held_bytes.clear()
            self._bytes = 0

    # Under the lock -------------------------------------------------------------------------

    def _hold(self, key: Hashable, entry: _Entry, visitor: str) -> None:
        """``visitor`` holds ``entry`` (its most recent); past its bytes, it lets go of its
        oldest entries but this one."""
        if visitor not in entry.holders:
            entry.holders.add(visitor)
            self._count(key, visitor, entry.size)
        held = self._held[visitor]
        held.move_to_end(key)
        while self._held_bytes[visitor] > self.visitor_bytes and len(held) > 1:
            oldest = next(iter(held))
            self._release(oldest, visitor)

    def _count(self, key: Hashable, visitor: str, size: int) -> None:
        self._held.setdefault(visitor, OrderedDict())[key] = None
        self._held_bytes[visitor] = self._held_bytes.get(visitor, 0) + size

    def _let_go(self, key: Hashable, visitor: str, size: int) -> None:
        held = self._held.get(visitor)
        if held is not None and key in held:
            del held[key]
            self._held_bytes[visitor] -= size
            if not held:
                del self._held[visitor], self._held_bytes[visitor]

    def _release(self, key: Hashable, visitor: str) -> None:
        """``visitor`` no longer holds ``key``; an entry nobody holds is dropped."""
        entry = self._entries[key]
        entry.holders.discard(visitor)
        self._let_go(key, visitor, entry.size)
        if not entry.holders:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
        for holder in entry.holders:
            self._let_go(key, holder, entry.size)
