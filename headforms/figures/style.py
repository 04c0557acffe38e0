"""Shared look and conventions of every figure: palette, template, parity markers, click payload.

Points a user can click carry ``customdata = [model_name, layer, head]`` (:func:`head_customdata`);
the selected head is ``Selected = (model_name, layer, head)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analyses.behaviour import BEHAVIOUR_COLUMNS
from ..errors import HeadformsError

TEMPLATE = "plotly_white"
UIREVISION = "headforms"
"""Constant ``layout.uirevision``: the camera / zoom survive Streamlit reruns."""

PARITY_COLORS: dict[str, str] = {"I+": "#E69F00", "II": "#009E73", "I-": "#0072B2"}
"""One colour per parity type (Okabe-Ito, colour-blind safe), used by every figure."""

PARITY_SYMBOLS: dict[str, str] = {
    "I+": "cross-thin-open",
    "II": "circle-open",
    "I-": "line-ew-open",
}
"""2D marker per parity type, as the captions of Figures 2, 8 and 9 draw them: + Type I+, an open
circle Type II, a dash Type I-. Line symbols: drawn in the marker colour with
:data:`PARITY_LINE_WIDTH`. The same for every model of a figure; models differ by colour."""

PARITY_SYMBOLS_3D: dict[str, str] = {"I+": "cross", "II": "circle-open", "I-": "diamond"}
"""The closest legible set in a 3D scene, whose markers are text glyphs (+, ○, ◆; plotly.js has
no dash glyph): + and the open circle as in the captions, a filled diamond for Type I-."""

PARITY_LINE_WIDTH = 2.0
"""Stroke width (px) of the 2D line symbols: thinner, a + and a dash vanish at marker size."""

MARKER_SIZE_2D = 9
MARKER_SIZE_3D = 6
"""Marker sizes of head markers: every head legible, in 2D and in the 3D scene (one size per
trace: plotly.js draws a 3D trace with per-point sizes at a fraction of them)."""

SELECTED_SIZE_2D = 20
SELECTED_SIZE_3D = 15
"""Sizes of the ring drawn around the selected head."""

OPACITY_3D = 0.99
"""Opacity of the head markers and the selected ring in a 3D scene: WebGL draws every opaque
object before the transparent ones, whatever the trace order; all a little transparent, the
traces are drawn in their order, so the last ones (the selected ring) stay on top."""

LABEL_BACKGROUND = "rgba(255,255,255,0.92)"
"""Background of the labels drawn over a plot (vertex and face names, hints, the selected
head's name): edges, Θ and markers under a label do not cross its text."""


def selected_label(x: float, y: float, name: str, ax: int, ay: int, **place: object) -> dict:
    """The selected head's name (``name``) as an annotation with an arrow to its ring at
    ``(x, y)``, offset ``(ax, ay)`` px, on :data:`LABEL_BACKGROUND` and named "selected" (the
    dashboard's plot places it off the other labels); ``place``: ``z=...`` in a 3D scene, or
    ``xref``/``yref`` on 2D axes."""
    return {
        "x": float(x),
        "y": float(y),
        **place,
        "text": f"<b>{name}</b>",
        "showarrow": True,
        "arrowhead": 0,
        "arrowwidth": 1.5,
        "arrowcolor": SELECTED_COLOR,
        "ax": ax,
        "ay": ay,
        "font": {"size": 13, "color": SELECTED_COLOR},
        "bgcolor": LABEL_BACKGROUND,
        "bordercolor": SELECTED_COLOR,
        "borderwidth": 1,
        "name": "selected",
    }


PARITY_NAMES: dict[str, str] = {"I+": "Type I+", "II": "Type II", "I-": "Type I−"}

MODEL_COLORS: tuple[str, ...] = (
    "#1f77b4",
    "#e377c2",
    "#8c564b",
    "#7f7f7f",
    "#9467bd",
    "#bcbd22",
    "#17becf",
    "#2ca02c",
)
"""Discrete palette of models: never the red of Theta; from the second colour on, far from the
parity colours and (the first ones) from :data:`CONTINUOUS_SCALE`, so an overlaid model never
reads as a parity type or a value of the colour scale."""

CLUSTER_COLORS: tuple[str, ...] = ("#CC79A7", "#8c564b", "#bcbd22", "#7f7f7f", "#17becf", "#9467bd")
"""Palette of k-means clusters (Figures 4, 5): none of the parity colours, nor Theta's red, so a
cluster never reads as a parity type (the clusters are not the parity classes)."""

CLUSTER_SYMBOLS: tuple[str, ...] = ("square", "x", "circle", "square-open", "diamond-open")
"""Cluster markers, one per cluster for every panel, 2D and 3D alike (symbols a 3D scene has):
none of the parity glyphs (+, open circle, dash, and the 3D diamond), so a cluster never reads
as a parity type; colour tells clusters apart first."""


def model_color(index: int) -> str:
    """The colour of the ``index``-th model (or series) of a figure: :data:`MODEL_COLORS` cycled."""
    return MODEL_COLORS[index % len(MODEL_COLORS)]


HEAD_COLOR = "#d62728"
BASELINE_COLOR = "#555555"
POSITIVE_COLOR = "#C0392B"
NEGATIVE_COLOR = "#2E86C1"
THETA_COLOR = "red"
EDGE_COLOR = "#444444"
SELECTED_COLOR = "black"

DIVERGING_SCALE: list[list] = [
    [0.0, "#053061"],
    [0.25, "#4393c3"],
    [0.5, "#ffffff"],
    [0.75, "#d6604d"],
    [1.0, "#67001f"],
]
"""Blue below 1/2, white at 1/2, red above (Figures 13 and 14), when cmin/cmax are
symmetric about 1/2."""

CONTINUOUS_SCALE: list[list] = [
    [0.0, "#440154"],
    [0.125, "#482878"],
    [0.25, "#3e4989"],
    [0.375, "#31688e"],
    [0.5, "#26828e"],
    [0.625, "#1f9e89"],
    [0.75, "#35b779"],
    [0.875, "#6ece58"],
    [1.0, "#a5db36"],
]
"""Viridis without its pale yellow end: every value stays visible on a white background (the
simplex and triangle colour heads by layer, energy or pairing over the data's own range)."""

COLOR_BY_OPTIONS = ("parity", "layer", "energy", "pairing", "model", *BEHAVIOUR_COLUMNS)
"""Values of ``color_by`` for :func:`simplex_figure` and :func:`triangle_figure`."""

DECORATIVE_ROLES = frozenset({"edges", "vertices", "theta", "band", "boundary", "selected", "hint"})
"""``meta.role`` of traces that draw geometry or highlights, not data (left out of exports)."""

COLUMN_TITLES: dict[str, str] = {
    "energy": "symmetric energy ‖S‖²/‖L‖²",
    "pairing": "pairing score 1 − ‖λ₊−λ₋‖/‖S‖",
    "layer": "layer",
    **BEHAVIOUR_COLUMNS,  # the head-type scores (a forward pass on the probe)
}


Selected = tuple[str, int, int] | None
"""A selected head: (model_name, layer, head), as carried in every marker's customdata."""


class FigureInputError(HeadformsError, ValueError):
    """A figure builder got an argument it cannot draw (unknown colouring, missing column)."""


def head_name(layer: int, head: int) -> str:
    """The short name of a head in figures: ``L3·H5``."""
    return f"L{int(layer)}·H{int(head)}"


CHOICE_DECIMALS = 8
"""Decimals of the coordinates a chooser entry carries (it shows as many as tell heads apart)."""


def head_choices(heads: pd.DataFrame, columns: tuple[str, ...] | list[str]) -> list[dict]:
    """One entry per head for the dashboard's chooser of overlapping markers (a head trace's
    ``meta["choices"]``): ``{"label": "L3·H5 · I+", "coords": {"a": ..., ...}}``, the name,
    parity and the coordinates drawn, which the chooser shows with enough decimals to tell the
    listed heads apart."""
    values = heads[list(columns)].to_numpy(dtype=float).round(CHOICE_DECIMALS)
    names = [c.removesuffix("_sym") for c in columns]
    return [
        {
            "label": f"{head_name(layer, head)} · {parity}",
            "coords": dict(zip(names, row.tolist(), strict=True)),
        }
        for layer, head, parity, row in zip(
            heads["layer"].to_numpy(),
            heads["head"].to_numpy(),
            heads["parity"],
            values,
            strict=True,
        )
    ]


def head_customdata(heads: pd.DataFrame, model: str) -> np.ndarray:
    """``[model_name, layer, head]`` per row: the click payload of every head marker (object
    array; layer and head stay Python ints so they round-trip through JSON)."""
    data = np.empty((len(heads), 3), dtype=object)
    data[:, 0] = model
    data[:, 1] = heads["layer"].to_numpy().astype(int).tolist()
    data[:, 2] = heads["head"].to_numpy().astype(int).tolist()
    return data


def selected_row(
    models: Mapping[str, pd.DataFrame], selected: Selected, columns: Sequence[str]
) -> tuple[pd.DataFrame, str] | None:
    """The one-row frame of the selected head and its model name, if that model is drawn and
    the head has finite values in ``columns`` (what the figure places it by)."""
    if selected is None:
        return None
    model, layer, head = selected
    heads = models.get(model)
    if heads is None:
        return None
    row = heads[(heads["layer"] == int(layer)) & (heads["head"] == int(head))]
    if row.empty or not np.isfinite(row[list(columns)].to_numpy(dtype=float)).all():
        return None
    return row, model


def label_position(x: float, y: float) -> str:
    """``textposition`` of a label beside a point at (x, y) in [0, 1]^2 of the plot (0, 0 bottom
    left): toward the middle, so that a label near an edge stays inside the frame."""
    vertical = "bottom" if y > 0.75 else "top"
    horizontal = "left" if x > 0.7 else "right" if x < 0.3 else "center"
    return f"{vertical} {horizontal}"


def selected_marker(
    row: pd.DataFrame,
    model: str,
    coordinates: Mapping[str, np.ndarray],
    hovertemplate: str | None = None,
    textposition: str = "top center",
) -> go.Scatter | go.Scatter3d:
    """The selected head's ring with its name, at ``coordinates`` (``x, y`` or ``x, y, z``),
    clickable like any head (same customdata) and marked ``meta.role = "selected"`` so that the
    dashboard's chooser of overlapping markers skips it. ``textposition``: where its name goes
    (:func:`label_position` keeps it inside the frame)."""
    three_d = "z" in coordinates
    size = SELECTED_SIZE_3D if three_d else SELECTED_SIZE_2D
    marker: dict = {"color": SELECTED_COLOR, "size": size, "symbol": "circle-open"}
    if three_d:
        marker["opacity"] = OPACITY_3D  # drawn in trace order, after the heads (OPACITY_3D)
    else:
        marker["line"] = {"width": 3, "color": SELECTED_COLOR}
    trace = go.Scatter3d if three_d else go.Scatter
    return trace(
        **coordinates,
        mode="markers+text",
        marker=marker,
        text=[head_name(row["layer"].iloc[0], row["head"].iloc[0])],
        textposition=textposition,
        textfont={"size": 13, "color": SELECTED_COLOR},
        showlegend=False,
        name="selected",
        customdata=head_customdata(row, model),
        hovertemplate=hovertemplate,
        hoverinfo=None if hovertemplate else "skip",
        meta={"role": "selected"},
    )
