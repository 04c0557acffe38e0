"""Pure Plotly figure builders for the dashboard (the paper's Figures 1/2/7-9 and 11-14).

Every builder takes tidy data (the per-head frame of :func:`headforms.analyze` or spectrum
arrays) and returns a ``plotly.graph_objects.Figure``; none loads a model. Points a user can
click carry ``customdata = [model_name, layer, head]``. Traces are vectorised: one trace per
(model, parity type), never one per point, so 10,000 heads build quickly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .errors import HeadformsError
from .forms import PARITY_LABELS, PARITY_TYPE_II_THRESHOLD

TEMPLATE = "plotly_white"
UIREVISION = "headforms"
"""Constant ``layout.uirevision``: the camera / zoom survive Streamlit reruns."""

PARITY_COLORS: dict[str, str] = {"I+": "#E69F00", "II": "#009E73", "I-": "#0072B2"}
"""One colour per parity type (Okabe-Ito, colour-blind safe), used by every figure."""

PARITY_SYMBOLS: dict[str, str] = {"I+": "cross", "II": "circle", "I-": "diamond"}
"""Marker per parity type (the paper uses +, o, -); all three exist in Scatter3d and Scatter."""

PARITY_NAMES: dict[str, str] = {"I+": "Type I+", "II": "Type II", "I-": "Type I−"}

MODEL_COLORS: tuple[str, ...] = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#ff7f0e",
)
"""Discrete palette for ``color_by="model"``."""

HEAD_COLOR = "#d62728"
BASELINE_COLOR = "#555555"
POSITIVE_COLOR = "#C0392B"
NEGATIVE_COLOR = "#2E86C1"
THETA_COLOR = "red"
EDGE_COLOR = "#444444"
SELECTED_COLOR = "black"

DIVERGING_SCALE: list[list] = [
    [0.0, "#053061"],
    [0.25, "#4393c3"],
    [0.5, "#ffffff"],
    [0.75, "#d6604d"],
    [1.0, "#67001f"],
]
"""Blue below 1/2, white at 1/2, red above (Figures 13 and 14), when cmin/cmax are
symmetric about 1/2."""

LAYER_SCALE = "Viridis"

COLOR_BY_OPTIONS = ("parity", "layer", "energy", "pairing", "model")
"""Values of ``color_by`` for :func:`simplex_figure` and :func:`triangle_figure`."""

COLUMN_TITLES: dict[str, str] = {
    "energy": "symmetric energy ‖S‖²/‖L‖²",
    "pairing": "pairing score 1 − ‖λ₊−λ₋‖/‖S‖",
    "layer": "layer",
}

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

Selected = tuple[str, int, int] | None
"""A selected head: (model_name, layer, head), as carried in every marker's customdata."""


class FigureInputError(HeadformsError, ValueError):
    """A figure builder got an argument it cannot draw (unknown colouring, missing column)."""


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


def head_customdata(heads: pd.DataFrame, model: str) -> np.ndarray:
    """``[model_name, layer, head]`` per row: the click payload of every head marker (object
    array; layer and head stay Python ints so they round-trip through JSON)."""
    data = np.empty((len(heads), 3), dtype=object)
    data[:, 0] = model
    data[:, 1] = heads["layer"].to_numpy().astype(int).tolist()
    data[:, 2] = heads["head"].to_numpy().astype(int).tolist()
    return data


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
    models: Mapping[str, pd.DataFrame], color_by: str = "parity", selected: Selected = None
) -> go.Figure:
    """Head profiles (a, b, c, d) on the 3-simplex Delta_3 drawn as a regular tetrahedron
    (Figures 1, 2, 8), with its edges, the red segments Theta, and one marker per head."""
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
    models: Mapping[str, pd.DataFrame], color_by: str = "parity", selected: Selected = None
) -> go.Figure:
    """Symmetric profiles (b_S, c_S, d_S) on the triangle Delta = {a = 0} (Figures 7 right, 9),
    with the Type II band c_S + d_S <= 1/50 near vertex b and the I+/I- boundary c_S = d_S."""
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


