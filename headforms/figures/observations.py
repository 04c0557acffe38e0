"""Pure Plotly builders for the paper's observations that have no numbered figure: heads along
and off Theta against the Gaussian baseline (Observation 2) and proportional lobes
(Observation 5). Inputs are per-head tables (columns of :data:`headforms.engine.METRIC_COLUMNS`)
and the frames of :mod:`headforms.analyses.theta`; clickable points carry
``customdata = [model_name, layer, head]``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.theta import theta_frame
from .style import BASELINE_COLOR, TEMPLATE, UIREVISION, head_customdata, model_color

THETA_POSITION_TITLE = "position along Θ, c − d: ← vertex c (+1) · midpoint · vertex d (−1) →"
"""The position axis runs from the vertex c (left, as in the triangle and Figure 10) to d."""
THETA_DISTANCE_TITLE = "distance to Θ (barycentric, log scale)"
DISTANCE_FLOOR = 1e-5
"""Distances below this are drawn at it (a log axis has no 0; exact rank-one forms are at 0)."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_DECADES = range(round(np.log10(DISTANCE_FLOOR)), 1)
DECADE_TICKS = {
    "tickvals": [10.0**k for k in _DECADES],
    "ticktext": [f"10{str(k).translate(_SUPERSCRIPTS)}" for k in _DECADES],
}
"""Ticks of the distance axes: one per decade from DISTANCE_FLOOR to 1, written 10⁻³ in the tick
font itself (plotly's "power" format draws the exponent at 70%, below 11 px)."""


def _position_extent(frames: list[pd.DataFrame]) -> float:
    """Half-width of the position axis: the largest |position| drawn, with a margin, in
    [0.05, 1.05] (the branches end at +-1; most heads sit within a few percent of the midpoint)."""
    values = np.concatenate([np.abs(f["position"].to_numpy(dtype=float)) for f in frames] or [[]])
    values = values[np.isfinite(values)]
    top = float(values.max()) if values.size else 1.0
    return float(np.clip(1.08 * top, 0.05, 1.05))


