"""Where heads sit relative to Theta (Observation 2): position along it and distance off it.

Theta = {a = b, c d = 0} is two segments of the simplex: the *c-branch* from the vertex
c = 1 to the midpoint m = (1/2, 1/2, 0, 0) of the edge {c = d = 0}, and the *d-branch* from
the vertex d = 1 to m. A profile p = (a, b, c, d) is projected onto the nearer branch; its
*distance to Theta* is the Euclidean distance in barycentric coordinates (R^4; on the drawn
unit-edge tetrahedron lengths are this divided by sqrt(2)) and its *position along Theta* is
``c - d`` of that nearest point: +1 at the vertex c, 0 at the midpoint, -1 at the vertex d
(on Theta, the c-branch is ``(t/2, t/2, 1 - t, 0)`` with position ``1 - t``).

Gaussian heads sit at the midpoint (a = b = 1/2: half symmetric energy, balanced lobes); what
tells trained heads apart is their spread along the branches.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..columns import PROFILE

MIDPOINT = np.array([0.5, 0.5, 0.0, 0.0])
BRANCH_ENDS = {"c": np.array([0.0, 0.0, 1.0, 0.0]), "d": np.array([0.0, 0.0, 0.0, 1.0])}
"""Theta's two branches: vertex -> midpoint."""


def theta_projection(profiles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest points of Theta to rows ``(a, b, c, d)``: ``(points, distance, position)``.

    ``points`` (k, 4), ``distance`` Euclidean in barycentric coordinates, ``position`` = c - d of
    the nearest point, in [-1, 1]. Rows with a non-finite profile give NaN.
    """
    p = np.atleast_2d(np.asarray(profiles, dtype=np.float64))
    best_points = np.full_like(p, np.nan)
    best_distance = np.full(p.shape[0], np.inf)
    for end in BRANCH_ENDS.values():
        direction = MIDPOINT - end
        t = np.clip((p - end) @ direction / (direction @ direction), 0.0, 1.0)
        points = end + t[:, None] * direction
        distance = np.linalg.norm(p - points, axis=1)
        closer = distance < best_distance
        best_points[closer] = points[closer]
        best_distance[closer] = distance[closer]
    best_distance[~np.isfinite(best_distance)] = np.nan
    position = best_points[:, 2] - best_points[:, 3]
    return best_points, best_distance, position


def theta_frame(heads: pd.DataFrame) -> pd.DataFrame:
    """Per head: layer, head, parity, ``position`` along Theta and ``distance`` to it."""
    _, distance, position = theta_projection(heads[list(PROFILE)].to_numpy(dtype=float))
    frame = heads[["layer", "head", "parity"]].copy().reset_index(drop=True)
    frame["position"] = position
    frame["distance"] = distance
    return frame


def theta_summary(
    models: Mapping[str, pd.DataFrame], baselines: Mapping[str, pd.DataFrame]
) -> pd.DataFrame:
    """Per model and source (trained, Gaussian baseline): median distance to Theta, the median
    and interquartile range of |position| (the spread along the branches), and the percent of
    heads on the c-branch side (position > 0)."""
    rows = []
    for name, heads in models.items():
        sources = [("trained", heads)]
        if name in baselines:
            sources.append(("Gaussian baseline", baselines[name]))
        for source, table in sources:
            frame = theta_frame(table)
            spread = frame["position"].abs()
            rows.append(
                {
                    "model": name,
                    "heads": source,
                    "median distance": frame["distance"].median(),
                    "median |position|": spread.median(),
                    "IQR |position|": spread.quantile(0.75) - spread.quantile(0.25),
                    "c-branch side (%)": 100.0 * float((frame["position"] > 0).mean()),
                }
            )
    return pd.DataFrame(rows)
