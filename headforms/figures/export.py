"""The data behind a figure as a tidy table, for the dashboard's CSV downloads.

Builders whose input is a per-head table have their own exact export (``simplex.profile_table``,
``heatmaps.heatmap_table``); every other figure is exported by :func:`figure_table`, which
reads back what its traces draw, one row per point.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import DECORATIVE_ROLES

_POINT_COLUMNS = ("x", "y", "z")

SVG_TRACE_TYPES = frozenset({"scatter", "bar", "histogram", "box", "violin", "contour"})
"""Trace types that plotly.js draws as SVG elements, so that an SVG export of a figure made of
them alone is vector. Others are WebGL (scatter3d, mesh3d, scattergl) or images (heatmap): an SVG
export would hold a raster picture of them."""

HIGH_RESOLUTION_PNG_SCALE = 4
"""Scale of the PNG export of a figure that cannot be vector (a 650 px 3D scene: 2600 px)."""


def exports_as_vector(fig: go.Figure) -> bool:
    """Whether ``fig``'s SVG export is true vector graphics (every trace drawn as SVG)."""
    return all(trace.type in SVG_TRACE_TYPES for trace in fig.data)


def _role(trace: go.BaseTraceType) -> str | None:
    meta = trace.meta
    return meta.get("role") if isinstance(meta, dict) else None


def _head_columns(customdata: object, length: int) -> dict[str, list] | None:
    """``model, layer, head`` when the trace's customdata is the click payload of heads."""
    if customdata is None:
        return None
    rows = np.asarray(customdata, dtype=object)
    if rows.ndim != 2 or rows.shape[0] != length or rows.shape[1] != 3:
        return None
    if not all(isinstance(v, str) for v in rows[:, 0]):
        return None
    return {"model": list(rows[:, 0]), "layer": list(rows[:, 1]), "head": list(rows[:, 2])}


def figure_table(fig: go.Figure) -> pd.DataFrame:
    """Every data point of ``fig`` as rows of ``trace, x, y[, z][, model, layer, head][, value]``
    (``value``: a numeric marker colour, e.g. a heatmap cell). Traces that draw geometry or the
    selection ring (``meta.role`` in :data:`DECORATIVE_ROLES`) and NaN line breaks are left out.
    """
    frames = []
    for index, trace in enumerate(fig.data):
        if _role(trace) in DECORATIVE_ROLES:
            continue
        coords = {
            c: np.asarray(getattr(trace, c), dtype=object)
            for c in _POINT_COLUMNS
            if c in trace and getattr(trace, c) is not None
        }
        if "x" not in coords and "y" not in coords:
            continue
        length = max(len(v) for v in coords.values())
        frame = pd.DataFrame({"trace": trace.name or f"trace {index}"}, index=range(length))
        for name, values in coords.items():
            if len(values) == length:
                frame[name] = values
        heads = _head_columns(getattr(trace, "customdata", None), length)
        if heads is not None:
            for name, values in heads.items():
                frame[name] = values
        color = getattr(getattr(trace, "marker", None), "color", None)
        if color is not None and not isinstance(color, str) and len(color) == length:
            values = np.asarray(color, dtype=object)
            if all(isinstance(v, int | float) for v in values):
                frame["value"] = values.astype(float)
        present = [c for c in _POINT_COLUMNS if c in frame]
        numeric = frame[present].apply(pd.to_numeric, errors="coerce")
        frames.append(frame[~numeric.isna().all(axis=1)])
    if not frames:
        return pd.DataFrame(columns=["trace", "x", "y"])
    return pd.concat(frames, ignore_index=True)
