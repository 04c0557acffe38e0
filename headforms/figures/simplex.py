"""The simplex views: head profiles on the tetrahedron Delta_3 and symmetric profiles on the
triangle Delta (the paper's Figures 1, 2, 7-9). Traces are vectorised: one trace per
(model, parity type), never one per point, so 10,000 heads build quickly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..forms import PARITY_LABELS, PARITY_TYPE_II_THRESHOLD
from .style import (
    BASELINE_COLOR,
    COLOR_BY_OPTIONS,
    COLUMN_TITLES,
    DIVERGING_SCALE,
    EDGE_COLOR,
    LAYER_SCALE,
    MODEL_COLORS,
    PARITY_COLORS,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    SELECTED_COLOR,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    FigureInputError,
    Selected,
    head_customdata,
)

_SQ3 = np.sqrt(3.0)
SIMPLEX_VERTICES = np.array(
    [
        [-0.5, 0.5 / _SQ3, 0.0],  # a = 1: back left
        [0.0, -1.0 / _SQ3, 0.0],  # b = 1: front
        [0.5, 0.5 / _SQ3, 0.0],  # c = 1: back right
        [0.0, 0.0, np.sqrt(2.0 / 3.0)],  # d = 1: top
    ]
)
"""Vertices V_a, V_b, V_c, V_d of a regular tetrahedron with unit edges. As in the paper's
Figure 1: bottom facet d = 0, front-right facet a = 0, left facet c = 0, back facet b = 0."""

SIMPLEX_LABELS = ("a = 1 antisymmetric", "b = 1 hyperbolic", "c = 1 PSD", "d = 1 NSD")

TRIANGLE_VERTICES = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, _SQ3 / 2.0]])
"""Vertices of the triangle Delta = {a = 0} for (b_S, c_S, d_S): b bottom left, c bottom right,
d top (edge {d = 0} horizontal, as in Figure 10)."""

TRIANGLE_LABELS = ("b = 1 hyperbolic", "c = 1 PSD", "d = 1 NSD")

_CAMERA = {
    "eye": {"x": 0.55, "y": -1.75, "z": 0.75},
    "center": {"x": 0.0, "y": 0.0, "z": -0.1},
    "up": {"x": 0.0, "y": 0.0, "z": 1.0},
}


def barycentric_points(profiles: np.ndarray, vertices: np.ndarray = SIMPLEX_VERTICES) -> np.ndarray:
    """Cartesian points ``sum_i p_i V_i`` of barycentric coordinates (rows of ``profiles``)."""
    return np.asarray(profiles, dtype=float) @ vertices


def theta_segments() -> np.ndarray:
    """The red set Theta = {a = b, c d = 0} as two segments (2, 2, 3): c -> m and d -> m,
    with m the midpoint a = b = 1/2 of the edge {c = d = 0}."""
    mid = barycentric_points(np.array([0.5, 0.5, 0.0, 0.0]))
    return np.array([[SIMPLEX_VERTICES[2], mid], [SIMPLEX_VERTICES[3], mid]])


def _lines(segments: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Segments as one polyline with NaN breaks (one trace for all segments)."""
    out = []
    for start, end in segments:
        out.extend([start, end, np.full(len(start), np.nan)])
    return np.array(out)


def _check_color_by(color_by: str) -> None:
    """Reject an unknown ``color_by`` with a one-line error."""
    if color_by not in COLOR_BY_OPTIONS:
        raise FigureInputError(f"color_by must be one of {COLOR_BY_OPTIONS}, got {color_by!r}")


def _hover_text(heads: pd.DataFrame, model: str, columns: Sequence[str]) -> list[str]:
    """Hover text per head: model, layer, head, profile, energy, pairing, parity."""
    names = ", ".join(columns)
    profiles = heads[list(columns)].to_numpy(dtype=float)
    return [
        f"<b>{model}</b><br>layer {layer}, head {head}<br>({names}) = ("
        + ", ".join(f"{v:.3f}" for v in profile)
        + f")<br>energy {energy:.3f}, pairing {pairing:.3f}<br>parity {parity}"
        for layer, head, profile, energy, pairing, parity in zip(
            heads["layer"].to_numpy(),
            heads["head"].to_numpy(),
            profiles,
            heads["energy"].to_numpy(dtype=float),
            heads["pairing"].to_numpy(dtype=float),
            heads["parity"].to_numpy(),
            strict=True,
        )
    ]


