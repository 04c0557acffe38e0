"""Layer x head views: heatmaps of a per-head column beside its Gaussian baseline (Figures 13,
14) and parity by layer (Figure 12)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..forms import PARITY_LABELS
from .style import (
    COLUMN_TITLES,
    DIVERGING_SCALE,
    PARITY_COLORS,
    PARITY_NAMES,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
    head_customdata,
)


def heatmap_range(values: Sequence[np.ndarray], mid: float = 0.5) -> tuple[float, float]:
    """A colour range symmetric about ``mid`` covering every finite value (both panels)."""
    spread = max(
        (
            float(np.nanmax(np.abs(np.asarray(v, float) - mid)))
            for v in values
            if np.isfinite(np.asarray(v, float)).any()
        ),
        default=0.0,
    )
    spread = max(spread, 1e-3)
    return mid - spread, mid + spread


def heatmap_pair_figure(
    heads: pd.DataFrame,
    baseline: pd.DataFrame | None,
    column: str,
    model_name: str,
    selected: Selected = None,
    color_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Layer x head grid of ``column`` for the trained heads beside the same column of the
    Gaussian baseline's table (same rows), Figures 13/14: square scatter markers (clickable),
    shared diverging colour scale white at 1/2, red above, blue below, one colour bar.
    ``baseline`` None (a published table without N): the trained heads alone.
    ``color_range``: a range shared with other models' figures (default: this pair's own)."""
    frames = (("heads", heads),) if baseline is None else (("heads", heads), ("baseline", baseline))
    for name, frame in frames:
        if column not in frame.columns:
            raise FigureInputError(f"{name} has no column {column!r}")
    if baseline is not None and len(baseline) != len(heads):
        raise FigureInputError(
            f"the baseline has {len(baseline)} rows for {len(heads)} heads: not the same shapes"
        )
    n_layers = int(heads["layer"].max()) + 1 if len(heads) else 1
    n_heads = int(heads["head"].max()) + 1 if len(heads) else 1
    cell = float(np.clip(min(430.0 / n_heads, 640.0 / n_layers), 4.0, 34.0))
    height = int(max(320.0, cell * n_layers + 170.0))
    panels = [(heads[column], "trained")]
    if baseline is not None:
        panels.append((baseline[column], "baseline"))
    cmin, cmax = color_range or heatmap_range([values for values, _ in panels])
    title = COLUMN_TITLES.get(column, column)
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=("trained heads", "Gaussian baseline (same n, N)")[: len(panels)],
    )
    customdata = head_customdata(heads, model_name)
    for col_index, (values, label) in enumerate(panels, start=1):
        fig.add_trace(
            go.Scatter(
                x=heads["head"],
                y=heads["layer"],
                mode="markers",
                marker={
                    "symbol": "square",
                    "size": cell * 0.92,
                    "color": values.to_numpy(dtype=float),
                    "coloraxis": "coloraxis",
                    "line": {"width": 0},
                },
                customdata=customdata,
                name=label,
                showlegend=False,
                text=[f"{value:.4f}" for value in values.to_numpy(dtype=float)],
                hovertemplate=f"{label}<br>layer %{{y}}, head %{{x}}<br>{column} "
                "%{text}<extra></extra>",
                meta={"role": "cells", "panel": label},
            ),
            row=1,
            col=col_index,
        )
    if selected is not None and selected[0] == model_name:
        _, layer, head = selected
        row = heads[(heads["layer"] == int(layer)) & (heads["head"] == int(head))]
        if not row.empty:
            for col_index in range(1, len(panels) + 1):
                fig.add_trace(
                    go.Scatter(
                        x=[int(head)],
                        y=[int(layer)],
                        mode="markers",
                        marker={
                            "symbol": "square-open",
                            "size": cell * 1.15,
                            "color": SELECTED_COLOR,
                            "line": {"width": 3},
                        },
                        customdata=head_customdata(row, model_name),
                        name="selected",
                        showlegend=False,
                        hoverinfo="skip",
                        cliponaxis=False,  # a corner cell's outline would lose two sides
                        meta={"role": "selected"},
                    ),
                    row=1,
                    col=col_index,
                )
    axis_x = {
        "title": {"text": "head"},
        "range": [-0.5, n_heads - 0.5],
        "showgrid": False,
        "zeroline": False,
        "dtick": max(1, n_heads // 16),
    }
    # One data unit is the same number of pixels on both axes, so the square markers tile.
    fig.update_xaxes(**axis_x, constrain="domain")
    fig.update_xaxes(scaleanchor="y", scaleratio=1, row=1, col=1)
    if len(panels) == 2:
        fig.update_xaxes(scaleanchor="y2", scaleratio=1, row=1, col=2)
    fig.update_yaxes(
        title={"text": "layer"},
        range=[n_layers - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        dtick=max(1, n_layers // 16),
        row=1,
        col=1,
    )
    if len(panels) == 2:
        fig.update_yaxes(range=[n_layers - 0.5, -0.5], showgrid=False, zeroline=False, row=1, col=2)
    fig.update_yaxes(constrain="domain")
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"{title}: {model_name}"},
        coloraxis={
            "colorscale": DIVERGING_SCALE,
            "cmin": cmin,
            "cmax": cmax,
            "colorbar": {"title": {"text": column}},
        },
        uirevision=UIREVISION,
        height=height,
        margin={"t": 80},
        plot_bgcolor="#f4f4f4",
    )
    return fig


def parity_by_layer_figure(frame: pd.DataFrame, title: str = "Parity by layer") -> go.Figure:
    """Figure 12: stacked bars of the percent of each layer's heads of type I+, II, I-
    (``frame`` from :func:`headforms.analyses.parity.parity_by_layer`)."""
    fig = go.Figure()
    for parity in PARITY_LABELS:
        values = frame[parity] if parity in frame.columns else pd.Series(0.0, index=frame.index)
        fig.add_trace(
            go.Bar(
                x=frame.index.to_numpy(),
                y=values.to_numpy(),
                name=PARITY_NAMES[parity],
                marker={"color": PARITY_COLORS[parity]},
                hovertemplate=f"layer %{{x}}<br>%{{y:.1f}}%<extra>{PARITY_NAMES[parity]}</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title},
        barmode="stack",
        xaxis={"title": {"text": "layer"}, "dtick": 1 if len(frame) <= 24 else None},
        yaxis={"title": {"text": "% of the layer's heads"}, "range": [0, 100]},
        legend={"traceorder": "normal"},
    )
    return fig


def heatmap_table(heads: pd.DataFrame, baseline: pd.DataFrame | None, column: str) -> pd.DataFrame:
    """The data of :func:`heatmap_pair_figure` as a tidy table: layer, head, the column and the
    baseline's (``rand_<column>``, when there is a baseline), one row per head (what its CSV
    export holds)."""
    table = pd.DataFrame(
        {
            "layer": heads["layer"].to_numpy(),
            "head": heads["head"].to_numpy(),
            column: heads[column].to_numpy(),
        }
    )
    if baseline is not None:
        table[f"rand_{column}"] = baseline[column].to_numpy()
    return table
