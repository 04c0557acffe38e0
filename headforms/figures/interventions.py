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

from ..analyses.behaviour import CORRELATION_COLUMNS, Correlation
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
    if column is not None and column not in CORRELATION_COLUMNS:
        raise FigureInputError(
            f"unknown geometric column {column!r}; accepted: " + ", ".join(CORRELATION_COLUMNS)
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
            "text": f"{MEASURES[measure]} of '{edit}' against {CORRELATION_COLUMNS[column]}"
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


PATTERNS_HEIGHT = 600
"""Height of the before/after heatmaps: two squares side by side fit it at 1280 px wide."""
SIDE_BY_SIDE_LABELS = 24
"""At most this many token labels per axis of each of two panels side by side."""

VERDICT_TITLES = {
    "delta_ce": "ΔCE on the text (nats)",
    "kl": "KL on the text (nats)",
    "delta_induction_loss": "Δ induction loss on the probe (nats)",
    "cosine_distance": "cosine distance of the final states",
}


def verdict_figure(
    values: Mapping[str, float],
    controls: Mapping[str, Sequence[float]],
    edit: str,
    what: str,
    p_values: Mapping[str, float],
) -> go.Figure:
    """Each measure of ``values`` (one row each): the edit's value (a diamond) against each
    matched control's (open circles, a fixed vertical spread; their median a tick, their 10-90%
    a band), the one-sided p-value in the row's title."""
    names = [m for m in values if m in controls]
    if not names:
        raise FigureInputError("no measure with controls")
    titles = []
    for m in names:
        p = p_values.get(m, float("nan"))
        shown = f"p = {p:.3g}" if np.isfinite(p) else "no controls"
        titles.append(f"{VERDICT_TITLES.get(m, m)}: {shown}")
    fig = make_subplots(rows=len(names), cols=1, subplot_titles=titles, vertical_spacing=0.16)
    for row, m in enumerate(names, start=1):
        found = np.asarray(controls[m], dtype=float)
        found = found[np.isfinite(found)]
        if found.size:
            low, high = np.percentile(found, [10.0, 90.0])
            fig.add_shape(
                type="rect", x0=low, x1=high, y0=-0.35, y1=0.35, row=row, col=1,
                fillcolor=BASELINE_COLOR, opacity=0.15, line={"width": 0}, layer="below",
            )  # fmt: skip
            fig.add_trace(
                go.Scatter(
                    x=found,
                    y=_spread(found.size),
                    mode="markers",
                    marker={"color": BASELINE_COLOR, "size": 9, "symbol": "circle-open"},
                    name="matched controls",
                    legendgroup="controls",
                    showlegend=row == 1,
                    hovertemplate="control: %{x:.4g}<extra></extra>",
                ),
                row=row,
                col=1,
            )
            median = float(np.median(found))
            fig.add_trace(
                go.Scatter(
                    x=[median, median],
                    y=[-0.35, 0.35],
                    mode="lines",
                    line={"color": BASELINE_COLOR, "width": 2},
                    name="controls' median",
                    legendgroup="median",
                    showlegend=row == 1,
                    hoverinfo="skip",
                ),  # fmt: skip
                row=row,
                col=1,
            )
        fig.add_trace(
            go.Scatter(
                x=[values[m]],
                y=[0.0],
                mode="markers",
                marker={"color": HEAD_COLOR, "size": 15, "symbol": "diamond"},
                name=f"{edit} of {what}",
                legendgroup="edit",
                showlegend=row == 1,
                hovertemplate=f"{edit}: %{{x:.4g}}<extra></extra>",
            ),  # fmt: skip
            row=row,
            col=1,
        )
        fig.update_yaxes(visible=False, range=[-1, 1], row=row, col=1)
        fig.update_xaxes(zeroline=True, row=row, col=1)
    fig.update_xaxes(
        title={"text": "value of the measure (the edit and each control)"}, row=len(names), col=1
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"{edit} of {what} against its matched controls", "x": 0.0},
        legend={"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top"},
        height=140 + 150 * len(names),
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        uirevision=UIREVISION,
    )
    return fig


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
            axis["automargin"] = True  # long token labels push the margin, never clipped
            if isinstance(axis.get("title"), dict):
                axis["title"]["standoff"] = 8  # the title beside the ticks, not over them
        yaxis["scaleanchor"] = "x" if index == 1 else "x2"
        xaxis["constrain"] = "domain"  # squares fit the height: the width gives way, so
        yaxis["constrain"] = "domain"  # no blank band opens above the heatmaps
        if index == 2:  # the same tokens as the left panel's
            yaxis.update(title=None, showticklabels=False)
        fig.update_xaxes(xaxis, row=1, col=index)
        fig.update_yaxes(yaxis, row=1, col=index)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.0, "xanchor": "left"},
        plot_bgcolor=panels[0].layout.plot_bgcolor,
        height=PATTERNS_HEIGHT,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
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