def _color_range(models: Mapping[str, pd.DataFrame], color_by: str) -> tuple[float, float]:
    """Shared colour range across all models for a continuous ``color_by``."""
    if color_by in ("energy", "pairing"):
        return 0.0, 1.0
    top = max((float(h["layer"].max()) for h in models.values() if len(h)), default=1.0)
    return 0.0, max(top, 1.0)


def _coloraxis(color_by: str, cmin: float, cmax: float, y: float) -> dict:
    """A shared colour axis with a horizontal colour bar below the plot (at paper height y),
    leaving the right side to the legend."""
    scale = LAYER_SCALE if color_by == "layer" else DIVERGING_SCALE
    return {
        "colorscale": scale,
        "cmin": cmin,
        "cmax": cmax,
        "colorbar": {
            "title": {"text": COLUMN_TITLES[color_by], "side": "top"},
            "orientation": "h",
            "len": 0.5,
            "thickness": 14,
            "x": 0.5,
            "xanchor": "center",
            "y": y,
            "yanchor": "top",
        },
    }


def _head_traces(
    models: Mapping[str, pd.DataFrame],
    columns: Sequence[str],
    vertices: np.ndarray,
    color_by: str,
    three_d: bool,
) -> list[dict]:
    """One marker trace per (model, parity type), grouped in the legend by model (as dicts:
    validated once, when added to the figure)."""
    traces = []
    size = 5 if three_d else 7
    for index, (model, heads) in enumerate(models.items()):
        valid = heads[np.isfinite(heads[list(columns)].to_numpy(dtype=float)).all(axis=1)]
        for parity in PARITY_LABELS:
            part = valid[valid["parity"] == parity]
            if part.empty:
                continue
            xyz = barycentric_points(part[list(columns)].to_numpy(), vertices)
            marker: dict = {"symbol": PARITY_SYMBOLS[parity], "size": size, "opacity": 0.85}
            if color_by == "parity":
                marker["color"] = PARITY_COLORS[parity]
            elif color_by == "model":
                marker["color"] = MODEL_COLORS[index % len(MODEL_COLORS)]
            else:
                marker["color"] = part[color_by].to_numpy(dtype=float)
                marker["coloraxis"] = "coloraxis"
            if not three_d:
                marker["line"] = {"width": 0.5, "color": "white"}
            coords = {"x": xyz[:, 0], "y": xyz[:, 1]}
            if three_d:
                coords["z"] = xyz[:, 2]
            label = PARITY_NAMES[parity] if len(models) == 1 else f"{model}: {PARITY_NAMES[parity]}"
            traces.append(
                {
                    "type": "scatter3d" if three_d else "scatter",
                    **coords,
                    "mode": "markers",
                    "marker": marker,
                    "name": label,
                    "legendgroup": model,
                    "legendgrouptitle": {"text": model},
                    "customdata": head_customdata(part, model),
                    "text": _hover_text(part, model, columns),
                    "hovertemplate": "%{text}<extra></extra>",
                    "meta": {"role": "heads", "model": model, "parity": parity},
                }
            )
    return traces


def baseline_traces(
    baselines: Mapping[str, pd.DataFrame],
    columns: Sequence[str],
    vertices: np.ndarray,
    three_d: bool,
) -> list[dict]:
    """Grey, unclickable markers of each model's Gaussian baseline heads (independent K, Q of the
    same n, N), one trace per model: where untrained forms land."""
    traces = []
    for model, heads in baselines.items():
        valid = heads[np.isfinite(heads[list(columns)].to_numpy(dtype=float)).all(axis=1)]
        xyz = barycentric_points(valid[list(columns)].to_numpy(), vertices)
        coords = {"x": xyz[:, 0], "y": xyz[:, 1]}
        if three_d:
            coords["z"] = xyz[:, 2]
        traces.append(
            {
                "type": "scatter3d" if three_d else "scatter",
                **coords,
                "mode": "markers",
                "marker": {
                    "color": BASELINE_COLOR,
                    "size": 3 if three_d else 5,
                    "opacity": 0.8,
                    "symbol": "circle",
                },
                "name": f"{model}: Gaussian baseline"
                if len(baselines) > 1
                else "Gaussian baseline",
                "hovertemplate": "Gaussian head (same n, N)<extra></extra>",
                "meta": {"role": "baseline", "model": model},
            }
        )
    return traces


