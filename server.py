"""The dashboard's server: Streamlit running ``app.py``, behind the HTTP rules of
:mod:`headforms.hosted.http` (host names answered, framing, hosted mode's hidden endpoints).

``streamlit run server.py`` (what ``scripts/start.sh``, ``make run``, the image and ``headforms
serve`` do) serves the same app as ``streamlit run app.py``, with those rules; tests of pages
run ``app.py`` directly (Streamlit's ``AppTest``).

In hosted mode a session whose browser went away is dropped after
:data:`HOSTED_SESSION_SECONDS` (Streamlit keeps it 120 s by default, with what its last run
holds: one visitor opening page after page in new sessions would hold that many at once),
unless ``server.disconnectedSessionTTL`` is set explicitly.
"""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware
from streamlit import config

from headforms.hosted import enabled
from headforms.hosted.http import HttpRules

SESSION_TTL_OPTION = "server.disconnectedSessionTTL"
HOSTED_SESSION_SECONDS = 5
"""Seconds a hosted server keeps a disconnected session (a reconnect within them resumes it)."""


def keep_disconnected_sessions_briefly() -> None:
    """In hosted mode, :data:`HOSTED_SESSION_SECONDS` for Streamlit's disconnected sessions
    (read when the runtime starts, after this module is imported)."""
    if enabled() and not config.is_manually_set(SESSION_TTL_OPTION):
        config.set_option(SESSION_TTL_OPTION, HOSTED_SESSION_SECONDS, "headforms hosted mode")


keep_disconnected_sessions_briefly()
app = st.App("app.py", middleware=[Middleware(HttpRules)])
