"""Parity types across models and layers: Table 2 beside the paper's published rows, and parity by
layer (Figure 12: a type x layer grid per model, one shared scale white 0% to black 100%).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.parity import paper_table2, parity_table
from ..forms import PARITY_LABELS, PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from .style import (
    PARITY_COLORS,
    PARITY_NAMES,
    TEMPLATE,
)


def _tolerance_text(tolerance: float | None) -> str:
    value = PARITY_TYPE_II_THRESHOLD if tolerance is None else tolerance
    return PARITY_TYPE_II_TEXT if value == PARITY_TYPE_II_THRESHOLD else f"{value:g}"


def parity_comparison_table(
    models: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> pd.DataFrame:
    """Table 2 for the given models (Type II tolerance ``tolerance``, default 1/50) followed by
    the paper's published rows (at 1/50) with their head counts, labelled by source."""
    ours = parity_table(models, tolerance).reset_index()
    ours.insert(0, "source", "computed here")
    paper = paper_table2().reset_index()
    paper.insert(0, "source", "paper, Table 2")
    table = pd.concat([ours, paper], ignore_index=True)
    table["heads"] = table["heads"].astype("Int64")  # a count: never shown as 270.000000
    return table


def parity_comparison_figure(table: pd.DataFrame, tolerance: float | None = None) -> go.Figure:
    """Stacked horizontal bars of the parity shares per model with head counts, the paper's
    rows labelled."""
    labels = [
        f"{m} (paper, {int(h)} heads)" if s.startswith("paper") else f"{m} ({int(h)} heads)"
        for m, s, h in zip(table["model"], table["source"], table["heads"], strict=True)
    ]
    fig = go.Figure()
    for parity in PARITY_LABELS:
        fig.add_trace(
            go.Bar(
                y=labels,
                x=table[parity],
                orientation="h",
                name=PARITY_NAMES[parity],
                marker={"color": PARITY_COLORS[parity]},
                hovertemplate="%{y}: %{x:.1f}%<extra>" + PARITY_NAMES[parity] + "</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Percentage of heads by parity (Table 2), with the paper's published rows"
            f"<br><sup>Type II: c_S + d_S ≤ {_tolerance_text(tolerance)} for the computed rows; "
            f"the paper's rows use {PARITY_TYPE_II_TEXT}</sup>"
        },
        xaxis={"title": {"text": "percent of heads"}, "range": [0, 100]},
        yaxis={"title": {"text": "model"}, "autorange": "reversed"},
        barmode="stack",
        height=240 + 28 * len(labels),
        # plotly lists stacked traces last-first; left to right reads as the bars stack
        legend={"orientation": "h", "y": -0.15, "yanchor": "top", "traceorder": "normal"},
    )
    return fig


GREY_SCALE = [[0.0, "#ffffff"], [1.0, "#000000"]]
"""Figure 12's shared scale: white at 0%, black at 100%."""

CELL_OUTLINE = "#bbbbbb"
"""Outline of Figure 12's cells: a 0% cell is white on white without it."""


def grey(percent: float) -> str:
    """The colour of ``percent`` on :data:`GREY_SCALE` (white 0, black 100), as ``rgb(...)``."""
    level = int(round(255 * (1 - float(np.clip(percent, 0, 100)) / 100)))
    return f"rgb({level},{level},{level})"