def _selected_point(
    models: Mapping[str, pd.DataFrame], selected: Selected, columns: Sequence[str]
) -> tuple[pd.DataFrame, str] | None:
    """The row of the selected head, if it exists and has a valid profile."""
    if selected is None:
        return None
    model, layer, head = selected
    heads = models.get(model)
    if heads is None:
        return None
    row = heads[(heads["layer"] == int(layer)) & (heads["head"] == int(head))]
    if row.empty or not np.isfinite(row[list(columns)].to_numpy()).all():
        return None
    return row, model


def _selected_trace(
    models: Mapping[str, pd.DataFrame],
    selected: Selected,
    columns: Sequence[str],
    vertices: np.ndarray,
    three_d: bool,
) -> list[go.BaseTraceType]:
    """A larger open marker around the selected head (with the same customdata)."""
    found = _selected_point(models, selected, columns)
    if found is None:
        return []
    row, model = found
    xyz = barycentric_points(row[list(columns)].to_numpy(), vertices)
    coords = {"x": xyz[:, 0], "y": xyz[:, 1]}
    marker: dict = {"color": SELECTED_COLOR, "size": 14 if three_d else 18}
    if three_d:
        coords["z"] = xyz[:, 2]
        marker["symbol"] = "circle-open"
    else:
        marker.update(symbol="circle-open", line={"width": 3, "color": SELECTED_COLOR})
    trace = go.Scatter3d if three_d else go.Scatter
    return [
        trace(
            **coords,
            mode="markers+text",
            marker=marker,
            text=[f"L{int(row['layer'].iloc[0])}H{int(row['head'].iloc[0])}"],
            textposition="top center",
            name="selected",
            customdata=head_customdata(row, model),
            hovertemplate=_hover_text(row, model, columns)[0] + "<extra>selected</extra>",
            meta={"role": "selected"},
        )
    ]


def _title(prefix: str, models: Mapping[str, pd.DataFrame]) -> str:
    """Figure title naming the models shown."""
    names = ", ".join(models) if models else "no model"
    return f"{prefix}: {names}"


