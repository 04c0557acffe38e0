"""The HTTP rules of a server facing strangers, around Streamlit's own (``server.py``).

- **Host.** A request whose ``Host`` header is a name this server was not told it answers to is
  refused (400, one line): a page on another site cannot reach the dashboard through a name of
  its own that resolves here (DNS rebinding). Always answered: IP literals (a rebinding needs a
  name), ``localhost``, and the names in ``HEADFORMS_ALLOWED_HOSTS`` (comma-separated; a
  leading ``.`` admits subdomains; ``*`` admits every name, e.g. behind a proxy that checks).
- **Framing.** Every answer says who may frame the app: ``Content-Security-Policy:
  frame-ancestors`` with ``HEADFORMS_FRAME_ANCESTORS`` (default ``'self'``: the app's own pages
  only; any CSP source list, e.g. ``'self' https://wiki.example.org``; ``*`` any site), and
  ``X-Frame-Options`` for older browsers when it is ``'self'`` or ``'none'``. Also
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``.
- **Hosted mode.** Streamlit's ``/_stcore/metrics`` (the server's internals: sessions, caches)
  answers 404.

Standard ASGI (no Streamlit import), the same in and outside hosted mode except where said.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..settings import ALLOWED_HOSTS_ENV, DEFAULT_FRAME_ANCESTORS, settings

LOCAL_NAMES = ("localhost",)
"""Names always answered (they resolve to this machine only)."""
HIDDEN_IN_HOSTED_MODE = ("/_stcore/metrics",)
"""Paths (below the base URL) that answer 404 in hosted mode."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class Rules:
    """The rules in force (from the environment, read when the server starts)."""

    allowed_hosts: tuple[str, ...] = ()
    frame_ancestors: str = DEFAULT_FRAME_ANCESTORS
    hosted: bool = False

    @classmethod
    def from_env(cls) -> Rules:
        """The settings ``HEADFORMS_ALLOWED_HOSTS``, ``HEADFORMS_FRAME_ANCESTORS`` and hosted
        mode."""
        values = settings()
        return cls(values.allowed_hosts, values.frame_ancestors, values.hosted)

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request naming ``host`` (the ``Host`` header, port included) is answered."""
        if host is None:
            return True  # HTTP/1.0 without Host: no browser sends that
        name = _host_name(host)
        if name is None:
            return False
        if _is_ip(name) or name in LOCAL_NAMES or "*" in self.allowed_hosts:
            return True
        return any(
            name == allowed or (allowed.startswith(".") and name.endswith(allowed))
            for allowed in self.allowed_hosts
        )

    def hidden(self, path: str) -> bool:
        """Whether ``path`` answers 404 (hosted mode's hidden endpoints, below any base URL)."""
        trimmed = path.rstrip("/")
        return self.hosted and any(trimmed.endswith(p) for p in HIDDEN_IN_HOSTED_MODE)

    def headers(self) -> list[tuple[bytes, bytes]]:
        """The headers added to every HTTP answer."""
        out = [
            (b"content-security-policy", f"frame-ancestors {self.frame_ancestors}".encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
        ]
        legacy = {"'self'": b"SAMEORIGIN", "'none'": b"DENY"}.get(self.frame_ancestors)
        if legacy:
            out.append((b"x-frame-options", legacy))
        return out


class HttpRules:
    """ASGI middleware applying :class:`Rules` to every request of the wrapped app."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.rules = Rules.from_env()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.rules.host_allowed(host):
            shown = (host or "")[:60]
            await _refuse(
                scope,
                send,
                400,
                f"this server does not answer to the host name {shown!r} "
                f"(list it in {ALLOWED_HOSTS_ENV})",
            )
            return
        if kind == "http" and self.rules.hidden(str(scope.get("path", ""))):
            await _refuse(scope, send, 404, "not found")
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        added = self.rules.headers()

        async def send_with_headers(message: Message) -> None:
            if message.get("type") == "http.response.start":
                names = {name for name, _ in added}
                kept = [(n, v) for n, v in message.get("headers", []) if n.lower() not in names]
                message = {**message, "headers": [*kept, *added]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _refuse(scope: Scope, send: Send, status: int, text: str) -> None:
    """Answer ``status`` with one line (an HTTP request) or close (a websocket handshake)."""
    if scope.get("type") == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = (text + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def _host_name(host: str) -> str | None:
    """The name of a ``Host`` header (no port; an IPv6 literal without brackets), lower-case."""
    text = host.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        return text[1:end] if end > 0 else None
    name, _, port = text.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