def parity_by_layer_figure(
    frames: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> go.Figure:
    """Figure 12 for one or several models: per model, a type x layer grid of the percent of
    each layer's heads of each parity type, one shared scale from white (0%) to black (100%).
    ``frames``: model name -> :func:`headforms.analyses.parity.parity_by_layer`."""
    return layer_shares_figure(
        {
            name: frame.reindex(columns=list(PARITY_LABELS), fill_value=0.0)
            for name, frame in frames.items()
        },
        [PARITY_NAMES[p] for p in PARITY_LABELS],
        "parity type",
        "Parity by layer (Figure 12)<br><sup>percent of each layer's heads of each type, one "
        "shared scale from white (0%) to black (100%); Type II: c_S + d_S ≤ "
        f"{_tolerance_text(tolerance)}</sup>",
    )


def layer_shares_figure(
    frames: Mapping[str, pd.DataFrame], categories: Sequence[str], axis_title: str, title: str
) -> go.Figure:
    """Per model, a category x layer grid of percents (``frames``: model name -> a frame of
    layers x categories, in the order of ``categories``' names), one shared scale from white
    (0%) to black (100%): Figure 12's grid, and the clusters-by-layer grid.

    Cells are rectangles (vector in an SVG export, unlike a heatmap's image), with the percent
    written in them when there is room; an invisible marker per cell carries the hover text and
    the colour bar.
    """
    names = list(frames)
    rows = max(len(names), 1)
    height = 170 + (65 + 45 * len(categories)) * rows
    fig = make_subplots(
        rows=rows,
        cols=1,
        subplot_titles=names,
        vertical_spacing=min(0.3, 95 / (height - 170)) if rows > 1 else 0.0,
    )
    # every cell's rectangle added at once: plotly's add_shape validates every earlier shape
    # again on each call (quadratic; 270 cells took 10-20 s one by one)
    cells: list[go.layout.Shape] = []
    for i, name in enumerate(names, start=1):
        frame = frames[name]
        values = frame.to_numpy(dtype=float).T  # categories x layers
        layers = frame.index.to_numpy()
        x, y = np.meshgrid(layers, np.arange(len(categories)))
        suffix = "" if i == 1 else str(i)
        written = len(layers) <= 24
        fig.add_trace(
            go.Scatter(
                x=x.ravel(),
                y=y.ravel(),
                mode="markers+text" if written else "markers",
                marker={
                    "color": values.ravel(),
                    "coloraxis": "coloraxis",
                    "opacity": 0,
                    "size": 14,
                },
                text=[f"{v:.0f}" for v in values.ravel()],
                textfont={
                    "size": 11,
                    "color": ["white" if v > 50 else "black" for v in values.ravel()],
                },
                name=name,
                customdata=np.repeat(list(categories), len(layers)),
                hovertemplate=f"{name}<br>layer %{{x}}, %{{customdata}}: "
                "%{marker.color:.1f}%<extra></extra>",
                showlegend=False,
                meta={"role": "cells", "model": name},
            ),
            row=i,
            col=1,
        )
        cells.extend(
            go.layout.Shape(
                type="rect",
                x0=layers[col] - 0.5,
                x1=layers[col] + 0.5,
                y0=row - 0.5,
                y1=row + 0.5,
                xref=f"x{suffix}",
                yref=f"y{suffix}",
                fillcolor=grey(value),
                line={"color": CELL_OUTLINE, "width": 0.5},
                layer="below",
                name="cell",
            )
            for (row, col), value in np.ndenumerate(values)
        )
        fig.update_xaxes(
            title_text="layer",
            range=[layers.min() - 0.5, layers.max() + 0.5] if len(layers) else None,
            dtick=1 if len(layers) <= 16 else None,
            showgrid=False,
            zeroline=False,
            row=i,
            col=1,
        )
        fig.update_yaxes(
            title_text=axis_title,
            tickvals=list(range(len(categories))),
            ticktext=list(categories),
            range=[len(categories) - 0.5, -0.5],
            showgrid=False,
            zeroline=False,
            row=i,
            col=1,
        )
    fig.update_layout(
        shapes=[*fig.layout.shapes, *cells],
        template=TEMPLATE,
        title={"text": title},
        coloraxis={
            "colorscale": GREY_SCALE,
            "cmin": 0,
            "cmax": 100,
            "colorbar": {
                "title": {"text": "% of layer"},
                "outlinecolor": CELL_OUTLINE,
                "outlinewidth": 1,
            },
        },
        height=height,
        margin={"t": 100},
        plot_bgcolor="white",
    )
    return fig
