"""Every Plotly figure of the dashboard: one ``st.components.v2`` component that draws it, sends
clicks back to Python, resolves overlapping markers, exports SVG/PNG, plus a CSV download.

``st.plotly_chart(on_select=...)`` reports nothing for 3D scatters and its toolbar offers one
image format, so figures go through this small component instead: it loads plotly.js from the
app's static files (:mod:`ui.static`: the gl3d bundle when every trace is scatter/scatter3d,
else the full bundle), draws with ``Plotly.react`` (``layout.uirevision`` keeps the camera across
reruns) and:

* on a click, finds every clickable marker drawn within :data:`PICK_RADIUS_PX` of the pointer
  (3D: through the scene camera's projection, 2D: through the axes). One: its ``customdata``
  (``[model, layer, head]``) is sent with ``setTriggerValue('clicked', ...)``. Several: a small
  list of those heads (``meta.choices`` of their trace: name, parity, profile) opens at the
  pointer, and the chosen one is sent;
* adds image downloads to the plot's toolbar (``Plotly.downloadImage``, in the browser: no
  server-side image export): vector SVG and PNG for a figure drawn as SVG, a high-resolution PNG
  (labelled so) for one with a 3D scene or a raster trace, whose SVG would be a picture; and keeps
  titles clear of that toolbar, shrinking a title that would not fit the plot's width (never
  below 11 px).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from headforms.figures.export import (
    HIGH_RESOLUTION_PNG_SCALE,
    exports_as_vector,
    figure_table,
)

from . import guard, links
from .static import GL3D_TRACE_TYPES, ensure_plotly_js

COMPONENT_NAME = "headforms.plot"
PLOT_ATTRIBUTE = "data-hf-plot"
"""HTML attribute carrying the plot's key (``div[data-hf-plot="simplex"]``), for tests."""

DEFAULT_HEIGHT = 450
PICK_RADIUS_PX = 6
"""Markers whose centres are this close to the pointer count as "under" it (marker radius + a
little); more than one opens the chooser."""

TOOLBAR_BAND_PX = 30
"""Height kept free above a title for the plot's toolbar (modebar), which sits top right."""

ASSETS = Path(__file__).resolve().parent
"""The component's browser code lives beside this module as real files, which eslint reads."""

SCRIPTS = (
    "plot_wheel.js",
    "plot_ring.js",
    "plot_labels.js",
    "plot_legend.js",
    "plot_keep.js",
    "plot_title.js",
    "plot.js",
)
"""The component's browser code, joined into one module in this order: the wheel that scrolls
the page, the chooser's ring, the labels of a 3D scene kept inside the plot and apart, the
legend's hidden entries, a rerun's unchanged plot kept as drawn, a title fitted to the plot's
width, then the component (the only one with ``export default``, which calls the functions of
the others)."""

WHEEL_ZOOM_TEXT = "Zoom: Ctrl + scroll (⌘ on a Mac) or pinch; the wheel alone scrolls the page."
"""What a plot that zooms says in its caption (ui/plot_wheel.js: the wheel scrolls the page)."""

MAX_HIDDEN = 40
"""Legend entries a plot reports hidden, at most (a figure has a few)."""

_component = st.components.v2.component(
    COMPONENT_NAME,
    js="\n".join((ASSETS / name).read_text(encoding="utf-8") for name in SCRIPTS),
    css=(ASSETS / "plot.css").read_text(encoding="utf-8"),
    isolate_styles=False,
)


