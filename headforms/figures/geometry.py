"""The geometry the simplex figures draw in: the tetrahedron Delta_3 of profiles (a, b, c, d) as a
regular tetrahedron in 3D, the triangle Delta = {a = 0} of symmetric profiles in 2D, Theta, and
the faces the paper labels (Figures 1 and 7, Table 3), with the forms that lie over them.

``H`` is a symmetric matrix whose spectrum is symmetric about zero (hyperbolic), ``P`` a positive
semidefinite matrix, as in the captions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

SIMPLEX_LABELS = (
    "a = 1<br>antisymmetric",
    "b = 1 H (hyperbolic)",
    "c = 1<br>P (PSD)",
    "d = 1 −P (NSD)",
)
"""Vertex labels of the tetrahedron; the side vertices' on two lines, which keeps them inside a
half-width 3D scene at 1280 px."""

TRIANGLE_VERTICES = np.array([[1.0, 0.0], [0.0, 0.0], [0.5, _SQ3 / 2.0]])
"""Vertices of the triangle Delta = {a = 0} for (b_S, c_S, d_S) as Figure 10 draws its edge
{d = 0}: c = 1 bottom left, b = 1 bottom right (that edge horizontal), d = 1 on top."""

TRIANGLE_LABELS = ("b_S = 1<br>H", "c_S = 1<br>P (PSD)", "d_S = 1 −P (NSD)")


@dataclass(frozen=True)
class Face:
    """A face of Delta_3 the paper names: its kind (vertex, edge, facet), the equations that
    define it, the forms whose profiles lie over (the relative interior of) it, the short label
    the figures write there, a point of it in barycentric coordinates (a, b, c, d) where that
    label goes, and where the paper says so."""

    kind: str
    equations: str
    fiber: str
    short: str
    at: tuple[float, ...]
    source: str


FACES: tuple[Face, ...] = (
    Face("vertex", "a = 1", "antisymmetric forms", "antisymmetric", (1, 0, 0, 0), "Table 3"),
    Face("vertex", "b = 1", "symmetric forms with λ₊ = λ₋ (H)", "H", (0, 1, 0, 0), "Table 3"),
    Face("vertex", "c = 1", "positive semidefinite forms (P)", "P (PSD)", (0, 0, 1, 0), "Table 3"),
    Face(
        "vertex", "d = 1", "negative semidefinite forms (−P)", "−P (NSD)", (0, 0, 0, 1), "Table 3"
    ),
    Face("edge", "c = d = 0", "forms with λ₊ = λ₋", "λ₊ = λ₋", (0.12, 0.88, 0, 0), "Table 3"),
    Face(
        "edge",
        "b = d = 0",
        "forms with S positive semidefinite",
        "S ⪰ 0",
        (0.35, 0, 0.65, 0),
        "Table 3",
    ),
    Face("edge", "a = b = 0", "none: the fiber is empty", "empty", (0, 0, 0.5, 0.5), "Figure 1"),
    Face(
        "facet",
        "a = 0",
        "symmetric forms (front-right facet)",
        "symmetric",
        (0, 0.2, 0.35, 0.45),
        "Figure 1",
    ),
    Face(
        "facet", "d = 0", "S = H + P (bottom facet)", "S = H + P", (0.05, 0.55, 0.4, 0), "Figure 1"
    ),
    Face("facet", "c = 0", "S = H − P (left facet)", "S = H − P", (0.45, 0.15, 0, 0.4), "Figure 1"),
    Face(
        "facet",
        "b = 0",
        "none: empty in its interior (back facet)",
        "empty",
        (0.12, 0, 0.25, 0.63),
        "Figure 1",
    ),
)
"""The faces of Delta_3 labelled in Figure 1 and Table 3 (what a point there means); H is a
symmetric matrix with spectrum symmetric about zero, P positive semidefinite. Label points of the
edges and facets lie off Theta, where the heads crowd."""

TRIANGLE_EDGES: tuple[Face, ...] = (
    Face("edge", "d_S = 0", "S = H + P", "S = H + P", (0.5, 0.5, 0), "Figure 7"),
    Face("edge", "c_S = 0", "S = H − P", "S = H − P", (0.5, 0, 0.5), "Figure 7"),
    Face(
        "edge",
        "b_S = 0",
        "empty away from its endpoints",
        "empty (dashed)",
        (0, 0.5, 0.5),
        "Figure 7",
    ),
)
"""The edges of the triangle Delta of symmetric forms as Figure 7 (right) labels them, with a
point (b_S, c_S, d_S) of each."""

THETA_LABEL = "Θ = {a = b, cd = 0}: rank-one forms"

SCORING_PARAMETERS: tuple[tuple[str, str], ...] = (
    ("QKV / RoPE / ALiBi attention", "2N²"),
    ("Biaffine attention", "ℓ(N + 1)²"),
    ("Bilinear attention", "ℓN²"),
    ("Multi-head QKV / RoPE / ALiBi attention", "2N²"),
    ("Multi-head bilinear attention (fixed coordinate projections)", "ℓN²/h"),
)
"""Table 1: trainable scoring parameters of an attention block (value map and positional
encoding excluded), with N = dim C the model dim, ℓ the sequence length and h the heads."""


def barycentric_points(profiles: np.ndarray, vertices: np.ndarray = SIMPLEX_VERTICES) -> np.ndarray:
    """Cartesian points ``sum_i p_i V_i`` of barycentric coordinates (rows of ``profiles``)."""
    return np.asarray(profiles, dtype=float) @ vertices


def theta_segments() -> np.ndarray:
    """The red set Theta = {a = b, c d = 0} as two segments (2, 2, 3): c -> m and d -> m,
    with m the midpoint a = b = 1/2 of the edge {c = d = 0}."""
    mid = barycentric_points(np.array([0.5, 0.5, 0.0, 0.0]))
    return np.array([[SIMPLEX_VERTICES[2], mid], [SIMPLEX_VERTICES[3], mid]])


def geometry_reference() -> list[dict[str, str]]:
    """Rows (face, equations, what lies over it, source) of the faces in :data:`FACES`: the
    dashboard's short reference for a reader new to the paper."""
    return [
        {
            "face": f.kind,
            "where": f.equations,
            "forms whose profile lies there": f.fiber,
            "paper": f.source,
        }
        for f in FACES
    ]
