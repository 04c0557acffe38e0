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
from ..analyses.spectra import MomentLevels, SpectralProjection
from ..analyses.theorem5 import limit_edge
from ..forms import PARITY_LABELS, PARITY_TYPE_II_THRESHOLD
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
    THETA_COLOR,
    UIREVISION,
    Selected,
    head_customdata,
    selected_marker,
    selected_row,
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


THETA_RANGE = (1.1, -1.1)
"""x range of the unfolded Theta strip of Fig 4: the vertex c = 1 (+1) on the left."""


def _cluster_style(cluster_type: str | None, index: int) -> dict:
    """Marker colour and symbol of a cluster: its parity type's when named, else a palette one."""
    if cluster_type is not None:
        return {"color": PARITY_COLORS[cluster_type], "symbol": PARITY_SYMBOLS[cluster_type]}
    return {"color": _model_color(index), "symbol": "circle"}


def _to_paper(value: float, domain: Sequence[float], span: Sequence[float]) -> float:
    """Paper coordinate of a data value on an axis of this domain and (possibly reversed) range."""
    return domain[0] + (value - span[0]) / (span[1] - span[0]) * (domain[1] - domain[0])


def cluster_spectra_figure(
    summary: pd.DataFrame,
    means: np.ndarray,
    model_name: str = "",
    positions: pd.DataFrame | None = None,
    types: Sequence[str | None] | None = None,
    bins: int = 40,
) -> go.Figure:
    """Fig 4: per cluster (ordered by decreasing mean signed asymmetry), the histogram of the mean
    sorted unit spectrum of its most extreme heads, attached to Theta.

    Top: Theta unfolded into one segment, vertex c = 1 (left) - midpoint a = b = 1/2 - vertex
    d = 1 (right), by the position ``c - d`` of each head's nearest point of Theta
    (``positions``: columns ``position`` and ``cluster``, drawn as a rug); each histogram hangs
    from its cluster's extreme heads' mean position. ``types``: parity key per cluster (markers).
    """
    k = len(summary)
    types = list(types) if types is not None else [None] * k
    titles = [
        f"<b>{r.name}</b>: {r.size} heads, mean of {r.n_extreme} most extreme<br>"
        f"negative energy {r.negative_energy:.2f} · Θ position {r.theta_position:+.2f}"
        for r in summary.itertuples()
    ]
    fig = make_subplots(
        rows=2,
        cols=k,
        specs=[[{"colspan": k}] + [None] * (k - 1), [{} for _ in range(k)]],
        row_heights=[0.2, 0.8],
        vertical_spacing=0.24,
        horizontal_spacing=0.06,
        subplot_titles=["", *titles],
    )
    fig.add_trace(
        go.Scatter(
            x=[1.0, 0.0, -1.0],
            y=[0.0, 0.0, 0.0],
            mode="lines+markers+text",
            line={"color": THETA_COLOR, "width": 4},
            marker={"color": "black", "size": 7},
            text=["vertex c = 1 (PSD)", "midpoint a = b = ½", "vertex d = 1 (NSD)"],
            textposition=["top right", "top center", "top left"],
            name="Θ unfolded: c-branch | d-branch",
            hoverinfo="skip",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    if positions is not None and len(positions):
        for cluster, part in positions.groupby("cluster", sort=True):
            style = _cluster_style(types[int(cluster)], int(cluster))
            fig.add_trace(
                go.Scatter(
                    x=part["position"],
                    y=np.full(len(part), -0.45),
                    mode="markers",
                    marker={
                        "symbol": "line-ns",
                        "size": 10,
                        "line": {"width": 1.5, "color": style["color"]},
                    },
                    name=f"{summary['name'].iloc[int(cluster)]}: heads",
                    hovertemplate="Θ position %{x:.3f}<extra>%{fullData.name}</extra>",
                    showlegend=False,
                ),
                row=1,
                col=1,
            )
    edges = _spectrum_edges(list(means), bins)
    for i, (row, spectrum) in enumerate(zip(summary.itertuples(), means, strict=True)):
        style = _cluster_style(types[i], i)
        fig.add_trace(
            go.Scatter(
                x=[row.theta_position],
                y=[0.0],
                mode="markers",
                marker={
                    "size": 14,
                    "color": style["color"],
                    "symbol": style["symbol"],
                    "line": {"width": 1.5, "color": "black"},
                },
                name=row.name,
                hovertemplate=f"{row.name}: extreme heads' mean Θ position %{{x:+.3f}}"
                "<extra></extra>",
                showlegend=False,
            ),
            row=1,
            col=1,
        )
        for bar in _spectrum_bars(spectrum, edges, show_legend=i == 0):
            fig.add_trace(bar, row=2, col=i + 1)
        fig.add_vline(x=0.0, line={"color": "black", "dash": "dash", "width": 1}, row=2, col=i + 1)
    fig.update_xaxes(range=list(THETA_RANGE), visible=False, row=1, col=1)
    fig.update_yaxes(range=[-1.0, 1.0], visible=False, row=1, col=1)
    fig.update_xaxes(title_text="eigenvalue / ‖S‖", row=2)
    fig.update_yaxes(title_text="eigenvalues per bin (of 2n)", row=2, col=1)
    fig.update_annotations(font_size=11)
    # Connectors: from each cluster's mean position on Theta down to its histogram's title.
    strip_x, strip_y = fig.layout.xaxis.domain, fig.layout.yaxis.domain
    for i, row in enumerate(summary.itertuples()):
        panel_x = fig.layout[f"xaxis{i + 2}"].domain
        panel_top = fig.layout[f"yaxis{i + 2}"].domain[1]
        fig.add_shape(
            type="line",
            xref="paper",
            yref="paper",
            x0=_to_paper(row.theta_position, strip_x, THETA_RANGE),
            y0=_to_paper(0.0, strip_y, (-1.0, 1.0)),
            x1=(panel_x[0] + panel_x[1]) / 2,
            y1=panel_top + 0.1,
            line={"color": _cluster_style(types[i], i)["color"], "width": 1.5, "dash": "dot"},
            layer="below",
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Eigenvalue distributions of the clusters, attached to Θ: {model_name}"
            "<br><sup>k-means on the unit spectra, clusters by decreasing mean signed asymmetry "
            "(k = 3: Type I+, II, I−)<br>each histogram: the mean sorted unit spectrum of the "
            "cluster's most extreme heads, hung from their mean position on Θ</sup>"
        },
        barmode="overlay",
        bargap=0,
        height=640,
        margin={"t": 130},
        legend={"orientation": "h", "y": -0.14},
    )
    return fig


def _group_traces(
    frame: pd.DataFrame,
    model_name: str,
    color_by: str,
    axes: Sequence[str],
    titles: Sequence[str],
    three_d: bool,
    types: Sequence[str | None] | None = None,
) -> list[go.BaseTraceType]:
    """One trace per cluster or parity type, points carrying [model, layer, head]."""
    trace = go.Scatter3d if three_d else go.Scatter
    if color_by == "parity":
        groups = [(p, frame[frame["parity"] == p]) for p in (*PARITY_LABELS, "zero")]
    else:
        groups = [(c, frame[frame["cluster"] == c]) for c in sorted(frame["cluster"].unique())]
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
            cluster_type = types[int(key)] if types is not None else None
            name = f"{part['cluster_name'].iloc[0]} ({len(part)} heads)"
            marker = _cluster_style(cluster_type, int(key))
        marker["size"] = 4 if three_d else 8
        if not three_d:
            marker["line"] = {"width": 0.5, "color": "white"}
        coords = dict(zip(("x", "y", "z"), (part[a].to_numpy() for a in axes), strict=False))
        out.append(
            trace(
                **coords,
                mode="markers",
                marker=marker,
                name=name,
                customdata=head_customdata(part, model_name),
                hovertemplate="layer %{customdata[1]}, head %{customdata[2]}<br>"
                + "<br>".join(
                    f"{t.split(' (')[0]} %{{{c}:.3f}}" for t, c in zip(titles, "xyz", strict=False)
                )
                + f"<extra>{name}</extra>",
            )
        )
    return out


def _selected_marker(
    frame: pd.DataFrame, model_name: str, selected: Selected, axes: Sequence[str], three_d: bool
) -> list[go.BaseTraceType]:
    found = selected_row({model_name: frame}, selected, axes)
    if found is None:
        return []
    row, model = found
    names = ("x", "y", "z") if three_d else ("x", "y")
    coordinates = {n: row[a].to_numpy() for n, a in zip(names, axes, strict=True)}
    return [selected_marker(row, model, coordinates)]


PROJECTION_NAMES = {
    "svd": "uncentred SVD of the unit spectra (the paper's)",
    "pca": "centred PCA of the unit spectra",
}


def projection_figure(
    frame: pd.DataFrame,
    model_name: str,
    projection: SpectralProjection,
    plane: tuple[int, int] = (2, 3),
    levels: MomentLevels | None = None,
    color_by: str = "cluster",
    selected: Selected = None,
    types: Sequence[str | None] | None = None,
) -> go.Figure:
    """Fig 5: each head's sorted unit spectrum on components 1-3 of ``projection`` (left, a
    rotatable 3D scene) and on the two components of ``plane`` (right, 1-based; the paper's 2
    and 3), with the level sets of the moments O (solid) and E (dotted) of the unit spectrum when
    ``levels`` is given. Points by cluster or parity, clickable (frame columns c1, c2, c3)."""
    fig = make_subplots(
        rows=1,
        cols=2,
        specs=[[{"type": "scene"}, {"type": "xy"}]],
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.1,
    )
    if levels is not None:
        for values, contour_levels, dash, label in (
            (levels.odd, levels.odd_levels, "solid", "O = Σ x/(1−x²) levels"),
            (levels.even, levels.even_levels, "dot", "E = Σ x²/(1−x²) levels"),
        ):
            for level in contour_levels:
                fig.add_trace(
                    go.Contour(
                        x=levels.x,
                        y=levels.y,
                        z=values,
                        contours={
                            "start": float(level),
                            "end": float(level),
                            "size": 1.0,
                            "coloring": "none",
                            "showlabels": True,
                            "labelfont": {"size": 9, "color": "#555555"},
                        },
                        line={"color": "#777777", "width": 1, "dash": dash},
                        showscale=False,
                        name=label,
                        legendgroup=label,
                        showlegend=bool(level == contour_levels[0]),
                        hoverinfo="skip",
                    ),
                    row=1,
                    col=2,
                )
    titles = [projection.axis_title(i) for i in range(3)]
    space = ("c1", "c2", "c3")
    plane_axes = tuple(f"c{i}" for i in plane)
    plane_titles = [projection.axis_title(i - 1) for i in plane]
    for three_d, axes, axis_titles, col in (
        (True, space, titles, 1),
        (False, plane_axes, plane_titles, 2),
    ):
        for trace in _group_traces(frame, model_name, color_by, axes, axis_titles, three_d, types):
            trace.update(legendgroup=trace.name, showlegend=three_d)
            fig.add_trace(trace, row=1, col=col)
        for trace in _selected_marker(frame, model_name, selected, axes, three_d):
            trace.update(showlegend=False)
            fig.add_trace(trace, row=1, col=col)
    fig.update_xaxes(title_text=plane_titles[0], row=1, col=2)
    fig.update_yaxes(title_text=plane_titles[1], row=1, col=2)
    if levels is not None:
        fig.update_xaxes(range=[float(levels.x[0]), float(levels.x[-1])], row=1, col=2)
        fig.update_yaxes(range=[float(levels.y[0]), float(levels.y[-1])], row=1, col=2)
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={
            "text": f"Unit spectra of S: components 1-3 (left), {plane[0]} and {plane[1]} "
            f"(right): {model_name}<br><sup>{len(frame)} heads; "
            f"{PROJECTION_NAMES[projection.kind]}"
            + ("; O (solid) and E (dotted) level sets" if levels is not None else "")
            + "</sup>"
        },
        scene={
            "xaxis": {"title": {"text": titles[0]}},
            "yaxis": {"title": {"text": titles[1]}},
            "zaxis": {"title": {"text": titles[2]}},
            "aspectmode": "data",
            "camera": {
                "eye": {"x": 2.0, "y": -2.0, "z": 1.05},  # farther: titles stay inside
                "center": {"x": -0.15, "y": -0.15, "z": -0.2},
            },
            "domain": {"x": [0.0, 0.46], "y": [0.0, 1.0]},
        },
        legend={"itemsizing": "constant", "orientation": "h", "y": -0.12, "yanchor": "top"},
        margin={"l": 40, "r": 10, "b": 90, "t": 90},
        height=560,
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
                name=f"k = {chosen} shown",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "Silhouette of k-means on the unit spectra, per number of clusters"},
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
    scale), one line per family.

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
        fig.update_xaxes(range=[low - 0.25, high + 0.25])
    return fig


