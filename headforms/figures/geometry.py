"""The geometry the simplex figures draw in: the tetrahedron Delta_3 of profiles (a, b, c, d) as a
regular tetrahedron in 3D, the triangle Delta = {a = 0} of symmetric profiles in 2D, and Theta."""

from __future__ import annotations

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

SIMPLEX_LABELS = ("a = 1 antisymmetric", "b = 1 hyperbolic", "c = 1 PSD", "d = 1 NSD")

TRIANGLE_VERTICES = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, _SQ3 / 2.0]])
"""Vertices of the triangle Delta = {a = 0} for (b_S, c_S, d_S): b bottom left, c bottom right,
d top (edge {d = 0} horizontal, as in Figure 10)."""

TRIANGLE_LABELS = ("b_S = 1<br>hyperbolic", "c_S = 1<br>PSD", "d_S = 1 NSD")


def barycentric_points(profiles: np.ndarray, vertices: np.ndarray = SIMPLEX_VERTICES) -> np.ndarray:
    """Cartesian points ``sum_i p_i V_i`` of barycentric coordinates (rows of ``profiles``)."""
    return np.asarray(profiles, dtype=float) @ vertices


def theta_segments() -> np.ndarray:
    """The red set Theta = {a = b, c d = 0} as two segments (2, 2, 3): c -> m and d -> m,
    with m the midpoint a = b = 1/2 of the edge {c = d = 0}."""
    mid = barycentric_points(np.array([0.5, 0.5, 0.0, 0.0]))
    return np.array([[SIMPLEX_VERTICES[2], mid], [SIMPLEX_VERTICES[3], mid]])
