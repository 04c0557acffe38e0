"""The simplex view: head profiles on the tetrahedron Delta_3 (the paper's Figures 1, 2, 8), its
edges, Theta and faces labelled; the heads drawn by :mod:`headforms.figures.head_markers`. The
triangle of symmetric profiles is :func:`headforms.figures.triangle.triangle_figure`."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..columns import PROFILE, PROFILE_COLUMNS
from .camera import (
    ASPECT_RATIO,
    AXIS_RANGES,
    FRAMES,
    WHOLE_SIMPLEX_CAMERA,
    fitted_camera,
    heads_view,
    vertex_annotations,
)
from .geometry import FACES, SIMPLEX_VERTICES, THETA_LABEL, barycentric_points, theta_segments
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
    valid,
)
from .style import (
    EDGE_COLOR,
    LABEL_BACKGROUND,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    FigureInputError,
    Selected,
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
                "bgcolor": LABEL_BACKGROUND,
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
    in_frame: np.ndarray | None = None,
) -> go.Figure:
    """Head profiles (a, b, c, d) on the 3-simplex Delta_3 drawn as a regular tetrahedron
    (Figures 1, 2, 8): its edges (the empty one dashed), the red segments Theta, the faces
    labelled as in Figure 1 and Table 3 (left unfilled, see above), and one marker per head
    (shape: parity); ``baselines`` (model -> baseline table) adds the Gaussian heads in grey.

    ``frame="simplex"`` (default) shows the whole tetrahedron; ``"heads"`` points the camera at
    the region holding :data:`FRAMED_SHARE` of the heads (:func:`heads_view`; vertices out of
    view get direction hints). Nothing is clipped either way: the axis ranges are always the
    simplex's. The selected head is ringed (drawn after every head) and labelled with an arrow;
    it, and the Cartesian points ``in_frame`` (e.g. its path), stay inside the frame.
    """
    check_color_by(color_by, next(iter(models.values()), None))
    if frame not in FRAMES:
        raise FigureInputError(f"frame must be one of {tuple(FRAMES)}, got {frame!r}")
    vertices = SIMPLEX_VERTICES
    columns = PROFILE
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
    solid = lines(edges + dashes)
    theta = lines([tuple(seg) for seg in theta_segments()])
    if frame == "heads":
        points = [
            barycentric_points(valid(h, columns)[list(columns)].to_numpy()) for h in models.values()
        ]
        centre, radius = heads_view(np.vstack(points) if points else np.empty((0, 3)))
        found = selected_row(models, selected, columns)
        kept = [np.asarray(in_frame, dtype=float).reshape(-1, 3)] if in_frame is not None else []
        if found is not None:
            kept.append(barycentric_points(found[0][list(columns)].to_numpy()))
        kept_points = np.vstack(kept) if kept else np.empty((0, 3))
        kept_points = kept_points[np.isfinite(kept_points).all(axis=1)]
        if len(kept_points):  # the selected head, its label and its path stay inside the frame
            farthest = float(np.linalg.norm(kept_points - centre, axis=1).max())
            radius = max(radius, SELECTED_FRAME_MARGIN * farthest)
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
    fig.add_traces(selected_ring(models, selected, columns, vertices))
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
        title={"text": title("Profiles on the simplex Δ₃", models)},
        uirevision=UIREVISION,
        scene={
            **{
                f"{letter}axis": {**axis, "title": {"text": letter}, "range": list(AXIS_RANGES[i])}
                for i, letter in enumerate("xyz")
            },
            "aspectmode": "manual",
            "aspectratio": dict(zip("xyz", map(float, ASPECT_RATIO), strict=True)),
            "camera": camera,
            "annotations": annotations
            + selected_annotation(models, selected, columns, vertices, camera),
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
        fig.update_layout(coloraxis=coloraxis(color_by, *color_range(primary, color_by), y=0.0))
    return fig


PROFILE_TABLE_COLUMNS = ("layer", "head", "parity", *PROFILE_COLUMNS)


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
