"""Small display helpers so every page shows figures, captions and baselines the same way."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from . import state
from .plot import PlotPayload, TableSource, clickable_plot, figure_key

if TYPE_CHECKING:
    from .sidebar import PageContext

GOTO_KEY = "hf_goto_head"
GOTO_ERROR_KEY = "_hf_goto_error"


def show_figure(
    fig: go.Figure | PlotPayload,
    caption: str,
    key: str | None = None,
    data: TableSource = None,
    filename: str | None = None,
) -> None:
    """A figure as drawn everywhere in the dashboard (:func:`ui.plot.clickable_plot`: SVG and
    PNG in its toolbar), its one-line caption and a CSV download of ``data`` (default: the
    figure's points). ``key`` defaults to one derived from the title and caption."""
    clickable_plot(
        fig, key=key or figure_key(fig, caption), caption=caption, data=data, filename=filename
    )


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
        shown = number(value, digits)
        delta, arrow = baseline_delta(value, baseline, digits)
    description = None if isinstance(baseline, str) else f"vs {number(baseline, digits)}"
    st.metric(
        label,
        shown,
        delta=delta,
        delta_color="off",
        delta_arrow=arrow,
        delta_description=description,
        help=help,
    )


def baseline_delta(value: float, baseline: float, digits: int = 3) -> tuple[str, str]:
    """The delta of a value from its baseline as shown (signed, ``digits`` decimals) and its
    arrow ("auto" up or down, "off"): a difference that rounds to zero is ``0.000`` with no arrow,
    never "↓ -0.000"."""
    if not (math.isfinite(baseline) and math.isfinite(value)):
        return "no baseline", "off"
    difference = round(value - baseline, digits)
    if difference == 0:
        return f"{0:.{digits}f}", "off"
    return f"{difference:+.{digits}f}", "auto"


def format_layers(layers: list[int]) -> str:
    """Layer indices as compact ranges: ``[0, 1, 2, 4, 6, 7]`` -> ``"0–2, 4, 6–7"``."""
    runs: list[list[int]] = []
    for layer in sorted(layers):
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def number(value: float, digits: int = 3) -> str:
    """A statistic as shown: ``digits`` decimals, "—" when it is missing (undefined for this
    head, e.g. the lobe ratio of a head without a positive lobe), never a negative zero."""
    if not math.isfinite(value):
        return "—"
    text = f"{value:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text


def jump_toggle() -> None:
    """The shared 'open the head page on click' switch of clickable plots."""
    st.toggle(
        "Open head on click",
        key=state.JUMP_KEY,
        help="Off: a click only selects the head (sidebar, highlight, URL).",
    )


def _go_to(spec: str, n_layers: int, n_heads: int) -> None:
    """Callback of :func:`go_to_head_box`: select the typed head, or keep a one-line error."""
    text = st.session_state.get(GOTO_KEY, "")
    if not str(text).strip():
        return
    try:
        layer, head = state.parse_head(str(text), n_layers, n_heads)
    except ValueError as error:
        st.session_state[GOTO_ERROR_KEY] = str(error)
        return
    state.select_head(spec, layer, head)
    st.session_state[GOTO_KEY] = ""


def go_to_head_box(ctx: PageContext) -> None:
    """A "go to L·H" box: typing ``L3H5`` (or ``3.5``) and Enter selects that head, which every
    view then highlights; a head that does not exist gets a one-line notice."""
    st.text_input(
        "Go to head",
        key=GOTO_KEY,
        placeholder="L3H5 or 3.5",
        on_change=_go_to,
        args=(ctx.spec, ctx.card.n_layers, ctx.card.n_heads),
        help=f"Layer 0–{ctx.card.n_layers - 1}, head 0–{ctx.card.n_heads - 1}; Enter selects it.",
    )
    error = st.session_state.pop(GOTO_ERROR_KEY, None)
    if error:
        st.toast(error, icon=":material/error:")


def fit_to_column(fig: go.Figure, zoom_out: float = 1.0) -> go.Figure:
    """Adapt a figure to a narrow column: legend below the plot, a colour bar (if any) upright
    at its right (so a long legend never runs into it), 3D camera ``zoom_out`` times farther
    from the point it looks at, so that vertex labels stay inside a narrow scene. Returns
    ``fig``."""
    three_d = any(trace.type == "scatter3d" for trace in fig.data)
    fig.update_layout(
        legend={"orientation": "h", "x": 0, "y": -0.02 if three_d else -0.12, "yanchor": "top"},
        margin={"l": 10, "r": 10},  # the template's 80 px sides would take half the column
    )
    if fig.layout.coloraxis.colorscale is not None:
        fig.update_layout(
            coloraxis_colorbar={
                "orientation": "v",
                "x": 1.0,
                "xanchor": "left",
                "y": 0.5,
                "yanchor": "middle",
                "len": 0.6,
                "thickness": 12,
                "title": {"side": "right"},
            },
            margin={"r": 70, "b": 80 if three_d else fig.layout.margin.b},
        )
    camera = fig.layout.scene.camera
    if zoom_out != 1.0 and camera.eye.x is not None:
        centre = [camera.center[k] or 0.0 for k in "xyz"]
        eye = {k: c + (camera.eye[k] - c) * zoom_out for k, c in zip("xyz", centre, strict=True)}
        fig.update_layout(scene_camera_eye=eye)
    return fig


def head_rows(
    table: pd.DataFrame,
    key: str,
    spec: str,
    height: int = 320,
    pick: Callable[[int, int], None] | None = None,
) -> None:
    """A table of heads (``layer`` and ``head`` columns) in which selecting a row selects that
    head of ``spec`` (and opens the head page unless switched off), as the heads table does;
    ``pick(layer, head)`` instead, when given."""

    def picked() -> None:
        rows = st.session_state[key]["selection"]["rows"]
        if rows and 0 <= rows[0] < len(table):
            row = table.iloc[rows[0]]
            if pick is not None:
                pick(int(row["layer"]), int(row["head"]))
            else:
                state.select_head(spec, int(row["layer"]), int(row["head"]), jump=True)

    st.dataframe(
        table,
        key=key,
        on_select=picked,
        selection_mode="single-row",
        hide_index=True,
        height=min(38 + 35 * len(table), height),
        column_config={
            name: st.column_config.NumberColumn(name, format="%.4f")
            for name in table.columns
            if table[name].dtype.kind == "f"
        },
    )
