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
    CONTINUOUS_SCALE,
    EDGE_COLOR,
    MARKER_FAMILIES_2D,
    MARKER_FAMILIES_3D,
    MODEL_COLORS,
    PARITY_COLORS,
    PARITY_NAMES,
    SELECTED_COLOR,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    FigureInputError,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    selected_marker,
    selected_row,
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

TRIANGLE_LABELS = ("b_S = 1<br>hyperbolic", "c_S = 1<br>PSD", "d_S = 1 NSD")

EDGE_DASHES = 9
"""Dashes drawing the edge {a = b = 0} of the 3D simplex."""

FRAMES = ("heads", "simplex")
"""What the 3D view frames: ``"heads"`` (the camera zooms onto where most heads are) or
``"simplex"`` (the whole tetrahedron)."""

FRAMED_SHARE = 0.75
"""Share of the heads that the ``"heads"`` frame keeps in view (the rest is a scroll away). In
trained models half the heads sit within 0.01-0.04 of their median profile, near the middle of
the edge a = b of Theta, while a tail spreads along Theta toward c = 1: framing 90% would keep
that crowd a 30-pixel blob."""

FRAME_MARGIN = 1.08
"""The framed sphere's radius times this is what the camera fits in the plot."""

MIN_FRAME_RADIUS = 0.02
"""Smallest framed radius (edge lengths of the tetrahedron): a single head still has context."""

VIEW_ASPECT = 0.85
"""Width / height of the 3D plot area assumed when sizing the camera distance."""

_FOVY = np.pi / 4
"""Vertical field of view of plotly.js' 3D camera (gl-plot3d's default)."""

_EXTENT = SIMPLEX_VERTICES.max(axis=0) - SIMPLEX_VERTICES.min(axis=0)
AXIS_RANGES = np.column_stack(
    [SIMPLEX_VERTICES.min(axis=0) - _EXTENT / 32, SIMPLEX_VERTICES.max(axis=0) + _EXTENT / 32]
)
"""Axis ranges of the 3D scene (x, y, z rows of [low, high]): the tetrahedron with plotly's
own 1/32 autorange padding, fixed so that the camera below is in known coordinates."""

ASPECT_RATIO = (AXIS_RANGES[:, 1] - AXIS_RANGES[:, 0]) / np.exp(
    np.log(AXIS_RANGES[:, 1] - AXIS_RANGES[:, 0]).mean()
)
"""Scene aspect ratio proportional to the ranges (plotly's ``aspectmode="data"``): one length
unit is the same on every axis, so the regular tetrahedron stays regular."""

_CAMERA = {
    "eye": {"x": 0.55, "y": -1.75, "z": 0.75},
    "center": {"x": 0.0, "y": 0.0, "z": -0.1},
    "up": {"x": 0.0, "y": 0.0, "z": 1.0},
}
"""The whole-simplex view (scene coordinates), as in the paper's Figure 1."""


def barycentric_points(profiles: np.ndarray, vertices: np.ndarray = SIMPLEX_VERTICES) -> np.ndarray:
    """Cartesian points ``sum_i p_i V_i`` of barycentric coordinates (rows of ``profiles``)."""
    return np.asarray(profiles, dtype=float) @ vertices


def theta_segments() -> np.ndarray:
    """The red set Theta = {a = b, c d = 0} as two segments (2, 2, 3): c -> m and d -> m,
    with m the midpoint a = b = 1/2 of the edge {c = d = 0}."""
    mid = barycentric_points(np.array([0.5, 0.5, 0.0, 0.0]))
    return np.array([[SIMPLEX_VERTICES[2], mid], [SIMPLEX_VERTICES[3], mid]])


