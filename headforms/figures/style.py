"""Shared look and conventions of every figure: palette, template, parity markers, click payload.

Points a user can click carry ``customdata = [model_name, layer, head]`` (:func:`head_customdata`);
the selected head is ``Selected = (model_name, layer, head)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import HeadformsError

TEMPLATE = "plotly_white"
UIREVISION = "headforms"
"""Constant ``layout.uirevision``: the camera / zoom survive Streamlit reruns."""

PARITY_COLORS: dict[str, str] = {"I+": "#E69F00", "II": "#009E73", "I-": "#0072B2"}
"""One colour per parity type (Okabe-Ito, colour-blind safe), used by every figure."""

PARITY_SYMBOLS: dict[str, str] = {"I+": "cross", "II": "circle", "I-": "diamond"}
"""Marker per parity type (the paper uses +, o, -); all three exist in Scatter3d and Scatter."""

PARITY_NAMES: dict[str, str] = {"I+": "Type I+", "II": "Type II", "I-": "Type I−"}

MODEL_COLORS: tuple[str, ...] = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#ff7f0e",
)
"""Discrete palette for ``color_by="model"``."""

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

LAYER_SCALE = "Viridis"

COLOR_BY_OPTIONS = ("parity", "layer", "energy", "pairing", "model")
"""Values of ``color_by`` for :func:`simplex_figure` and :func:`triangle_figure`."""

COLUMN_TITLES: dict[str, str] = {
    "energy": "symmetric energy ‖S‖²/‖L‖²",
    "pairing": "pairing score 1 − ‖λ₊−λ₋‖/‖S‖",
    "layer": "layer",
}


Selected = tuple[str, int, int] | None
"""A selected head: (model_name, layer, head), as carried in every marker's customdata."""


class FigureInputError(HeadformsError, ValueError):
    """A figure builder got an argument it cannot draw (unknown colouring, missing column)."""


def head_customdata(heads: pd.DataFrame, model: str) -> np.ndarray:
    """``[model_name, layer, head]`` per row: the click payload of every head marker (object
    array; layer and head stay Python ints so they round-trip through JSON)."""
    data = np.empty((len(heads), 3), dtype=object)
    data[:, 0] = model
    data[:, 1] = heads["layer"].to_numpy().astype(int).tolist()
    data[:, 2] = heads["head"].to_numpy().astype(int).tolist()
    return data