def simplex_figure(
    models: Mapping[str, pd.DataFrame],
    color_by: str = "parity",
    selected: Selected = None,
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Head profiles (a, b, c, d) on the 3-simplex Delta_3 drawn as a regular tetrahedron
    (Figures 1, 2, 8), with its edges, the red segments Theta, and one marker per head;
    ``baselines`` (model -> baseline table) adds the Gaussian heads in grey."""
    _check_color_by(color_by)
    vertices = SIMPLEX_VERTICES
    columns = ("a", "b", "c", "d")
    edges = [
        (vertices[i], vertices[j]) for i in range(4) for j in range(i + 1, 4) if (i, j) != (2, 3)
    ]
    solid = _lines(edges)
    dashed = _lines([(vertices[2], vertices[3])])
    theta = _lines([tuple(seg) for seg in theta_segments()])
    fig = go.Figure()
    fig.add_trace(
        go.Scatter3d(
            x=solid[:, 0],
            y=solid[:, 1],
            z=solid[:, 2],
            mode="lines",
            line={"color": EDGE_COLOR, "width": 3},
            hoverinfo="skip",
            showlegend=False,
            name="edges",
            meta={"role": "edges"},
        )
    )
    fig.add_trace(
        go.Scatter3d(
            x=dashed[:, 0],
            y=dashed[:, 1],
            z=dashed[:, 2],
            mode="lines",
            line={"color": EDGE_COLOR, "width": 3, "dash": "dash"},
            hoverinfo="skip",
            showlegend=False,
            name="edge {a = b = 0} (empty fibers)",
            meta={"role": "edges"},
        )
    )
    fig.add_trace(
        go.Scatter3d(
            x=theta[:, 0],
            y=theta[:, 1],
            z=theta[:, 2],
            mode="lines",
            line={"color": THETA_COLOR, "width": 6},
            hoverinfo="skip",
            name="Θ = {a = b, cd = 0} (rank one)",
            meta={"role": "theta"},
        )
    )
    fig.add_trace(
        go.Scatter3d(
            x=vertices[:, 0],
            y=vertices[:, 1],
            z=vertices[:, 2],
            mode="markers+text",
            text=list(SIMPLEX_LABELS),
            textposition=["middle left", "bottom center", "middle right", "top center"],
            marker={"size": 3, "color": EDGE_COLOR},
            textfont={"size": 13},
            hoverinfo="skip",
            showlegend=False,
            name="vertices",
            meta={"role": "vertices"},
        )
    )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=True))
    fig.add_traces(_head_traces(models, columns, vertices, color_by, three_d=True))
    fig.add_traces(_selected_trace(models, selected, columns, vertices, three_d=True))
    axis = {
        "visible": False,
        "showbackground": False,
        "showgrid": False,
        "zeroline": False,
        "showspikes": False,
    }
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title("Profiles on the simplex Δ₃", models)},
        uirevision=UIREVISION,
        scene={
            "xaxis": {**axis, "title": {"text": "x"}},
            "yaxis": {**axis, "title": {"text": "y"}},
            "zaxis": {**axis, "title": {"text": "z"}},
            "aspectmode": "data",
            "camera": _CAMERA,
            "uirevision": UIREVISION,
            "dragmode": "orbit",
        },
        legend={"itemsizing": "constant", "groupclick": "toggleitem"},
        margin={"l": 0, "r": 0, "t": 50, "b": 0 if color_by in ("parity", "model") else 90},
        height=650,
    )
    if color_by not in ("parity", "model"):
        fig.update_layout(coloraxis=_coloraxis(color_by, *_color_range(models, color_by), y=0.0))
    return fig


def triangle_figure(
    models: Mapping[str, pd.DataFrame],
    color_by: str = "parity",
    selected: Selected = None,
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Symmetric profiles (b_S, c_S, d_S) on the triangle Delta = {a = 0} (Figures 7 right, 9),
    with the Type II band c_S + d_S <= 1/50 near vertex b and the I+/I- boundary c_S = d_S;
    ``baselines`` adds the Gaussian heads in grey."""
    _check_color_by(color_by)
    vertices = TRIANGLE_VERTICES
    columns = ("b_sym", "c_sym", "d_sym")
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
            name="Type II band c_S + d_S ≤ 1/50",
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
    solid = _lines([(vertices[0], vertices[1]), (vertices[0], vertices[2])])
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
    for (x, y), label, (xshift, yshift) in zip(
        vertices, TRIANGLE_LABELS, [(-10, -14), (10, -14), (0, 14)], strict=True
    ):
        fig.add_annotation(
            x=x,
            y=y,
            text=label,
            showarrow=False,
            xshift=xshift,
            yshift=yshift,
            xanchor={-10: "right", 10: "left", 0: "center"}[xshift],
            name="vertex",
            font={"size": 13},
        )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=False))
    fig.add_traces(_head_traces(models, columns, vertices, color_by, three_d=False))
    fig.add_traces(_selected_trace(models, selected, columns, vertices, three_d=False))
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title("Symmetric profiles on the triangle Δ", models)},
        uirevision=UIREVISION,
        xaxis={
            "title": {"text": "← b_S = 1   (barycentric; axis values not meaningful)   c_S = 1 →"},
            "range": [-0.12, 1.12],
            "showticklabels": False,
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={
            "title": {"text": "toward d_S = 1 ↑"},
            "range": [-0.1, 0.97],
            "scaleanchor": "x",
            "scaleratio": 1,
            "showticklabels": False,
            "showgrid": False,
            "zeroline": False,
        },
        legend={"itemsizing": "constant", "groupclick": "toggleitem"},
        dragmode="pan",
        height=600 if color_by in ("parity", "model") else 680,
        margin={"b": 80 if color_by in ("parity", "model") else 150},
    )
    if color_by not in ("parity", "model"):
        fig.update_layout(coloraxis=_coloraxis(color_by, *_color_range(models, color_by), y=-0.2))
    return fig