def scene_coordinates(points: np.ndarray) -> np.ndarray:
    """Cartesian points in plotly's normalised scene coordinates (where ``camera.eye`` and
    ``camera.center`` live): each axis range maps to ``[-ratio/2, ratio/2]`` of its aspect
    ratio, so with :data:`ASPECT_RATIO` this is one uniform scaling about the box centre."""
    low, high = AXIS_RANGES[:, 0], AXIS_RANGES[:, 1]
    return ASPECT_RATIO * (np.asarray(points, dtype=float) - (low + high) / 2) / (high - low)


def heads_view(points: np.ndarray, share: float = FRAMED_SHARE) -> tuple[np.ndarray, float]:
    """Centre (coordinate-wise median) and radius (the ``share`` quantile of the distances to
    it, at least :data:`MIN_FRAME_RADIUS`) of the region where most heads are, in Cartesian
    coordinates. Outliers do not stretch it: the crowd is what needs pulling apart."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    points = points[np.isfinite(points).all(axis=1)]
    if not len(points):
        return SIMPLEX_VERTICES.mean(axis=0), 1.0
    centre = np.median(points, axis=0)
    distances = np.linalg.norm(points - centre, axis=1)
    return centre, max(float(np.quantile(distances, share)), MIN_FRAME_RADIUS)


def fitted_camera(centre: np.ndarray, radius: float, view_aspect: float = VIEW_ASPECT) -> dict:
    """A camera looking at ``centre`` from the whole-simplex view's direction, close enough that
    a sphere of ``radius`` (Cartesian) around it fills the plot (perspective, 45° vertical field
    of view, plot width/height ``view_aspect``)."""
    eye0 = np.array([_CAMERA["eye"][k] for k in "xyz"])
    centre0 = np.array([_CAMERA["center"][k] for k in "xyz"])
    direction = (eye0 - centre0) / np.linalg.norm(eye0 - centre0)
    target = scene_coordinates(centre)
    scale = float(ASPECT_RATIO[0] / (AXIS_RANGES[0, 1] - AXIS_RANGES[0, 0]))
    half_view = np.tan(_FOVY / 2) * min(1.0, view_aspect)
    eye = target + direction * (radius * scale / half_view) * FRAME_MARGIN
    return {
        "eye": dict(zip("xyz", map(float, eye), strict=True)),
        "center": dict(zip("xyz", map(float, target), strict=True)),
        "up": dict(_CAMERA["up"]),
    }


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


SELECTED_SIZE_3D = 13
"""Marker size of the selected head in the 3D scene (the others: 5)."""


def _head_traces(
    models: Mapping[str, pd.DataFrame],
    columns: Sequence[str],
    vertices: np.ndarray,
    color_by: str,
    three_d: bool,
    selected: Selected = None,
) -> list[dict]:
    """One marker trace per (model, parity type), grouped in the legend by model (as dicts:
    validated once, when added to the figure). The first model is coloured by ``color_by``;
    every other model (an overlay) has its own colour and marker family. In 3D the selected
    head is drawn larger in its own trace (another WebGL trace for a ring costs a draw)."""
    traces = []
    size = 5 if three_d else 7
    families = MARKER_FAMILIES_3D if three_d else MARKER_FAMILIES_2D
    for index, (model, heads) in enumerate(models.items()):
        valid = _valid(heads, columns)
        family = families[index % len(families)]
        for parity in PARITY_LABELS:
            part = valid[valid["parity"] == parity]
            if part.empty:
                continue
            xyz = barycentric_points(part[list(columns)].to_numpy(), vertices)
            marker: dict = {"symbol": family[parity], "size": size, "opacity": 0.85}
            if three_d and selected is not None and selected[0] == model:
                chosen = (part["layer"] == int(selected[1])) & (part["head"] == int(selected[2]))
                if chosen.any():
                    marker["size"] = np.where(chosen.to_numpy(), SELECTED_SIZE_3D, size)
            if color_by == "model" or index > 0:
                marker["color"] = MODEL_COLORS[index % len(MODEL_COLORS)]
            elif color_by == "parity":
                marker["color"] = PARITY_COLORS[parity]
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
) -> list[go.BaseTraceType]:
    """A labelled ring around the selected head on the triangle. In 3D the head is drawn larger
    and labelled by a scene annotation instead."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, model = found
    xy = barycentric_points(row[list(columns)].to_numpy(), vertices)
    hover = _hover_text(row, model, columns)[0] + "<extra>selected</extra>"
    return [selected_marker(row, model, {"x": xy[:, 0], "y": xy[:, 1]}, hover)]