def url_path(path: str) -> str:
    """``/<path>`` below the server's ``server.baseUrlPath``."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/{path}" if base else f"/{path}"


def clear_of_the_toolbar(fig: go.Figure) -> go.Figure:
    """Put the title below the band of the plot's toolbar (top right, shown on hover) and make
    the top margin tall enough for it, so neither covers the other nor the plot."""
    text = str(fig.layout.title.text or "")
    if text:
        lines = re.split(r"<br\s*/?>", text)
        small = sum(1 for line in lines[1:] if "<sup>" in line)
        needed = TOOLBAR_BAND_PX + 24 * (len(lines) - small) + 15 * small + 12
        fig.update_layout(
            title={"yref": "container", "y": 1, "yanchor": "top", "pad": {"t": TOOLBAR_BAND_PX}},
            margin_t=max(fig.layout.margin.t or 0, needed),
        )
    return fig


@dataclass(frozen=True)
class PlotPayload:
    """A figure serialised for the component (cache this rather than the Figure)."""

    json: str
    height: int
    title: str = ""
    vector: bool = True
    """Whether its SVG export is vector (:func:`headforms.figures.export.exports_as_vector`);
    otherwise the toolbar offers a high-resolution PNG only."""
    legend: tuple[str, ...] = ()
    """The names of its legend entries (what a link's ``hide=`` may name)."""
    frames: tuple[str, ...] = ()
    """The names of its animation frames, in order (what a link's slider position may name)."""

    @classmethod
    def of(cls, figure: go.Figure) -> PlotPayload:
        """Serialise ``figure`` (``to_json``; numpy arrays become typed arrays)."""
        cached = getattr(figure, "_hf_payload", None)
        if cached is not None:  # a cached figure shown again: serialise it once
            return cached
        clear_of_the_toolbar(figure)
        first_line = re.split(r"<br\s*/?>", str(figure.layout.title.text or ""))[0]
        title = re.sub(r"<[^>]+>", "", first_line).strip()
        height = int(figure.layout.height or DEFAULT_HEIGHT)
        legend = tuple(
            dict.fromkeys(
                str(trace.name)
                for trace in figure.data
                if trace.name and trace.showlegend is not False
            )
        )
        frames = tuple(str(frame.name) for frame in figure.frames or ())
        payload = cls(figure.to_json(), height, title, exports_as_vector(figure), legend, frames)
        figure._hf_payload = payload
        return payload

    def table(self) -> pd.DataFrame:
        """The figure's data points (:func:`headforms.figures.export.figure_table`)."""
        return figure_table(go.Figure(json.loads(self.json)))


TableSource = pd.DataFrame | Callable[[], pd.DataFrame] | None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "figure"


def clickable_plot(
    figure: go.Figure | PlotPayload,
    key: str,
    on_click: Callable[[Sequence[Any]], None] | None = None,
    height: int | None = None,
    caption: str | None = None,
    data: TableSource = None,
    filename: str | None = None,
    scroll_zoom: bool = False,
    camera_key: str | None = None,
    hidden_key: str | None = None,
    frame_key: str | None = None,
) -> None:
    """Draw ``figure``; a click on a point with customdata calls ``on_click(customdata)``.

    ``key`` identifies the plot (session state, and ``div[data-hf-plot=key]`` in the page).
    ``on_click`` runs as a widget callback before the next script run, so it may change any
    session state (e.g. :func:`ui.state.select_from_customdata`). ``height`` (px) defaults to
    the figure's ``layout.height``. Below the plot: ``caption`` and a CSV download of ``data``
    (a table or a function returning one; default: the figure's points, see
    :meth:`PlotPayload.table`), named ``filename`` (default: the key). ``scroll_zoom``: the
    mouse wheel with Ctrl (or ⌘) held zooms the plot, which the caption says
    (:data:`WHEEL_ZOOM_TEXT`); the wheel alone always scrolls the page. ``camera_key``: the
    session key of a 3D figure's camera (``{"eye": {x, y, z}, "center": ..., "up": ...}``, or
    None for the figure's own): the figure is drawn with it, and each rotation or zoom of the
    visitor's is stored in it (so it survives reruns, and :func:`ui.links.camera` puts it in
    the URL).
    ``hidden_key``: the session key of the legend entries hidden (a list of their names, see
    :attr:`PlotPayload.legend`): the figure is drawn with them hidden, and each legend click's
    outcome is stored in it (:func:`hidden_link` puts it in the URL).
    ``frame_key``: the session key of an animated figure's frame shown (its name, see
    :attr:`PlotPayload.frames`, or None for the figure's own start): the figure is drawn at it,
    and where the visitor stops the slider or Play is stored in it (:func:`frame_link` puts it
    in the URL).
    """
    assets = ensure_plotly_js()
    payload = figure if isinstance(figure, PlotPayload) else PlotPayload.of(figure)
    height = height or payload.height
    stem = _slug(filename or key)

    def clicked() -> None:
        state = st.session_state.get(key)  # absent when a forged message sends only the trigger
        value = state.get("clicked") if hasattr(state, "get") else None
        if on_click is not None and value is not None:
            on_click(value)

    def moved() -> None:
        state = st.session_state.get(key)
        value = guard.camera(state.get("camera") if hasattr(state, "get") else None)
        if camera_key is not None and value is not None:
            st.session_state[camera_key] = value

    def toggled() -> None:
        state = st.session_state.get(key)
        value = state.get("hidden") if hasattr(state, "get") else None
        if hidden_key is not None and isinstance(value, list):
            names = set(value[:MAX_HIDDEN])
            st.session_state[hidden_key] = [name for name in payload.legend if name in names]

    def stepped() -> None:
        state = st.session_state.get(key)
        value = state.get("frame") if hasattr(state, "get") else None
        if frame_key is not None and isinstance(value, str) and value in payload.frames:
            st.session_state[frame_key] = value

    listeners = {"on_camera_change": moved} if camera_key is not None else {}
    if hidden_key is not None:
        listeners["on_hidden_change"] = toggled
    if frame_key is not None:
        listeners["on_frame_change"] = stepped
    frame = st.session_state.get(frame_key) if frame_key else None

    _component(
        key=key,
        data={
            "figure": payload.json,
            "key": key,
            "attribute": PLOT_ATTRIBUTE,
            "height": height,
            "filename": stem,
            "scroll_zoom": bool(scroll_zoom),
            "vector": payload.vector,
            "png_scale": HIGH_RESOLUTION_PNG_SCALE,
            "pick_radius": PICK_RADIUS_PX,
            "camera": st.session_state.get(camera_key) if camera_key else None,
            "report_camera": camera_key is not None,
            "hidden": list(st.session_state.get(hidden_key) or []) if hidden_key else [],
            "report_hidden": hidden_key is not None,
            "frame": frame if frame in payload.frames else None,
            "report_frame": frame_key is not None,
            "plotly": {
                "full": url_path(assets.full),
                "gl3d": url_path(assets.gl3d) if assets.gl3d else None,
                "gl3d_types": list(GL3D_TRACE_TYPES),
            },
        },
        height=height,
        on_clicked_change=clicked,
        **listeners,
    )

    def csv() -> str:
        table = data() if callable(data) else data
        return (table if table is not None else payload.table()).to_csv(index=False)

    if scroll_zoom:
        caption = f"{caption} {WHEEL_ZOOM_TEXT}" if caption else WHEEL_ZOOM_TEXT
    below = st.container(horizontal=True, vertical_alignment="top", gap="small")
    if caption:
        below.caption(caption)
    below.download_button(
        "CSV",
        data=csv,
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}__csv",
        icon=":material/download:",
        type="tertiary",
        on_click="ignore",
        help="The data of this figure as a CSV table. Images: the toolbar's SVG and PNG buttons.",
    )


def figure_key(fig: go.Figure | PlotPayload, caption: str) -> str:
    """A stable key for a figure shown without one (its title and caption)."""
    title = fig.title if isinstance(fig, PlotPayload) else str(fig.layout.title.text or "")
    return "fig-" + hashlib.sha1(f"{title}\n{caption}".encode()).hexdigest()[:12]


def frame_link(name: str, key: str, payload: PlotPayload, start: str, what: str) -> None:
    """Bind the frame shown by the plot drawn with ``frame_key=key`` (an animated figure's
    slider position) to the URL parameter ``name``, before drawing it: a link opens the figure
    where the sender had moved it; ``start`` (the figure's own first frame) is left out of it,
    and a value that is not one of its frames is corrected with a notice naming ``what``. A
    figure that starts elsewhere (a new RoPE position in the sidebar, a new last checkpoint of a
    run that records) is shown at its new start if the slider was at the old one (it follows),
    else where the visitor left it, if the figure still has that frame."""
    state = st.session_state
    started = f"{key}:start"
    shown, before = state.get(key), state.get(started)
    if shown not in payload.frames or (before is not None and shown == before != start):
        state.pop(key, None)
    state[started] = start
    links.bind(links.choice(name, key, list(payload.frames), start, what))


def hidden_link(name: str, key: str, payload: PlotPayload) -> None:
    """Bind the legend entries hidden in the plot drawn with ``hidden_key=key`` to the URL
    parameter ``name`` (``hide=Type I−``; by default none), before drawing it: a link keeps
    what the sender hid, and names only entries of this figure."""
    links.bind(links.subset(name, key, list(payload.legend), [], "legend entries"))
