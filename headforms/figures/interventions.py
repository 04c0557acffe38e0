"""What an edit of the heads' forms costs the model: a per-head sweep as a layer x head heatmap
and against a geometric column, one edit against its matched controls, and one head's attention,
profile and head-type scores before and after its edit.

Builders take the frames of :mod:`headforms.analyses.interventions` (or an intervention result's
plain arrays) and return figures; every head marker carries ``customdata = [model, layer,
head]`` like every clickable head in headforms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.behaviour import GEOMETRY_COLUMNS, Correlation
from ..analyses.interventions import MEASURES
from ..columns import PROFILE
from .behaviour import (
    SHORT_SCORES,
    against_geometry,
    attention_figure,
    tick_labels,
)
from .heatmaps import HeatmapPanel, heatmap_panels_figure, heatmap_range
from .style import (
    BASELINE_COLOR,
    HEAD_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
)

SATURATION_PERCENTILE = 98.0
"""A sweep heatmap's colour range: this percentile of |value| when the largest is more than
twice it (one head carrying the model would leave every other cell white)."""


def _check(frame: pd.DataFrame, measure: str, column: str | None = None) -> None:
    if measure not in MEASURES:
        raise FigureInputError(f"unknown measure {measure!r}; accepted: " + ", ".join(MEASURES))
    if column is not None and column not in GEOMETRY_COLUMNS:
        raise FigureInputError(
            f"unknown geometric column {column!r}; accepted: " + ", ".join(GEOMETRY_COLUMNS)
        )
    missing = {"layer", "head", "parity", measure, *([column] if column else [])} - set(
        frame.columns
    )
    if missing:
        raise FigureInputError("the frame lacks " + ", ".join(sorted(missing)))


def sweep_heatmap_figure(
    frame: pd.DataFrame, model: str, edit: str, measure: str = "delta_ce", selected: Selected = None
) -> go.Figure:
    """Every head's ``measure`` when ``edit`` is applied to it alone, as a layer x head grid of
    clickable cells (one diverging scale white at 0: red costs, blue gains); heads without a
    value are left out (the grid's grey)."""
    _check(frame, measure)
    values = frame[measure].to_numpy(dtype=float)
    keep = np.isfinite(values)
    if not keep.any():
        raise FigureInputError(f"no head has a finite {measure}")
    panel = HeatmapPanel(model, model, model, frame[keep].reset_index(drop=True), values[keep])
    title = f"{MEASURES[measure]} of '{edit}' on each head alone"
    low, high = heatmap_range([values], 0.0)
    robust = float(np.percentile(np.abs(values[keep]), SATURATION_PERCENTILE))
    if 0.0 < robust < high / 2:  # a few heads far above the rest: saturate them
        low, high = -robust, robust
        title += (
            f"<br><sup>colour saturates at ±{robust:.3g} ({SATURATION_PERCENTILE:g}th "
            "percentile); hover: each value</sup>"
        )
    return heatmap_panels_figure([panel], measure, title, selected, (low, high))


def sweep_scatter_figure(
    frame: pd.DataFrame,
    column: str,
    model: str,
    edit: str,
    correlation: Correlation,
    measure: str = "delta_ce",
    selected: Selected = None,
) -> go.Figure:
    """Every head as a point: a geometric ``column`` across, the ``measure`` of ``edit`` on
    that head alone up, marker and colour by parity; the title gives Spearman's rho and its
    bootstrap interval (parity drawn as three columns with a fixed spread within each)."""
    _check(frame, measure, column)
    fig, xaxis = against_geometry(frame, column, measure, model, selected)
    if not fig.data:
        raise FigureInputError(f"no head has both {column} and {measure}")
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{MEASURES[measure]} of '{edit}' against {GEOMETRY_COLUMNS[column]}"
            f"<br><sup>Spearman {correlation.text()} (95% bootstrap interval)</sup>",
            "x": 0.0,
            "xanchor": "left",
        },
        xaxis=xaxis,
        yaxis={"title": f"{MEASURES[measure]}, the head edited alone", "zeroline": True},
        legend={"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        height=520,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        uirevision=UIREVISION,
    )
    return fig


def controls_figure(
    value: float, controls: Sequence[float], measure: str, edit: str, what: str
) -> go.Figure:
    """The edit's ``measure`` (a diamond) against each matched control's (dots, their median a
    tick, their 10-90% spread a band), on one axis: whether "this edit" costs more than "any
    change this large". ``what``: the edited heads, for the title."""
    if measure not in MEASURES:
        raise FigureInputError(f"unknown measure {measure!r}; accepted: " + ", ".join(MEASURES))
    values = np.asarray(controls, dtype=float)
    values = values[np.isfinite(values)]
    fig = go.Figure()
    if values.size:
        low, high = np.percentile(values, [10.0, 90.0])
        fig.add_shape(
            type="rect",
            x0=low,
            x1=high,
            y0=-0.35,
            y1=0.35,
            fillcolor=BASELINE_COLOR,
            opacity=0.15,
            line={"width": 0},
            layer="below",
        )
        fig.add_trace(
            go.Scatter(
                x=values,
                y=_spread(values.size),
                mode="markers",
                marker={"color": BASELINE_COLOR, "size": 10, "symbol": "circle-open"},
                name=f"matched controls ({values.size})",
                hovertemplate="control: %{x:.4g}<extra></extra>",
            )
        )
        median = float(np.median(values))
        fig.add_trace(
            go.Scatter(
                x=[median, median],
                y=[-0.35, 0.35],
                mode="lines",
                line={"color": BASELINE_COLOR, "width": 2},
                name=f"controls' median {median:.3g}",
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[value],
            y=[0.0],
            mode="markers",
            marker={"color": HEAD_COLOR, "size": 16, "symbol": "diamond"},
            name=f"{edit}: {value:.3g}",
            hovertemplate=f"{edit}: %{{x:.4g}}<extra></extra>",
        )
    )
    rank = int((values < value).sum()) if values.size else None
    sub = (
        f"the edit exceeds {rank} of {values.size} controls (band: their 10-90%)"
        if rank is not None
        else "no matched controls (an edit of the head's output, or K = 0)"
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"{edit} of {what} against its matched controls<br><sup>{sub}</sup>"},
        xaxis={"title": MEASURES[measure], "zeroline": True},
        yaxis={"visible": False, "range": [-1, 1]},
        legend={"orientation": "h", "x": 0, "y": -0.35, "yanchor": "top"},
        height=300,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        uirevision=UIREVISION,
    )
    return fig


