"""One-line notices at the top of the page that stay until read: a link's value that was
corrected, a model that could not be opened (and which one is shown instead).

A toast vanishes after a few seconds, and one raised in a run that is followed by a rerun is never
seen; these stay on the page they were raised on (every run draws them again) until the visitor
closes them, opens another page, or changes the value a notice is about. ``app.py`` calls
:func:`begin` first in each run and :func:`show` once the sidebar is drawn, with the container at
the top of the page; a notice the page adds is drawn there at once (after ``st.stop`` nothing
more can be drawn).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from . import guard

NOTICES_KEY = "_hf_notices"
"""Session state: ``{"page": url path they belong to, "items": [(kind, text, about)]}``."""
SLOT_KEY = "_hf_notices_slot"
"""Session state: ``(run number, the placeholder the notices are drawn in)``."""
RUN_KEY = "_hf_notices_run"
CLOSE_KEY = "_hf_close_notices"
"""Key prefix of the close button (one key per redraw within a run)."""

KINDS = ("warning", "error")


def as_text(text: str) -> str:
    """``text`` escaped so that Markdown shows it as it is (no markup, no link, no emoji): a
    notice echoes a link's text (:func:`ui.guard.plain`)."""
    return guard.plain(text, all_markup=True)


def _notices() -> dict[str, Any]:
    return st.session_state.setdefault(NOTICES_KEY, {"page": None, "items": []})


def begin(page: str) -> None:
    """Call first in each run: ``page`` is this run's url path (notices of another page are
    dropped)."""
    state = st.session_state
    notices = _notices()
    if notices["page"] != page:
        notices["page"], notices["items"] = page, []
    state[RUN_KEY] = state.get(RUN_KEY, 0) + 1
    state[SLOT_KEY] = None


def show(container: Any) -> None:
    """Draw the notices in ``container`` (the top of the main area), once the sidebar has set
    this run's values: a notice whose value the visitor has changed since is dropped. Notices
    added after this are drawn there at once."""
    state = st.session_state
    notices = _notices()
    notices["items"] = [item for item in notices["items"] if _still_true(item[2])]
    state[SLOT_KEY] = (state[RUN_KEY], container.empty())
    _draw()


def _still_true(about: tuple[str, Any] | None) -> bool:
    """Whether the value a notice is about is still the one it names (a widget the page has
    not drawn yet holds no value: not changed either)."""
    state = st.session_state
    return about is None or about[0] not in state or state[about[0]] == about[1]


def add(text: str, kind: str = "warning", about: tuple[str, Any] | None = None) -> None:
    """Keep one line (``kind``: ``warning`` for a corrected value, ``error`` for a refusal) and
    draw it at the top of the page. ``about``: ``(session key, value shown)``: the notice goes
    once the visitor changes that value, and replaces an earlier notice about that key (a
    second model that fails is the news, not the first one: once the first was refused, the
    key held the value shown again, so its notice looked still true)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    notices = _notices()
    if about is not None:
        notices["items"] = [
            item for item in notices["items"] if item[2] is None or item[2][0] != about[0]
        ]
    items = notices["items"]
    if not any(item[:2] == (kind, text) for item in items):
        items.append((kind, text, about))
    _draw()


def clear() -> None:
    """Forget every notice (the close button)."""
    _notices()["items"] = []


def _draw() -> None:
    """Draw every notice in this run's placeholder (none yet: the next run draws them): one box
    per kind, a line per notice, and a button that closes them all."""
    slot = st.session_state.get(SLOT_KEY)
    if slot is None or slot[0] != st.session_state.get(RUN_KEY):
        return
    items = _notices()["items"]
    if not items:
        slot[1].empty()
        return
    with slot[1].container(gap="small"):
        row = st.container(horizontal=True, vertical_alignment="center", gap="small")
        with row.container(gap="small"):
            for kind in KINDS:
                lines = [as_text(text) for k, text, _ in items if k == kind]
                if lines:
                    icon = ":material/error:" if kind == "error" else ":material/info:"
                    getattr(st, kind)("  \n".join(lines), icon=icon)
        row.button(
            "",
            key=f"{CLOSE_KEY}_{len(items)}",
            on_click=clear,
            type="tertiary",
            icon=":material/close:",
            help="Close these notices",
        )
