"""The heads as the simplex and the triangle draw them: one marker trace per (model, parity
type), vectorised (never one per point, so 10,000 heads build quickly), the Gaussian baseline's
grey heads, the selected head's ring and name, and the helpers both views share.

Every parity type stays visible where they crowd (at Θ's midpoint a trained model's Type II and
Type I− heads sit on one another): the types are drawn in :data:`PARITY_DRAW_ORDER`, and in a 3D
scene every marker is a little transparent (:data:`~headforms.figures.style.OPACITY_3D`), so
WebGL draws the traces in that order instead of the opaque ones first; the selected head's ring
comes after every head (:func:`selected_on_top`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..forms import PARITY_LABELS
from ..sources.specs import short_name
from .camera import view_coordinates
from .geometry import barycentric_points
from .style import (
    BASELINE_COLOR,
    COLOR_BY_OPTIONS,
    COLUMN_TITLES,
    CONTINUOUS_SCALE,
    MARKER_SIZE_2D,
    MARKER_SIZE_3D,
    OPACITY_3D,
    PARITY_COLORS,
    PARITY_LINE_WIDTH,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    PARITY_SYMBOLS_3D,
    FigureInputError,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    model_color,
    selected_label,
    selected_marker,
    selected_row,
)

PARITY_DRAW_ORDER: tuple[str, ...] = ("I+", "I-", "II")
"""The order the parity types are drawn in, last on top. Measured on SmolLM2, Gemma-3 and
MiniLM (tests/system/browser/test_figures_browser.py): the filled Type I− diamonds drawn last
hid the open Type II circles under them (42 % of SmolLM2's heads, 8 % Type I−); the open circles
drawn last leave the diamonds visible inside them, and the I+ crosses spread along Θ anyway."""

HEAD_OPACITY_2D = 0.9
"""Opacity of the 2D head markers (thin open symbols: where they overlap, both show)."""

SELECTED_ROLES = frozenset({"selected"})
"""``meta.role`` of the traces that mark the selected head (its ring, its arrow of a diff)."""


def lines(segments: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Segments as one polyline with NaN breaks (one trace for all segments)."""
    out = []
    for start, end in segments:
        out.extend([start, end, np.full(len(start), np.nan)])
    return np.array(out)


def check_color_by(color_by: str, heads: pd.DataFrame | None = None) -> None:
    """Reject an unknown ``color_by``, or one the first model's table ``heads`` lacks (a
    head-type score is joined from a forward pass), with a one-line error."""
    if color_by not in COLOR_BY_OPTIONS:
        raise FigureInputError(f"color_by must be one of {COLOR_BY_OPTIONS}, got {color_by!r}")
    if heads is not None and color_by not in ("parity", "model") and color_by not in heads:
        raise FigureInputError(
            f"colouring by {color_by} needs the column {color_by!r} in the table of heads (a "
            "head-type score comes from a forward pass: join the scores first)"
        )


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


def valid(heads: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The heads with a finite profile (a vanishing form has none)."""
    return heads[np.isfinite(heads[list(columns)].to_numpy(dtype=float)).all(axis=1)]


def color_range(heads: pd.DataFrame, color_by: str) -> tuple[float, float]:
    """Colour range of a continuous ``color_by``: the data's own range (layers from 0), so the
    colours spread over the heads actually drawn."""
    values = heads[color_by].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return 0.0, 1.0
    low = 0.0 if color_by == "layer" else float(values.min())
    high = float(values.max())
    return (low, high) if high > low else (low - 0.5, high + 0.5)


def coloraxis(color_by: str, cmin: float, cmax: float, y: float) -> dict:
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


def title(prefix: str, models: Mapping[str, pd.DataFrame]) -> str:
    """Figure title naming the models shown (a published table's by their short names)."""
    names = ", ".join(short_name(model) for model in models) if models else "no model"
    return f"{prefix}: {names}"


def head_marker(part: pd.DataFrame, parity: str, color_by: str, index: int, three_d: bool) -> dict:
    """The marker of the heads ``part`` (all of type ``parity``) of the ``index``-th model drawn:
    the parity type's symbol (:data:`PARITY_SYMBOLS`, :data:`PARITY_SYMBOLS_3D`), one size, and
    the colour of ``color_by`` (every model after the first in its own colour)."""
    symbols = PARITY_SYMBOLS_3D if three_d else PARITY_SYMBOLS
    marker: dict = {
        "symbol": symbols[parity],
        "size": MARKER_SIZE_3D if three_d else MARKER_SIZE_2D,
        "opacity": OPACITY_3D if three_d else HEAD_OPACITY_2D,
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
    return marker


def head_traces(
    models: Mapping[str, pd.DataFrame],
    columns: Sequence[str],
    vertices: np.ndarray,
    color_by: str,
    three_d: bool,
) -> list[dict]:
    """One marker trace per (model, parity type), grouped in the legend by model (as dicts:
    validated once, when added to the figure), each model's types in :data:`PARITY_DRAW_ORDER`.
    Parity is the marker's shape, the same for every model (:data:`PARITY_SYMBOLS`,
    :data:`PARITY_SYMBOLS_3D`); the first model is coloured by ``color_by``, every other model
    (an overlay) in its own colour. One size per trace: every head is drawn at the same legible
    size (the selected one gets a ring of its own). Also the traces of each frame of
    :mod:`headforms.figures.animated`'s animated views."""
    traces = []
    for index, (model, heads) in enumerate(models.items()):
        drawn = valid(heads, columns)
        for parity in PARITY_DRAW_ORDER:
            part = drawn[drawn["parity"] == parity]
            if part.empty:
                continue
            xyz = barycentric_points(part[list(columns)].to_numpy(), vertices)
            marker = head_marker(part, parity, color_by, index, three_d)
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
                    else f"{short_name(model)}: {PARITY_NAMES[parity]}",
                    "legendgroup": model,
                    # a model's name over its types where several are drawn (one: the title
                    # names it, and a group title stacks a horizontal legend into a column)
                    "legendgrouptitle": {"text": short_name(model) if len(models) > 1 else ""},
                    "legendrank": 1000 + PARITY_LABELS.index(parity),
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
        drawn = valid(heads, columns)
        xyz = barycentric_points(drawn[list(columns)].to_numpy(), vertices)
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


def selected_ring(
    models: Mapping[str, pd.DataFrame],
    selected: Selected,
    columns: Sequence[str],
    vertices: np.ndarray,
) -> list[go.BaseTraceType]:
    """A black ring around the selected head, clickable like its marker; its name is an
    annotation (:func:`selected_annotation`), on a background of its own."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, model = found
    xyz = barycentric_points(row[list(columns)].to_numpy(), vertices)
    hover = hover_text(row, model, columns)[0] + "<extra>selected</extra>"
    ring = selected_marker(row, model, dict(zip("xyz", xyz.T, strict=False)), hover)
    return [ring.update(mode="markers")]


def selected_annotation(
    models: Mapping[str, pd.DataFrame],
    selected: Selected,
    columns: Sequence[str],
    vertices: np.ndarray,
    camera: dict | None = None,
) -> list[dict]:
    """The selected head's name with an arrow to its ring, on a clear background: a 3D scene
    annotation (``camera`` given: cheaper than 3D text, drawn over the WebGL scene) or a 2D one,
    pointing from the head toward the middle of the view so that it starts inside the frame
    (the dashboard's plot then keeps it off the other labels at any camera)."""
    found = selected_row(models, selected, columns)
    if found is None:
        return []
    row, _ = found
    (point,) = barycentric_points(row[list(columns)].to_numpy(), vertices)
    if camera is not None:
        screen_x, screen_y, _ = view_coordinates(point[None, :], camera)[0]
        where = {"z": float(point[2])}
    else:
        low, high = vertices.min(axis=0), vertices.max(axis=0)
        screen_x, screen_y = 2 * (point - low) / (high - low) - 1
        where = {"xref": "x", "yref": "y"}
    name = head_name(row["layer"].iloc[0], row["head"].iloc[0])
    ax, ay = (-40 if screen_x > 0.2 else 40), (34 if screen_y > 0.3 else -34)
    return [selected_label(point[0], point[1], name, ax, ay, **where)]


def selected_on_top(fig: go.Figure) -> go.Figure:
    """Move the traces marking the selected head (:data:`SELECTED_ROLES`) after every other
    trace, keeping their order: drawn last, nothing covers them."""
    roles = [(t.meta or {}).get("role") if isinstance(t.meta, dict) else None for t in fig.data]
    last = [t for t, r in zip(fig.data, roles, strict=True) if r in SELECTED_ROLES]
    if last and roles[-len(last) :] != [r for r in roles if r in SELECTED_ROLES]:
        rest = [t for t, r in zip(fig.data, roles, strict=True) if r not in SELECTED_ROLES]
        fig.data = rest + last
    return fig
