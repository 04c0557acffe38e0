"""The computation gateway with fake computations: one job for identical concurrent requests,
progress relayed to each waiter, a finished result kept for the next page, failures not kept,
a hosted job nobody waits for let go after its grace period (a rerun within it joins the same
job; a new one is never let go before its first caller waits), a cached result widened and
answered per request without being changed, a result still in use never read a second time,
and a core that imports no Streamlit."""

from __future__ import annotations

import ast
import gc
import threading
import time
import weakref
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from repo import REPO

from ui.gateway import (
    Abandoned,
    Computation,
    Gateway,
    HostedGateway,
    Job,
    LocalGateway,
    ResultCache,
    base,
)
from ui.gateway import hosted as hosted_gateway
from ui.gateway.hosted import ThreadPerJob

HANG_GUARD = 30.0


class Result:
    """A result with a size (weakly referable, as the gateway's results are)."""

    def __init__(self, name: str, parts: frozenset[str] = frozenset(), size: int = 1000):
        self.name, self.parts, self.size = name, parts, size


@dataclass
class Log:
    """What the fake computations did, and a gate that holds them until opened."""

    calls: list[str] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    stored: Result | None = None


@dataclass(frozen=True, eq=False)
class Fake(Computation[Result]):
    """A computation of ``name`` (with ``parts``) that waits for its log's gate."""

    name: str
    log: Log
    parts: frozenset[str] = frozenset()
    fail: bool = False
    first_message = "fake starting"

    @property
    def key(self) -> Hashable:
        return ("fake", self.name)

    @property
    def job_key(self) -> Hashable:
        return (*self.key, self.parts)

    def accepts(self, result: Result) -> bool:
        return self.parts <= result.parts

    def widened(self, result: Result) -> Fake:
        return replace(self, parts=self.parts | result.parts)

    def stored(self) -> Result | None:
        if self.log.stored is None:
            return None
        self.log.calls.append("read")
        return Result(self.log.stored.name, self.log.stored.parts)  # a new copy, as a read is

    def local(self, progress: Any) -> Result:
        self.log.calls.append(f"local {sorted(self.parts)}")
        progress(1, 2, "half way")
        self.log.started.set()
        assert self.log.gate.wait(HANG_GUARD)
        if self.fail:
            raise ValueError("a one-line failure")
        return Result(self.name, self.parts)

    def hosted(self, progress: Any, check: Any, visitor: str) -> Result:
        self.log.calls.append(f"hosted for {visitor}")
        self.log.started.set()
        try:
            while not self.log.gate.wait(0.01):
                check()
        except Abandoned:
            self.log.calls.append("let go")
            raise
        return Result(self.name, self.parts)


class Watched:
    """A gateway whose jobs are kept for the test to wait on."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway, self.jobs = gateway, []
        compute = gateway.compute

        def watched(job: Job[Any]) -> Any:
            self.jobs.append(job)
            return compute(job)

        gateway.compute = watched  # type: ignore[method-assign]

    def finished(self) -> None:
        """Wait until every job so far has ended."""
        for job in self.jobs:
            job.future.exception(HANG_GUARD)


GRACE = 0.2


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "POLL_S", 0.01)
    monkeypatch.setattr(hosted_gateway, "ABANDON_GRACE", GRACE)


class Left(Exception):
    """What a Streamlit stop raises in the waiting script (the visitor left)."""


def test_identical_concurrent_requests_share_one_job_with_its_progress() -> None:
    log = Log()
    gateway = LocalGateway(threads=2)
    seen: dict[str, list[tuple[int, int, str]]] = {"a": [], "b": []}

    def ask(visitor: str) -> Result:
        def progress(done: int, total: int, message: str) -> None:
            seen[visitor].append((done, total, message))
            if all((1, 2, "half way") in reports for reports in seen.values()):
                log.gate.set()  # both wait for the job, and heard from it: let it end

        return gateway.run(Fake("m", log), progress, visitor=visitor)

    with ThreadPoolExecutor(2) as sessions:
        first, second = sessions.map(ask, ["a", "b"])
    assert first is second
    assert log.calls == ["local []"]
    assert gateway.peek(Fake("m", log)) is first  # kept: no job, no read


def test_a_finished_job_is_kept_when_its_page_was_left() -> None:
    log = Log()
    watched = Watched(LocalGateway())

    def leave(done: int, total: int, message: str) -> None:
        raise Left

    with pytest.raises(Left):
        watched.gateway.run(Fake("m", log), leave, visitor="a")
    log.gate.set()
    watched.finished()
    kept = watched.gateway.peek(Fake("m", log), visitor="b")
    assert kept is not None and kept.name == "m"
    assert log.calls == ["local []"]


def test_a_failed_job_is_not_kept() -> None:
    log = Log()
    log.gate.set()
    gateway = LocalGateway()
    with pytest.raises(ValueError, match="a one-line failure"):
        gateway.run(Fake("m", log, fail=True))
    assert gateway.run(Fake("m", log)).name == "m"
    assert log.calls == ["local []", "local []"]


def leaving(log: Log) -> Any:
    """A page's ``progress`` whose visitor leaves once the computation has started."""

    def leave(done: int, total: int, message: str) -> None:
        assert log.started.wait(HANG_GUARD)
        raise Left

    return leave


