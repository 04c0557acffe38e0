"""The shared sidebar (model, RoPE position, layer, head, colour-by) and the page context.

``app.py`` calls :func:`render_sidebar` once per run, before the page, and hands the context it
returns to the page it runs (:func:`page_scope`: for that run only, never in session state);
pages call :func:`page_context` to get the loaded model and the selection of this run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import streamlit as st

from headforms import BUNDLED_MODELS, DEFAULT_MODEL, ModelAnalysis, ModelCard
from headforms.figures.style import head_name
from headforms.forms import PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from headforms.options import MAX_ROPE_POSITION
from headforms.sources.specs import short_name

from . import guard, links, notices, state
from .loading import load_or_message
from .tables import first_model, sibling_models

LAST_SPEC_KEY = "_hf_last_good_spec"
"""The last spec that loaded (what a refused spec falls back to)."""
REVERT_KEY = "_hf_revert"
"""Session state: ``{key: value}`` put back before the widgets are drawn (what failed to load)."""


def tab_title(page: str, context: PageContext | None) -> str:
    """The browser tab's title: the head and the model first (tabs are narrow), then the page."""
    if context is None:
        return f"{page} · headforms"
    return f"{head_name(context.layer, context.head)} · {context.spec} · {page} · headforms"


@dataclass(frozen=True)
class PageContext:
    """What every page needs: the loaded analysis and the current selection."""

    spec: str
    rope_position: int
    layer: int
    head: int
    color_by: str
    analysis: ModelAnalysis
    tolerance: float = state.DEFAULTS[state.TOLERANCE_KEY]
    """Type II tolerance of the parity shares (Table 2, Figure 12): c_S + d_S <= tolerance."""

    @property
    def card(self) -> ModelCard:
        """The model card of the loaded model."""
        return self.analysis.card

    @property
    def heads(self) -> pd.DataFrame:
        """The per-head table (one row per query head, layer-major)."""
        return self.analysis.heads

    @property
    def row(self) -> int:
        """Row of the selected head in ``heads`` and in every ``spectra`` array."""
        return self.analysis.row(self.layer, self.head)

    @property
    def head_row(self) -> pd.Series:
        """The selected head's row of the per-head table."""
        return self.heads.iloc[self.row]

    @property
    def selected(self) -> tuple[str, int, int]:
        """``(model, layer, head)`` as carried by clickable points' customdata."""
        return (self.spec, self.layer, self.head)

    @property
    def model(self) -> tuple[str, str, int]:
        """``(spec, weights' fingerprint, RoPE position)``: what a cached figure of this model is
        keyed by (:func:`ui.compute.cached`), so that it follows the weights, not the name."""
        return (self.spec, self.card.fingerprint, self.rope_position)

    @property
    def label(self) -> str:
        """``Layer 3 · Head 5``: how a head is named everywhere in the UI."""
        return head_label(self.layer, self.head)


def head_label(layer: int, head: int) -> str:
    """The UI name of a head (also what the browser test looks for)."""
    return f"Layer {layer} · Head {head}"


def model_label(spec: str) -> str:
    """A bundled model's title after its short name; a published table's model by its name and
    the table file's (not the table's whole path); other specs as typed."""
    bundled = BUNDLED_MODELS.get(spec)
    return f"{spec} — {bundled.title}" if bundled else short_name(spec)


MODEL_PLACEHOLDER = "bundled name, hub id, local path or table file"
"""What a box that takes a model accepts."""


def other_models(
    where: Any, label: str, key: str, exclude: str | None, help: str | None = None
) -> list[str]:
    """A multiselect of further models in ``where``: the bundled ones (but ``exclude``) and any
    typed or linked before (``st.session_state[key]``, bound by ui.links), new names accepted."""
    options = [*(name for name in BUNDLED_MODELS if name != exclude), *st.session_state[key]]
    return where.multiselect(
        label,
        list(dict.fromkeys(options)),
        key=key,
        format_func=model_label,
        accept_new_options=True,
        placeholder=MODEL_PLACEHOLDER,
        help=help,
    )


def model_options(current: str) -> list[str]:
    """Bundled models, plus the current spec if it is a hub id or a path, plus every model of
    the published table the current spec comes from (linear in their number)."""
    return list(dict.fromkeys(s for s in [*BUNDLED_MODELS, current, *sibling_models(current)] if s))