def _unit_nonzero(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Eigenvalues scaled by ||S|| per head (rows), exact zeros removed; returns (values, zeros)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    norms = np.sqrt((values**2).sum(axis=1, keepdims=True))
    norms[norms == 0] = 1.0
    scaled = values / norms
    nonzero = scaled[values != 0]
    return nonzero, int(np.count_nonzero(values == 0))


def lobe_bars(
    centers: np.ndarray, counts: np.ndarray, width: float, show_legend: bool = True
) -> list[go.Bar]:
    """Histogram bars of eigenvalues of S scaled by ||S||: the positive lobe lambda_+ and the
    negative lobe -lambda_- in their two colours (one definition for every spectrum figure)."""
    bars = []
    for sign, color, name in (
        (1, POSITIVE_COLOR, "λ₊ (positive lobe)"),
        (-1, NEGATIVE_COLOR, "−λ₋ (negative lobe)"),
    ):
        mask = np.sign(centers) == sign
        bars.append(
            go.Bar(
                x=centers[mask],
                y=counts[mask],
                width=width,
                marker={"color": color},
                opacity=0.8,
                name=name,
                legendgroup=name,
                showlegend=show_legend,
                hovertemplate="eigenvalue/‖S‖ ≈ %{x:.3f}<br>count %{y:.2f}<extra></extra>",
            )
        )
    return bars


def eigenvalue_histogram(
    eig_s: np.ndarray, rand_eig_s: np.ndarray | None = None, title: str = "Eigenvalues of S"
) -> go.Figure:
    """Histogram of the eigenvalues of S (one head, or several heads pooled: rows = heads),
    each head scaled by its ||S||; positive and negative lobes coloured, baseline as an outline."""
    head, zeros = _unit_nonzero(eig_s)
    pooled = [head]
    base = None
    if rand_eig_s is not None:
        base, _ = _unit_nonzero(rand_eig_s)
        pooled.append(base)
    extent = max((float(np.abs(p).max()) for p in pooled if p.size), default=1.0)
    n_heads = np.atleast_2d(eig_s).shape[0]
    half_bins = int(np.clip(np.sqrt(max(head.size, 1)) * 1.5, 8, 60))
    width = extent / half_bins
    edges = np.arange(-half_bins, half_bins + 1) * width
    centers = (edges[:-1] + edges[1:]) / 2
    counts, _ = np.histogram(head, bins=edges)
    counts = counts / n_heads
    fig = go.Figure(lobe_bars(centers, counts, width))
    if base is not None:
        base_counts, _ = np.histogram(base, bins=edges)
        base_counts = base_counts / np.atleast_2d(rand_eig_s).shape[0]
        step_x = np.repeat(edges, 2)[1:-1]
        step_y = np.repeat(base_counts, 2)
        fig.add_trace(
            go.Scatter(
                x=step_x,
                y=step_y,
                mode="lines",
                line={"color": BASELINE_COLOR, "width": 2},
                name="Gaussian baseline",
                hoverinfo="skip",
            )
        )
    per = " per head" if n_heads > 1 else ""
    note = f"{zeros} exact zero eigenvalue(s) excluded" if zeros else "no exact zeros among the 2n"
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{title}<br><sup>the 2n eigenvalues of S that can be non-zero; "
            f"{note}; the other N − 2n are zero</sup>"
        },
        xaxis={"title": {"text": "eigenvalue of S / ‖S‖ (Frobenius)"}},
        yaxis={"title": {"text": f"eigenvalues per bin{per}"}},
        barmode="overlay",
        bargap=0,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _split_lobes(eig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """lambda_+ and lambda_- (absolute values, decreasing, zero-padded) from eigenvalues."""
    eig = np.asarray(eig, dtype=float)
    pos = np.sort(eig[eig > 0])[::-1]
    neg = np.sort(-eig[eig < 0])[::-1]
    size = max(pos.size, neg.size)
    return np.pad(pos, (0, size - pos.size)), np.pad(neg, (0, size - neg.size))


def _lobe_points(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lobes scaled by ||S||, truncated to the ranks where either lobe is non-zero."""
    pos = np.asarray(pos, dtype=float)
    neg = np.asarray(neg, dtype=float)
    norm = float(np.sqrt((pos**2).sum() + (neg**2).sum())) or 1.0
    keep = (pos > 0) | (neg > 0)
    return pos[keep] / norm, neg[keep] / norm


def lobes_figure(
    lobe_pos: np.ndarray,
    lobe_neg: np.ndarray,
    rand_lobe_pos: np.ndarray | None = None,
    rand_lobe_neg: np.ndarray | None = None,
    title: str = "Sorted spectral lobes λ₊ᵢ against λ₋ᵢ",
) -> go.Figure:
    """lambda_+_i against lambda_-_i (i = rank), scaled by ||S||, with the diagonal
    (Observation 5: proportional lobes). The baseline is either its two lobes or, when only
    ``rand_lobe_pos`` is given, its full eigenvalue array (``rand_eig_s``), split here."""
    pos, neg = _lobe_points(lobe_pos, lobe_neg)
    series = [("head", pos, neg, HEAD_COLOR)]
    if rand_lobe_pos is not None:
        if rand_lobe_neg is None:
            rand_lobe_pos, rand_lobe_neg = _split_lobes(rand_lobe_pos)
        rpos, rneg = _lobe_points(rand_lobe_pos, rand_lobe_neg)
        series.append(("Gaussian baseline", rpos, rneg, BASELINE_COLOR))
    top = max((float(max(p.max(initial=0), n.max(initial=0))) for _, p, n, _ in series))
    top = top * 1.05 or 1.0
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, top],
            y=[0, top],
            mode="lines",
            line={"color": "#999999", "dash": "dash"},
            name="λ₊ = λ₋ (hyperbolic)",
            hoverinfo="skip",
        )
    )
    for name, p, n, color in series:
        ratio = float(p @ n / (p @ p)) if p @ p > 0 else float("nan")
        fig.add_trace(
            go.Scatter(
                x=p,
                y=n,
                mode="lines+markers",
                marker={"size": 5, "color": color},
                line={"color": color, "width": 1},
                name=f"{name} (fit λ₋ ≈ {ratio:.2f} λ₊)",
                customdata=np.arange(1, p.size + 1),
                hovertemplate="rank %{customdata}<br>λ₊/‖S‖ %{x:.4f}<br>λ₋/‖S‖ %{y:.4f}"
                f"<extra>{name}</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title},
        xaxis={"title": {"text": "λ₊ᵢ / ‖S‖"}, "range": [0, top], "constrain": "domain"},
        yaxis={
            "title": {"text": "λ₋ᵢ / ‖S‖"},
            "range": [0, top],
            "scaleanchor": "x",
            "scaleratio": 1,
        },
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _distinct_singular_values(sv_a: np.ndarray) -> np.ndarray:
    """The distinct singular values of A (each appears twice), scaled so their squares sum to 1
    (i.e. divided by ||A||/sqrt(2))."""
    sv = np.sort(np.asarray(sv_a, dtype=float))[::-1][::2]
    norm = float(np.sqrt((sv**2).sum()))
    return sv / norm if norm > 0 else sv


def singular_values_figure(
    sv_a: np.ndarray, rand_sv_a: np.ndarray | None = None, title: str = "Singular values of A"
) -> go.Figure:
    """Distinct singular values sigma_i of the antisymmetric part A by rank (Observation 6;
    A's spectrum is +-i sigma), head vs baseline, each scaled to unit length."""
    fig = go.Figure()
    for name, values, color in (
        ("head", sv_a, HEAD_COLOR),
        ("Gaussian baseline", rand_sv_a, BASELINE_COLOR),
    ):
        if values is None:
            continue
        sv = _distinct_singular_values(values)
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, sv.size + 1),
                y=sv,
                mode="lines+markers",
                name=name,
                marker={"size": 5, "color": color},
                line={"color": color, "width": 1},
                hovertemplate=f"rank %{{x}}<br>σ/‖σ‖ %{{y:.4f}}<extra>{name}</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{title}<br><sup>distinct values (each is a pair ±iσ of A's "
            "eigenvalues), scaled so that Σσᵢ² = 1</sup>"
        },
        xaxis={"title": {"text": "rank i"}},
        yaxis={"title": {"text": "σᵢ / ‖σ‖  (‖σ‖² = ‖A‖²/2)"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


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
    heads: pd.DataFrame, column: str, model_name: str, selected: Selected = None
) -> go.Figure:
    """Layer x head grid of ``column`` (trained heads) beside ``rand_<column>`` (Gaussian
    baseline), Figures 13/14: square scatter markers (clickable), shared diverging colour
    scale white at 1/2, red above, blue below, one colour bar."""
    baseline_column = f"rand_{column}"
    for col in (column, baseline_column):
        if col not in heads.columns:
            raise FigureInputError(f"heads has no column {col!r}")
    n_layers = int(heads["layer"].max()) + 1 if len(heads) else 1
    n_heads = int(heads["head"].max()) + 1 if len(heads) else 1
    cell = float(np.clip(min(430.0 / n_heads, 640.0 / n_layers), 4.0, 34.0))
    height = int(max(320.0, cell * n_layers + 170.0))
    cmin, cmax = heatmap_range([heads[column], heads[baseline_column]])
    title = COLUMN_TITLES.get(column, column)
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=("trained heads", "Gaussian baseline (same n, N)"),
    )
    customdata = head_customdata(heads, model_name)
    for col_index, (col, label) in enumerate(
        ((column, "trained"), (baseline_column, "baseline")), start=1
    ):
        fig.add_trace(
            go.Scatter(
                x=heads["head"],
                y=heads["layer"],
                mode="markers",
                marker={
                    "symbol": "square",
                    "size": cell * 0.92,
                    "color": heads[col],
                    "coloraxis": "coloraxis",
                    "line": {"width": 0},
                },
                customdata=customdata,
                name=label,
                showlegend=False,
                text=[f"{value:.4f}" for value in heads[col].to_numpy(dtype=float)],
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
            for col_index in (1, 2):
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
    (``frame`` from :func:`headforms.analysis.parity_by_layer`)."""
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


def profile_bar_figure(row: pd.Series, baseline_row: pd.Series | None = None) -> go.Figure:
    """The profile (a, b, c, d) and symmetric profile of one head beside its Gaussian baseline
    (``rand_*`` columns of the same row unless ``baseline_row`` is given)."""
    coords = ["a", "b", "c", "d", "b_sym", "c_sym", "d_sym"]
    labels = ["a", "b", "c", "d", "b_S", "c_S", "d_S"]
    if baseline_row is None:
        base = [row.get(f"rand_{c}", np.nan) for c in coords]
    else:
        base = [baseline_row.get(c, np.nan) for c in coords]
    fig = go.Figure(
        [
            go.Bar(
                x=labels,
                y=[row[c] for c in coords],
                name="head",
                marker={"color": HEAD_COLOR},
                texttemplate="%{y:.3f}",
            ),
            go.Bar(
                x=labels,
                y=base,
                name="Gaussian baseline",
                marker={"color": BASELINE_COLOR},
                texttemplate="%{y:.3f}",
            ),
        ]
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Profile π(L) = (a, b, c, d) and symmetric profile π(S)"},
        xaxis={"title": {"text": "coordinate"}},
        yaxis={"title": {"text": "value (each profile sums to 1)"}, "range": [0, 1.05]},
        barmode="group",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig
