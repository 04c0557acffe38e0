"""The spectra of the symmetric parts across a model's heads: the mean unit spectrum (Figure 3),
the k-means clusters hung from Theta (Figure 4), the unit spectra on their SVD components with the
moment level sets (Figure 5) and the silhouette scan behind k.

Inputs are tidy data from :mod:`headforms.analyses.spectra`; clickable points carry
``customdata = [model_name, layer, head]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.spectra import (
    HEADS_PER_EXTREME,
    N_EXTREME,
    MomentLevels,
    SpectralProjection,
    parity_make_up,
)
from ..forms import PARITY_LABELS
from .head import lobe_bars
from .parity import layer_shares_figure
from .style import (
    BASELINE_COLOR,
    CLUSTER_COLORS,
    CLUSTER_SYMBOLS,
    MARKER_SIZE_2D,
    MARKER_SIZE_3D,
    PARITY_COLORS,
    PARITY_LINE_WIDTH,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    PARITY_SYMBOLS_3D,
    SELECTED_COLOR,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    Selected,
    head_customdata,
    head_name,
    selected_label,
    selected_marker,
    selected_row,
)

MEAN_SPECTRUM_NOTE = "mean of the heads' sorted unit-length spectra (eigenvalues of S / ‖S‖)"


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


def _cluster_style(index: int) -> dict:
    """Marker colour and symbol of the ``index``-th cluster, the same in every panel (2D and
    3D): the cluster palette, never a parity colour or glyph (a cluster is not a parity class,
    whatever its author's rank name)."""
    return {
        "color": CLUSTER_COLORS[index % len(CLUSTER_COLORS)],
        "symbol": CLUSTER_SYMBOLS[index % len(CLUSTER_SYMBOLS)],
    }


def _anchor(record: Mapping[str, object], place: str | None) -> float:
    """Where a cluster's histogram hangs on the unfolded Theta: the caption attaches the middle
    cluster to Theta's midpoint (0) and the others to their branches (their extreme heads' mean
    position)."""
    return 0.0 if place == "midpoint" else float(record["theta_position"])


def _to_paper(value: float, domain: Sequence[float], span: Sequence[float]) -> float:
    """Paper coordinate of a data value on an axis of this domain and (possibly reversed) range."""
    return domain[0] + (value - span[0]) / (span[1] - span[0]) * (domain[1] - domain[0])


def cluster_spectra_figure(
    summary: pd.DataFrame,
    means: np.ndarray,
    model_name: str = "",
    positions: pd.DataFrame | None = None,
    places: Sequence[str | None] | None = None,
    bins: int = 40,
) -> go.Figure:
    """Fig 4: per cluster (ordered by decreasing mean signed asymmetry), the histogram of the mean
    sorted unit spectrum of its most extreme heads, attached to Theta.

    Top: Theta unfolded into one segment, vertex c = 1 (left) - midpoint a = b = 1/2 - vertex
    d = 1 (right), by the position ``c - d`` of each head's nearest point of Theta
    (``positions``: columns ``position`` and ``cluster``, drawn as a rug); each histogram hangs
    from its cluster's extreme heads' mean position, the middle one (``places``: where the
    caption attaches each, :data:`headforms.analyses.spectra.CLUSTER_PLACES`) from the
    midpoint. Clusters are named neutrally and drawn in the cluster palette (never parity
    colours or glyphs); each panel title gives the cluster's parity make-up and how many of its
    most extreme heads the histogram averages.
    """
    k = len(summary)
    places = list(places) if places is not None else [None] * k
    records = summary.to_dict("records")
    anchors = [_anchor(r, p) for r, p in zip(records, places, strict=True)]
    titles = [
        f"<b>{r['name']}</b>:<br>{parity_make_up(r)} ({r['size']} heads)<br>"
        f"histogram: mean of its {r['n_extreme']} most extreme<br>"
        f"negative energy {r['negative_energy']:.2f} · Θ position {r['theta_position']:+.2f}"
        for r in records
    ]
    fig = make_subplots(
        rows=2,
        cols=k,
        specs=[[{"colspan": k}] + [None] * (k - 1), [{} for _ in range(k)]],
        row_heights=[0.2, 0.8],
        vertical_spacing=0.3,
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
            style = _cluster_style(int(cluster))
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
        style = _cluster_style(i)
        fig.add_trace(
            go.Scatter(
                x=[anchors[i]],
                y=[0.0],
                mode="markers",
                marker={
                    "size": 14,
                    "color": style["color"],
                    "symbol": style["symbol"],
                    "line": {"width": 1.5, "color": "black"},
                },
                name=row.name,
                hovertemplate=f"{row.name}: hung at Θ position %{{x:+.3f}} (extreme heads' "
                f"mean {row.theta_position:+.3f})<extra></extra>",
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
    for title in fig.layout.annotations:  # clear of the top tick label of the panel below
        title.yshift = 8
    for name, line in (
        ("eigenvalue 0", {"color": "black", "dash": "dash", "width": 1}),
        ("hung from the cluster's mean position on Θ", {"color": "#777777", "dash": "dot"}),
    ):  # the lines explained in the legend (shapes have no entry)
        fig.add_trace(
            go.Scatter(x=[None], y=[None], mode="lines", line=line, name=name, hoverinfo="skip"),
            row=2,
            col=1,
        )
    # Connectors: from each cluster's mean position on Theta down to its histogram's title.
    strip_x, strip_y = fig.layout.xaxis.domain, fig.layout.yaxis.domain
    for i in range(k):
        panel_x = fig.layout[f"xaxis{i + 2}"].domain
        panel_top = fig.layout[f"yaxis{i + 2}"].domain[1]
        fig.add_shape(
            type="line",
            xref="paper",
            yref="paper",
            x0=_to_paper(anchors[i], strip_x, THETA_RANGE),
            y0=_to_paper(0.0, strip_y, (-1.0, 1.0)),
            x1=(panel_x[0] + panel_x[1]) / 2,
            y1=panel_top + 0.1,
            line={"color": _cluster_style(i)["color"], "width": 1.5, "dash": "dot"},
            layer="below",
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Eigenvalue distributions of the clusters, attached to Θ: {model_name}"
            "<br><sup>k-means clusters of the unit spectra (not the parity classes), by "
            "decreasing mean signed asymmetry; parity make-up in each title<br>each histogram: "
            f"the mean sorted unit spectrum of the cluster's {N_EXTREME} most extreme heads per "
            f"{HEADS_PER_EXTREME} heads (at least {N_EXTREME}),<br>hung from their mean position "
            "on Θ (the middle cluster from Θ's midpoint)</sup>"
        },
        barmode="overlay",
        bargap=0,
        height=740,
        margin={"t": 160},
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
) -> list[go.BaseTraceType]:
    """One trace per cluster or parity type, points carrying [model, layer, head]; a cluster's
    name gives its parity make-up, and its marker is the same in 2D and 3D."""
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
            symbols = PARITY_SYMBOLS_3D if three_d else PARITY_SYMBOLS
            marker = {
                "color": PARITY_COLORS.get(key, "#999999"),
                "symbol": symbols.get(key, "circle"),
            }
        else:
            counts = part["parity"].value_counts()
            make_up = parity_make_up({f"heads {p}": int(counts.get(p, 0)) for p in PARITY_LABELS})
            name = f"{part['cluster_name'].iloc[0]}: {make_up}"
            marker = _cluster_style(int(key))
        marker["size"] = MARKER_SIZE_3D if three_d else MARKER_SIZE_2D
        if not three_d:
            marker["line"] = {"width": PARITY_LINE_WIDTH if color_by == "parity" else 0.5}
            if color_by != "parity":
                outline = "open" in marker["symbol"] or marker["symbol"] == "x"
                marker["line"] = {"width": 1.5 if outline else 0.5}
                marker["line"]["color"] = marker["color"] if outline else "white"
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


def _selected_label(
    frame: pd.DataFrame, model_name: str, selected: Selected, axes: Sequence[str]
) -> list[dict]:
    """The selected head's name as a 3D scene annotation with an arrow: drawn over the WebGL
    scene, so no marker hides it."""
    found = selected_row({model_name: frame}, selected, axes)
    if found is None:
        return []
    row, _ = found
    x, y, z = (float(row[a].iloc[0]) for a in axes)
    name = head_name(row["layer"].iloc[0], row["head"].iloc[0])
    return [selected_label(x, y, name, 36, -30, z=z)]


FRAME_PAD = 0.06
"""Share of the plane panel's span kept beyond a selected head outside the level sets' grid."""


def _plane_frame(
    levels: MomentLevels, point: tuple[float, float] | None
) -> tuple[list[float], list[float]]:
    """The plane panel's x and y ranges: the level sets' grid, widened to hold the selected
    head (with :data:`FRAME_PAD` of room) when it lies outside."""
    ranges = []
    for grid, value in zip((levels.x, levels.y), point or (None, None), strict=True):
        low, high = float(grid[0]), float(grid[-1])
        if value is not None and not low <= value <= high:
            pad = FRAME_PAD * (max(high, value) - min(low, value))
            low, high = min(low, value - pad), max(high, value + pad)
        ranges.append([low, high])
    return ranges[0], ranges[1]


def _plane_label(
    frame: pd.DataFrame,
    model_name: str,
    selected: Selected,
    axes: Sequence[str],
    ranges: tuple[Sequence[float], Sequence[float]] | None,
) -> list[dict]:
    """The selected head's name in the plane panel, with an arrow to its ring, on a clear
    background (as the triangle's): pointing from the head toward the middle of the panel."""
    found = selected_row({model_name: frame}, selected, axes)
    if found is None:
        return []
    row, _ = found
    x, y = (float(row[a].iloc[0]) for a in axes)
    if ranges is None:
        ranges = tuple((float(frame[a].min()), float(frame[a].max())) for a in axes)
    middle = [(low + high) / 2 for low, high in ranges]
    name = head_name(row["layer"].iloc[0], row["head"].iloc[0])
    return [selected_label(x, y, name, -40 if x > middle[0] else 40, 34 if y > middle[1] else -34)]


PROJECTION_NAMES = {"svd": "uncentred SVD (the paper's)", "pca": "centred PCA"}
"""The projections of the unit spectra (kinds of :func:`headforms.analyses.spectra.project`) by
the names the dashboard's picker and the figure's subtitle give them."""


def projection_figure(
    frame: pd.DataFrame,
    model_name: str,
    projection: SpectralProjection,
    plane: tuple[int, int] = (2, 3),
    levels: MomentLevels | None = None,
    color_by: str = "cluster",
    selected: Selected = None,
) -> go.Figure:
    """Fig 5: each head's sorted unit spectrum on components 1-3 of ``projection`` (left, a
    rotatable 3D scene) and on the two components of ``plane`` (right, 1-based; the paper's 2
    and 3), with the level sets of the moments O (solid) and E (dotted) of the unit spectrum when
    ``levels`` is given. Points by cluster (one marker per cluster in both panels, one legend
    entry) or parity, clickable (frame columns c1, c2, c3); the selected head is ringed after
    every other trace in both panels and named on a background in both (a scene annotation over
    the 3D view); the plane panel's ranges, the level sets' grid, widen to hold it."""
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
                            "labelfont": {"size": 11, "color": "#555555"},
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
    panels = ((True, space, titles, 1), (False, plane_axes, plane_titles, 2))
    for three_d, axes, axis_titles, col in panels:
        for trace in _group_traces(frame, model_name, color_by, axes, axis_titles, three_d):
            trace.update(legendgroup=trace.name, showlegend=three_d)
            fig.add_trace(trace, row=1, col=col)
    for three_d, axes, _, col in panels:  # the selected head over every head of both panels
        for trace in _selected_marker(frame, model_name, selected, axes, three_d):
            # its name: an annotation on a background, drawn on top (a scene's over WebGL)
            trace.update(showlegend=False, mode="markers")
            fig.add_trace(trace, row=1, col=col)
    fig.update_xaxes(title_text=plane_titles[0], row=1, col=2)
    fig.update_yaxes(title_text=plane_titles[1], row=1, col=2)
    ranges = None
    if levels is not None:  # the level sets' grid, and the selected head if outside it
        found = selected_row({model_name: frame}, selected, plane_axes)
        point = None if found is None else tuple(float(found[0][a].iloc[0]) for a in plane_axes)
        ranges = _plane_frame(levels, point)
        fig.update_xaxes(range=ranges[0], row=1, col=2)
        fig.update_yaxes(range=ranges[1], row=1, col=2)
    for note in _plane_label(frame, model_name, selected, plane_axes, ranges):
        fig.add_annotation(note, row=1, col=2)
    fig.update_layout(
        template=TEMPLATE,
        uirevision=UIREVISION,
        title={
            "text": f"Unit spectra of S: components 1-3 (left), {plane[0]} and {plane[1]} "
            f"(right): {model_name}<br><sup>{len(frame)} heads; "
            f"{PROJECTION_NAMES[projection.kind]} of the unit spectra"
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
            "annotations": _selected_label(frame, model_name, selected, space),
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


def clusters_by_layer_figure(
    shares: pd.DataFrame, names: Sequence[str], model_name: str = ""
) -> go.Figure:
    """The clusters by layer (the author's grid): per layer, the percent of its heads in each
    k-means cluster of Figure 4 (``shares``: :func:`headforms.analyses.spectra.clusters_by_layer`;
    ``names``: the clusters' neutral names), white 0% to black 100% like Figure 12."""
    return layer_shares_figure(
        {model_name: shares},
        list(names),
        "spectral cluster",
        f"Spectral clusters by layer: {model_name}<br><sup>percent of each layer's heads in each "
        "k-means cluster of the unit spectra (Figure 4's; not the parity classes), white 0% to "
        "black 100%</sup>",
    )
