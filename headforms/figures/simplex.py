"""The simplex views: head profiles on the tetrahedron Delta_3 and symmetric profiles on the
triangle Delta (the paper's Figures 1, 2, 7-9). Traces are vectorised: one trace per
(model, parity type), never one per point, so 10,000 heads build quickly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..forms import PARITY_LABELS, PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from .camera import (
    ASPECT_RATIO,
    AXIS_RANGES,
    FRAMES,
    WHOLE_SIMPLEX_CAMERA,
    fitted_camera,
    heads_view,
    vertex_annotations,
    view_coordinates,
)
from .geometry import (
    FACES,
    SIMPLEX_VERTICES,
    THETA_LABEL,
    TRIANGLE_EDGES,
    TRIANGLE_LABELS,
    TRIANGLE_VERTICES,
    barycentric_points,
    theta_segments,
)
from .style import (
    BASELINE_COLOR,
    COLOR_BY_OPTIONS,
    COLUMN_TITLES,
    CONTINUOUS_SCALE,
    EDGE_COLOR,
    MARKER_SIZE_2D,
    MARKER_SIZE_3D,
    PARITY_COLORS,
    PARITY_LINE_WIDTH,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    PARITY_SYMBOLS_3D,
    SELECTED_COLOR,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    FigureInputError,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    label_position,
    model_color,
    selected_marker,
    selected_row,
)

SELECTED_FRAME_MARGIN = 1.3
"""Zoomed to the heads, the framed sphere reaches at least this times the selected head's
distance from the centre: the head and its label stay in view."""

EDGE_DASHES = 9
"""Dashes drawing the edge {a = b = 0} of the 3D simplex."""

# The facets are not filled: plotly.js picks the nearest WebGL object under the pointer, so even a
# faint face in front of the heads would take every click and hover meant for them. The edges
# (the empty one dashed) and the face labels carry the geometry, as in the paper's Figure 1.


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


def hover_text(heads: pd.DataFrame, model: str, columns: Sequence[str]) -> list[str]:
    """Hover text per head: model, layer, head, profile, energy, pairing, parity (also what
    :mod:`headforms.figures.animated` shows at each point of a path)."""
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


def _valid(heads: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The heads with a finite profile (a vanishing form has none)."""
    return heads[np.isfinite(heads[list(columns)].to_numpy(dtype=float)).all(axis=1)]


def _color_range(heads: pd.DataFrame, color_by: str) -> tuple[float, float]:
    """Colour range of a continuous ``color_by``: the data's own range (layers from 0), so the
    colours spread over the heads actually drawn."""
    values = heads[color_by].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return 0.0, 1.0
    low = 0.0 if color_by == "layer" else float(values.min())
    high = float(values.max())
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def _coloraxis(color_by: str, cmin: float, cmax: float, y: float) -> dict:
    """A colour axis with a horizontal colour bar below the plot (at paper height y), leaving the
    right side to the legend."""
    return {
        "colorscale": CONTINUOUS_SCALE,
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


def head_traces(
    models: Mapping[str, pd.DataFrame],
    columns: Sequence[str],
    vertices: np.ndarray,
    color_by: str,
    three_d: bool,
) -> list[dict]:
    """One marker trace per (model, parity type), grouped in the legend by model (as dicts:
    validated once, when added to the figure). Parity is the marker's shape, the same for every
    model (:data:`PARITY_SYMBOLS`, :data:`PARITY_SYMBOLS_3D`); the first model is coloured by
    ``color_by``, every other model (an overlay) in its own colour. One size per trace: every
    head is drawn at the same legible size (the selected one gets a ring of its own). Also the
    traces of each frame of :mod:`headforms.figures.animated`'s animated views."""
    traces = []
    symbols = PARITY_SYMBOLS_3D if three_d else PARITY_SYMBOLS
    for index, (model, heads) in enumerate(models.items()):
        valid = _valid(heads, columns)
        for parity in PARITY_LABELS:
            part = valid[valid["parity"] == parity]
            if part.empty:
                continue
            xyz = barycentric_points(part[list(columns)].to_numpy(), vertices)
            marker: dict = {
                "symbol": symbols[parity],
                "size": MARKER_SIZE_3D if three_d else MARKER_SIZE_2D,
                "opacity": 0.9,
            }
            if color_by == "model" or index > 0:
                marker["color"] = model_color(index)
            elif color_by == "parity":
                marker["color"] = PARITY_COLORS[parity]
            else:
                marker["color"] = part[color_by].to_numpy(dtype=float)
                marker["coloraxis"] = "coloraxis"
            if not three_d:  # open and line symbols: the stroke is the marker colour
                marker["line"] = {"width": PARITY_LINE_WIDTH}
            coords = {"x": xyz[:, 0], "y": xyz[:, 1]}
            if three_d:
                coords["z"] = xyz[:, 2]
            traces.append(
                {
                    "type": "scatter3d" if three_d else "scatter",
                    **coords,
                    "mode": "markers",
                    "marker": marker,
                    "name": PARITY_NAMES[parity]
                    if len(models) == 1
                    else f"{model}: {PARITY_NAMES[parity]}",
                    "legendgroup": model,
                    "legendgrouptitle": {"text": model},
                    "customdata": head_customdata(part, model),
                    "text": hover_text(part, model, columns),
                    "hovertemplate": "%{text}<extra></extra>",
                    "meta": {
                        "role": "heads",
                        "model": model,
                        "parity": parity,
                        "choices": head_choices(part, tuple(columns)),
                    },
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


def _selected_ring(
    models: Mapping[str, pd.DataFrame],
    selected: Selected,
    columns: Sequence[str],
    vertices: np.ndarray,
    camera: dict | None = None,
) -> list[go.BaseTraceType]:
    """A black ring around the selected head, clickable like its marker. On the triangle its
    name is its text, placed toward the middle of the plot; in 3D (``camera`` given) the name is
    a scene annotation (:func:`_selected_annotation`)."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, model = found
    xyz = barycentric_points(row[list(columns)].to_numpy(), vertices)
    hover = hover_text(row, model, columns)[0] + "<extra>selected</extra>"
    if camera is not None:
        ring = selected_marker(row, model, dict(zip("xyz", xyz.T, strict=True)), hover)
        return [ring.update(mode="markers")]
    (x, y), low, high = xyz[0], vertices.min(axis=0), vertices.max(axis=0)
    position = label_position(*((np.array([x, y]) - low) / (high - low)))
    return [selected_marker(row, model, {"x": xyz[:, 0], "y": xyz[:, 1]}, hover, position)]


def _selected_annotation(
    models: Mapping[str, pd.DataFrame], selected: Selected, columns: Sequence[str], camera: dict
) -> list[dict]:
    """The selected head's name as a 3D scene annotation with an arrow (cheaper than 3D text),
    drawn from the head toward the middle of the view so that it stays inside the frame."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, _ = found
    ((x, y, z),) = barycentric_points(row[list(columns)].to_numpy(), SIMPLEX_VERTICES)
    screen_x, screen_y, _ = view_coordinates(np.array([[x, y, z]]), camera)[0]
    return [
        {
            "x": float(x),
            "y": float(y),
            "z": float(z),
            "text": f"<b>{head_name(row['layer'].iloc[0], row['head'].iloc[0])}</b>",
            "showarrow": True,
            "arrowhead": 0,
            "arrowwidth": 1.5,
            "arrowcolor": SELECTED_COLOR,
            "ax": -40 if screen_x > 0.2 else 40,
            "ay": 34 if screen_y > 0.3 else -34,
            "font": {"size": 13, "color": SELECTED_COLOR},
            "bgcolor": "rgba(255,255,255,0.85)",
            "bordercolor": SELECTED_COLOR,
            "borderwidth": 1,
            "name": "selected",
        }
    ]


def _title(prefix: str, models: Mapping[str, pd.DataFrame]) -> str:
    """Figure title naming the models shown."""
    names = ", ".join(models) if models else "no model"
    return f"{prefix}: {names}"


def _face_annotations() -> list[dict]:
    """Labels of the edges and facets that Figure 1 and Table 3 name (the vertices are labelled
    by :func:`headforms.figures.camera.vertex_annotations`), small and grey, at points of
    :data:`FACES` off Theta."""
    labels = []
    for face in FACES:
        if face.kind == "vertex":
            continue
        ((x, y, z),) = barycentric_points(np.array([face.at], dtype=float))
        labels.append(
            {
                "x": float(x),
                "y": float(y),
                "z": float(z),
                "text": f"{face.equations}: {face.short}",
                "showarrow": False,
                "font": {"size": 11, "color": "#666666"},
                "bgcolor": "rgba(255,255,255,0.6)",
                "name": face.kind,
            }
        )
    return labels


def simplex_figure(
    models: Mapping[str, pd.DataFrame],
    color_by: str = "parity",
    selected: Selected = None,
    frame: str = "simplex",
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Head profiles (a, b, c, d) on the 3-simplex Delta_3 drawn as a regular tetrahedron
    (Figures 1, 2, 8): its edges (the empty one dashed), the red segments Theta, the faces
    labelled as in Figure 1 and Table 3 (left unfilled, see above), and one marker per head
    (shape: parity); ``baselines`` (model -> baseline table) adds the Gaussian heads in grey.

    ``frame="simplex"`` (default) shows the whole tetrahedron; ``"heads"`` points the camera at
    the region holding :data:`FRAMED_SHARE` of the heads (:func:`heads_view`; vertices out of
    view get direction hints). Nothing is clipped either way: the axis ranges are always the
    simplex's. The selected head is ringed and labelled with an arrow, inside the frame.
    """
    _check_color_by(color_by)
    if frame not in FRAMES:
        raise FigureInputError(f"frame must be one of {tuple(FRAMES)}, got {frame!r}")
    vertices = SIMPLEX_VERTICES
    columns = ("a", "b", "c", "d")
    edges = [
        (vertices[i], vertices[j]) for i in range(4) for j in range(i + 1, 4) if (i, j) != (2, 3)
    ]
    # The edge {a = b = 0} (c to d, empty fibers) is dashed, drawn as short segments of the same
    # trace: a separate dashed trace would cost the 3D scene another WebGL draw.
    stops = np.linspace(0.0, 1.0, 2 * EDGE_DASHES)
    dashes = [
        (
            vertices[2] + t0 * (vertices[3] - vertices[2]),
            vertices[2] + t1 * (vertices[3] - vertices[2]),
        )
        for t0, t1 in zip(stops[::2], stops[1::2], strict=True)
    ]
    solid = _lines(edges + dashes)
    theta = _lines([tuple(seg) for seg in theta_segments()])
    if frame == "heads":
        points = [
            barycentric_points(_valid(h, columns)[list(columns)].to_numpy())
            for h in models.values()
        ]
        centre, radius = heads_view(np.vstack(points) if points else np.empty((0, 3)))
        found = selected_row(models, selected, columns)
        if found is not None:  # the selected head and its label stay inside the frame
            (where,) = barycentric_points(found[0][list(columns)].to_numpy())
            radius = max(radius, SELECTED_FRAME_MARGIN * float(np.linalg.norm(where - centre)))
        camera = fitted_camera(centre, radius)
        annotations = vertex_annotations(centre, camera)
    else:
        camera = WHOLE_SIMPLEX_CAMERA
        annotations = vertex_annotations(None, camera) + _face_annotations()
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
            x=theta[:, 0],
            y=theta[:, 1],
            z=theta[:, 2],
            mode="lines",
            line={"color": THETA_COLOR, "width": 5},
            hoverinfo="skip",
            name=THETA_LABEL,
            meta={"role": "theta"},
        )
    )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=True))
    fig.add_traces(head_traces(models, columns, vertices, color_by, True))
    fig.add_traces(_selected_ring(models, selected, columns, vertices, camera))
    axis = {
        "visible": False,
        "showbackground": False,
        "showgrid": False,
        "zeroline": False,
        "showspikes": False,
        "autorange": False,
    }
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title("Profiles on the simplex Δ₃", models)},
        uirevision=UIREVISION,
        scene={
            **{
                f"{letter}axis": {**axis, "title": {"text": letter}, "range": list(AXIS_RANGES[i])}
                for i, letter in enumerate("xyz")
            },
            "aspectmode": "manual",
            "aspectratio": dict(zip("xyz", map(float, ASPECT_RATIO), strict=True)),
            "camera": camera,
            "annotations": annotations + _selected_annotation(models, selected, columns, camera),
            "uirevision": f"{UIREVISION}:{frame}",
            "dragmode": "orbit",
        },
        # legend symbols at the markers' own size, as they are drawn
        legend={"itemsizing": "trace", "groupclick": "toggleitem"},
        margin={"l": 0, "r": 0, "t": 50, "b": 0 if color_by in ("parity", "model") else 90},
        height=650,
        meta={"frame": frame},
    )
    primary = next(iter(models.values()), None)
    if color_by not in ("parity", "model") and primary is not None:
        fig.update_layout(coloraxis=_coloraxis(color_by, *_color_range(primary, color_by), y=0.0))
    return fig


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
        )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=False))
    fig.add_traces(head_traces(models, columns, vertices, color_by, three_d=False))
    fig.add_traces(_selected_ring(models, selected, columns, vertices))
    fig.update_layout(
        template=TEMPLATE,
        title={"text": _title("Symmetric profiles on the triangle Δ", models)},
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
        fig.update_layout(coloraxis=_coloraxis(color_by, *_color_range(primary, color_by), y=-0.2))
    return fig


PROFILE_TABLE_COLUMNS = (
    "layer",
    "head",
    "parity",
    "a",
    "b",
    "c",
    "d",
    "b_sym",
    "c_sym",
    "d_sym",
    "energy",
    "pairing",
)


def profile_table(models: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The data the simplex and triangle draw, as one tidy table (a ``model`` column, then
    :data:`PROFILE_TABLE_COLUMNS`): what their CSV export holds."""
    frames = [
        heads.loc[:, list(PROFILE_TABLE_COLUMNS)].assign(model=model)
        for model, heads in models.items()
    ]
    columns = ["model", *PROFILE_TABLE_COLUMNS]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]
