"""The 3D camera of the simplex figure: the whole-tetrahedron view, a view framed on the heads
(centre and radius of the crowd, a camera fitted to it), the projection of points to the screen
that places vertex labels and the direction hints toward vertices out of view."""

from __future__ import annotations

import numpy as np

from .geometry import SIMPLEX_LABELS, SIMPLEX_VERTICES
from .style import LABEL_BACKGROUND

FRAMES: dict[str, str] = {"simplex": "Whole simplex", "heads": "Zoom to heads"}
"""What the 3D view frames, by the names the dashboard gives them: ``"simplex"`` the whole
tetrahedron (the default, as in the paper's Figures 2 and 8), ``"heads"`` the camera zoomed
onto where most heads are."""

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

WHOLE_SIMPLEX_CAMERA = {
    "eye": {"x": 0.45, "y": -1.5, "z": 0.6},
    "center": {"x": 0.0, "y": 0.0, "z": -0.08},
    "up": {"x": 0.0, "y": 0.0, "z": 1.0},
}
"""The whole-simplex view (scene coordinates), as in the paper's Figure 1: from the front-right,
a little above, nearly along the edge a-b, so that both branches of Theta and the heads along
them spread across the view while every vertex stays in it."""


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
    eye0 = np.array([WHOLE_SIMPLEX_CAMERA["eye"][k] for k in "xyz"])
    centre0 = np.array([WHOLE_SIMPLEX_CAMERA["center"][k] for k in "xyz"])
    direction = (eye0 - centre0) / np.linalg.norm(eye0 - centre0)
    target = scene_coordinates(centre)
    scale = float(ASPECT_RATIO[0] / (AXIS_RANGES[0, 1] - AXIS_RANGES[0, 0]))
    half_view = np.tan(_FOVY / 2) * min(1.0, view_aspect)
    eye = target + direction * (radius * scale / half_view) * FRAME_MARGIN
    return {
        "eye": dict(zip("xyz", map(float, eye), strict=True)),
        "center": dict(zip("xyz", map(float, target), strict=True)),
        "up": dict(WHOLE_SIMPLEX_CAMERA["up"]),
    }


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


def vertex_annotations(centre: np.ndarray | None, camera: dict) -> list[dict]:
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
                "bgcolor": LABEL_BACKGROUND,
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
                "text": f"→ toward {text.replace('<br>', ' ')}",
                "showarrow": False,
                "font": {"size": 11, "color": "#555555"},
                "bgcolor": LABEL_BACKGROUND,
                "name": "hint",
            }
        )
    return labels
