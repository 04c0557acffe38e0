"""Who a visitor is: the client's network address, the unit every budget and turn is counted by.

A visitor is the address its connection comes from, not a websocket: opening a new session
resets nothing. Behind a reverse proxy every connection comes from the proxy, so the proxy's
``X-Forwarded-For`` header names the client; it is believed only when the connection comes from
an address listed in ``HEADFORMS_TRUSTED_PROXIES`` (anyone else could write any address in it),
and then the client is the rightmost address of the header not itself a trusted proxy. Unset,
no header is believed, not even from this machine. IPv6 clients count by their /64 network (one
subscriber's allocation), so that one machine cannot be a new visitor for every address of its
own network.

Streamlit's HTTP server (uvicorn) reads ``X-Forwarded-For`` itself before the app sees the
connection: it replaces the connection's address by the header's when the peer is in its own
list, ``FORWARDED_ALLOW_IPS`` (default ``127.0.0.1,::1``: any client on this machine could then
name any address). The server's start commands (``scripts/start.sh``, ``headforms serve``) set
that list to ``HEADFORMS_TRUSTED_PROXIES``, so both read the header by the same rule, and
``server.py`` refuses to start in hosted mode when they differ (:func:`proxy_lists_differ`).
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Sequence

from ..errors import HeadformsError
from ..settings import SERVER_PROXIES_ENV, TRUSTED_PROXIES_ENV
from .limits import Limits, Network, parse_networks

LOCAL = "local"
"""The visitor of connections from this machine (loopback) and of unknown origin."""
IPV6_PREFIX = 64
"""IPv6 addresses in one network of this prefix length are one visitor."""
SERVER_PROXIES_DEFAULT = "127.0.0.1,::1"
"""uvicorn's list when :data:`SERVER_PROXIES_ENV` is unset."""


def trusted_proxies() -> tuple[Network, ...]:
    """The proxies whose ``X-Forwarded-For`` is believed (``HEADFORMS_TRUSTED_PROXIES``:
    comma-separated addresses or networks, e.g. ``127.0.0.1,10.0.0.0/8``; unset: none)."""
    return Limits.from_env().trusted_proxies


def proxy_lists_differ() -> str | None:
    """None when Streamlit's server believes ``X-Forwarded-For`` from exactly the trusted
    proxies (its :data:`SERVER_PROXIES_ENV`, read from this process's environment as it was
    when it started, equals ``HEADFORMS_TRUSTED_PROXIES``), else one line saying how not. A
    malformed hosted setting raises its own one-line error."""
    trusted = set(trusted_proxies())
    believed = os.environ.get(SERVER_PROXIES_ENV, SERVER_PROXIES_DEFAULT)
    try:
        same = set(parse_networks(believed)) == trusted
    except HeadformsError:
        same = False
    if same:
        return None
    return (
        f"Streamlit's server believes X-Forwarded-For from {SERVER_PROXIES_ENV}="
        f"{believed[:80]!r}, this app from {TRUSTED_PROXIES_ENV}="
        f"{os.environ.get(TRUSTED_PROXIES_ENV, '')[:80]!r}: start it with scripts/start.sh or "
        f"`headforms serve` (they set one from the other), or set both to the same list"
    )


def client_address(
    peer: str | None, forwarded_for: Iterable[str], trusted: Sequence[Network]
) -> str | None:
    """The client's address: ``peer`` (the connection's), or, when ``peer`` is a trusted proxy,
    the last address of the ``X-Forwarded-For`` chain not itself a trusted proxy (each proxy
    appends the address it heard from; only the part written by trusted ones can be believed)."""
    if peer is None or not trusted or not _within(peer, trusted):
        return peer
    chain = [a.strip() for header in forwarded_for for a in header.split(",") if a.strip()]
    client = peer
    for address in reversed(chain):
        if _parse(address) is None:
            break  # a malformed entry: what lies before it cannot be believed
        client = address
        if not _within(address, trusted):
            break
    return client


def visitor_key(address: str | None) -> str:
    """The visitor an address counts as: :data:`LOCAL` for loopback or unknown, an IPv4
    address as itself, an IPv6 address by its /64 network."""
    parsed = _parse(address)
    if parsed is None or parsed.is_loopback:
        return LOCAL
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed)


def _parse(address: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not address:
        return None
    text = address.strip()
    if text.startswith("[") and "]" in text:  # [v6]:port
        text = text[1 : text.index("]")]
    elif text.count(":") == 1:  # v4:port
        text = text.split(":", 1)[0]
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _within(address: str, networks: Sequence[Network]) -> bool:
    parsed = _parse(address)
    return parsed is not None and any(parsed in network for network in networks)
