"""One-line notices at the top of the page that stay until read: a link's value that was
corrected, a model that could not be opened (and which one is shown instead).

A toast vanishes after a few seconds, and one raised in a run that is followed by a rerun is never
seen; these stay on the page they were raised on (every rerun draws them again) until the visitor
closes them or opens another page. ``app.py`` calls :func:`begin` first in each run and draws them
above the page with :func:`show` last.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

NOTICES_KEY = "_hf_notices"
"""Session state: ``{"page": url path shown on, or None until drawn, "items": [(kind, text)]}``."""

KINDS = ("warning", "error")
MARKDOWN = re.compile(r"([\\`*_\[\]<>$~:|#])")
"""Characters Streamlit's Markdown would read as markup (a notice echoes a link's text)."""


def as_text(text: str) -> str:
    """``text`` escaped so that Markdown shows it as it is (no markup, no link, no emoji)."""
    return MARKDOWN.sub(r"\\\1", text)


def _notices() -> dict[str, Any]:
    return st.session_state.setdefault(NOTICES_KEY, {"page": None, "items": []})


def add(text: str, kind: str = "warning") -> None:
    """Keep one line (``kind``: ``warning`` for a corrected value, ``error`` for a refusal)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    items = _notices()["items"]
    if (kind, text) not in items:
        items.append((kind, text))


def clear() -> None:
    """Forget every notice (the close button)."""
    st.session_state[NOTICES_KEY] = {"page": None, "items": []}


def current() -> list[tuple[str, str]]:
    """The notices kept now, as ``(kind, text)``."""
    return list(_notices()["items"])


def begin(page: str) -> None:
    """Call at the start of each run: notices drawn on another page than ``page`` (this run's
    url path) are dropped."""
    if _notices()["page"] not in (None, page):
        clear()


def show(container: Any, page: str) -> None:
    """Draw the notices in ``container`` (the top of the main area), at the end of the run, so
    that those raised by the page itself are drawn too."""
    notices = _notices()
    if not notices["items"]:
        return
    notices["page"] = page
    with container:
        for kind, text in notices["items"]:
            icon = ":material/error:" if kind == "error" else ":material/info:"
            getattr(st, kind)(as_text(text), icon=icon)
        st.button(
            "Close these notices",
            key="_hf_close_notices",
            on_click=clear,
            type="tertiary",
            icon=":material/close:",
        )
