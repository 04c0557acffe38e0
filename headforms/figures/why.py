"""Why a head attends where it does: its scores split by its form's parts, drawn.

- :func:`parts_figure`: the four parts of one head's pre-softmax scores (positive lobe, negative
  lobe, antisymmetric part, the rest) as token x token heatmaps on one colour scale;
- :func:`shares_figure`: the head's shares as stacked bars (mean square and within-row spread on
  the text, and the weights' at d = 0);
- :func:`spectrum_figure`: the eigenvalues of S at d = 0 as a histogram, the top directions of
  each lobe as clickable markers (``customdata = [lobe, rank]``);
- :func:`share_heatmap_figure`: a realised share of every head as a layer x head grid beside the
  weights' (clickable cells, :mod:`.heatmaps`);
- :func:`shares_triangle_figure`: every head's realised shares and weight shares on the triangle
  of the three, a line joining each head's two points (clickable heads).

Builders take arrays and the per-head table of :attr:`headforms.why.WhyResult.table`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..columns import SHARE_PARTS, SHARE_TITLES
from .behaviour import MASKED_COLOR, TOKEN_FONT_PX, tick_labels
from .heatmaps import HeatmapPanel, heatmap_panels_figure
from .style import (
    BASELINE_COLOR,
    MARKER_SIZE_2D,
    NEGATIVE_COLOR,
    PARITY_COLORS,
    PARITY_LINE_WIDTH,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    POSITIVE_COLOR,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    label_position,
    selected_marker,
    selected_row,
)

PART_TITLES = ("positive lobe", "negative lobe", "antisymmetric part", "the rest")
"""Titles of the four parts, in the order of :data:`headforms.why.split.PART_NAMES`."""
ANTISYMMETRIC_COLOR = "#7B3294"
"""The antisymmetric part's colour (neither lobe's nor a parity type's)."""
PART_COLORS = {"pos": POSITIVE_COLOR, "neg": NEGATIVE_COLOR, "anti": ANTISYMMETRIC_COLOR}
SHARE_NAMES = SHARE_PARTS
PARTS_SCALE: list[list] = [
    [0.0, "#053061"],
    [0.25, "#4393c3"],
    [0.5, "#ffffff"],
    [0.75, "#d6604d"],
    [1.0, "#67001f"],
]
"""Blue below 0, white at 0, red above (the range made symmetric about 0)."""
SHARE_KINDS = {"share": "mean square", "spread": "within-row spread"}
"""The realised shares a view may draw, by column prefix: what they are of."""
SHARE_COLUMN_TITLES = SHARE_TITLES


def parts_figure(
    tokens: Sequence[str], parts: np.ndarray, title: str, causal: bool = True
) -> go.Figure:
    """One head's ``(4, T, T)`` parts (NaN where masked) as four heatmaps side by side, query
    down, key across, on one diverging scale symmetric about 0 (red raises a pair's score,
    blue lowers it); hover names both tokens and the value."""
    parts = np.asarray(parts, dtype=float)
    length = len(tokens)
    if parts.shape != (4, length, length):
        raise FigureInputError(f"parts of shape {parts.shape} for {length} tokens")
    finite = parts[np.isfinite(parts)]
    reach = float(np.abs(finite).max()) if finite.size else 1.0
    reach = reach if reach > 0 else 1.0
    labels = np.array(tick_labels(tokens), dtype=object)
    hover = np.empty((length, length, 2), dtype=object)
    hover[:, :, 0] = labels[:, None]
    hover[:, :, 1] = labels[None, :]
    titles = list(PART_TITLES)
    rest = parts[3][np.isfinite(parts[3])]
    if rest.size and not rest.any():
        titles[3] = "the rest (0: no biases)"
    fig = make_subplots(rows=1, cols=4, subplot_titles=titles, horizontal_spacing=0.025)
    for index, name in enumerate(PART_TITLES):
        fig.add_trace(
            go.Heatmap(
                z=parts[index],
                customdata=hover,
                coloraxis="coloraxis",
                hoverongaps=False,
                name=name,
                hovertemplate=f"{name}<br>query %{{customdata[0]}}<br>key %{{customdata[1]}}"
                "<br>%{z:.4f}<extra></extra>",
            ),
            row=1,
            col=index + 1,
        )
    step = max(1, math.ceil(length / 8))
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(0, length, step)),
        tickfont={"size": TOKEN_FONT_PX},
        showgrid=False,
        zeroline=False,
        constrain="domain",
        title={"text": "key position", "font": {"size": 12}},
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(0, length, step)),
        tickfont={"size": TOKEN_FONT_PX},
        showgrid=False,
        zeroline=False,
        autorange="reversed",
        constrain="domain",
    )
    fig.update_yaxes(title={"text": "query position", "font": {"size": 12}}, row=1, col=1)
    for index in range(4):
        fig.update_yaxes(scaleanchor=f"x{index + 1 if index else ''}", row=1, col=index + 1)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.0, "xanchor": "left"},
        coloraxis={
            "colorscale": PARTS_SCALE,
            "cmin": -reach,
            "cmax": reach,
            "colorbar": {"title": {"text": "score", "side": "right"}, "thickness": 12},
        },
        plot_bgcolor=MASKED_COLOR,
        height=380,
        margin={"l": 60, "r": 10, "t": 90, "b": 50},
        uirevision=UIREVISION,
        meta={"causal": bool(causal)},
    )
    return fig


