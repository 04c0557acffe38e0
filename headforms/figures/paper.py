"""Pure Plotly builders for the paper's spectral views: Figs 3-6, 10, 11 and model comparison.

Inputs are tidy data from :mod:`headforms.analyses.spectra`, :mod:`headforms.analyses.fits`,
:mod:`headforms.analyses.theorem5` and the per-head frames of :func:`headforms.analyze`; every
builder returns a ``go.Figure`` with a title and axis titles. Clickable points carry
``customdata = [model_name, layer, head]`` like the simplex of :mod:`headforms.figures.simplex`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.parity import paper_table2, parity_table
from ..forms import PARITY_LABELS
from .head import lobe_bars
from .style import (
    BASELINE_COLOR,
    MODEL_COLORS,
    NEGATIVE_COLOR,
    PARITY_COLORS,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    POSITIVE_COLOR,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    Selected,
    head_customdata,
)

FAMILY_COLORS: dict[str, str] = {
    "gamma": "#d62728",
    "exponential": "#7f7f7f",
    "lognormal": "#2ca02c",
    "weibull": "#9467bd",
}
LOBE_NAMES = {"+": "λ₊ (positive lobe)", "-": "λ₋ (negative lobe, absolute values)"}
MEAN_SPECTRUM_NOTE = "mean of the heads' sorted unit-length spectra (eigenvalues of S / ‖S‖)"


def _model_color(index: int) -> str:
    return MODEL_COLORS[index % len(MODEL_COLORS)]


def _spectrum_edges(spectra: Sequence[np.ndarray], bins: int) -> np.ndarray:
    """Bin edges symmetric about 0 covering every spectrum, with 0 on an edge."""
    extent = max((float(np.abs(s).max()) for s in spectra if np.size(s)), default=1.0) or 1.0
    half = max(bins // 2, 1)
    return np.linspace(-extent, extent, 2 * half + 1)


def _spectrum_bars(spectrum: np.ndarray, edges: np.ndarray, show_legend: bool) -> list[go.Bar]:
    """Histogram bars of one spectrum's non-zero entries, lobes coloured (figures.lobe_bars)."""
    counts, _ = np.histogram(spectrum[spectrum != 0], bins=edges)
    return lobe_bars((edges[:-1] + edges[1:]) / 2, counts, edges[1] - edges[0], show_legend)


def _step_trace(spectrum: np.ndarray, edges: np.ndarray, name: str) -> go.Scatter:
    counts, _ = np.histogram(spectrum[spectrum != 0], bins=edges)
    return go.Scatter(
        x=np.repeat(edges, 2)[1:-1],
        y=np.repeat(counts, 2),
        mode="lines",
        line={"color": BASELINE_COLOR, "width": 2},
        name=name,
        hoverinfo="skip",
    )


