"""Who a visitor is: the client's network address, the unit every budget and turn is counted by.

A visitor is the address its connection comes from, not a websocket: opening a new session
resets nothing. Behind a reverse proxy every connection comes from the proxy, so the proxy's
``X-Forwarded-For`` header names the client; it is believed only when the connection comes from
an address listed in ``HEADFORMS_TRUSTED_PROXIES`` (anyone else could write any address in it).
IPv6 clients count by their /64 network (one subscriber's allocation), so that one machine
cannot be a new visitor for every address of its own network.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from .limits import Limits, Network

LOCAL = "local"
"""The visitor of connections from this machine (loopback) and of unknown origin."""
IPV6_PREFIX = 64
"""IPv6 addresses in one network of this prefix length are one visitor."""


def trusted_proxies() -> tuple[Network, ...]:
    """The proxies whose ``X-Forwarded-For`` is believed (``HEADFORMS_TRUSTED_PROXIES``:
    comma-separated addresses or networks, e.g. ``127.0.0.1,10.0.0.0/8``; unset: none)."""
    return Limits.from_env().trusted_proxies


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
