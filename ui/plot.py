"""A Plotly chart whose clicks reach Python (3D scatter, 2D scatter, square-marker heatmaps).

``st.plotly_chart(on_select=...)`` reports nothing for 3D scatters, so this is a small
``st.components.v2`` component: it loads plotly.js once per browser session from the app's
static files (``static/plotly.min.js``, see :mod:`ui.static`), draws the figure with
``Plotly.react`` (``layout.uirevision`` keeps the camera across reruns) and sends the clicked
point's ``customdata`` (``[model, layer, head]``) back with ``setTriggerValue('clicked', ...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from .static import PLOTLY_JS_URL_PATH, ensure_plotly_js

COMPONENT_NAME = "headforms.clickable_plot"
PLOT_ATTRIBUTE = "data-hf-plot"
"""HTML attribute carrying the plot's key (``div[data-hf-plot="simplex"]``), for tests."""

DEFAULT_HEIGHT = 600

_JS = r"""
const PROMISE = "__headformsPlotlyPromise";

function loadPlotly(src) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window[PROMISE]) {
    window[PROMISE] = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.async = true;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        window[PROMISE] = null;
        reject(new Error("could not load plotly.js from " + src));
      };
      document.head.appendChild(script);
    });
  }
  return window[PROMISE];
}

export default function ({ data, parentElement, setTriggerValue }) {
  let root = parentElement.querySelector("div.hf-plot");
  if (!root) {
    root = document.createElement("div");
    root.className = "hf-plot";
    parentElement.appendChild(root);
  }
  root.setAttribute("data-hf-plot", data.key);
  root.style.height = data.height + "px";
  root.hfSend = setTriggerValue;
  const figure = JSON.parse(data.figure);
  const config = { displaylogo: false, responsive: true, scrollZoom: false };
  loadPlotly(data.plotly_src)
    .then((Plotly) => Plotly.react(root, figure.data, figure.layout, config))
    .then(() => {
      if (root.hfBound) return;
      root.hfBound = true;
      root.on("plotly_click", (event) => {
        const point = event && event.points && event.points[0];
        if (!point || point.customdata === undefined || point.customdata === null) return;
        root.hfSend("clicked", Array.from(point.customdata));
      });
    })
    .catch((error) => {
      root.textContent = String(error);
    });
  return () => {
    // Called on unmount (and possibly before a re-render): purge only if really detached.
    setTimeout(() => {
      if (!root.isConnected && window.Plotly) window.Plotly.purge(root);
    }, 0);
  };
}
"""

_CSS = """
div.hf-plot { width: 100%; }
"""

_component = st.components.v2.component(COMPONENT_NAME, js=_JS, css=_CSS, isolate_styles=False)


def plotly_src() -> str:
    """URL path of plotly.js, honouring ``server.baseUrlPath``."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/{PLOTLY_JS_URL_PATH}" if base else f"/{PLOTLY_JS_URL_PATH}"


@dataclass(frozen=True)
class PlotPayload:
    """A figure serialised for the component (cache this rather than the Figure)."""

    json: str
    height: int

    @classmethod
    def of(cls, figure: go.Figure) -> PlotPayload:
        """Serialise ``figure`` (``to_json``; numpy arrays become typed arrays)."""
        return cls(figure.to_json(), int(figure.layout.height or DEFAULT_HEIGHT))


def clickable_plot(
    figure: go.Figure | PlotPayload,
    key: str,
    on_click: Callable[[Sequence[Any]], None] | None = None,
    height: int | None = None,
) -> None:
    """Draw ``figure``; a click on a point with customdata calls ``on_click(customdata)``.

    ``key`` identifies the plot (session state, and ``div[data-hf-plot=key]`` in the page).
    ``on_click`` runs as a widget callback before the next script run, so it may change any
    session state (e.g. :func:`ui.state.select_from_customdata`). ``height`` (px) defaults to
    the figure's ``layout.height``.
    """
    ensure_plotly_js()
    payload = figure if isinstance(figure, PlotPayload) else PlotPayload.of(figure)
    height = height or payload.height
    figure_json = payload.json

    def clicked() -> None:
        state = st.session_state.get(key)  # absent when a forged message sends only the trigger
        value = state.get("clicked") if hasattr(state, "get") else None
        if on_click is not None and value is not None:
            on_click(value)

    _component(
        key=key,
        data={"figure": figure_json, "key": key, "height": height, "plotly_src": plotly_src()},
        height=height,
        on_clicked_change=clicked,
    )
