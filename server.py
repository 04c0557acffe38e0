"""The dashboard's server: Streamlit running ``app.py``, behind the HTTP rules of
:mod:`headforms.hosted.http` (host names answered, framing, hosted mode's hidden endpoints).

``streamlit run server.py`` (what ``scripts/start.sh``, ``make run``, the image and ``headforms
serve`` do) serves the same app as ``streamlit run app.py``, with those rules; tests of pages
run ``app.py`` directly (Streamlit's ``AppTest``). After its first script run the server freezes
its start-up heap out of the full garbage collection that follows every run, and keeps C's
allocator to two arenas (:mod:`headforms.heap`).

In hosted mode (``HEADFORMS_HOSTED=1``) it also:

- drops a session whose browser went away after :data:`HOSTED_SESSION_SECONDS` (Streamlit keeps
  it 120 s by default, with what its last run holds: one visitor opening page after page in new
  sessions would hold that many at once), unless ``server.disconnectedSessionTTL`` is set
  explicitly;
- refuses to start, in one line, when Streamlit's HTTP server would believe ``X-Forwarded-For``
  from other addresses than ``HEADFORMS_TRUSTED_PROXIES``
  (:func:`headforms.hosted.visitors.proxy_lists_differ`; the start commands set them alike);
- keeps the server's facts out of what each session is sent (:class:`ServerFactsHidden`): the
  message that starts every script run (``NewSession``) names the app's script path, the
  Streamlit and Python versions, the server's OS and installation ids, and Streamlit sends the
  git repository the app runs from (``GitInfo``); a visitor gets none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from itertools import islice
from pathlib import Path
from typing import Any

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config

from headforms.errors import HeadformsError
from headforms.heap import freeze_after_first_run, limit_arenas
from headforms.hosted.http import HttpRules
from headforms.hosted.visitors import proxy_lists_differ
from headforms.settings import settings

SESSION_TTL_OPTION = "server.disconnectedSessionTTL"
HOSTED_SESSION_SECONDS = 5
"""Seconds a hosted server keeps a disconnected session (a reconnect within them resumes it)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def without_server_facts(data: bytes) -> bytes:
    """A serialised ``ForwardMsg`` as a visitor of a hosted server may see it: a ``NewSession``
    without the script's directory, the versions, the OS and the installation ids, a
    ``GitInfo`` empty; any other message as it is (told apart by its first fields, without
    parsing it)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fields = ForwardMsg.DESCRIPTOR.fields_by_name
    facts = {fields["new_session"].number, fields["git_info_changed"].number}
    if not facts.intersection(islice(_field_numbers(data), 4)):
        return data
    message = ForwardMsg()
    message.ParseFromString(data)
    if message.HasField("new_session"):
        new = message.new_session
        new.main_script_path = Path(new.main_script_path).name
        # Emptied, not removed: the browser reads these fields of every NewSession (an absent
        # one ends its session with "Bad message format").
        for part in (new.initialize.environment_info, new.initialize.user_info):
            for field in part.DESCRIPTOR.fields:
                part.ClearField(field.name)
            part.SetInParent()
    if message.HasField("git_info_changed"):
        message.git_info_changed.Clear()
    return message.SerializeToString()


def _field_numbers(data: bytes) -> Iterator[int]:
    """The field numbers of a serialised protobuf message's top level, in order."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        yield key >> 3
        wire = key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            pos += length
        elif wire == 5:
            pos += 4
        else:
            return


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return value, pos


class ServerFactsHidden:
    """ASGI middleware: in hosted mode, every message of a session's websocket passes through
    :func:`without_server_facts`."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.hosted = settings().hosted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.hosted or scope.get("type") != "websocket":
            await self.app(scope, receive, send)
            return

        async def send_without_facts(message: Message) -> None:
            if message.get("type") == "websocket.send" and message.get("bytes"):
                message = {**message, "bytes": without_server_facts(message["bytes"])}
            await send(message)

        await self.app(scope, receive, send_without_facts)


def keep_disconnected_sessions_briefly() -> None:
    """In hosted mode, :data:`HOSTED_SESSION_SECONDS` for Streamlit's disconnected sessions
    (read when the runtime starts, after this module is imported)."""
    if settings().hosted and not config.is_manually_set(SESSION_TTL_OPTION):
        config.set_option(SESSION_TTL_OPTION, HOSTED_SESSION_SECONDS, "headforms hosted mode")


def navigation_from_the_start() -> None:
    """The app declares its pages with ``st.navigation`` (app.py): tell Streamlit before the
    first session, which it would otherwise run in its pages-directory mode (app.py has a
    ``pages/`` folder beside it), listing the folder's raw file names in the sidebar for a
    second ("app", "behaviour", ...) until app.py's navigation replaced them."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


navigation_from_the_start()
keep_disconnected_sessions_briefly()
freeze_after_first_run()  # what the first run imports, out of every later full collection
limit_arenas()  # memory freed by one job's thread reused by the next
if settings().hosted:
    try:
        differ = proxy_lists_differ()
    except HeadformsError as exc:  # a malformed hosted setting: stop here, in one line
        differ = str(exc)
    if differ:
        sys.exit(f"headforms: {differ}")

app = st.App("app.py", middleware=[Middleware(HttpRules), Middleware(ServerFactsHidden)])