def test_a_hosted_job_nobody_waits_for_is_let_go() -> None:
    """The job's ``check`` raises once its last waiter left and nobody came back within the
    grace period: the hosted call stops (headforms.hosted stops its worker), nothing is kept;
    the next request starts again, for its own visitor."""
    log = Log()
    watched = Watched(HostedGateway())

    with pytest.raises(Left):
        watched.gateway.run(Fake("m", log), leaving(log), visitor="a")
    watched.finished()
    assert isinstance(watched.jobs[0].future.exception(), Abandoned)
    assert log.calls == ["hosted for a", "let go"]
    assert watched.gateway.peek(Fake("m", log)) is None
    log.gate.set()
    assert watched.gateway.run(Fake("m", log), visitor="b").name == "m"
    assert log.calls[-1] == "hosted for b"


def test_a_hosted_job_is_kept_through_its_grace_period() -> None:
    """A rerun of the page that left comes back within the grace period: it joins the same job
    (one hosted call), which ends for it."""
    log = Log()
    watched = Watched(HostedGateway())

    with pytest.raises(Left):
        watched.gateway.run(Fake("m", log), leaving(log), visitor="a")
    opened = threading.Timer(GRACE / 2, log.gate.set)  # after the second caller attached
    opened.start()
    assert watched.gateway.run(Fake("m", log), visitor="a").name == "m"
    opened.join()
    assert log.calls == ["hosted for a"]
    assert len(watched.jobs) == 1


@dataclass(frozen=True, eq=False)
class Named(Fake):
    """A computation whose result each request gets under its own name (a copy)."""

    label: str = ""

    def answer(self, result: Result) -> Result:
        return Result(self.label, result.parts, result.size)


def test_a_shared_result_is_answered_per_request_and_never_changed() -> None:
    log = Log()
    log.gate.set()
    gateway = LocalGateway()
    first = gateway.run(Named("m", log, label="first"))
    second = gateway.run(Named("m", log, label="second"))
    assert (first.name, second.name) == ("first", "second")
    assert gateway.cache.get(("fake", "m"), "local").name == "m"  # the kept one as computed
    assert log.calls == ["local []"]
    assert gateway.peek(Named("m", log, label="third")).name == "third"


@dataclass(frozen=True, eq=False)
class ChecksFirst(Fake):
    """A hosted computation that asks at once whether anybody waits for it, and refuses to be
    started a second time."""

    def hosted(self, progress: Any, check: Any, visitor: str) -> Result:
        try:
            if self.log.calls:
                raise RuntimeError(f"started again after {self.log.calls}")
            self.log.calls.append(f"hosted for {visitor}")
            check()
        except Abandoned:
            self.log.calls.append("let go")
            raise
        finally:
            self.log.started.set()
        return Result(self.name, self.parts)


