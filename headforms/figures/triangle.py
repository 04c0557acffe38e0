"""The triangle of symmetric profiles: (b_S, c_S, d_S) of S alone on the facet Delta = {a = 0}
(the paper's Figures 7 right, 9, oriented as Figure 10), with the Type II band and the I+/I-
boundary; heads drawn as :mod:`headforms.figures.head_markers` draws them."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..columns import SYMMETRIC_PROFILE
from ..forms import PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from .geometry import TRIANGLE_EDGES, TRIANGLE_LABELS, TRIANGLE_VERTICES, barycentric_points
from .head_markers import (
    baseline_traces,
    check_color_by,
    color_range,
    coloraxis,
    head_traces,
    lines,
    selected_annotation,
    selected_ring,
    title,
)
from .style import (
    EDGE_COLOR,
    LABEL_BACKGROUND,
    PARITY_COLORS,
    TEMPLATE,
    UIREVISION,
    Selected,
)


def triangle_figure(
    models: Mapping[str, pd.DataFrame],
    color_by: str = "parity",
    selected: Selected = None,
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Symmetric profiles (b_S, c_S, d_S) on the triangle Delta = {a = 0} (Figures 7 right, 9),
    oriented as Figure 10 (c = 1 left, b = 1 right, the edge {d_S = 0} horizontal), its vertices
    and edges labelled as in Figure 7, with the Type II band c_S + d_S <= 1/50 near vertex b and
    the I+/I- boundary c_S = d_S; markers +, open circle, dash by parity, as in Figure 9;
    ``baselines`` adds the Gaussian heads in grey."""
    check_color_by(color_by, next(iter(models.values()), None))
    vertices = TRIANGLE_VERTICES
    columns = SYMMETRIC_PROFILE
    fig = go.Figure()
    tol = PARITY_TYPE_II_THRESHOLD
    band = barycentric_points(
        np.array([[1, 0, 0], [1 - tol, tol, 0], [1 - tol, 0, tol], [1, 0, 0]]), vertices
    )
    fig.add_trace(
        go.Scatter(
            x=band[:, 0],
            y=band[:, 1],
            mode="lines",
            fill="toself",
            fillcolor="rgba(0,158,115,0.25)",
            line={"color": PARITY_COLORS["II"], "width": 1},
            name=f"Type II band c_S + d_S ≤ {PARITY_TYPE_II_TEXT}",
            hoverinfo="skip",
            meta={"role": "band"},
        )
    )
    boundary = barycentric_points(np.array([[1 - tol, tol / 2, tol / 2], [0, 0.5, 0.5]]), vertices)
    fig.add_trace(
        go.Scatter(
            x=boundary[:, 0],
            y=boundary[:, 1],
            mode="lines",
            line={"color": "#999999", "width": 1, "dash": "dot"},
            hoverinfo="skip",
            name="c_S = d_S (I+ | I− boundary)",
            meta={"role": "boundary"},
        )
    )
    solid = lines([(vertices[0], vertices[1]), (vertices[0], vertices[2])])
    fig.add_trace(
        go.Scatter(
            x=solid[:, 0],
            y=solid[:, 1],
            mode="lines",
            line={"color": EDGE_COLOR, "width": 2},
            hoverinfo="skip",
            showlegend=False,
            name="edges",
            meta={"role": "edges"},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=vertices[1:, 0],
            y=vertices[1:, 1],
            mode="lines",
            line={"color": EDGE_COLOR, "width": 2, "dash": "dash"},
            hoverinfo="skip",
            showlegend=False,
            name="edge {b = 0} (empty fibers)",
            meta={"role": "edges"},
        )
    )
    # Vertex labels are annotations, not a marker trace, so that box/lasso selections in
    # Streamlit only ever contain head markers.
    # Centred under (b, c) and over (d) their vertex: the triangle often gets a narrow column,
    # where labels beside the base vertices were cut at the figure's edges.
    for (x, y), label, below in zip(vertices, TRIANGLE_LABELS, (True, True, False), strict=True):
        fig.add_annotation(
            x=x,
            y=y,
            text=label,
            showarrow=False,
            yshift=-8 if below else 8,
            yanchor="top" if below else "bottom",
            name="vertex",
            font={"size": 13},
            bgcolor=LABEL_BACKGROUND,
        )
    # Edge labels as in Figure 7 (right): S = H + P along {d_S = 0}, S = H - P along {c_S = 0},
    # each outside its edge, turned along it.
    centroid = vertices.mean(axis=0)
    for edge in TRIANGLE_EDGES:
        ((x, y),) = barycentric_points(np.array([edge.at], dtype=float), vertices)
        outward = np.array([x, y]) - centroid
        outward /= np.linalg.norm(outward)
        ends = [vertices[i] for i, v in enumerate(edge.at) if v]
        angle = np.degrees(np.arctan2(*(ends[1] - ends[0])[::-1]))
        angle = (angle + 90) % 180 - 90  # text never upside down
        fig.add_annotation(
            x=x + 0.07 * outward[0],
            y=y + 0.07 * outward[1],
            text=f"{edge.equations}: {edge.short}",
            textangle=-angle,
            showarrow=False,
            name="edge",
            font={"size": 11, "color": "#666666"},
            bgcolor=LABEL_BACKGROUND,
        )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=False))
    fig.add_traces(head_traces(models, columns, vertices, color_by, three_d=False))
    fig.add_traces(selected_ring(models, selected, columns, vertices))
    for note in selected_annotation(models, selected, columns, vertices):
        fig.add_annotation(note)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title("Symmetric profiles on the triangle Δ", models)},
        uirevision=UIREVISION,
        # Barycentric coordinates: the Cartesian axes carry no meaning, so no ticks or titles.
        xaxis={
            "range": [-0.12, 1.12],
            "showticklabels": False,
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={
            "range": [-0.17, 0.98],
            "scaleanchor": "x",
            "scaleratio": 1,
            "showticklabels": False,
            "showgrid": False,
            "zeroline": False,
        },
        legend={"itemsizing": "trace", "groupclick": "toggleitem"},
        dragmode="pan",
        height=600 if color_by in ("parity", "model") else 680,
        margin={"b": 80 if color_by in ("parity", "model") else 150},
    )
    primary = next(iter(models.values()), None)
    if color_by not in ("parity", "model") and primary is not None:
        fig.update_layout(coloraxis=coloraxis(color_by, *color_range(primary, color_by), y=-0.2))
    return fig
