"""The view in the URL: every option the sidebar and the page show is one query parameter, so
that a copied link reproduces what the sender saw (model, head, colouring, overlays, filters,
sort, the 3D view and its camera...). What each parameter may hold: :mod:`ui.link_kinds`.

Two ways a parameter is bound, one opening link:

- **By Streamlit** (``bind="query-params"``, the widget's key being the parameter's name):
  Streamlit seeds the widget from the link, writes each change to the URL, leaves a value at
  the widget's default out, keeps the value while the visitor is on other pages and gives it
  back on the browser's Back and Forward. Call :func:`check` before drawing the widget.
- **Here** (:func:`bind`, before drawing the widget), wherever Streamlit's binding would change
  today's links (a shared link must keep opening the same view): a toggle (Streamlit writes
  ``true``/``false``, links say ``1``/``0``); an option shown by a label (Streamlit writes the
  label, ``Symmetric energy`` for ``energy``; the lists of models too, shown with their
  titles); a range (Streamlit repeats the parameter, links say ``3-7``); the model, layer and
  head (Streamlit leaves a default out; a link names them, whatever the default becomes); a
  name that means different things on different pages (``baseline``, ``scores``, ``view``,
  ``models``: Streamlit's one key per name would carry one page's value into another's); and
  what is no widget's value: the 3D camera, the table's range filters and sort. Each of those
  behaviours of Streamlit is shown by ``tests/system/ui/test_streamlit_limits.py``. The link's
  value goes into the widget's session-state key; at the end of each run (:func:`finish`) the
  parameters bound here in that run are written to the URL, each only where it differs from
  its default. After ``st.stop()`` nothing reaches the browser
  any more: a page that ends early calls :func:`stop_page` instead. Keys bound here are kept
  while the visitor is on other pages (Streamlit drops the state of widgets not drawn).

A session's first run reads the URL once (:func:`capture`), within bounds (at most
:data:`MAX_PARAMETERS` parameters, :data:`MAX_VALUES` values each, of at most
:data:`MAX_VALUE_CHARACTERS` characters; beyond them a link is cut, in the URL too, before any
widget reads it). Each parameter is read once, by the first widget that binds it, as strictly as
the widget holds it: a value no widget could hold is corrected, never silently (Streamlit drops
one without a word): a one-line notice (:mod:`ui.notices`) says what was wrong, what is accepted
and what is shown instead; a parameter Streamlit binds is then replaced in the URL and the run
starts again, so that Streamlit seeds its widget with the value shown. A parameter that no
widget of the opened page took is named in a notice. A stranger's link can therefore ask for
nothing the widgets could not.
"""

from __future__ import annotations

from typing import NoReturn

import streamlit as st

from . import notices
from .link_kinds import (
    SEPARATOR,
    Link,
    Refused,
    StateLink,
    camera,
    choice,
    correction,
    flag,
    number,
    shown,
    spec,
    specs,
    subset,
    whole,
    whole_range,
    wholes,
)

PENDING_KEY = "_hf_link_pending"
"""Session state: the opening link's parameters (name -> values) no widget has taken yet."""
CAPTURED_KEY = "_hf_link_captured"
RUN_KEY = "_hf_link_run"
"""Session state: the links bound in this run, by name (what :func:`finish` writes)."""
PAGE_KEY = "_hf_link_page"
"""Session state: the title of this run's page (for a notice), or None once finished."""
KEPT_KEY = "_hf_link_kept"
"""Session state: the session keys of every bound widget (kept across pages)."""
STREAMLIT_BOUND_KEY = "_hf_link_streamlit_bound"
"""Session state: the names Streamlit binds in this run (:func:`check`; left alone here)."""
CHECKED_KEY = "_hf_link_checked"
"""Session state: the links :func:`check` was given in this run, by name (what a test reads to
find a name two pages bind with different defaults or meanings)."""
WRITTEN_KEY = "_hf_link_written"
"""Session state: the names :func:`finish` wrote into the URL in the last run (the opening
link's, before the first)."""

MAX_PARAMETERS = 32
"""Parameters read from a link (the dashboard has fewer); the rest are ignored, with a notice."""
MAX_VALUES = 40
"""Values of one parameter read from a link (a range filter per numeric column at most)."""
MAX_VALUE_CHARACTERS = 8192
"""Longest value read from a link (specs are checked against their own, shorter limit)."""
STREAMLIT_PARAMETERS = frozenset({"embed", "embed_options"})
"""Query parameters that belong to Streamlit itself (left alone)."""


def capture() -> None:
    """Read the URL once per session (its first run), within the bounds above; a link beyond
    them is cut, in the URL too (the run starts again: widgets Streamlit binds read the URL)."""
    state = st.session_state
    if state.get(CAPTURED_KEY):
        return
    state[CAPTURED_KEY] = True
    pending: dict[str, list[str]] = {}
    dropped: list[str] = []
    cut = False
    params = st.query_params
    for name in list(params):
        if name in STREAMLIT_PARAMETERS:
            continue
        if len(pending) >= MAX_PARAMETERS:
            dropped.append(name)
            continue
        values = params.get_all(name)
        kept = [value for value in values[:MAX_VALUES] if len(value) <= MAX_VALUE_CHARACTERS]
        if len(kept) < len(values):
            cut = True
            notices.add(
                f"The link's {shown([name])} has {len(values) - len(kept)} values over the "
                f"limit (at most {MAX_VALUES}, each at most {MAX_VALUE_CHARACTERS} characters): "
                "ignored."
            )
        if kept:
            pending[name] = kept
    if dropped:
        notices.add(
            f"The link has more than {MAX_PARAMETERS} parameters: ignored {shown(dropped)}."
        )
    state[PENDING_KEY] = pending
    state[WRITTEN_KEY] = set(pending)  # what the first run's URL says, until finish() rewrites it
    if dropped or cut:
        params.from_dict(pending)  # nothing is bound yet: the first run has drawn no widget
        st.rerun()


