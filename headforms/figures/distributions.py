"""Per-model distributions of one per-head column (Figure 11 for the pairing score, and the same
view of the symmetric energy and the lobe departure), each model beside its Gaussian baseline.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .style import (
    TEMPLATE,
    model_color,
)

ORIGIN_MARGIN = 0.03
"""Share of the value range left empty on each side of the x axis, so that its first tick
label ("0") sits clear of the y axis' first one instead of on it at the corner."""


def distribution_figure(
    models: Mapping[str, pd.DataFrame],
    column: str = "pairing",
    label: str = "pairing score 𝒫 = 1 − ‖λ₊−λ₋‖/‖S‖",
    baselines: Mapping[str, pd.DataFrame] | None = None,
    bins: int = 40,
    value_range: tuple[float, float] = (0.0, 1.0),
    references: tuple[tuple[float, str], ...] = (),
) -> go.Figure:
    """Fig 11 (and the energy analogue): per-model histograms of a per-head column over
    ``value_range``, dashed vertical lines at the model medians, and each model's Gaussian
    baseline (its table in ``baselines``, by model name) outlined. ``references``: values
    (x, label) marked by a labelled black line, e.g. 1/2 for the symmetric energy."""
    fig = go.Figure()
    low, high = value_range
    edges = np.linspace(low, high, bins + 1)
    for i, (name, heads) in enumerate(models.items()):
        color = model_color(i)
        values = heads[column].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        fig.add_trace(
            go.Histogram(
                x=values,
                xbins={"start": low, "end": high, "size": (high - low) / bins},
                histnorm="probability density",
                marker={"color": color},
                opacity=0.55,
                name=f"{name} (median {np.median(values):.3f})" if values.size else name,
            )
        )
        if values.size:
            fig.add_vline(x=float(np.median(values)), line={"color": color, "dash": "dash"})
        if baselines is not None and name in baselines:
            base = baselines[name][column].to_numpy(dtype=float)
            base = base[np.isfinite(base)]
            if not base.size:
                continue
            base_median = float(np.median(base))
            counts, _ = np.histogram(base, bins=edges, density=True)
            fig.add_trace(
                go.Scatter(
                    x=np.repeat(edges, 2)[1:-1],
                    y=np.repeat(counts, 2),
                    mode="lines",
                    line={"color": color, "width": 1.5, "dash": "dot"},
                    name=f"{name}: Gaussian baseline (median {base_median:.3f})",
                    visible="legendonly",  # it is far more concentrated: click to show
                    hoverinfo="skip",
                )
            )
            fig.add_vline(x=base_median, line={"color": color, "dash": "dot", "width": 1})
    for x, text in references:
        fig.add_vline(
            x=x,
            line={"color": "black", "width": 1.5},
            annotation={"text": text, "font": {"size": 12}, "bgcolor": "rgba(255,255,255,0.8)"},
            annotation_position="top left",
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{label[:1].upper()}{label.split(' =')[0][1:]} per model"
            "<br><sup>dashed lines: model medians; dotted: medians of independent<br>Gaussian "
            "K, Q of the same shapes (their histograms: click the legend)</sup>"
        },
        xaxis={
            "title": {"text": label},
            "range": [low - ORIGIN_MARGIN * (high - low), high + ORIGIN_MARGIN * (high - low)],
        },
        yaxis={"title": {"text": "density of heads"}, "rangemode": "tozero"},
        barmode="overlay",
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