def mean_spectrum_figure(
    mean_spectrum: np.ndarray,
    baseline_mean: np.ndarray | None = None,
    model_name: str = "",
    bins: int = 40,
) -> go.Figure:
    """Fig 3: histogram of the mean sorted unit-length spectrum of S (2n values), with the
    Gaussian baseline's mean spectrum as an outline."""
    edges = _spectrum_edges(
        [mean_spectrum] + ([baseline_mean] if baseline_mean is not None else []), bins
    )
    fig = go.Figure(_spectrum_bars(np.asarray(mean_spectrum), edges, True))
    if baseline_mean is not None:
        fig.add_trace(
            _step_trace(np.asarray(baseline_mean), edges, "Gaussian baseline (same n, N)")
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Mean eigenvalue distribution of the symmetric parts: {model_name}"
            f"<br><sup>{MEAN_SPECTRUM_NOTE}, entry by entry</sup>"
        },
        xaxis={"title": {"text": "eigenvalue of S / ‖S‖ (mean sorted unit spectrum)"}},
        yaxis={"title": {"text": "eigenvalues per bin (of 2n)"}},
        barmode="overlay",
        bargap=0,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def cluster_spectra_figure(
    summary: pd.DataFrame, means: np.ndarray, model_name: str = "", bins: int = 30
) -> go.Figure:
    """Fig 4: one histogram per cluster of the mean sorted unit spectrum of its most extreme heads,
    titled with the cluster's size, majority parity and mean profile (a, b, c, d)."""
    k = len(summary)
    cols = min(k, 4)
    rows = int(np.ceil(k / cols))
    titles = [
        f"cluster {r.cluster} ({r.size} heads), {r.n_extreme} extreme: {r.parity}<br>"
        f"(a,b,c,d)=({r.a:.2f},{r.b:.2f},{r.c:.2f},{r.d:.2f})"
        for r in summary.itertuples()
    ]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, shared_xaxes=True)
    edges = _spectrum_edges(list(means), bins)
    for i, spectrum in enumerate(means):
        for bar in _spectrum_bars(spectrum, edges, show_legend=i == 0):
            fig.add_trace(bar, row=i // cols + 1, col=i % cols + 1)
    fig.update_xaxes(title_text="eigenvalue / ‖S‖", row=rows)
    fig.update_yaxes(title_text="eigenvalues per bin", col=1)
    fig.update_annotations(font_size=11)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Eigenvalue distributions of the most extreme heads per cluster: {model_name}"
            "<br><sup>each panel: mean of the sorted unit-length spectra of the cluster's heads "
            "projecting furthest from the overall mean along the cluster's direction</sup>"
        },
        barmode="overlay",
        bargap=0,
        height=260 * rows + 140,
        margin={"t": 140},
    )
    return fig


def _group_traces(
    frame: pd.DataFrame, model_name: str, color_by: str, axes: Sequence[str], three_d: bool
) -> list[go.BaseTraceType]:
    """One trace per cluster or parity type, points carrying [model, layer, head]."""
    trace = go.Scatter3d if three_d else go.Scatter
    groups = (
        [(p, frame[frame["parity"] == p]) for p in (*PARITY_LABELS, "zero")]
        if color_by == "parity"
        else [(c, frame[frame["cluster"] == c]) for c in sorted(frame["cluster"].unique())]
    )
    out = []
    for key, part in groups:
        if part.empty:
            continue
        if color_by == "parity":
            name = PARITY_NAMES.get(key, str(key))
            marker = {
                "color": PARITY_COLORS.get(key, "#999999"),
                "symbol": PARITY_SYMBOLS.get(key, "circle"),
            }
        else:
            name = f"cluster {key}"
            marker = {"color": _model_color(int(key)), "symbol": "circle"}
        marker["size"] = 4 if three_d else 8
        coords = dict(zip(("x", "y", "z"), (part[a].to_numpy() for a in axes), strict=False))
        out.append(
            trace(
                **coords,
                mode="markers",
                marker=marker,
                name=name,
                customdata=head_customdata(part, model_name),
                hovertemplate="layer %{customdata[1]}, head %{customdata[2]}<br>"
                + "<br>".join(f"{a} %{{{c}:.3f}}" for a, c in zip(axes, "xyz", strict=False))
                + f"<extra>{name}</extra>",
            )
        )
    return out


def _selected_marker(
    frame: pd.DataFrame, model_name: str, selected: Selected, axes: Sequence[str], three_d: bool
) -> list[go.BaseTraceType]:
    if selected is None or selected[0] != model_name:
        return []
    row = frame[(frame["layer"] == int(selected[1])) & (frame["head"] == int(selected[2]))]
    if row.empty:
        return []
    trace = go.Scatter3d if three_d else go.Scatter
    coords = dict(zip(("x", "y", "z"), (row[a].to_numpy() for a in axes), strict=False))
    marker = {"color": SELECTED_COLOR, "size": 12 if three_d else 16, "symbol": "circle-open"}
    if not three_d:
        marker["line"] = {"width": 3, "color": SELECTED_COLOR}
    return [
        trace(
            **coords,
            mode="markers+text",
            marker=marker,
            text=[f"L{int(selected[1])}H{int(selected[2])}"],
            textposition="top center",
            name="selected",
            customdata=head_customdata(row, model_name),
            hoverinfo="skip",
        )
    ]


def _pc_title(i: int, explained: np.ndarray | None) -> str:
    share = f" ({100 * explained[i]:.1f}% of variance)" if explained is not None else ""
    return f"PC{i + 1}{share}"


def spectra_pca_figure(
    frame: pd.DataFrame,
    model_name: str,
    explained: np.ndarray | None = None,
    color_by: str = "cluster",
    selected: Selected = None,
) -> go.Figure:
    """Fig 5 (left): each head's sorted unit spectrum projected to its first three principal
    components, coloured by cluster or parity; a rotatable 3D scatter of clickable heads."""
    axes = ("pc1", "pc2", "pc3")
    fig = go.Figure(_group_traces(frame, model_name, color_by, axes, True))
    fig.add_traces(_selected_marker(frame, model_name, selected, axes, True))
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={
            "text": f"Spectra of the symmetric parts, first three principal components: "
            f"{model_name}<br><sup>{len(frame)} heads; each point is a head's sorted "
            "unit-length spectrum of S</sup>"
        },
        scene={
            "xaxis": {"title": {"text": _pc_title(0, explained)}},
            "yaxis": {"title": {"text": _pc_title(1, explained)}},
            "zaxis": {"title": {"text": _pc_title(2, explained)}},
        },
        legend={"itemsizing": "constant"},
        margin={"l": 0, "r": 0, "b": 0},
        height=600,
    )
    return fig


def spectra_pca_2d_figure(
    frame: pd.DataFrame,
    model_name: str,
    explained: np.ndarray | None = None,
    color_by: str = "cluster",
    selected: Selected = None,
) -> go.Figure:
    """Fig 5 (right): the same projection on the second and third principal components."""
    axes = ("pc2", "pc3")
    fig = go.Figure(_group_traces(frame, model_name, color_by, axes, False))
    fig.add_traces(_selected_marker(frame, model_name, selected, axes, False))
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={"text": f"Second and third principal components: {model_name}"},
        xaxis={"title": {"text": _pc_title(1, explained)}},
        yaxis={"title": {"text": _pc_title(2, explained)}},
    )
    return fig


def silhouette_figure(silhouette: Mapping[int, float], chosen: int) -> go.Figure:
    """Mean silhouette coefficient against the number of clusters, the chosen k marked."""
    ks = sorted(silhouette)
    fig = go.Figure(
        go.Scatter(
            x=ks,
            y=[silhouette[k] for k in ks],
            mode="lines+markers",
            name="silhouette",
            hovertemplate="k = %{x}<br>silhouette %{y:.3f}<extra></extra>",
        )
    )
    if chosen in silhouette:
        fig.add_trace(
            go.Scatter(
                x=[chosen],
                y=[silhouette[chosen]],
                mode="markers",
                marker={"size": 14, "symbol": "circle-open", "color": SELECTED_COLOR},
                name=f"k = {chosen}",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Choosing the number of clusters (KMeans on unit spectra)"},
        xaxis={"title": {"text": "number of clusters k"}, "dtick": 1},
        yaxis={"title": {"text": "mean silhouette coefficient"}},
        height=320,
    )
    return fig


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
        fig.add_trace(
            go.Bar(
                x=hist["centre"],
                y=hist["height"],
                width=hist["width"],
                marker={"color": POSITIVE_COLOR if lobe == "+" else NEGATIVE_COLOR},
                opacity=0.5,
                name=f"histogram {LOBE_NAMES[lobe].split(' ')[0]}",
                hovertemplate="x ≈ %{x:.2f}<br>density %{y:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        for family, part in curves[curves["lobe"] == lobe].groupby("family", sort=False):
            x, density = part["x"].to_numpy(dtype=float), part["density"].to_numpy(dtype=float)
            at_centres = np.interp(centres[centres <= x_end], x, density)
            top = max(top, float(np.nanmax(at_centres, initial=0.0)))
            errs = ", ".join(f"{lb} {e:.3f}" for lb, e in errors[family].items())
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
        fig.update_xaxes(title_text="eigenvalue / lobe mean", range=[0, x_end], row=1, col=col)
        fig.update_yaxes(range=[0, top * 1.15], row=1, col=col)
        if beyond > 0:
            fig.add_annotation(
                text=f"{100 * beyond:.1f}% of the lobe beyond {x_end:.1f} (up to {x_max:.1f})",
                xref=f"x{col if col > 1 else ''} domain",
                yref=f"y{col if col > 1 else ''} domain",
                x=1,
                y=1,
                xanchor="right",
                yanchor="top",
                showarrow=False,
                font={"size": 11, "color": "#555555"},
            )
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


def fit_errors_figure(errors: pd.DataFrame, model_name: str = "") -> go.Figure:
    """Average fit error of each family over a model's heads, per lobe (output of
    :func:`headforms.fits.mean_errors`); lower is a closer fit."""
    fig = go.Figure()
    for column, color, name in (
        ("+", POSITIVE_COLOR, "λ₊"),
        ("-", NEGATIVE_COLOR, "λ₋"),
        ("both", BASELINE_COLOR, "both lobes"),
    ):
        if column in errors:
            fig.add_trace(
                go.Bar(
                    x=errors.index,
                    y=errors[column],
                    name=name,
                    marker={"color": color},
                    hovertemplate="%{x}: %{y:.4f}<extra>" + name + "</extra>",
                )
            )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Average fit error per family over the heads: {model_name}"},
        xaxis={"title": {"text": "distribution family (location 0, maximum likelihood)"}},
        yaxis={"title": {"text": "mean RMS histogram error (lower is better)"}},
        barmode="group",
    )
    return fig


def fit_error_vs_size_figure(errors_by_model: Mapping[str, tuple[int, pd.DataFrame]]) -> go.Figure:
    """Fig 6: average error of each family against model size, one line per family.

    ``errors_by_model``: model name -> (number of heads, :func:`headforms.fits.mean_errors`).
    """
    rows = [
        {"model": model, "size": size, "family": family, "error": error}
        for model, (size, errors) in errors_by_model.items()
        for family, error in errors["both"].items()
    ]
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
                hovertemplate="%{text}<br>%{x} heads<br>error %{y:.4f}<extra>"
                + family
                + "</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Average fit error of each family against the size of the model"},
        xaxis={"title": {"text": "model size (number of attention heads)"}, "type": "log"},
        yaxis={"title": {"text": "mean RMS histogram error (both lobes)"}},
    )
    return fig