def begin_run() -> None:
    """Call first in each run: forget the last run's links; keep bound widgets' state across
    pages (Streamlit drops the state of widgets a run does not draw)."""
    state = st.session_state
    state[RUN_KEY] = {}
    state[STREAMLIT_BOUND_KEY] = set()
    state[CHECKED_KEY] = {}
    for key in state.get(KEPT_KEY, ()):
        if key in state:
            state[key] = state[key]


def bind(link: Link) -> Link:
    """Call before drawing the widget(s) of ``link``: the opening link's value if it has one
    (checked), else the state's, else the default; ``link`` is written to the URL this run."""
    state = st.session_state
    pending = state.get(PENDING_KEY) or {}
    if link.name in pending:
        link.restore(pending.pop(link.name))
    else:
        link.ensure()
    state.setdefault(RUN_KEY, {})[link.name] = link
    state.setdefault(KEPT_KEY, set()).update(link.keys())
    return link


def check(*bound: StateLink) -> None:
    """Call before drawing widgets Streamlit binds to the URL (each ``key=link.name``,
    ``bind="query-params"``, its default ``link.default``): the opening link's values, each
    read as its ``link`` reads it. One refused (a notice says what is shown instead), written
    otherwise than Streamlit reads it (``n=16,64``) or no longer in the URL is written there,
    and the run starts again (once for all ``bound``), so that Streamlit seeds each widget with
    the value shown."""
    state = st.session_state
    pending = state.get(PENDING_KEY) or {}
    params = st.query_params
    rewritten = False
    for link in bound:
        if link.key != link.name:
            raise ValueError(f"a widget Streamlit binds is keyed by its parameter: {link.key}")
        state.setdefault(STREAMLIT_BOUND_KEY, set()).add(link.name)
        state.setdefault(CHECKED_KEY, {})[link.name] = link
        if link.name not in pending:
            continue
        values = pending.pop(link.name)
        try:
            value, refused = link.read(values), False
        except Refused:
            value, refused = link.accepted(values), True  # with its notice
        written = link.written(value)
        if refused or (written is not None and params.get_all(link.name) != written):
            rewritten = True
            if written is not None:
                params[link.name] = written
            elif link.name in params:
                del params[link.name]
    if rewritten:
        st.rerun()


def query() -> dict[str, str | list[str]]:
    """The query parameters of the links bound so far in this run."""
    out: dict[str, str | list[str]] = {}
    for name, link in st.session_state.get(RUN_KEY, {}).items():
        values = link.values()
        if values is not None:
            out[name] = values[0] if len(values) == 1 else values
    return out


def start_page(title: str) -> None:
    """Call before the page runs (``app.py``): its title, for :func:`finish`."""
    st.session_state[PAGE_KEY] = title


def finish(page_ran: bool = True) -> None:
    """Call when the page has run (``app.py``; :func:`stop_page`): the opening link's
    parameters no widget took are named in a notice (``page_ran``: else they wait for the page),
    and the parameters bound here are written to the URL (Streamlit writes its own). Once per
    run."""
    state = st.session_state
    title = state.pop(PAGE_KEY, None)
    if title is None:
        return
    left = state.get(PENDING_KEY) if page_ran else None
    if page_ran:
        state[PENDING_KEY] = {}
    if left:
        names = ", ".join(shown([name]) for name in left)
        verb = "is not an option" if len(left) == 1 else "are not options"
        notices.add(f"The link's {names} {verb} of the {title} page: ignored.")
    wanted = {name: v if isinstance(v, list) else [v] for name, v in query().items()}
    waiting = set(state.get(PENDING_KEY) or ())  # for the page, which has not run
    params = st.query_params
    gone = state.get(WRITTEN_KEY, set()) - set(wanted) - waiting
    for name in gone - state.get(STREAMLIT_BOUND_KEY, set()):
        if name in params:
            del params[name]
    changed = {name: v for name, v in wanted.items() if params.get_all(name) != v}
    if changed:
        params.update(changed)
    state[WRITTEN_KEY] = set(wanted) | waiting


def stop_page() -> NoReturn:
    """End the page here, as ``st.stop()`` does, once the URL is written (use it instead of
    ``st.stop()`` in a page: after that, nothing reaches the browser)."""
    finish()
    st.stop()
    raise AssertionError("unreachable")  # st.stop raises at its yield point


__all__ = [
    "Link",
    "Refused",
    "SEPARATOR",
    "StateLink",
    "begin_run",
    "bind",
    "camera",
    "capture",
    "check",
    "choice",
    "correction",
    "finish",
    "flag",
    "number",
    "query",
    "shown",
    "spec",
    "specs",
    "start_page",
    "stop_page",
    "subset",
    "whole",
    "whole_range",
    "wholes",
]