SHARE_ROWS = (
    ("weights (d = 0)", "weight"),
    ("within-row spread", "spread"),
    ("mean square", "share"),
)
"""The bars of :func:`shares_figure`, bottom to top: their labels and column prefixes."""


def shares_figure(row: pd.Series, title: str) -> go.Figure:
    """A head's shares as three stacked bars: of the mean square and of the within-row spread
    of its scores on the text, and of its form's weights at d = 0; each sums to 1. The rest's
    size relative to the whole score is in the title."""
    missing = [f"{kind}_{p}" for _, kind in SHARE_ROWS for p in PART_COLORS]
    missing = [name for name in missing if name not in row.index]
    if missing:
        raise FigureInputError("the row lacks " + ", ".join(missing))
    rows = SHARE_ROWS
    fig = go.Figure()
    for part, color in PART_COLORS.items():
        values = [float(row[f"{kind}_{part}"]) for _, kind in rows]
        fig.add_trace(
            go.Bar(
                x=values,
                y=[label for label, _ in rows],
                orientation="h",
                name=SHARE_NAMES[part],
                marker={"color": color},
                text=[f"{v:.2f}" if v >= 0.09 else "" for v in values],
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                textfont={"color": "white", "size": 12},
                hovertemplate=f"{SHARE_NAMES[part]}: %{{x:.3f}} of the %{{y}}<extra></extra>",
            )
        )
    rest = float(row.get("rest_share", np.nan))
    rest_text = (
        f"the rest: {rest:.3f} of the whole score's mean square" if np.isfinite(rest) else ""
    )
    fig.update_layout(
        template=TEMPLATE,
        barmode="stack",
        title={"text": f"{title}<br><sup>{rest_text}</sup>", "x": 0.0, "xanchor": "left"},
        xaxis={"range": [0, 1], "title": "share", "dtick": 0.25},
        yaxis={"title": None},
        legend={"orientation": "h", "y": -0.3, "x": 0.0, "yanchor": "top", "entrywidth": 140},
        height=320,
        margin={"l": 130, "r": 20, "t": 70, "b": 80},
        uirevision=UIREVISION,
    )
    return fig


