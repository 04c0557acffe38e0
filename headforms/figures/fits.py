"""Distribution fits of spectral samples: one head's lobes with every fitted family (Figure 6,
Observation 3), |eigenvalues of L| and singular values of A (Observation 6), the average error of
each family over a model's heads and against the model's size (Figure 6).

Inputs: :mod:`headforms.analyses.fits`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import (
    BASELINE_COLOR,
    NEGATIVE_COLOR,
    POSITIVE_COLOR,
    TEMPLATE,
)

FAMILY_COLORS: dict[str, str] = {
    "gamma": "#d62728",
    "exponential": "#7f7f7f",
    "lognormal": "#2ca02c",
    "weibull": "#9467bd",
}
LOBE_NAMES = {"+": "λ₊ (positive lobe)", "-": "λ₋ (negative lobe, absolute values)"}
"""Each lobe's name (its first word, λ₊ or λ₋, names it in a legend: "error λ₊ 0.233, λ₋ 0.082",
never "+ 0.233, - 0.082", which reads as arithmetic)."""


FIT_VIEW_MASS = 0.95
"""The per-head fit figure's x-axis ends at the bin where the lobe's histogram reaches this share
of its mass (at least :data:`FIT_VIEW_MIN_BINS` bins): one far eigenvalue would otherwise stretch
it to 20 lobe means with the data in the first unit."""

FIT_VIEW_MIN_BINS = 4


def _fit_view(hist: pd.DataFrame) -> tuple[float, float, float]:
    """(x end of the view, share of the lobe's mass beyond it, largest bin edge) of one lobe's
    density histogram (heights integrate to 1 over the bins)."""
    right = (hist["centre"] + hist["width"] / 2).to_numpy(dtype=float)
    mass = (hist["height"] * hist["width"]).to_numpy(dtype=float)
    cumulative = np.cumsum(mass) / max(mass.sum(), 1e-300)
    last = max(int(np.searchsorted(cumulative, FIT_VIEW_MASS - 1e-12)), FIT_VIEW_MIN_BINS - 1)
    last = min(last, len(right) - 1)
    return float(right[last]), float(1.0 - cumulative[last]), float(right[-1])


def _density_bars(hist: pd.DataFrame, color: str, name: str) -> go.Bar:
    """A unit-mean sample's density histogram (bin centres, widths and heights) as bars."""
    return go.Bar(
        x=hist["centre"],
        y=hist["height"],
        width=hist["width"],
        marker={"color": color},
        opacity=0.5,
        name=name,
        hovertemplate="x ≈ %{x:.2f}<br>density %{y:.3f}<extra></extra>",
    )


def _frame_panel(
    fig: go.Figure, col: int, title: str, x_end: float, beyond: float, x_max: float, what: str
) -> None:
    """Set panel ``col``'s x-axis to [0, x_end] (from :func:`_fit_view`) and write the share of
    the sample beyond it under the panel title, so a cut tail is never hidden."""
    fig.update_xaxes(title_text=title, range=[0, x_end], row=1, col=col)
    if beyond > 0:
        fig.add_annotation(
            text=f"{100 * beyond:.1f}% {what} beyond {x_end:.1f} (up to {x_max:.1f})",
            xref=f"x{col if col > 1 else ''} domain",
            yref=f"y{col if col > 1 else ''} domain",
            x=1,
            y=1,
            xanchor="right",
            yanchor="top",
            showarrow=False,
            font={"size": 11, "color": "#555555"},
        )


def fit_head_figure(histograms: pd.DataFrame, curves: pd.DataFrame, title: str = "") -> go.Figure:
    """Fig 6 for one head: each lobe's 20-bin density histogram (unit-mean sample) with the
    fitted densities of every family; the legend gives each fit's RMS error per lobe.

    Each panel's x-axis covers the bins holding :data:`FIT_VIEW_MASS` of the lobe (the share
    beyond is written under the panel) and its y-axis every value the error compares (bin
    heights and the densities at the bin centres); a density's spike at 0 may leave the top."""
    lobes = [lobe for lobe in ("+", "-") if lobe in set(histograms["lobe"])]
    fig = make_subplots(rows=1, cols=len(lobes), subplot_titles=[LOBE_NAMES[lb] for lb in lobes])
    errors = {
        family: {lobe: part.loc[part["lobe"] == lobe, "error"].iloc[0] for lobe in part["lobe"]}
        for family, part in curves.groupby("family", sort=False)
    }
    for col, lobe in enumerate(lobes, start=1):
        hist = histograms[histograms["lobe"] == lobe]
        x_end, beyond, x_max = _fit_view(hist)
        centres = hist["centre"].to_numpy(dtype=float)
        top = float(hist["height"].max())
        color = POSITIVE_COLOR if lobe == "+" else NEGATIVE_COLOR
        name = f"histogram {LOBE_NAMES[lobe].split(' ')[0]}"
        fig.add_trace(_density_bars(hist, color, name), row=1, col=col)
        for family, part in curves[curves["lobe"] == lobe].groupby("family", sort=False):
            x, density = part["x"].to_numpy(dtype=float), part["density"].to_numpy(dtype=float)
            at_centres = np.interp(centres[centres <= x_end], x, density)
            top = max(top, float(np.nanmax(at_centres, initial=0.0)))
            errs = ", ".join(
                f"{LOBE_NAMES[lb].split(' ')[0]} {e:.3f}" for lb, e in errors[family].items()
            )
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=density,
                    mode="lines",
                    line={"color": FAMILY_COLORS.get(family, "#000000"), "width": 2},
                    name=f"{family} (error {errs})",
                    legendgroup=family,
                    showlegend=col == 1,
                    hovertemplate=f"{family}<br>x %{{x:.2f}}<br>density %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_yaxes(range=[0, top * 1.15], row=1, col=col)
        _frame_panel(fig, col, "eigenvalue / lobe mean", x_end, beyond, x_max, "of the lobe")
    fig.update_yaxes(title_text="density", col=1)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Fitted families for the spectral lobes{': ' + title if title else ''}"
            "<br><sup>error: RMS difference between the 20-bin density histogram of the "
            "unit-mean lobe and the fitted density at the bin centres</sup>"
        },
        bargap=0,
        margin={"t": 110},
        legend={"orientation": "h", "y": -0.22, "x": 0, "xanchor": "left"},
        height=480,
    )
    return fig


SAMPLE_COLORS: dict[str, str] = {
    "+": POSITIVE_COLOR,
    "-": NEGATIVE_COLOR,
    "|λ(L)|": "#8c564b",
    "σ(A)": "#17becf",
    "both": BASELINE_COLOR,
}
SAMPLE_NAMES: dict[str, str] = {
    "+": "λ₊",
    "-": "λ₋",
    "|λ(L)|": "|eigenvalues of L|",
    "σ(A)": "singular values of A",
}


def fit_errors_figure(errors: pd.DataFrame, model_name: str = "", what: str = "") -> go.Figure:
    """Average fit error of each family over a model's heads, one bar per sample (columns of
    :func:`headforms.analyses.fits.mean_errors`, 'both' = all samples); lower is a closer fit."""
    fig = go.Figure()
    for column in errors.columns:
        name = "all samples" if column == "both" else SAMPLE_NAMES.get(column, column)
        fig.add_trace(
            go.Bar(
                x=errors.index,
                y=errors[column],
                name=name,
                marker={"color": SAMPLE_COLORS.get(column, BASELINE_COLOR)},
                hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Average fit error per family over the heads{': ' + what if what else ''}"
            f"{' (' + model_name + ')' if model_name else ''}"
        },
        xaxis={"title": {"text": "distribution family (location 0, maximum likelihood)"}},
        yaxis={"title": {"text": "mean RMS histogram error (lower is better)"}},
        barmode="group",
    )
    return fig


def sample_fits_figure(histograms: pd.DataFrame, curves: pd.DataFrame, title: str) -> go.Figure:
    """One panel per sample label (e.g. |λ(L)| and σ(A)): the 20-bin density histogram of the
    unit-mean sample with every fitted family's density; the legend gives each family's RMS
    error on every panel, left to right.

    Inputs: :func:`headforms.analyses.fits.head_histograms` / ``head_fit_curves``.
    """
    labels = list(dict.fromkeys(histograms["lobe"]))
    names = [SAMPLE_NAMES.get(label, label) for label in labels]
    fig = make_subplots(rows=1, cols=len(labels), subplot_titles=names, horizontal_spacing=0.08)
    errors = curves.groupby(["family", "lobe"], sort=False)["error"].first()
    for col, (label, name) in enumerate(zip(labels, names, strict=True), start=1):
        hist = histograms[histograms["lobe"] == label]
        color = SAMPLE_COLORS.get(label, BASELINE_COLOR)
        fig.add_trace(_density_bars(hist, color, f"histogram: {name}"), row=1, col=col)
        for family, part in curves[curves["lobe"] == label].groupby("family", sort=False):
            shown = ", ".join(f"{errors.get((family, lb), float('nan')):.3f}" for lb in labels)
            fig.add_trace(
                go.Scatter(
                    x=part["x"],
                    y=part["density"],
                    mode="lines",
                    line={"color": FAMILY_COLORS.get(family, "#000000"), "width": 2},
                    name=f"{family} (errors {shown})",
                    legendgroup=family,
                    showlegend=col == 1,
                    hovertemplate=f"{family}, {name}<br>x %{{x:.2f}}<br>density %{{y:.3f}}"
                    f"<extra>error {part['error'].iloc[0]:.3f}</extra>",
                ),
                row=1,
                col=col,
            )
        _frame_panel(fig, col, "value / sample mean", *_fit_view(hist), "of the sample")
        top = float(np.nanmax(hist["height"].to_numpy(dtype=float), initial=0.0))
        if top > 0:  # a fitted density may diverge at 0: scale the panel to the histogram
            fig.update_yaxes(range=[0.0, 1.5 * top], row=1, col=col)
    fig.update_yaxes(title_text="density", col=1)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{title}<br><sup>error = RMS difference between the 20-bin density "
            "histogram of the unit-mean sample and the fitted density at the bin centres, per "
            "panel left to right</sup>"
        },
        bargap=0,
        margin={"t": 110},
        legend={"orientation": "h", "y": -0.22, "yanchor": "top"},
        height=470,
    )
    return fig


def fit_error_vs_size_figure(
    errors_by_model: Mapping[str, tuple[int | None, pd.DataFrame]],
) -> go.Figure:
    """Fig 6: average error of each family against the model's size (parameter count, log
    scale, one tick per decade), one marker per family and model, each model's column of
    markers named above it.

    ``errors_by_model``: model name -> (parameter count or None,
    :func:`headforms.analyses.fits.mean_errors`). Models without a parameter count cannot be
    placed: they are named in the subtitle.
    """
    rows = [
        {"model": model, "size": size, "family": family, "error": error}
        for model, (size, errors) in errors_by_model.items()
        if size
        for family, error in errors["both"].items()
    ]
    unplaced = [model for model, (size, _) in errors_by_model.items() if not size]
    frame = pd.DataFrame(rows, columns=["model", "size", "family", "error"])
    fig = go.Figure()
    for family, part in frame.sort_values("size").groupby("family", sort=False):
        fig.add_trace(
            go.Scatter(
                x=part["size"],
                y=part["error"],
                mode="markers",  # a handful of models: points, not a trend line
                name=family,
                marker={"color": FAMILY_COLORS.get(family, "#000000"), "size": 10},
                text=part["model"],
                hovertemplate="%{text}<br>%{x:.3s} parameters<br>error %{y:.4f}<extra>"
                + family
                + "</extra>",
            )
        )
    note = (
        f"<br><sup>not placed (parameter count unknown): {', '.join(unplaced)}</sup>"
        if unplaced
        else "<br><sup>both lobes of every head, averaged; size from the weight files' headers"
        "</sup>"
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Average fit error of each family against the size of the model" + note},
        xaxis={"title": {"text": "model size (parameters, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "mean RMS histogram error (both lobes)"}},
    )
    if len(frame):  # a quarter decade of room on each side: markers at the ends stay whole
        low, high = np.log10(frame["size"].min()), np.log10(frame["size"].max())
        view = (low - 0.25, high + 0.25)
        decades = np.arange(np.floor(view[0]), np.ceil(view[1]) + 1)
        steps = (1, 2, 5) if view[1] - view[0] < 2 else (1,)  # a narrow range: 1-2-5 ticks
        ticks = [m * 10.0**d for d in decades for m in steps]
        ticks = [t for t in ticks if view[0] <= np.log10(t) <= view[1]]
        fig.update_xaxes(
            range=list(view),
            tickvals=ticks,  # labelled ticks only, never plotly's "2 3 ... 9" minor labels
            ticktext=[_count_text(t) for t in ticks],
        )
        # each column of dots is one model: name it above its column
        tops = frame.groupby(["model", "size"], sort=False)["error"].max().reset_index()
        crowded = len(tops) > 3
        for row in tops.itertuples():
            fig.add_annotation(
                x=float(np.log10(row.size)),  # annotations on a log axis take log10 units
                y=row.error,
                text=row.model,
                showarrow=False,
                yshift=14,
                yanchor="bottom",
                textangle=-30 if crowded else 0,
                font={"size": 11},
                name="model",
            )
        fig.update_layout(margin={"t": 140 if crowded else 110})
    return fig


def _count_text(value: float) -> str:
    """A parameter count for a tick: 1M, 10M, 100M, 1B, 10B, ..."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{unit}"
    return f"{value:g}"