SIDE_BY_SIDE_LABELS = 24
"""At most this many token labels per axis of each of two panels side by side."""


def _spread(count: int) -> np.ndarray:
    """A fixed vertical spread in [-0.3, 0.3] (golden-ratio steps), so that controls of nearly
    equal value do not hide one another."""
    return ((np.arange(count) * 0.6180339887) % 1.0 - 0.5) * 0.6


def patterns_figure(
    tokens: Sequence[str],
    before: np.ndarray,
    after: np.ndarray,
    title: str,
    causal: bool | None = None,
) -> go.Figure:
    """A head's attention weights on the same tokens before and after its edit, side by side on
    one 0-1 scale (each panel as :func:`.behaviour.attention_figure` draws it)."""
    panels = [
        attention_figure(tokens, matrix, name, "weights", causal)
        for matrix, name in ((before, "before"), (after, "after"))
    ]
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["before the edit", "after the edit"],
        horizontal_spacing=0.04,
    )
    step = max(1, math.ceil(len(tokens) / SIDE_BY_SIDE_LABELS))
    labels = tick_labels(tokens)
    for index, panel in enumerate(panels, start=1):
        trace = panel.data[0]
        trace.update(showscale=index == 2, name=f"{title}: {'before' if index == 1 else 'after'}")
        fig.add_trace(trace, row=1, col=index)
        axes = panel.layout
        xaxis = axes.xaxis.to_plotly_json()
        yaxis = axes.yaxis.to_plotly_json()
        for axis in (xaxis, yaxis):  # half the width each: fewer labels
            axis["tickvals"] = list(range(0, len(tokens), step))
            axis["ticktext"] = labels[::step]
        yaxis["scaleanchor"] = "x" if index == 1 else "x2"
        if index == 2:  # the same tokens as the left panel's
            yaxis.update(title=None, showticklabels=False)
        fig.update_xaxes(xaxis, row=1, col=index)
        fig.update_yaxes(yaxis, row=1, col=index)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.0, "xanchor": "left"},
        plot_bgcolor=panels[0].layout.plot_bgcolor,
        height=min(760, max(440, 4 * len(tokens) + 320)),
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
        uirevision=UIREVISION,
    )
    return fig


def _bars(
    labels: Sequence[str],
    before: Sequence[float],
    after: Sequence[float],
    names: tuple[str, str],
) -> list[go.Bar]:
    return [
        go.Bar(
            x=list(labels),
            y=[float(v) for v in values],
            name=name,
            marker={"color": color},
            texttemplate="%{y:.3f}",
            textposition="outside",
            textfont={"size": 11},
            cliponaxis=False,
            hovertemplate="%{x} = %{y:.4f}<extra>" + name + "</extra>",
        )
        for name, values, color in zip(
            names, (before, after), (BASELINE_COLOR, HEAD_COLOR), strict=True
        )
    ]


def profile_change_figure(
    before: Mapping[str, float], after: Mapping[str, float], parities: tuple[str, str]
) -> go.Figure:
    """Where the head's form lies on the simplex, ``(a, b, c, d)`` at d = 0, before and after
    its edit (``parities``: the head's parity type before and after)."""
    missing = [c for c in PROFILE if c not in before or c not in after]
    if missing:
        raise FigureInputError("the profiles lack " + ", ".join(missing))
    names = (f"before ({parities[0] or '—'})", f"after ({parities[1] or '—'})")
    fig = go.Figure(
        _bars(PROFILE, [before[c] for c in PROFILE], [after[c] for c in PROFILE], names)
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Profile (a, b, c, d) at d = 0, before and after"},
        xaxis={"title": {"text": "coordinate"}},
        yaxis={"title": {"text": "value (sums to 1)"}, "range": [0, 1.15]},
        barmode="group",
        legend={"orientation": "h", "y": -0.25},
        height=360,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def scores_change_figure(before: Mapping[str, float], after: Mapping[str, float]) -> go.Figure:
    """The head's head-type scores on the repeated-token probe before and after its edit."""
    names = [name for name in SHORT_SCORES if name in before and name in after]
    if not names:
        raise FigureInputError("no head-type score before and after")
    fig = go.Figure(
        _bars(
            [SHORT_SCORES[n] for n in names],
            [before[n] for n in names],
            [after[n] for n in names],
            ("before", "after"),
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Head-type scores on the probe, before and after"},
        xaxis={"title": {"text": "score"}},
        yaxis={"title": {"text": "mean attention weight"}, "range": [0, 1.15]},
        barmode="group",
        legend={"orientation": "h", "y": -0.25},
        height=360,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig
