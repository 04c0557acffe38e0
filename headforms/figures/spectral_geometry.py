"""The spectrum of S against that of A across a model's heads (the author's spectral geometry,
:mod:`headforms.analyses.spectral_geometry`): the distributions of the mode ratio, the shape
ratio, the correlation of sigma(A) with |lambda(S)| and the geometric-mean error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import BASELINE_COLOR, HEAD_COLOR, TEMPLATE

PANELS = (
    ("mode_ratio", "τ / √(|μ| ν):<br>mode of σ(A) over the lobes' modes", 1.0),
    ("shape_ratio", "k_T / √(k₊ k₋):<br>gamma shape of σ(A) over the lobes' shapes", 1.0),
    ("sigma_lambda_correlation", "corr(sorted σ(A), sorted |λ(S)|):<br>how alike they rank", 1.0),
    ("geometric_mean_error", "‖σ − √(λ₊λ₋)‖ / ‖σ‖:<br>distance from the geometric mean", 0.0),
)
"""The four panels: column, title (two lines: a half-width panel holds neither whole on one),
and the value each would take if sigma(A) were exactly the geometric mean of the lobes (drawn
dotted)."""

LINES = (
    ("the heads' median", {"color": "black", "dash": "dash", "width": 1.5}),
    (
        "σ(A) exactly the lobes' geometric mean",
        {"color": BASELINE_COLOR, "dash": "dot", "width": 1.5},
    ),
)
"""What the vertical lines of every panel mark, as the legend names them."""


def spectral_geometry_figure(
    geometry: pd.DataFrame, model_name: str = "", bins: int = 40
) -> go.Figure:
    """Histograms of the four per-head statistics of ``geometry``
    (:func:`headforms.analyses.spectral_geometry.spectral_geometry`): the two ratios over the
    heads whose three fitted gamma shapes exceed 1 (the others have no mode), the correlation
    and the error over every head; dashed: medians, dotted: the value of exact geometric means
    (the legend says so)."""
    used = geometry[geometry["interior_modes"]]
    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=[title for _, title, _ in PANELS],
        vertical_spacing=0.2,
        horizontal_spacing=0.1,
    )
    for index, (column, _, reference) in enumerate(PANELS):
        row, col = divmod(index, 2)
        part = used if column in ("mode_ratio", "shape_ratio") else geometry
        values = part[column].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        fig.add_trace(
            go.Histogram(
                x=values,
                nbinsx=bins,
                marker={"color": HEAD_COLOR},
                opacity=0.75,
                name=column,
                showlegend=False,
                hovertemplate="%{x}<br>%{y} heads<extra></extra>",
            ),
            row=row + 1,
            col=col + 1,
        )
        if values.size:
            fig.add_vline(x=float(np.median(values)), line=LINES[0][1], row=row + 1, col=col + 1)
        fig.add_vline(x=reference, line=LINES[1][1], row=row + 1, col=col + 1)
        fig.update_yaxes(title_text="heads", row=row + 1, col=col + 1)
    for name, line in LINES:  # the lines explained in the legend (shapes have no entry)
        fig.add_trace(
            go.Scatter(x=[None], y=[None], mode="lines", line=line, name=name, hoverinfo="skip")
        )
    fig.update_annotations(font_size=12)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"The spectrum of S against that of A: {model_name}<br><sup>gamma fits with "
            f"the origin at 0; the ratios over the {len(used)} of {len(geometry)} heads whose "
            "three shapes exceed 1</sup>"
        },
        height=660,
        margin={"t": 130},
        bargap=0.02,
        legend={"orientation": "h", "x": 0.0, "y": -0.12},
    )
    return fig