def render_sidebar() -> PageContext | None:
    """Draw the sidebar, load the model (with progress) and return the context; None when not
    even the last good model loads.

    A model (or RoPE position) that fails to load leaves the page and the sidebar usable: the
    last one that loaded (else the default model; RoPE position 0) is shown instead, with one
    line at the top of the page saying what was wrong (:mod:`ui.notices`).
    """
    guard.protect_session()
    state.init_state()
    ss = st.session_state
    ss.update(ss.pop(REVERT_KEY, {}))  # before the widgets: what failed to load last run
    links.bind(links.spec("model", state.MODEL_KEY, DEFAULT_MODEL))
    typed = guard.spec_or_none(ss[state.MODEL_KEY])  # too long or not text: the last good one
    spec = typed if typed is not None else ss.get(LAST_SPEC_KEY, DEFAULT_MODEL)
    ss[state.MODEL_KEY] = first_model(spec)  # a table: its models
    sidebar = st.sidebar
    sidebar.selectbox(
        "Model",
        model_options(ss[state.MODEL_KEY]),
        key=state.MODEL_KEY,
        # the spec alone ("name — title" was cut at the sidebar's width; the title is in the
        # caption below the picker), a published table's model by its name before its file's
        format_func=short_name,
        accept_new_options=True,
        help="A bundled model (works offline), or type a hub id (gpt2, org/name@revision), "
        "a local path (a directory with config.json, or a .gguf file), or a published per-head "
        "table (.csv/.parquet: its models are listed here) and press Enter.",
    )
    spec = ss[state.MODEL_KEY]
    fallback = ss.get(LAST_SPEC_KEY, DEFAULT_MODEL)
    base = _load_or_fall_back(spec, 0, state.MODEL_KEY, fallback, fallback)
    if base is None:
        return None
    ss[LAST_SPEC_KEY] = spec
    rotary = base.card.rotary
    links.check(_rope_link(base.card))
    if not rotary and ss.get(state.ROPE_KEY, 0) != 0:  # the last model's
        ss[state.ROPE_KEY] = 0
    rope = sidebar.number_input(
        "RoPE relative position d",
        min_value=-MAX_ROPE_POSITION,
        max_value=MAX_ROPE_POSITION,
        value=state.DEFAULTS[state.ROPE_KEY],
        step=1,
        key=state.ROPE_KEY,
        bind="query-params",
        disabled=not rotary,
        help="The query sits d tokens after the key; d = 0 is the paper's setting "
        "(rotation = identity)."
        if rotary
        else f"Only for RoPE models; this model uses {base.card.positional} positions.",
    )
    analysis = base if rope == 0 else _load_or_fall_back(spec, rope, state.ROPE_KEY, 0, "d = 0")
    if analysis is None:
        return None
    card = analysis.card
    for key, name, count in (
        (state.LAYER_KEY, "layer", card.n_layers),
        (state.HEAD_KEY, "head", card.n_heads),
    ):
        what = f"a {name} of {links.shown([spec])}"
        links.bind(links.whole(name, key, 0, count - 1, 0, what, always=True))
    clamped = state.clamp_selection(card.n_layers, card.n_heads)
    if clamped:
        st.toast(clamped, icon=":material/info:")
    # No min/max on these inputs: a number typed out of range would stay in the box, marked
    # invalid, while the page shows another head; instead it is clamped above, with a notice.
    left, right = sidebar.columns(2)
    left.number_input("Layer", step=1, key=state.LAYER_KEY, help=f"0 to {card.n_layers - 1}")
    right.number_input("Head", step=1, key=state.HEAD_KEY, help=f"0 to {card.n_heads - 1}")
    links.bind(
        links.choice(
            "color",
            state.COLOR_KEY,
            list(state.COLOR_CHOICES),
            state.DEFAULTS[state.COLOR_KEY],
            "a colouring",
            lambda value: f"colour by {value}",
        )
    )
    sidebar.selectbox(
        "Colour by",
        list(state.COLOR_CHOICES),
        key=state.COLOR_KEY,
        format_func=state.COLOR_CHOICES.__getitem__,
        help="Colour of the heads on the simplex and the triangle (marker shape = parity).",
    )
    links.check(
        links.number(
            "tol",
            state.TOLERANCE_KEY,
            0.0,
            1.0,
            state.DEFAULTS[state.TOLERANCE_KEY],
            "a Type II tolerance",
            "tolerance",
        )
    )
    sidebar.number_input(
        "Type II tolerance (c_S + d_S ≤)",
        min_value=0.0,
        max_value=1.0,
        step=0.005,
        format="%.3f",
        value=state.DEFAULTS[state.TOLERANCE_KEY],
        key=state.TOLERANCE_KEY,
        bind="query-params",
        help="Parity shares (Table 2, Figure 12, Overview and Compare) count a head as Type II "
        f"when c_S + d_S is at most this; the paper uses {PARITY_TYPE_II_TEXT} = "
        f"{PARITY_TYPE_II_THRESHOLD:.3f}. Markers on the plots keep the paper's "
        f"{PARITY_TYPE_II_TEXT}.",
    )
    links.bind(links.flag("open", state.JUMP_KEY, True, "open head on click"))
    sidebar.caption(
        f"{guard.plain(card.name)}: {card.n_layers} layers × {card.n_heads} heads, "
        f"N = {card.model_dim or '?'}, "
        f"n = {card.head_dim or '?'}."
    )
    return PageContext(
        spec=spec,
        rope_position=rope,
        layer=int(ss[state.LAYER_KEY]),
        head=int(ss[state.HEAD_KEY]),
        color_by=str(ss[state.COLOR_KEY]),
        analysis=analysis,
        tolerance=float(ss[state.TOLERANCE_KEY]),
    )


