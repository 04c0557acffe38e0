"""Heads in motion: what a path of heads (:class:`headforms.head_paths.HeadPaths`: a sweep over RoPE
positions, a training run's checkpoints, one model against another) says about each head.

- :func:`parity_changes`: every place along the axis where a head's parity type changes (the
  RoPE positions, the training steps, the flip from model A to model B), one row each.
- :func:`changes_by_head`: those changes gathered per head (how many, where).
- :func:`movement`: how far each head moved on the simplex: from the first point to the last,
  along its whole path, and at most from its start.
- :func:`moved_most`: the heads that moved farthest.
- :func:`head_curves`: one head's profile, symmetric profile, energy, pairing and parity along
  the axis (what the per-head curves draw).

Distances are on the simplex as the figures draw it (unit edges: vertex to vertex is 1,
:func:`headforms.forms.simplex_distance`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..columns import PROFILE, PROFILE_COLUMNS, SYMMETRIC_PROFILE
from ..forms import simplex_distance
from ..head_paths import HeadPaths

CURVE_COLUMNS = (*PROFILE_COLUMNS, "parity")
"""The values :func:`head_curves` follows along the axis."""


def _heads(paths: HeadPaths) -> tuple[np.ndarray, np.ndarray]:
    """Layer and head of each column of :meth:`HeadPaths.stacked` (layer-major)."""
    return paths.stacked("layer")[0].astype(int), paths.stacked("head")[0].astype(int)


def parity_changes(paths: HeadPaths) -> pd.DataFrame:
    """One row per change of parity between consecutive points of the axis: ``layer, head``,
    the axis value before and at the change (``<axis>_before``, ``<axis>``), the parity before
    and after, and ``c_S + d_S`` after (how far from the Type II band). Ordered by head, then
    along the axis."""
    axis = paths.axis
    parity = paths.stacked("parity")
    tail = paths.stacked("c_sym").astype(float) + paths.stacked("d_sym").astype(float)
    before, column = np.nonzero(parity[1:] != parity[:-1])
    order = np.lexsort((before, column))
    before, column = before[order], column[order]
    layers, heads = _heads(paths)
    values = np.asarray(paths.values, dtype=object)
    return pd.DataFrame(
        {
            "layer": layers[column],
            "head": heads[column],
            f"{axis}_before": values[before],
            axis: values[before + 1],
            "parity_before": parity[before, column],
            "parity": parity[before + 1, column],
            "c_sym_plus_d_sym": tail[before + 1, column],
        }
    )


def changes_by_head(paths: HeadPaths) -> pd.DataFrame:
    """Per head that changes parity at least once: ``layer, head``, its parity at the first
    point, the number of changes, and the axis values where they happen (as text: ``"3, 17,
    40"``), most changes first."""
    changes = parity_changes(paths)
    axis = paths.axis
    first = paths.stacked("parity")[0]
    layers, heads = _heads(paths)
    rows = []
    for (layer, head), group in changes.groupby(["layer", "head"], sort=True):
        rows.append(
            {
                "layer": int(layer),
                "head": int(head),
                "parity_first": first[np.flatnonzero((layers == layer) & (heads == head))[0]],
                "changes": len(group),
                f"{axis}_at": ", ".join(str(v) for v in group[axis]),
                "parity_last": group["parity"].iloc[-1],
            }
        )
    columns = ["layer", "head", "parity_first", "changes", f"{axis}_at", "parity_last"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["changes", "layer", "head"], ascending=[False, True, True])


def movement(paths: HeadPaths) -> pd.DataFrame:
    """Per head: ``distance`` from the first point to the last (profile (a, b, c, d) on the
    tetrahedron), ``distance_sym`` (symmetric profile on the triangle), ``path_length`` (the sum
    of the steps between consecutive points), ``farthest`` (the largest distance from the first
    point), the parities at both ends and whether they differ."""
    profile = np.stack([paths.stacked(c).astype(float) for c in PROFILE], axis=-1)
    symmetric = np.stack([paths.stacked(c).astype(float) for c in SYMMETRIC_PROFILE], axis=-1)
    parity = paths.stacked("parity")
    layers, heads = _heads(paths)
    steps = simplex_distance(profile[:-1], profile[1:])
    from_start = simplex_distance(profile[:1], profile)
    return pd.DataFrame(
        {
            "layer": layers,
            "head": heads,
            "distance": simplex_distance(profile[0], profile[-1]),
            "distance_sym": simplex_distance(symmetric[0], symmetric[-1]),
            "path_length": np.nansum(steps, axis=0) if len(steps) else np.zeros(len(layers)),
            "farthest": _farthest(from_start),
            "parity_first": parity[0],
            "parity_last": parity[-1],
            "parity_changed": parity[0] != parity[-1],
        }
    )


def _farthest(distances: np.ndarray) -> np.ndarray:
    """The largest distance of each head over the points, NaN for a head with none (a form that
    vanishes everywhere), without numpy's all-NaN warning."""
    largest = np.where(np.isnan(distances), -np.inf, distances).max(axis=0)
    return np.where(np.isneginf(largest), np.nan, largest)


def moved_most(paths: HeadPaths, count: int = 10) -> pd.DataFrame:
    """The ``count`` heads that moved farthest from the first point to the last
    (:func:`movement`), farthest first; heads without a profile (vanishing forms) last."""
    return most_moved(movement(paths), count)


def most_moved(table: pd.DataFrame, count: int = 10) -> pd.DataFrame:
    """The ``count`` rows of a :func:`movement` table that moved farthest, farthest first (heads
    without a profile last)."""
    return table.sort_values("distance", ascending=False, na_position="last").head(count)


def head_curves(paths: HeadPaths, layer: int, head: int) -> pd.DataFrame:
    """One head along the axis: the axis value and :data:`CURVE_COLUMNS`."""
    path = paths.path(layer, head)
    return path[[paths.axis, *CURVE_COLUMNS]].reset_index(drop=True)
