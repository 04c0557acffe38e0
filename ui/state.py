"""Session state shared by every page: the model, RoPE position, selected head and colouring.

One key per fact (the ``*_KEY`` constants). The sidebar widgets own these keys; pages and
click callbacks change the selection only through :func:`select_head` / :func:`step_head`,
which run as widget callbacks (before the sidebar widgets are drawn). The URL mirrors the
state (:mod:`ui.links`: ``?model=...&layer=...&head=...`` and every option that is not at its
default) so a copied link opens the same view. The key of a widget Streamlit binds to the URL
is the parameter's name (``rope``, ``tol``, ``positions``): :data:`STREAMLIT_BOUND`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import streamlit as st

from headforms import DEFAULT_MODEL
from headforms.forms import PARITY_TYPE_II_THRESHOLD

from . import guard, links

MODEL_KEY = "hf_model"
ROPE_KEY = "rope"
LAYER_KEY = "hf_layer"
HEAD_KEY = "hf_head"
COLOR_KEY = "hf_color_by"
OVERLAY_KEY = "hf_overlay"
JUMP_KEY = "hf_jump_on_click"
FRAME_KEY = "hf_simplex_frame"
TOLERANCE_KEY = "tol"
PENDING_JUMP_KEY = "_hf_pending_jump"
POSITIONS_KEY = "positions"
"""The RoPE positions of the RoPE positions page (the Head page's curves follow them)."""
MOTION_FIGURE_KEY = "hf_motion_figure"
MOTION_FRAME_KEY = "hf_motion_frame"
MOTION_PATHS_KEY = "hf_motion_every_path"
"""The figure (simplex or triangle), 3D framing and every-path switch of the Motion pages (RoPE
positions, Training run, Model diff): one setting for the three."""
SERIES_KEY = "hf_series"
DIFF_KEY = "hf_diff_b"
LOADED_KEY = "_hf_loaded_models"
"""spec -> (layers, heads) of every model this session loaded (what a click may select)."""

COLOR_CHOICES: dict[str, str] = {
    "parity": "Parity type",
    "layer": "Layer",
    "energy": "Symmetric energy",
    "pairing": "Pairing score",
}
"""Colour-by options of the simplex and triangle (value -> label)."""

DEFAULTS: dict[str, Any] = {
    MODEL_KEY: DEFAULT_MODEL,
    ROPE_KEY: 0,
    LAYER_KEY: 0,
    HEAD_KEY: 0,
    COLOR_KEY: "parity",
    OVERLAY_KEY: [],
    JUMP_KEY: True,
    FRAME_KEY: "simplex",
    TOLERANCE_KEY: PARITY_TYPE_II_THRESHOLD,
}


STREAMLIT_BOUND = frozenset({ROPE_KEY, TOLERANCE_KEY})
"""Keys of the sidebar's widgets Streamlit binds to the URL: each widget holds its default
(``DEFAULTS``) itself, so nothing fills these keys before it is drawn."""


def init_state() -> None:
    """Fill missing keys with defaults; on a session's first run, read the URL
    (:func:`ui.links.capture`: its values are applied as the widgets are bound)."""
    state = st.session_state
    links.capture()
    links.begin_run()  # also keeps the state of page widgets the visitor has left
    for key, value in DEFAULTS.items():
        if key not in state and key not in STREAMLIT_BOUND:
            state[key] = list(value) if isinstance(value, list) else value


def clamp_selection(n_layers: int, n_heads: int) -> str | None:
    """Keep layer and head inside the loaded model (after a model switch, or a
    number typed out of range); returns what was changed, for a notice, or None."""
    state = st.session_state
    notes = []
    for key, name, count in ((LAYER_KEY, "layer", n_layers), (HEAD_KEY, "head", n_heads)):
        value = guard.whole_number(state.get(key, 0), -guard.MAX_INDEX, guard.MAX_INDEX) or 0
        clamped = min(max(value, 0), count - 1)
        state[key] = clamped
        if clamped != value:
            notes.append(f"{name} {value} does not exist (0–{count - 1}): showing {name} {clamped}")
    return "; ".join(notes).capitalize() + "." if notes else None


HEAD_PATTERN = re.compile(
    r"^\s*(?:l(?:ayer)?\s*)?(\d+)\s*"
    r"(?:[·.,:/-]\s*(?:h(?:ead)?\s*)?|h(?:ead)?\s*|\s(?:h(?:ead)?\s*)?)(\d+)\s*$",
    re.IGNORECASE,
)
"""``L3H5``, ``L3·H5``, ``3.5``, ``3,5``, ``3 5``, ``layer 3 head 5``..."""


def parse_head(text: str, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The (layer, head) typed in a "go to" box; ValueError with a one-line message otherwise."""
    match = HEAD_PATTERN.match(text or "")
    if not match:
        raise ValueError(
            f"Type a head as L3H5 or 3.5 (layer 0–{n_layers - 1}, head 0–{n_heads - 1})."
        )
    layer, head = int(match[1]), int(match[2])
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(
            f"L{layer}·H{head} does not exist: layers 0–{n_layers - 1}, heads 0–{n_heads - 1}."
        )
    return layer, head


def select_head(spec: str, layer: int, head: int, jump: bool = False) -> None:
    """Select a head (callback-safe). ``jump``: open the head page on the next run."""
    state = st.session_state
    state[MODEL_KEY] = spec
    state[LAYER_KEY] = int(layer)
    state[HEAD_KEY] = int(head)
    if jump and state.get(JUMP_KEY, True):
        state[PENDING_JUMP_KEY] = True


def select_layer_head(layer: int, head: int) -> None:
    """Select a layer and head of the model the page shows, leaving the sidebar's model as it
    is and opening no other page (callback-safe): a head of a training run's record."""
    state = st.session_state
    state[LAYER_KEY] = int(layer)
    state[HEAD_KEY] = int(head)


def remember_model(spec: str, n_layers: int, n_heads: int) -> None:
    """Record a model this session loaded (clicks may select its heads)."""
    st.session_state.setdefault(LOADED_KEY, {})[spec] = (n_layers, n_heads)


def loaded_models() -> dict[str, tuple[int, int]]:
    """spec -> (layers, heads) of the models this session loaded."""
    return st.session_state.get(LOADED_KEY, {})


def select_from_customdata(point: Sequence[Any] | None, jump: bool = True) -> None:
    """Select the head of a clicked point whose customdata is ``[model, layer, head]`` (a head
    of a model this session loaded; anything else is ignored with one toast line)."""
    target = guard.click_target(point, loaded_models())
    if target is not None:
        select_head(*target, jump=jump)


def stepped(layer: int, head: int, step: int, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The head ``step`` heads after ``(layer, head)`` in layer-major order, wrapping at the
    ends (what "Next" and "Previous" select)."""
    index = (int(layer) * n_heads + int(head) + step) % (n_layers * n_heads)
    return divmod(index, n_heads)


def step_head(step: int, n_layers: int, n_heads: int) -> None:
    """Move the selection ``step`` heads in layer-major order, wrapping at the ends."""
    state = st.session_state
    state[LAYER_KEY], state[HEAD_KEY] = stepped(
        state[LAYER_KEY], state[HEAD_KEY], step, n_layers, n_heads
    )


def take_pending_jump() -> bool:
    """True once after a click asked to open the head page."""
    return bool(st.session_state.pop(PENDING_JUMP_KEY, False))