def _rope_link(card: ModelCard) -> links.StateLink:
    """The ``rope`` parameter: a whole number within the engine's range, and 0 for a model
    without RoPE."""
    link = links.whole(
        "rope",
        state.ROPE_KEY,
        -MAX_ROPE_POSITION,
        MAX_ROPE_POSITION,
        0,
        "a RoPE relative position",
        "RoPE position d =",
    )
    if card.rotary:
        return link
    read_whole = link.read

    def read(values: list[str]) -> int:
        if read_whole(values):
            raise links.Refused(
                f"applies to RoPE models only ({links.shown([card.spec])} uses "
                f"{card.positional} positions)",
                0,
            )
        return 0

    return replace(link, read=read)


def _load_or_fall_back(
    spec: str, rope: int, key: str, fallback: object, shown: str
) -> ModelAnalysis | None:
    """The analysis of ``spec`` at ``rope``. If it fails and ``st.session_state[key]`` can go back
    to ``fallback``, the failure becomes one notice ("... showing ``shown`` instead") and the
    script reruns with ``fallback``; if it cannot, the failure is one ``st.error`` and None."""
    analysis, message = load_or_message(spec, rope)
    if analysis is not None:
        return analysis
    if st.session_state.get(key) == fallback:
        st.error(guard.plain(message), icon=":material/error:")
        return None
    notices.add(f"{message} (showing {shown} instead)", "error", about=(key, fallback))
    st.session_state[REVERT_KEY] = {key: fallback}
    st.rerun()


_NO_CONTEXT = object()
_page_context: ContextVar[Any] = ContextVar("headforms_page_context", default=_NO_CONTEXT)
"""The context ``app.py`` handed to the page it runs now (a script run is one thread)."""


@contextmanager
def page_scope(context: PageContext) -> Iterator[None]:
    """Run the page within this block with ``context`` (what :func:`page_context` returns)."""
    token = _page_context.set(context)
    try:
        yield
    finally:
        _page_context.reset(token)


def page_context() -> PageContext:
    """The context of this run (drawn by ``app.py``); stops the page if the model failed."""
    _leave_legacy_page_mode()
    context = _page_context.get()
    if context is _NO_CONTEXT:  # a page script run on its own, without app.py
        context = render_sidebar()
    if context is None:
        st.stop()
    return context


def _leave_legacy_page_mode() -> None:
    """If this page runs without ``app.py``, rerun it through ``st.navigation``.

    Streamlit runs ``pages/*.py`` directly (its legacy multipage mode) while no run of this
    server process has called ``st.navigation`` yet: the first request of a fresh server when
    it opens a page URL, and every ``AppTest`` run. Leaving that mode and rerunning makes the
    same page run inside ``app.py``, with the shared sidebar, the navigation menu and the URL
    written (tests/system/ui/test_streamlit_limits.py shows the mode, and fails once Streamlit
    drops it).
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
