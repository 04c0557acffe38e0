"""Fair, bounded hosted mode (issue 17, item 4): visitors, their budgets and their turns.

- who a visitor is: the connection's address; a proxy's ``X-Forwarded-For`` only from a trusted
  proxy; an IPv6 client by its /64; loopback one visitor;
- budgets per visitor over a sliding window (a new session resets nothing), given back when the
  work never ran;
- turns: at most N slots, one per visitor, a bounded wait, and the visitor who used the workers
  least goes first, so two clients looping over new computations cannot keep a third out;
- the real server over real websockets: a visitor reconnecting whenever its budget runs out is
  still refused, and a victim's new analysis is served while two clients loop over new RoPE
  positions.

Time limits here are hang guards; latencies are measured by ``benchmarks/bench_load.py``.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import tiny_models
from page_runner import plain

from headforms.errors import LimitError
from headforms.hosted import client_address, visitor_key
from headforms.hosted.budgets import Budget, Budgets
from headforms.hosted.limits import Limits
from headforms.hosted.slots import MAX_WAITING_PER_VISITOR, Slots

HANG_GUARD = 120.0


# --- who a visitor is ---------------------------------------------------------------------------

TRUSTED = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("127.0.0.1/32"))


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        ("203.0.113.5", ["198.51.100.1"], "203.0.113.5"),  # not a proxy: its header is ignored
        ("10.1.2.3", ["198.51.100.1"], "198.51.100.1"),  # a trusted proxy: the client it heard
        ("10.1.2.3", ["6.6.6.6, 198.51.100.1"], "198.51.100.1"),  # forged left part ignored
        ("10.1.2.3", ["198.51.100.1, 10.9.9.9"], "198.51.100.1"),  # two trusted proxies
        ("10.1.2.3", ["6.6.6.6", "198.51.100.1"], "198.51.100.1"),  # repeated headers, in order
        ("10.1.2.3", ["garbage, 198.51.100.1"], "198.51.100.1"),
        ("10.1.2.3", ["198.51.100.1, garbage"], "10.1.2.3"),  # unreadable: the proxy itself
        ("10.1.2.3", [], "10.1.2.3"),
        ("127.0.0.1", ["198.51.100.7"], "198.51.100.7"),  # a proxy on this machine
    ],
)
def test_a_proxy_header_counts_only_from_a_trusted_proxy(
    peer: str, forwarded: list[str], expected: str
) -> None:
    assert client_address(peer, forwarded, TRUSTED) == expected
    assert client_address(peer, forwarded, ()) == peer  # nothing trusted: the connection


@pytest.mark.parametrize(
    ("address", "visitor"),
    [
        (None, "local"),
        ("127.0.0.1", "local"),
        ("::1", "local"),
        ("203.0.113.5", "203.0.113.5"),
        ("203.0.113.5:5555", "203.0.113.5"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),  # the same /64: the same visitor
        ("[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.5", "203.0.113.5"),
        ("not an address", "local"),
    ],
)
def test_visitors_are_addresses_and_ipv6_networks(address: str | None, visitor: str) -> None:
    assert visitor_key(address) == visitor


def test_the_trusted_proxies_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from headforms.hosted import trusted_proxies
    from headforms.settings import TRUSTED_PROXIES_ENV

    monkeypatch.delenv(TRUSTED_PROXIES_ENV, raising=False)
    assert trusted_proxies() == ()
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, " 127.0.0.1, 10.0.0.0/8 ,")
    assert trusted_proxies() == TRUSTED[::-1]
    monkeypatch.setenv(TRUSTED_PROXIES_ENV, "10.0.0.0/8, my-proxy")
    with pytest.raises(LimitError, match="'my-proxy', which is not an address or a network"):
        trusted_proxies()


# --- budgets --------------------------------------------------------------------------------------


def test_budgets_count_per_visitor_over_a_sliding_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each visitor has its own count; past it one line naming the limit; it recovers as its
    starts leave the window; a refund gives back a start that never ran."""
    clock = [1000.0]
    monkeypatch.setattr("headforms.hosted.budgets.time.monotonic", lambda: clock[0])
    limits = Limits(visitor_analyses=2, window=60.0)
    budgets = Budgets()
    budgets.spend("1.2.3.4", Budget.ANALYSES, limits)
    clock[0] += 10
    budgets.spend("1.2.3.4", Budget.ANALYSES, limits)
    with pytest.raises(LimitError) as refused:
        budgets.spend("1.2.3.4", Budget.ANALYSES, limits)
    assert str(refused.value) == (
        "you have started 2 new analyses (models or RoPE positions) within 1 minutes, the most "
        "one visitor may start on this server (HEADFORMS_VISITOR_ANALYSES); results already "
        "computed still open, and a new one may start in about 1 min"
    )
    with pytest.raises(LimitError):
        budgets.check("1.2.3.4", Budget.ANALYSES, limits)
    budgets.spend("5.6.7.8", Budget.ANALYSES, limits)  # another visitor: its own count
    budgets.spend("1.2.3.4", Budget.SAMPLES, Limits(visitor_samples=1))  # another kind
    clock[0] += 51  # the first start left the window
    budgets.spend("1.2.3.4", Budget.ANALYSES, limits)
    with pytest.raises(LimitError):
        budgets.spend("1.2.3.4", Budget.ANALYSES, limits)
    budgets.refund("1.2.3.4", Budget.ANALYSES)
    budgets.spend("1.2.3.4", Budget.ANALYSES, limits)


