"""ByteLRU's options for values that cost seconds to rebuild or stand for a process: the newest
kept alone when it passes the budget, and every eviction reported (a replaced value too)."""

from __future__ import annotations

from headforms.bounded import ByteLRU


def test_the_newest_is_kept_alone_when_it_passes_the_budget() -> None:
    evicted: list[tuple[object, int]] = []
    cache: ByteLRU[int] = ByteLRU(
        10,
        sizer=lambda value: value,
        keep_newest=True,
        on_evict=lambda k, v: evicted.append((k, v)),
    )
    cache.put("a", 4)
    cache.put("b", 5)
    assert cache.keys() == ["a", "b"] and cache.bytes == 9 and evicted == []
    cache.get("a")  # now the most recently used
    cache.put("c", 3)  # 12 > 10: the least recently used ("b") goes
    assert cache.keys() == ["a", "c"] and evicted == [("b", 5)]
    cache.put("huge", 50)  # alone past the budget: kept, everything else evicted
    assert cache.keys() == ["huge"] and cache.bytes == 50
    assert evicted[1:] == [("a", 4), ("c", 3)]
    cache.put("d", 1)  # the next one comes: the large one goes
    assert cache.keys() == ["d"] and evicted[-1] == ("huge", 50)


def test_evictions_are_reported_and_pop_is_not() -> None:
    evicted: list[tuple[object, int]] = []
    cache: ByteLRU[int] = ByteLRU(
        10, sizer=lambda v: v, on_evict=lambda k, v: evicted.append((k, v))
    )
    cache.put("a", 2)
    cache.put("a", 3)  # replaced: the old value is evicted
    assert evicted == [("a", 2)] and cache.bytes == 3
    cache.put("huge", 11)  # without keep_newest: never kept, nothing evicted for it
    assert "huge" not in cache and evicted == [("a", 2)]
    assert cache.pop("a") == 3 and cache.bytes == 0 and evicted == [("a", 2)]
    cache.put("b", 1)
    cache.put("c", 2)
    cache.clear()
    assert len(cache) == 0 and evicted[1:] == [("b", 1), ("c", 2)]
    assert cache.values() == []
