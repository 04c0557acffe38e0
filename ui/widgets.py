"""Small display helpers so every page shows figures, captions and baselines the same way."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import streamlit as st

from . import state

PLOTLY_CONFIG = {"displaylogo": False}


def show_figure(fig: go.Figure, caption: str, key: str | None = None) -> None:
    """A static Plotly figure in its own colours (``theme=None``) and its one-line caption."""
    st.plotly_chart(fig, theme=None, key=key, config=PLOTLY_CONFIG)
    st.caption(caption)


def metric_vs_baseline(
    label: str,
    value: float | str,
    baseline: float | str,
    help: str | None = None,
    digits: int = 3,
) -> None:
    """``st.metric`` of a head's value with its Gaussian baseline as the (neutral) delta."""
    if isinstance(value, str) or isinstance(baseline, str):
        shown, delta, arrow = str(value), f"baseline {baseline}", "off"
    else:
        shown = _number(value, digits)
        if math.isfinite(baseline) and math.isfinite(value):
            delta, arrow = f"{value - baseline:+.{digits}f}", "auto"
        else:
            delta, arrow = "no baseline", "off"
    description = None if isinstance(baseline, str) else f"vs {_number(baseline, digits)}"
    st.metric(
        label,
        shown,
        delta=delta,
        delta_color="off",
        delta_arrow=arrow,
        delta_description=description,
        help=help,
    )


def format_layers(layers: list[int]) -> str:
    """Layer indices as compact ranges: ``[0, 1, 2, 4, 6, 7]`` -> ``"0–2, 4, 6–7"``."""
    runs: list[list[int]] = []
    for layer in sorted(layers):
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def _number(value: float, digits: int) -> str:
    return f"{value:.{digits}f}" if math.isfinite(value) else "—"


def jump_toggle() -> None:
    """The shared 'open the head page on click' switch of clickable plots."""
    st.toggle(
        "Open the head page on click",
        key=state.JUMP_KEY,
        help="Off: a click only selects the head (sidebar, highlight, URL).",
    )


def fit_to_column(fig: go.Figure, zoom_out: float = 1.0) -> go.Figure:
    """Adapt a figure to a half-width column: legend below the plot (and a horizontal colour
    bar below the legend), 3D camera ``zoom_out`` times farther away so that vertex labels stay
    inside a narrow scene. Returns ``fig``."""
    three_d = any(trace.type == "scatter3d" for trace in fig.data)
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "y": -0.02 if three_d else -0.12, "yanchor": "top"}
    )
    colorbar = fig.layout.coloraxis.colorbar
    if fig.layout.coloraxis.colorscale is not None and colorbar.orientation == "h":
        below, margin = (-0.3, 200) if three_d else (-0.45, 250)
        fig.update_layout(coloraxis_colorbar={"y": below, "yanchor": "top"})
        fig.update_layout(margin={"b": margin}, height=(fig.layout.height or 600) + margin - 90)
    if zoom_out != 1.0 and fig.layout.scene.camera.eye is not None:
        eye = fig.layout.scene.camera.eye
        fig.update_layout(
            scene_camera_eye={"x": eye.x * zoom_out, "y": eye.y * zoom_out, "z": eye.z * zoom_out}
        )
    return fig