def theorem5_figure(
    samples: pd.DataFrame, limit: tuple[float, float, float, float], parameters: str = ""
) -> go.Figure:
    """Fig 10: sampled profiles by their coordinate b on the edge {d = 0} (horizontal, from the
    vertex c = 1 at b = 0 to the vertex b = 1), one row per n, the Theorem 5 limit marked ×."""
    sizes = sorted(samples["n"].unique())
    fig = go.Figure()
    rng = np.random.default_rng(0)
    for i, n in enumerate(sizes):
        part = samples[samples["n"] == n]
        jitter = rng.uniform(-0.15, 0.15, len(part))
        fig.add_trace(
            go.Scatter(
                x=part["b"],
                y=i + jitter,
                mode="markers",
                marker={"color": _model_color(i), "size": 6, "opacity": 0.7},
                name=f"n = {n}",
                customdata=part[["c", "d"]].to_numpy(),
                hovertemplate="b %{x:.4f}<br>c %{customdata[0]:.4f}, d %{customdata[1]:.2e}"
                f"<extra>n = {n}</extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[limit[1]],
                y=[i],
                mode="markers",
                marker={"symbol": "x", "size": 16, "color": "black"},
                name=f"limit b = {limit[1]:.3f} (Theorem 5)",
                showlegend=i == 0,
                legendgroup="limit",
                hovertemplate=f"limit b = {limit[1]:.4f}<extra></extra>",
            )
        )
    fig.add_shape(type="line", x0=0, x1=1, y0=-0.5, y1=-0.5, line={"color": "#444444"})
    for x, text in ((0.0, "vertex c = 1"), (1.0, "vertex b = 1")):
        fig.add_annotation(x=x, y=-0.5, text=text, showarrow=False, yshift=10)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Profiles of spectra sampled from two gamma lobes (Theorem 5)"
            + (f"<br><sup>{parameters}</sup>" if parameters else "")
        },
        xaxis={
            "title": {
                "text": "b along the edge {d = 0}: vertex c = 1 (left) to vertex b = 1 (right)"
            },
            "range": [-0.02, 1.02],
        },
        yaxis={
            "title": {"text": "eigenvalues per side n"},
            "tickvals": list(range(len(sizes))),
            "ticktext": [str(n) for n in sizes],
            "range": [-0.6, len(sizes) - 0.4],
        },
        height=200 + 110 * len(sizes),
    )
    return fig


def distribution_figure(
    models: Mapping[str, pd.DataFrame],
    column: str = "pairing",
    label: str = "pairing score 𝒫 = 1 − ‖λ₊−λ₋‖/‖S‖",
    baselines: Mapping[str, pd.DataFrame] | None = None,
    bins: int = 40,
) -> go.Figure:
    """Fig 11 (and the energy analogue): per-model histograms of a per-head column on [0, 1],
    dashed vertical lines at the model medians, and each model's Gaussian baseline (its table in
    ``baselines``, by model name) outlined."""
    fig = go.Figure()
    edges = np.linspace(0.0, 1.0, bins + 1)
    for i, (name, heads) in enumerate(models.items()):
        color = _model_color(i)
        values = heads[column].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        fig.add_trace(
            go.Histogram(
                x=values,
                xbins={"start": 0.0, "end": 1.0, "size": 1.0 / bins},
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
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Distribution of {label.split(' =')[0]} per model"
            "<br><sup>dashed lines: model medians; dotted: medians of independent Gaussian K, Q "
            "of the same shapes (their histograms: click the legend)</sup>"
        },
        xaxis={"title": {"text": label}, "range": [0, 1]},
        yaxis={"title": {"text": "density of heads"}},
        barmode="overlay",
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def parity_comparison_table(models: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 2 for the given models followed by the paper's published rows, labelled by source."""
    ours = parity_table(models).reset_index()
    ours.insert(0, "source", "computed here")
    paper = paper_table2().reset_index()
    paper.insert(0, "source", "paper, Table 2")
    table = pd.concat([ours, paper], ignore_index=True)
    table["heads"] = table["heads"].astype("Int64")  # a count; unknown for the paper's rows
    return table


def parity_comparison_figure(table: pd.DataFrame) -> go.Figure:
    """Stacked horizontal bars of the parity shares per model, the paper's rows labelled."""
    labels = [
        f"{m} (paper)" if s.startswith("paper") else m
        for m, s in zip(table["model"], table["source"], strict=True)
    ]
    fig = go.Figure()
    for parity in PARITY_LABELS:
        fig.add_trace(
            go.Bar(
                y=labels,
                x=table[parity],
                orientation="h",
                name=PARITY_NAMES[parity],
                marker={"color": PARITY_COLORS[parity]},
                hovertemplate="%{y}: %{x:.1f}%<extra>" + PARITY_NAMES[parity] + "</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Percentage of heads by parity (Table 2), with the paper's published rows"},
        xaxis={"title": {"text": "percent of heads"}, "range": [0, 100]},
        yaxis={"title": {"text": "model"}, "autorange": "reversed"},
        barmode="stack",
        height=220 + 28 * len(labels),
    )
    return fig