def theorem5_figure(
    samples: pd.DataFrame, limit: tuple[float, float, float, float], parameters: str = ""
) -> go.Figure:
    """Fig 10: sampled profiles by their coordinate b on the limit's edge (horizontal): {d = 0}
    from the vertex c = 1 at b = 0 to the vertex b = 1, or {c = 0} from the vertex d = 1 when
    |mu| > nu (:func:`headforms.analyses.theorem5.limit_edge`); one row per n, the Theorem 5
    limit marked ×."""
    vertex, other = limit_edge(limit)
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
                customdata=part[[vertex, other]].to_numpy(),
                hovertemplate=f"b %{{x:.4f}}<br>{vertex} %{{customdata[0]:.4f}}, "
                f"{other} %{{customdata[1]:.2e}}<extra>n = {n}</extra>",
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
    for x, text in ((0.0, f"vertex {vertex} = 1"), (1.0, "vertex b = 1")):
        fig.add_annotation(x=x, y=-0.5, text=text, showarrow=False, yshift=10)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Profiles of spectra sampled from two gamma lobes (Theorem 5)"
            + (f"<br><sup>{parameters}</sup>" if parameters else "")
        },
        xaxis={
            "title": {
                "text": f"b along the edge {{{other} = 0}}: vertex {vertex} = 1 (left) to vertex "
                "b = 1 (right)"
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
    value_range: tuple[float, float] = (0.0, 1.0),
) -> go.Figure:
    """Fig 11 (and the energy analogue): per-model histograms of a per-head column over
    ``value_range``, dashed vertical lines at the model medians, and each model's Gaussian
    baseline (its table in ``baselines``, by model name) outlined."""
    fig = go.Figure()
    low, high = value_range
    edges = np.linspace(low, high, bins + 1)
    for i, (name, heads) in enumerate(models.items()):
        color = _model_color(i)
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
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{label[:1].upper()}{label.split(' =')[0][1:]} per model"
            "<br><sup>dashed lines: model medians; dotted: medians of independent<br>Gaussian "
            "K, Q of the same shapes (their histograms: click the legend)</sup>"
        },
        xaxis={"title": {"text": label}, "range": [low, high]},
        yaxis={"title": {"text": "density of heads"}},
        barmode="overlay",
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def _tolerance_text(tolerance: float | None) -> str:
    value = PARITY_TYPE_II_THRESHOLD if tolerance is None else tolerance
    return "1/50" if value == PARITY_TYPE_II_THRESHOLD else f"{value:g}"