def test_budgets_remember_a_bounded_number_of_visitors() -> None:
    budgets = Budgets(max_visitors=100)
    limits = Limits(visitor_analyses=1)
    for i in range(1000):
        budgets.spend(f"10.0.{i // 256}.{i % 256}", Budget.ANALYSES, limits)
    assert len(budgets._starts) <= 100 * len(Budget)


# --- turns ----------------------------------------------------------------------------------------


class Holder:
    """A thread that takes a slot for ``visitor`` and holds it until released."""

    def __init__(self, slots: Slots, visitor: str, limits: Limits) -> None:
        self.granted = threading.Event()
        self.release = threading.Event()
        self.error: BaseException | None = None
        self.visitor = visitor

        def run() -> None:
            try:
                with slots.hold(visitor, limits):
                    self.granted.set()
                    self.release.wait(HANG_GUARD)
            except BaseException as exc:  # noqa: BLE001 - the outcome under test
                self.error = exc
                self.granted.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def done(self) -> None:
        self.release.set()
        self.thread.join(HANG_GUARD)


def test_a_newcomer_goes_before_visitors_who_used_the_workers() -> None:
    """Two visitors hold both slots and queue again at once; a third arrives after them: when a
    slot frees, the newcomer is served first (it used no worker), not the earlier arrival."""
    slots = Slots()
    limits = Limits(concurrent=2, queue_seconds=HANG_GUARD)
    a, b = Holder(slots, "a", limits), Holder(slots, "b", limits)
    assert a.granted.wait(10) and b.granted.wait(10)
    time.sleep(0.3)  # some use, remembered on release
    a.done()
    again_a = Holder(slots, "a", limits)
    assert again_a.granted.wait(10)  # a slot was free: a takes it again
    again_b = Holder(slots, "b", limits)  # b queues for a second slot (its own still held)
    time.sleep(0.3)
    victim = Holder(slots, "victim", limits)  # arrives last
    time.sleep(0.3)
    assert not victim.granted.is_set() and not again_b.granted.is_set()
    b.done()  # a slot frees: the victim (no use) goes before b (used 0.6 s)
    assert victim.granted.wait(10) and victim.error is None
    assert not again_b.granted.is_set()
    victim.done()
    assert again_b.granted.wait(10)
    for holder in (again_a, again_b):
        holder.done()
    assert slots.running() == 0 and slots.waiting() == 0


def test_one_visitor_runs_one_thing_at_a_time_and_waits_a_bounded_time() -> None:
    """A visitor's second request waits even with slots free (its turn after its first); past
    the queue limit it is refused with one line; past the per-visitor waiting limit at once."""
    slots = Slots()
    limits = Limits(concurrent=3, queue_seconds=0.5)
    first = Holder(slots, "a", limits)
    assert first.granted.wait(10)
    started = time.monotonic()
    with pytest.raises(LimitError) as busy:
        slots.acquire("a", limits)
    assert time.monotonic() - started >= 0.5
    assert str(busy.value) == (
        "the server is busy: 1 analyses are running (at most 3 at once, "
        "HEADFORMS_ANALYSIS_CONCURRENT) and none became free within 0.5 s "
        "(HEADFORMS_QUEUE_SECONDS); try again in a moment"
    )
    other = Holder(slots, "b", limits)  # another visitor gets a free slot at once
    assert other.granted.wait(10) and other.error is None
    waiting = Limits(concurrent=3, queue_seconds=HANG_GUARD)
    queued = [Holder(slots, "a", waiting) for _ in range(MAX_WAITING_PER_VISITOR)]
    deadline = time.monotonic() + 10
    while slots.waiting() < MAX_WAITING_PER_VISITOR:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(LimitError, match=f"you already have {MAX_WAITING_PER_VISITOR} requests"):
        slots.acquire("a", waiting)
    first.done()
    for holder in queued:
        assert holder.granted.wait(10)
        holder.done()
    other.done()
    assert slots.running() == 0 and slots.waiting() == 0


def test_a_waiter_who_leaves_gives_up_its_place() -> None:
    """``check`` raising while waiting (a visitor who left) removes the request; the slot goes to
    the next one."""
    slots = Slots()
    limits = Limits(concurrent=1, queue_seconds=HANG_GUARD)
    holder = Holder(slots, "a", limits)
    assert holder.granted.wait(10)

    class Left(Exception):
        pass

    def leave() -> None:
        raise Left

    with pytest.raises(Left):
        slots.acquire("b", limits, check=leave)
    assert slots.waiting() == 0
    next_one = Holder(slots, "c", limits)
    holder.done()
    assert next_one.granted.wait(10)
    next_one.done()


# --- the real server over websockets ------------------------------------------------------------


@pytest.fixture(scope="module")
def fair_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``scripts/start.sh`` in hosted mode with a tiny RoPE model under its root, 2 slots, 1 per
    visitor, budgets of 3 analyses per visitor, loopback trusted as a proxy (so that clients
    name their own addresses in ``X-Forwarded-For``, as a proxy in front would)."""
    import os

    from servers import free_port, serving

    base = tmp_path_factory.mktemp("fair")
    root = base / "models"
    tiny_models.build("llama", root / "tiny", seed=41)
    port = free_port()
    env = {
        **os.environ,
        "HEADFORMS_HOSTED": "1",
        "HEADFORMS_THREADS": "1",
        "HEADFORMS_MODEL_ROOTS": str(root),
        "HEADFORMS_CACHE_DIR": str(base / "cache"),
        "HEADFORMS_ANALYSIS_CONCURRENT": "2",
        "HEADFORMS_VISITOR_ANALYSES": "3",
        "HEADFORMS_QUEUE_SECONDS": "120",
        "HEADFORMS_TRUSTED_PROXIES": "127.0.0.1",
    }
    with serving(port, env, base / "streamlit.log", 120):
        yield {"port": port, "model": str(root / "tiny")}


def _run_rope(port: int, model: str, visitor: str, rope: int, timeout: float = 300) -> Any:
    """A fresh session of ``visitor`` opening ``model`` at RoPE position ``rope``."""
    from streamlit_client import Session

    with Session(port, timeout=timeout, forwarded_for=visitor) as session:
        return session.run(f"model={model}&rope={rope}")


@pytest.mark.slow
def test_a_visitor_reconnecting_gets_no_new_budget(fair_server: dict[str, Any]) -> None:
    """Three new analyses, each in a new websocket; the fourth, in yet another one, is refused
    with the visitor's limit (before: a new websocket started afresh); another visitor is
    served."""
    port, model = fair_server["port"], fair_server["model"]
    for rope in (0, 1, 2):  # the model itself at 0, then new positions: 3 in all
        run = _run_rope(port, model, "198.51.100.10", rope)
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.errors, run.messages
    refused = _run_rope(port, model, "198.51.100.10", 3)
    lines = [plain(e) for e in refused.errors]  # as the visitor reads them (notices escape)
    assert len(lines) == 1 and "HEADFORMS_VISITOR_ANALYSES" in lines[0]
    assert "you have started 3 new analyses" in lines[0]
    again = _run_rope(port, model, "198.51.100.10", 1)  # already computed: opens
    assert not again.errors, again.messages
    other = _run_rope(port, model, "198.51.100.11", 3)
    assert not other.errors and not other.exceptions, other.messages


@pytest.mark.slow
def test_two_looping_clients_do_not_keep_a_victim_out(fair_server: dict[str, Any]) -> None:
    """Two clients loop over new RoPE positions (a new websocket and a new visitor address
    whenever a budget runs out, as the attackers of issue 17 did); a victim's new analysis is
    served, not refused as busy (before: refused for as long as the loops ran)."""
    port, model = fair_server["port"], fair_server["model"]
    stop = threading.Event()
    served: list[int] = []

    def loop(index: int) -> None:
        rope, address = 100 * (index + 1), 0
        while not stop.is_set():
            run = _run_rope(port, model, f"192.0.2.{10 * index + address}", rope)
            if any("HEADFORMS_VISITOR_ANALYSES" in plain(e) for e in run.errors):
                address += 1  # a fresh address whenever the budget runs out
            elif not run.errors:
                served.append(rope)
            rope += 1

    loops = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(2)]
    for thread in loops:
        thread.start()
    try:
        deadline = time.monotonic() + HANG_GUARD
        while len(served) < 2:  # both loops are busy computing
            assert time.monotonic() < deadline, "the looping clients computed nothing"
            time.sleep(0.2)
        victim = _run_rope(port, model, "203.0.113.99", 7, timeout=HANG_GUARD)
    finally:
        stop.set()
        for thread in loops:
            thread.join(HANG_GUARD)
    assert victim.status == "FINISHED_SUCCESSFULLY", victim.status
    assert not victim.errors and not victim.exceptions, victim.messages
    print(f"victim served in {victim.seconds:.1f} s while the loops computed {len(served)}")