def spectrum_figure(
    spectrum: np.ndarray,
    directions: pd.DataFrame,
    chosen: tuple[str, int] | None = None,
    title: str = "Eigenvalues of S at d = 0",
) -> go.Figure:
    """The eigenvalues of S that can be non-zero (``spectrum``), scaled by ``||S||``, as a
    histogram (positive lobe red, negative blue); below it one clickable marker per top
    direction (``directions``: columns ``lobe``, ``rank``, ``eigenvalue``), ``customdata =
    [lobe, rank]``; ``chosen`` ``(lobe, rank)`` ringed."""
    values = np.asarray(spectrum, dtype=float)
    norm = float(np.linalg.norm(values)) or 1.0
    scaled = values / norm
    fig = go.Figure()
    edges = np.linspace(scaled.min(initial=0.0), scaled.max(initial=0.0), 41)
    counts, edges = np.histogram(scaled, bins=edges if np.ptp(edges) > 0 else 10)
    centers = (edges[:-1] + edges[1:]) / 2
    fig.add_trace(
        go.Bar(
            x=centers,
            y=counts,
            width=np.diff(edges),
            marker={"color": np.where(centers >= 0, POSITIVE_COLOR, NEGATIVE_COLOR)},
            opacity=0.45,
            name="eigenvalues",
            showlegend=False,
            hovertemplate="λ/‖S‖ ≈ %{x:.3f}: %{y} eigenvalue(s)<extra></extra>",
        )
    )
    top = float(counts.max(initial=1))
    row_height = 0.07 * top

    def marker_y(ranks: np.ndarray) -> np.ndarray:
        """Rank 1 just below the bars, each next rank one row lower: markers close in value
        stay apart."""
        return -(ranks + 0.5) * row_height

    for lobe, color, sign in (("positive", POSITIVE_COLOR, "₊"), ("negative", NEGATIVE_COLOR, "₋")):
        part = directions[directions["lobe"] == lobe]
        if part.empty:
            continue
        ranks = part["rank"].to_numpy(int)
        x = part["eigenvalue"].to_numpy(float) / norm
        labels = [f"λ{sign}{r}: λ/‖S‖ = {v:.3f}" for r, v in zip(ranks, x, strict=True)]
        data = np.empty((len(part), 2), dtype=object)
        data[:, 0] = lobe
        data[:, 1] = ranks.tolist()
        fig.add_trace(
            go.Scatter(
                x=x,
                y=marker_y(ranks),
                mode="markers+text",
                text=[f"{sign}{r}" for r in ranks],
                textposition="middle right" if lobe == "positive" else "middle left",
                textfont={"size": 11, "color": color},
                marker={"size": 11, "color": color, "symbol": "diamond"},
                customdata=data,
                name=f"top directions, {lobe} lobe",
                hovertext=labels,
                hovertemplate="%{hovertext}: click for its readout<extra></extra>",
                meta={"role": "directions", "choices": labels},
            )
        )
    deepest = float(directions["rank"].max()) if len(directions) else 1.0
    if chosen is not None:
        found = directions[(directions["lobe"] == chosen[0]) & (directions["rank"] == chosen[1])]
        if len(found):
            fig.add_trace(
                go.Scatter(
                    x=[float(found["eigenvalue"].iloc[0]) / norm],
                    y=marker_y(np.array([chosen[1]])),
                    mode="markers",
                    marker={
                        "size": 22,
                        "symbol": "circle-open",
                        "color": SELECTED_COLOR,
                        "line": {"width": 2.5, "color": SELECTED_COLOR},
                    },
                    hoverinfo="skip",
                    showlegend=False,
                    name="chosen",
                    meta={"role": "selected"},
                )
            )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.0, "xanchor": "left"},
        xaxis={"title": "λ / ‖S‖", "zeroline": True},
        yaxis={
            "title": "count",
            "range": [-(deepest + 1.2) * row_height, 1.08 * top],
            "tickmode": "array",
            "tickvals": _count_ticks(top),
        },
        showlegend=False,
        height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        uirevision=UIREVISION,
    )
    return fig