def _selected_annotation(
    models: Mapping[str, pd.DataFrame], selected: Selected, columns: Sequence[str]
) -> list[dict]:
    """The selected head's name as a 3D scene annotation with an arrow (cheaper than 3D text)."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, _ = found
    ((x, y, z),) = barycentric_points(row[list(columns)].to_numpy(), SIMPLEX_VERTICES)
    return [
        {
            "x": float(x),
            "y": float(y),
            "z": float(z),
            "text": head_name(row["layer"].iloc[0], row["head"].iloc[0]),
            "showarrow": True,
            "arrowhead": 0,
            "arrowcolor": SELECTED_COLOR,
            "ax": 22,
            "ay": -26,
            "font": {"size": 12, "color": SELECTED_COLOR},
            "bgcolor": "rgba(255,255,255,0.8)",
            "name": "selected",
        }
    ]


_VERTEX_ANCHORS = (
    {"xanchor": "right", "yanchor": "middle", "xshift": -6, "yshift": 0},
    {"xanchor": "center", "yanchor": "top", "xshift": 0, "yshift": -6},
    {"xanchor": "left", "yanchor": "middle", "xshift": 6, "yshift": 0},
    {"xanchor": "center", "yanchor": "bottom", "xshift": 0, "yshift": 6},
)


def view_coordinates(
    points: np.ndarray, camera: dict, view_aspect: float = VIEW_ASPECT
) -> np.ndarray:
    """Normalised device coordinates (x, y in [-1, 1] on screen) and depth of Cartesian points
    seen by a plotly ``camera`` (perspective, 45° vertical field of view), rows ``(x, y,
    depth)``; depth <= 0 is behind the eye."""
    eye, centre, up = (np.array([camera[k][a] for a in "xyz"]) for k in ("eye", "center", "up"))
    forward = (centre - eye) / np.linalg.norm(centre - eye)
    side = np.cross(forward, up)
    side /= np.linalg.norm(side)
    upward = np.cross(side, forward)
    relative = scene_coordinates(points) - eye
    depth = relative @ forward
    half = np.tan(_FOVY / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (relative @ side) / (depth * half * view_aspect)
        y = (relative @ upward) / (depth * half)
    return np.column_stack([x, y, depth])


def _in_view(point: np.ndarray, camera: dict, inset: float = 1.0) -> bool:
    x, y, depth = view_coordinates(point[None, :], camera)[0]
    return bool(depth > 0 and abs(x) <= inset and abs(y) <= inset)


def _inward_anchor(vertex: np.ndarray, camera: dict) -> dict:
    """Anchor of a vertex label that grows toward the middle of the view: in a framed view a
    vertex can sit near the edge, where the fixed outward anchors would push its label off."""
    x, y, _ = view_coordinates(vertex[None, :], camera)[0]
    horizontal = "left" if x < -0.4 else "right" if x > 0.4 else "center"
    below = y > 0.6
    return {
        "xanchor": horizontal,
        "yanchor": "top" if below else "bottom",
        "xshift": {"left": 4, "right": -4, "center": 0}[horizontal],
        "yshift": -6 if below else 6,
    }


def _vertex_annotations(centre: np.ndarray | None, camera: dict) -> list[dict]:
    """Labels of the four vertices as scene annotations (``name="vertex"``, at the vertices:
    SVG text over the scene, cheaper to draw than 3D text or another WebGL trace). With a
    framed view (``centre``), a vertex out of view also gets a hint inside it, on the segment
    from the centre toward the vertex near the edge of the view ("→ toward c = 1 PSD"), so the
    geometry stays readable."""
    labels = []
    for vertex, text, anchor in zip(SIMPLEX_VERTICES, SIMPLEX_LABELS, _VERTEX_ANCHORS, strict=True):
        if centre is not None:
            anchor = _inward_anchor(vertex, camera)
        labels.append(
            {
                "x": float(vertex[0]),
                "y": float(vertex[1]),
                "z": float(vertex[2]),
                "text": text,
                "showarrow": False,
                "font": {"size": 13},
                "name": "vertex",
                **anchor,
            }
        )
        if centre is None or _in_view(vertex, camera):
            continue
        low, high = 0.0, 1.0  # the farthest point toward the vertex still well inside the view
        for _ in range(30):
            middle = (low + high) / 2
            low, high = (
                (middle, high)
                if _in_view(centre + middle * (vertex - centre), camera, 0.8)
                else (low, middle)
            )
        toward = centre + low * (vertex - centre)
        labels.append(
            {
                "x": float(toward[0]),
                "y": float(toward[1]),
                "z": float(toward[2]),
                "text": f"→ toward {text}",
                "showarrow": False,
                "font": {"size": 11, "color": "#555555"},
                "bgcolor": "rgba(255,255,255,0.75)",
                "name": "hint",
            }
        )
    return labels


def _title(prefix: str, models: Mapping[str, pd.DataFrame]) -> str:
    """Figure title naming the models shown."""
    names = ", ".join(models) if models else "no model"
    return f"{prefix}: {names}"


def simplex_figure(
    models: Mapping[str, pd.DataFrame],
    color_by: str = "parity",
    selected: Selected = None,
    frame: str = "heads",
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Head profiles (a, b, c, d) on the 3-simplex Delta_3 drawn as a regular tetrahedron
    (Figures 1, 2, 8), with its edges, the red segments Theta, and one marker per head;
    ``baselines`` (model -> baseline table) adds the Gaussian heads in grey.

    ``frame="heads"`` points the camera at the region holding :data:`FRAMED_SHARE` of the heads
    (:func:`heads_view`; vertices out of view get direction hints); ``"simplex"`` shows the
    whole tetrahedron. Nothing is clipped either way: the axis ranges are always the simplex's.
    The selected head is drawn larger and labelled with an arrow.
    """
    _check_color_by(color_by)
    if frame not in FRAMES:
        raise FigureInputError(f"frame must be one of {FRAMES}, got {frame!r}")
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
            line={"color": THETA_COLOR, "width": 6},
            hoverinfo="skip",
            name="Θ = {a = b, cd = 0} (rank one)",
            meta={"role": "theta"},
        )
    )
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=True))
    fig.add_traces(_head_traces(models, columns, vertices, color_by, True, selected))
    if frame == "heads":
        points = [
            barycentric_points(_valid(h, columns)[list(columns)].to_numpy())
            for h in models.values()
        ]
        centre, radius = heads_view(np.vstack(points) if points else np.empty((0, 3)))
        camera = fitted_camera(centre, radius)
        annotations = _vertex_annotations(centre, camera)
    else:
        camera, annotations = _CAMERA, _vertex_annotations(None, _CAMERA)
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
            "annotations": annotations + _selected_annotation(models, selected, columns),
            "uirevision": f"{UIREVISION}:{frame}",
            "dragmode": "orbit",
        },
        legend={"itemsizing": "constant", "groupclick": "toggleitem"},
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
    fig.add_traces(baseline_traces(baselines or {}, columns, vertices, three_d=False))
    fig.add_traces(_head_traces(models, columns, vertices, color_by, three_d=False))
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
        legend={"itemsizing": "constant", "groupclick": "toggleitem"},
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