class RunsAtOnce(ThreadPerJob):
    """Each job's thread runs up to its first check before ``submit`` returns, as a busy
    machine may run it before the caller that started it goes on."""

    def __init__(self, started: threading.Event) -> None:
        self.started = started

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.started.clear()
        future = super().submit(fn, *args, **kwargs)
        assert self.started.wait(HANG_GUARD)
        return future


def test_a_new_hosted_job_has_its_first_waiter_before_it_starts() -> None:
    """The caller who starts a job is attached before its thread runs: a job that checks at
    once finds it waiting and is not let go."""
    log = Log()
    gateway = HostedGateway()
    gateway._executor = RunsAtOnce(log.started)
    assert gateway.run(ChecksFirst("m", log), visitor="a").name == "m"
    assert log.calls == ["hosted for a"]


def test_a_cached_result_that_lacks_what_is_asked_is_widened() -> None:
    log = Log()
    log.gate.set()
    gateway = LocalGateway()
    first = gateway.run(Fake("m", log, frozenset({"x"})))
    assert gateway.run(Fake("m", log)) is first  # it answers a smaller request
    both = gateway.run(Fake("m", log, frozenset({"y"})))
    assert both.parts == {"x", "y"}  # computed with what was kept before
    assert gateway.peek(Fake("m", log, frozenset({"x"}))) is both
    assert log.calls == ["local ['x']", "local ['x', 'y']"]


def test_a_stored_result_is_read_once_while_it_is_in_use() -> None:
    """A result the cache let go of but a page still holds is the same copy for the next
    request (no second read); once nobody holds it, its memory goes and it is read again."""
    log = Log(stored=Result("m"))
    gateway = LocalGateway()
    held = gateway.run(Fake("m", log))
    assert log.calls == ["read"]
    gateway.cache.clear()  # the cache let go of it (a visitor's bytes, the server's)
    assert gateway.run(Fake("m", log), visitor="other") is held
    assert log.calls == ["read"]
    gone = weakref.ref(held)
    gateway.cache.clear()
    del held
    gc.collect()
    assert gone() is None  # the gateway itself keeps nothing the cache let go of
    gateway.run(Fake("m", log))
    assert log.calls == ["read", "read"]


def test_a_visitors_bytes_are_bounded_while_others_are_served() -> None:
    cache: ResultCache[Result] = ResultCache(max_bytes=10_000, visitor_bytes=3_000, sizer=size)
    cache.put("victim's", Result("v", size=2_000), "victim")
    cache.put("shared", Result("s", size=1_000), "victim")
    for i in range(20):  # an attacker asks for new results, one after the other
        cache.put(("attack", i), Result(str(i), size=1_000), "attacker")
        cache.get("shared", "attacker")
        assert cache.held_bytes("attacker") <= 3_000
    assert cache.get("victim's", "victim") is not None  # still served from memory
    assert cache.get("shared", "victim") is not None
    assert ("attack", 0) not in cache and ("attack", 19) in cache
    assert cache.bytes <= 10_000


def test_a_visitors_newest_result_is_kept_even_past_its_bytes() -> None:
    cache: ResultCache[Result] = ResultCache(max_bytes=10_000, visitor_bytes=3_000, sizer=size)
    cache.put("small", Result("s", size=1_000), "v")
    cache.put("pattern", Result("p", size=5_000), "v")
    assert "pattern" in cache and "small" not in cache
    cache.put("too big for anyone", Result("b", size=20_000), "v")
    assert "too big for anyone" not in cache and "pattern" in cache


def test_the_servers_bytes_drop_the_least_recently_used_of_anyone() -> None:
    cache: ResultCache[Result] = ResultCache(max_bytes=3_000, sizer=size)
    for name, visitor in (("a", "x"), ("b", "y"), ("c", "z")):
        cache.put(name, Result(name, size=1_000), visitor)
    cache.get("a", "x")
    cache.put("d", Result("d", size=1_000), "w")
    assert "b" not in cache and all(name in cache for name in "acd")
    assert cache.held_bytes("y") == 0