def _count_ticks(top: float) -> list[int]:
    """Ticks of the histogram's counts (none below 0, where the direction markers are)."""
    step = max(1, int(10 ** math.floor(math.log10(max(top, 1.0)))))
    if top / step < 3:
        step = max(1, step // 2)
    return list(range(0, int(top) + 1, step))


def _check_table(table: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = {"layer", "head", "parity", *columns} - set(table.columns)
    if missing:
        raise FigureInputError("the table lacks " + ", ".join(sorted(missing)))


def share_heatmap_figure(
    table: pd.DataFrame, column: str, model_name: str, selected: Selected = None
) -> go.Figure:
    """``column`` (a realised share, e.g. ``share_anti``) of every head as a layer x head grid
    beside the weights' share of the same part (``weight_anti``), one diverging scale white at
    1/2, clickable cells (:func:`.heatmaps.heatmap_panels_figure`)."""
    if column not in SHARE_COLUMN_TITLES or column.startswith("weight_"):
        raise FigureInputError(
            f"unknown realised share {column!r}; accepted: "
            + ", ".join(c for c in SHARE_COLUMN_TITLES if not c.startswith("weight_"))
        )
    weight = "weight_" + column.split("_", 1)[1]
    _check_table(table, (column, weight))
    panels = [
        HeatmapPanel("text", "on the text", model_name, table, table[column].to_numpy(float)),
        HeatmapPanel(
            "weights", "weights (d = 0)", model_name, table, table[weight].to_numpy(float)
        ),
    ]
    title = f"{SHARE_COLUMN_TITLES[column]}: {model_name}"
    return heatmap_panels_figure(panels, column, title, selected)


TRIANGLE = {"pos": (0.0, 0.0), "neg": (1.0, 0.0), "anti": (0.5, math.sqrt(3) / 2)}
"""Where each part's vertex is drawn: a share of 1 of that part."""


def triangle_points(shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of rows of shares ``(pos, neg, anti)`` on the triangle (barycentric)."""
    corners = np.array([TRIANGLE[p] for p in ("pos", "neg", "anti")])
    points = np.asarray(shares, dtype=float) @ corners
    return points[:, 0], points[:, 1]


def shares_triangle_figure(
    table: pd.DataFrame, model_name: str, kind: str = "share", selected: Selected = None
) -> go.Figure:
    """Every head twice on the triangle of the three shares (positive lobe, negative lobe,
    antisymmetric part): where its scores on the text put it (``kind``: ``share``, of the mean
    square, or ``spread``, of the within-row spread; its parity's marker) and where its weights
    do (d = 0; a grey dot), a grey line joining the two. Both markers open the head."""
    if kind not in SHARE_KINDS:
        raise FigureInputError(f"unknown share {kind!r}; accepted: " + ", ".join(SHARE_KINDS))
    realised_columns = [f"{kind}_{p}" for p in ("pos", "neg", "anti")]
    weight_columns = [f"weight_{p}" for p in ("pos", "neg", "anti")]
    _check_table(table, (*realised_columns, *weight_columns))
    finite = np.isfinite(table[realised_columns + weight_columns].to_numpy(float)).all(axis=1)
    heads = table[finite].reset_index(drop=True)
    rx, ry = triangle_points(heads[realised_columns].to_numpy(float))
    wx, wy = triangle_points(heads[weight_columns].to_numpy(float))
    fig = go.Figure()
    corners = [TRIANGLE[p] for p in ("pos", "neg", "anti", "pos")]
    fig.add_trace(
        go.Scatter(
            x=[c[0] for c in corners],
            y=[c[1] for c in corners],
            mode="lines",
            line={"color": "#444444", "width": 1.5},
            hoverinfo="skip",
            showlegend=False,
            meta={"role": "edges"},
        )
    )
    gaps_x = np.column_stack([rx, wx, np.full(len(rx), np.nan)]).ravel()
    gaps_y = np.column_stack([ry, wy, np.full(len(ry), np.nan)]).ravel()
    fig.add_trace(
        go.Scatter(
            x=gaps_x,
            y=gaps_y,
            mode="lines",
            line={"color": "#c8c8c8", "width": 0.8},
            hoverinfo="skip",
            name="text ↔ weights",
            meta={"role": "band"},
        )
    )
    data = head_customdata(heads, model_name)
    names = [
        head_name(layer, head) for layer, head in zip(heads["layer"], heads["head"], strict=True)
    ]
    fig.add_trace(
        go.Scatter(
            x=wx,
            y=wy,
            mode="markers",
            marker={"size": 6, "color": BASELINE_COLOR, "opacity": 0.7},
            customdata=data,
            text=names,
            name="weights (d = 0)",
            hovertemplate="%{text}: weights<extra></extra>",
            meta={
                "role": "heads",
                "model": model_name,
                "choices": [f"{n} · weights" for n in names],
            },
        )
    )
    columns = realised_columns
    for parity, name in PARITY_NAMES.items():
        rows = (heads["parity"] == parity).to_numpy()
        if not rows.any():
            continue
        part = heads[rows]
        hover = [
            f"{names[i]} ({parity}) on the text<br>"
            + "<br>".join(f"{SHARE_NAMES[c.split('_')[1]]} {heads[c].iloc[i]:.3f}" for c in columns)
            + "<br>weights: "
            + ", ".join(f"{heads[c].iloc[i]:.3f}" for c in weight_columns)
            for i in np.nonzero(rows)[0]
        ]
        fig.add_trace(
            go.Scatter(
                x=rx[rows],
                y=ry[rows],
                mode="markers",
                marker={
                    "symbol": PARITY_SYMBOLS[parity],
                    "size": MARKER_SIZE_2D,
                    "color": PARITY_COLORS[parity],
                    "line": {"width": PARITY_LINE_WIDTH},
                },
                customdata=head_customdata(part, model_name),
                hovertext=hover,
                name=f"{name}: on the text",
                hovertemplate="%{hovertext}<extra></extra>",
                meta={
                    "role": "heads",
                    "model": model_name,
                    "parity": parity,
                    "choices": head_choices(part, columns),
                },
            )
        )
    found = selected_row({model_name: heads}, selected, columns)
    if found is not None:
        row, _ = found
        x, y = triangle_points(row[columns].to_numpy(float))
        fig.add_trace(
            selected_marker(
                row, model_name, {"x": x, "y": y}, textposition=label_position(x[0], y[0] / 0.87)
            )
        )
    anchors = {"pos": "left", "neg": "right", "anti": "center"}
    for part, (x, y) in TRIANGLE.items():
        fig.add_annotation(
            x=x,
            y=y,
            text=f"{SHARE_NAMES[part]} = 1",
            showarrow=False,
            xanchor=anchors[part],
            yshift=14 if part == "anti" else -16,
            font={"size": 12, "color": PART_COLORS[part]},
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Shares on the text ({SHARE_KINDS[kind]}) and in the weights: {model_name}",
            "x": 0.0,
            "xanchor": "left",
        },
        xaxis={"visible": False, "range": [-0.08, 1.08]},
        yaxis={"visible": False, "range": [-0.1, 0.95], "scaleanchor": "x"},
        legend={"orientation": "h", "y": -0.02, "x": 0.0},
        height=560,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
        uirevision=UIREVISION,
    )
    return fig
