"""A long-running process's heap (headforms/heap.py): few arenas, a frozen start-up heap."""

from __future__ import annotations

import gc
import weakref

import pytest

from headforms import heap


class Node:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(heap, "_armed", False)
    monkeypatch.setattr(heap, "_frozen", False)
    try:
        yield heap
    finally:
        gc.unfreeze()


def test_a_process_that_is_not_the_server_keeps_its_heap(fresh) -> None:
    fresh.settle()
    assert not fresh.frozen()
    assert gc.get_freeze_count() == 0


def test_the_first_run_freezes_what_is_alive_and_later_garbage_is_still_freed(fresh) -> None:
    fresh.freeze_after_first_run()
    old = Node()
    left_by_the_run = weakref.ref(Node())  # the first run's cyclic garbage: collected first
    tracked = len(gc.get_objects())
    fresh.settle()
    assert fresh.frozen()
    assert left_by_the_run() is None
    assert gc.get_freeze_count() >= tracked // 2  # the heap alive then, out of later passes
    assert not any(o is old for o in gc.get_objects())  # a frozen object is not walked
    later = weakref.ref(Node())  # a later session's cyclic garbage
    gc.collect()
    assert later() is None


def test_only_the_first_run_freezes(fresh) -> None:
    fresh.freeze_after_first_run()
    fresh.settle()
    kept = Node()
    fresh.settle()
    # the second run's objects stay where the collector walks (the frozen count itself may fall
    # meanwhile: a frozen object that dies leaves the permanent generation)
    assert any(o is kept for o in gc.get_objects())


def test_the_dashboard_server_arms_it(fresh, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, "server", raising=False)
    importlib.import_module("server")  # what `streamlit run server.py` loads
    assert fresh._armed


def test_the_allocator_is_kept_to_few_arenas_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert heap.limit_arenas()  # glibc, as on Debian and in the image
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert not heap.limit_arenas()  # the operator's setting wins
