"""What the figure builders' integration tests (tests/integration/figures) share: synthetic
head tables, a figure's traces by role and their points, and the check that each clickable
marker names the head it draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from headforms.forms import PARITY_LABELS

PROFILE = ["a", "b", "c", "d"]

SYMMETRIC = ["b_sym", "c_sym", "d_sym"]


def synthetic_heads() -> pd.DataFrame:
    """Four heads with hand-picked profiles, plus one vanishing form (parity 'zero', NaNs)."""
    rows = [
        # layer, head, a, b, c, d, b_sym, c_sym, d_sym, energy, pairing, parity
        (0, 0, 0.1, 0.2, 0.3, 0.4, 0.2, 0.35, 0.45, 0.9, 0.4, "I-"),
        (0, 1, 1.0, 0.0, 0.0, 0.0, 0.99, 0.005, 0.005, 0.0, 0.95, "II"),
        (1, 0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, "I+"),
        (1, 1, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, "zero"),
        (2, 1, 0.25, 0.25, 0.25, 0.25, 0.5, 0.3, 0.2, 0.75, 0.7, "I+"),
    ]
    cols = ["layer", "head", *PROFILE, *SYMMETRIC, "energy", "pairing", "parity"]
    return pd.DataFrame(rows, columns=cols)


def synthetic_baseline() -> pd.DataFrame:
    """A baseline table for :func:`synthetic_heads` (same rows)."""
    frame = synthetic_heads()[["layer", "head"]].copy()
    frame["energy"] = [0.51, 0.49, 0.5, 0.5, 0.52]
    frame["pairing"] = [0.97, 0.96, 0.98, 0.97, 0.95]
    return frame


def traces_with(fig: go.Figure, role: str) -> list:
    return [t for t in fig.data if isinstance(t.meta, dict) and t.meta.get("role") == role]


def points(trace) -> np.ndarray:
    coords = [trace.x, trace.y] + ([trace.z] if hasattr(trace, "z") else [])
    return np.column_stack([np.asarray(c, dtype=float) for c in coords])


def vertex_coords(fig: go.Figure) -> np.ndarray:
    """The vertex label annotations: the simplex's in its 3D scene, the triangle's in 2D."""
    if fig.layout.scene.annotations:
        return np.array(
            [[a.x, a.y, a.z] for a in fig.layout.scene.annotations if a.name == "vertex"]
        )
    return np.array([[a.x, a.y] for a in fig.layout.annotations if a.name == "vertex"])


def valid_heads(heads: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    ok = heads["parity"].isin(PARITY_LABELS) & np.isfinite(heads[columns]).all(axis=1)
    return heads[ok]


def check_clickable_points(fig: go.Figure, models: dict, columns: list[str]) -> int:
    """Each head marker's customdata names a head whose profile maps to that marker."""
    vertices = vertex_coords(fig)
    seen = 0
    for trace in traces_with(fig, "heads"):
        xyz = points(trace)
        for (model, layer, head), point in zip(trace.customdata, xyz, strict=True):
            assert isinstance(model, str) and isinstance(layer, int) and isinstance(head, int)
            frame = models[model]
            row = frame[(frame["layer"] == layer) & (frame["head"] == head)]
            assert len(row) == 1
            assert row["parity"].iloc[0] == trace.meta["parity"]
            expected = row[columns].to_numpy(float)[0] @ vertices
            np.testing.assert_allclose(point, expected, atol=1e-9)
            seen += 1
    return seen