def parity_comparison_table(
    models: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> pd.DataFrame:
    """Table 2 for the given models (Type II tolerance ``tolerance``, default 1/50) followed by
    the paper's published rows (at 1/50) with their head counts, labelled by source."""
    ours = parity_table(models, tolerance).reset_index()
    ours.insert(0, "source", "computed here")
    paper = paper_table2().reset_index()
    paper.insert(0, "source", "paper, Table 2")
    table = pd.concat([ours, paper], ignore_index=True)
    table["heads"] = table["heads"].astype("Int64")  # a count: never shown as 270.000000
    return table


def parity_comparison_figure(table: pd.DataFrame, tolerance: float | None = None) -> go.Figure:
    """Stacked horizontal bars of the parity shares per model with head counts, the paper's
    rows labelled."""
    labels = [
        f"{m} (paper, {int(h)} heads)" if s.startswith("paper") else f"{m} ({int(h)} heads)"
        for m, s, h in zip(table["model"], table["source"], table["heads"], strict=True)
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
        title={
            "text": "Percentage of heads by parity (Table 2), with the paper's published rows"
            f"<br><sup>Type II: c_S + d_S ≤ {_tolerance_text(tolerance)} for the computed rows; "
            "the paper's rows use 1/50</sup>"
        },
        xaxis={"title": {"text": "percent of heads"}, "range": [0, 100]},
        yaxis={"title": {"text": "model"}, "autorange": "reversed"},
        barmode="stack",
        height=240 + 28 * len(labels),
        # plotly lists stacked traces last-first; left to right reads as the bars stack
        legend={"orientation": "h", "y": -0.15, "yanchor": "top", "traceorder": "normal"},
    )
    return fig


GREY_SCALE = [[0.0, "#ffffff"], [1.0, "#000000"]]
"""Figure 12's shared scale: white at 0%, black at 100%."""


def parity_by_layer_grid_figure(
    frames: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> go.Figure:
    """Figure 12 for several models: per model, a type x layer grid of the percent of each
    layer's heads of each parity type, one shared scale from white (0%) to black (100%).

    ``frames``: model name -> :func:`headforms.analyses.parity.parity_by_layer` frame.
    """
    names = list(frames)
    rows = max(len(names), 1)
    height = 150 + 230 * rows
    fig = make_subplots(
        rows=rows,
        cols=1,
        subplot_titles=names,
        vertical_spacing=min(0.3, 95 / (height - 150)) if rows > 1 else 0.0,
    )
    for i, name in enumerate(names, start=1):
        frame = frames[name].reindex(columns=list(PARITY_LABELS), fill_value=0.0)
        values = frame.to_numpy(dtype=float).T
        fig.add_trace(
            go.Heatmap(
                z=values,
                x=frame.index.to_numpy(),
                y=[PARITY_NAMES[p] for p in PARITY_LABELS],
                coloraxis="coloraxis",
                text=np.round(values).astype(int),
                texttemplate="%{text}" if len(frame) <= 16 else "",
                textfont={"size": 9},
                xgap=1,
                ygap=1,
                name=name,
                hovertemplate=f"{name}<br>layer %{{x}}, %{{y}}: %{{z:.1f}}%<extra></extra>",
            ),
            row=i,
            col=1,
        )
        fig.update_xaxes(title_text="layer", dtick=1 if len(frame) <= 32 else None, row=i, col=1)
        fig.update_yaxes(title_text="parity type", autorange="reversed", row=i, col=1)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "Parity by layer (Figure 12): percent of each layer's heads of each type"
            f"<br><sup>Type II: c_S + d_S ≤ {_tolerance_text(tolerance)}; one shared scale, "
            "white 0% to black 100%</sup>"
        },
        coloraxis={
            "colorscale": GREY_SCALE,
            "cmin": 0,
            "cmax": 100,
            "colorbar": {"title": {"text": "% of layer"}},
        },
        height=height,
        margin={"t": 100},
        plot_bgcolor="white",
    )
    return fig