def test_a_figure_is_built_once_per_key() -> None:
    gateway = LocalGateway()
    builds: list[str] = []
    for _ in range(2):
        gateway.cached(("fig", "weights-1"), lambda: builds.append("1") or Result("1"))
    gateway.cached(("fig", "weights-2"), lambda: builds.append("2") or Result("2"))
    assert builds == ["1", "2"]


def settled(gateway: Gateway) -> None:
    """Wait until the gateway's builds ahead have run (one thread: a marker build after them)."""
    done = threading.Event()
    deadline = time.monotonic() + HANG_GUARD
    while not gateway.ahead([(("marker", object()), lambda: done.set() or Result("m"))]):
        assert time.monotonic() < deadline, "the batches ahead never ran"
        time.sleep(0.01)  # past the batches waiting: queued once they have run
    assert done.wait(HANG_GUARD)


def test_a_figure_built_ahead_is_not_built_again_by_the_step_that_shows_it() -> None:
    gateway = LocalGateway()
    builds: list[str] = []
    assert gateway.ahead([(("fig", "next"), lambda: builds.append("ahead") or Result("n"))])
    settled(gateway)
    shown = gateway.cached(("fig", "next"), lambda: builds.append("step") or Result("n"))
    assert builds == ["ahead"] and shown.name == "n"


def test_nothing_kept_is_built_ahead_and_a_failure_is_left_to_the_step() -> None:
    gateway = LocalGateway()
    gateway.cached(("fig", "kept"), lambda: Result("k"))
    assert not gateway.ahead([(("fig", "kept"), lambda: pytest.fail("built again"))])

    def broken() -> Result:
        raise ValueError("bad figure")

    assert gateway.ahead([(("fig", "broken"), broken)])
    settled(gateway)
    assert ("fig", "broken") not in gateway.cache
    with pytest.raises(ValueError, match="bad figure"):
        gateway.cached(("fig", "broken"), broken)


def test_guesses_past_the_waiting_batches_are_dropped() -> None:
    gateway = LocalGateway()
    gate, started = threading.Event(), threading.Event()

    def held() -> Result:
        started.set()
        assert gate.wait(HANG_GUARD)
        return Result("held")

    queued = [gateway.ahead([(("fig", i), held)]) for i in range(base.AHEAD_BATCHES + 1)]
    assert started.wait(HANG_GUARD)
    assert queued == [True] * base.AHEAD_BATCHES + [False]
    gate.set()
    settled(gateway)
    assert [("fig", i) in gateway.cache for i in range(base.AHEAD_BATCHES + 1)] == (
        [True] * base.AHEAD_BATCHES + [False]
    )


def size(result: Result) -> int:
    return result.size


CORE = REPO / "ui" / "gateway"


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_the_gateway_core_imports_no_streamlit_nor_the_rest_of_the_dashboard(path: Path) -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            imported.add(node.module or "")
    assert not {name for name in imported if name.split(".")[0] in ("streamlit", "ui")}


@dataclass(frozen=True, eq=False)
class Inline(Fake):
    """A quick computation from results at hand: a private server runs it on the caller's
    thread."""

    inline = True

    def local(self, progress: Any) -> Result:
        self.log.calls.append(f"local on {threading.current_thread().name}")
        self.log.started.set()
        assert self.log.gate.wait(HANG_GUARD)
        return Result(self.name, self.parts)


def test_an_inline_computation_runs_on_its_callers_thread_and_is_still_shared() -> None:
    log = Log()
    gateway = LocalGateway()
    results: list[Result] = []
    first = threading.Thread(
        target=lambda: results.append(gateway.run(Inline("m", log))), name="page-a"
    )
    first.start()
    assert log.started.wait(HANG_GUARD)
    second = threading.Thread(
        target=lambda: results.append(gateway.run(Inline("m", log))), name="page-b"
    )
    second.start()
    time.sleep(0.05)  # page b asks while page a computes (a join, not a second computation)
    log.gate.set()
    first.join(HANG_GUARD)
    second.join(HANG_GUARD)
    assert log.calls == ["local on page-a"]
    assert len(results) == 2 and results[0] is results[1]