def _step(values: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A density histogram as a step line (x, y)."""
    counts, _ = np.histogram(values, bins=edges, density=True)
    return np.repeat(edges, 2)[1:-1], np.repeat(counts, 2)


def _baseline_points(name: str, x: pd.Series, y: pd.Series, hover: str) -> go.Scatter:
    """A model's Gaussian baseline heads as grey crosses (not clickable); ``hover`` describes
    the point's x and y."""
    return go.Scatter(
        x=x,
        y=y,
        mode="markers",
        marker={
            "color": BASELINE_COLOR,
            "size": 5,
            "opacity": 0.45,
            "symbol": "x-thin",
            "line": {"width": 1, "color": BASELINE_COLOR},
        },
        name=f"{name}: Gaussian baseline",
        hovertemplate=f"Gaussian head<br>{hover}<extra></extra>",
    )


def _trained_points(
    name: str, index: int, heads: pd.DataFrame, y: pd.Series, x: str, hover: str
) -> go.Scatter:
    """A model's trained heads (``heads[x]`` against ``y``) in the model's colour, clickable
    (customdata: model, layer, head)."""
    return go.Scatter(
        x=heads[x],
        y=y,
        mode="markers",
        marker={"color": model_color(index), "size": 7, "opacity": 0.8},
        name=f"{name}: trained heads",
        customdata=head_customdata(heads, name),
        hovertemplate=f"layer %{{customdata[1]}}, head %{{customdata[2]}}<br>{hover}"
        f"<extra>{name}</extra>",
    )


def theta_scatter_figure(
    models: Mapping[str, pd.DataFrame],
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Each head by its position along Theta (x) and distance to Theta (y, log), trained heads
    by model (clickable), the Gaussian baselines of the same shapes in grey."""
    fig = go.Figure()
    drawn = []
    for i, (name, heads) in enumerate(models.items()):
        if baselines is not None and name in baselines:
            base = theta_frame(baselines[name])
            drawn.append(base)
            fig.add_trace(
                _baseline_points(
                    name,
                    base["position"],
                    base["distance"].clip(lower=DISTANCE_FLOOR),
                    "position %{x:.3f}<br>distance %{y:.2e}",
                )
            )
        frame = theta_frame(heads)
        drawn.append(frame)
        fig.add_trace(
            _trained_points(
                name,
                i,
                frame,
                frame["distance"].clip(lower=DISTANCE_FLOOR),
                "position",
                "position %{x:.3f}<br>distance %{y:.2e}",
            )
        )
    extent = _position_extent(drawn)
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={
            "text": "Heads along and off Θ, trained against Gaussian"
            "<br><sup>each head projected on the nearer branch of Θ: where it lands (x) and how "
            "far it is (y)</sup>"
        },
        xaxis={"title": {"text": THETA_POSITION_TITLE}, "range": [extent, -extent]},
        yaxis={
            "title": {"text": THETA_DISTANCE_TITLE},
            "type": "log",
            **DECADE_TICKS,
        },
        legend={"orientation": "h", "y": -0.2, "yanchor": "top"},
        height=520,
    )
    return fig


def theta_distribution_figure(
    models: Mapping[str, pd.DataFrame],
    baselines: Mapping[str, pd.DataFrame] | None = None,
    bins: int = 40,
) -> go.Figure:
    """Density of the position along Theta (left) and of the distance to it (right, log bins)
    per model: trained heads solid, their Gaussian baseline dotted, in the model's colour."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("along Θ (spread over the branches)", "off Θ (distance)"),
        horizontal_spacing=0.12,
    )
    frames = {name: theta_frame(heads) for name, heads in models.items()}
    base_frames = {
        name: theta_frame(baselines[name]) for name in models if baselines and name in baselines
    }
    extent = _position_extent([*frames.values(), *base_frames.values()])
    position_edges = np.linspace(-extent, extent, 2 * bins + 1)
    distances = np.concatenate(
        [f["distance"].to_numpy() for f in (*frames.values(), *base_frames.values())]
    )
    distances = np.clip(distances[np.isfinite(distances)], DISTANCE_FLOOR, None)
    top = float(distances.max()) if distances.size else 1.0
    distance_edges = np.geomspace(DISTANCE_FLOOR, max(top, 10 * DISTANCE_FLOOR) * 1.01, bins + 1)
    for i, (name, frame) in enumerate(frames.items()):
        sources = [("trained", frame, "solid")]
        if name in base_frames:
            sources.append(("Gaussian baseline", base_frames[name], "dot"))
        for source, part, dash in sources:
            label = f"{name}: {source}"
            position = part["position"].to_numpy()
            position = position[np.isfinite(position)]
            distance = np.clip(part["distance"].to_numpy(), DISTANCE_FLOOR, None)
            distance = distance[np.isfinite(distance)]
            medians = (
                f"median |position| {np.median(np.abs(position)):.3g}, "
                f"distance {np.median(distance):.3g}"
            )
            for col, values, edges, log in (
                (1, position, position_edges, False),
                (2, distance, distance_edges, True),
            ):
                if log:
                    counts, _ = np.histogram(np.log10(values), bins=np.log10(edges), density=True)
                    x, y = np.repeat(edges, 2)[1:-1], np.repeat(counts, 2)
                else:
                    x, y = _step(values, edges)
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=y,
                        mode="lines",
                        line={"color": model_color(i), "dash": dash, "width": 2},
                        name=f"{label} ({medians})",
                        legendgroup=label,
                        showlegend=col == 1,
                        hoverinfo="skip",
                    ),
                    row=1,
                    col=col,
                )
    fig.update_xaxes(title_text=THETA_POSITION_TITLE, range=[extent, -extent], row=1, col=1)
    fig.update_xaxes(title_text=THETA_DISTANCE_TITLE, type="log", **DECADE_TICKS, row=1, col=2)
    fig.update_yaxes(title_text="density of heads", row=1, col=1)
    fig.update_yaxes(title_text="density per decade", row=1, col=2)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Distribution of the heads along and off Θ, trained against Gaussian"
            "<br><sup>trained heads solid, Gaussian heads of the same shapes dotted; legend: "
            "medians</sup>"
        },
        legend={"orientation": "h", "y": -0.25, "yanchor": "top"},
        height=480,
        margin={"b": 140},
    )
    return fig


def against_figure(
    models: Mapping[str, pd.DataFrame],
    x: str,
    y: str,
    x_title: str,
    y_title: str,
    title: str,
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """One per-head column against another, per model (clickable), with the diagonal y = x and
    the Gaussian baselines in grey: how close each head is to an identity."""
    fig = go.Figure()
    values = []
    for i, (name, heads) in enumerate(models.items()):
        if baselines is not None and name in baselines:
            base = baselines[name]
            values.append(base[[x, y]].to_numpy(dtype=float))
            fig.add_trace(
                _baseline_points(name, base[x], base[y], f"{x} %{{x:.3f}}<br>{y} %{{y:.3f}}")
            )
        values.append(heads[[x, y]].to_numpy(dtype=float))
        fig.add_trace(
            _trained_points(name, i, heads, heads[y], x, f"{x} %{{x:.3f}}<br>{y} %{{y:.3f}}")
        )
    finite = np.concatenate(values) if values else np.zeros((0, 2))
    finite = finite[np.isfinite(finite).all(axis=1)]
    low = float(finite.min()) if finite.size else 0.0
    high = float(finite.max()) if finite.size else 1.0
    fig.add_trace(
        go.Scatter(
            x=[low, high],
            y=[low, high],
            mode="lines",
            line={"color": "black", "dash": "dash", "width": 1},
            name="y = x",
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={"text": title},
        xaxis={"title": {"text": x_title}},
        yaxis={"title": {"text": y_title}},
        legend={"orientation": "h", "y": -0.2, "yanchor": "top"},
        height=500,
    )
    return fig
