"""What heads do: attention patterns (token x token), a layer's heads side by side, and every
head's geometry against its head-type score.

Builders take arrays and frames (a pattern from :mod:`headforms.behaviour`, the frame of
:func:`headforms.analyses.behaviour.behaviour_frame`) and return figures; head markers carry
``customdata = [model, layer, head]`` like every clickable head in headforms.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analyses.behaviour import (
    BEHAVIOUR_COLUMNS,
    CORRELATION_COLUMNS,
    GEOMETRY_COLUMNS,
    Correlation,
)
from .style import (
    CONTINUOUS_SCALE,
    MARKER_SIZE_2D,
    PARITY_COLORS,
    PARITY_LINE_WIDTH,
    PARITY_NAMES,
    PARITY_SYMBOLS,
    TEMPLATE,
    THETA_COLOR,
    UIREVISION,
    FigureInputError,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    selected_marker,
    selected_row,
)

WEIGHTS_SCALE: list[list] = [
    [0.0, "#ffffff"],
    [0.15, "#c6dbef"],
    [0.5, "#4292c6"],
    [1.0, "#08306b"],
]
"""White at weight 0 to dark blue at 1: every non-zero weight visible."""
MASKED_COLOR = "#e3e3e3"
"""Background of cells a query cannot see (the causal triangle)."""
KINDS = {"weights": "attention weight", "scores": "pre-softmax score"}
SHORT_SCORES = {
    "previous_token": "previous token",
    "first_token": "first token",
    "duplicate_token": "duplicate token",
    "induction": "induction",
}
"""Head-type scores by column: short labels (a quarter of the page at 1280 px)."""


def token_label(text: str) -> str:
    """A token's text as an axis label: whitespace made visible, never empty."""
    shown = text.replace("\n", "↵").replace("\t", "⇥").replace("\r", "⏎")
    if not shown.strip():
        return "␣" * len(shown) if shown else "∅"
    return shown


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise FigureInputError(f"unknown pattern kind {kind!r}; accepted: weights, scores")


def _masked(matrix: np.ndarray, kind: str, causal: bool | None) -> np.ndarray:
    """A causal pattern's weights with the keys above the diagonal (which no query sees) as
    NaN, drawn as masked like the NaN of the pre-softmax scores. ``causal``: the model's own
    (None: read from the matrix, causal when nothing above the diagonal has weight)."""
    values = np.asarray(matrix, dtype=float)
    if causal is None:
        causal = bool(np.all(np.triu(values, 1) == 0))
    if kind == "weights" and causal:
        return np.where(np.triu(np.ones_like(values, bool), 1), np.nan, values)
    return values


def _scale(kind: str, values: np.ndarray) -> tuple[list, float, float]:
    """``(colorscale, low, high)``: weights on a fixed 0-1 scale, scores on their own range."""
    if kind == "weights":
        return WEIGHTS_SCALE, 0.0, 1.0
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return CONTINUOUS_SCALE, low, high


TOKEN_FONT_PX = 11
"""Font size of the token labels: the smallest text the dashboard draws."""

MAX_TOKEN_LABELS = 40
"""At most this many token labels per axis (every k-th token beyond): at the tallest heatmap each
label has a row of about 15 px, so 11 px labels never overlap."""


def tick_labels(tokens: Sequence[str]) -> list[str]:
    return [f"{token_label(t)} ·{i}" for i, t in enumerate(tokens)]


TOKEN_CHAR_PX = (6.5, 12.0)
"""Widths (px) of a token label's characters at :data:`TOKEN_FONT_PX`, generously (an average
narrow one measures about 5 px in chromium): a narrow one, a wide one (East Asian wide or
full-width, emoji)."""
AXIS_TITLE_PX = 34
"""Room for an axis title beside its tick labels."""


def label_width(text: str) -> float:
    """The width (px) ``text`` takes as a token label, generously (:data:`TOKEN_CHAR_PX`), so
    that margins made from it hold the label."""
    narrow, wide = TOKEN_CHAR_PX
    return sum(wide if unicodedata.east_asian_width(c) in "WF" else narrow for c in text)


def _token_margins(labels: Sequence[str]) -> dict[str, int]:
    """Margins that hold the token labels and axis titles: the left one the widest label, the
    bottom one the widest label turned by 60 degrees. Fixed rather than plotly.js's automargin,
    which draws the figure again until its margins settle (several times slower to draw)."""
    widest = max((label_width(label) for label in labels), default=0.0)
    turned = widest * math.sin(math.radians(60)) + TOKEN_FONT_PX * math.cos(math.radians(60))
    return {"l": math.ceil(widest) + AXIS_TITLE_PX, "b": math.ceil(turned) + AXIS_TITLE_PX}


def attention_figure(
    tokens: Sequence[str],
    matrix: np.ndarray,
    title: str,
    kind: str = "weights",
    causal: bool | None = None,
) -> go.Figure:
    """One head's (T, T) matrix as a heatmap: query positions down, key positions across, each
    labelled with its token; hover gives both tokens and the value. Weights on a fixed 0-1 scale;
    pre-softmax scores on their own range; cells a query cannot see (NaN scores, or the zero
    weights above the diagonal of a causal pattern) are grey. ``causal``: whether the model
    masks later keys (None: read from the matrix)."""
    _check_kind(kind)
    length = len(tokens)
    if np.shape(matrix) != (length, length):
        raise FigureInputError(f"a {np.shape(matrix)} matrix for {length} tokens")
    values = _masked(matrix, kind, causal)
    labels = tick_labels(tokens)
    hover = np.empty((length, length, 2), dtype=object)
    hover[:, :, 0] = np.array(labels, dtype=object)[:, None]
    hover[:, :, 1] = np.array(labels, dtype=object)[None, :]
    scale, low, high = _scale(kind, values)
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=list(range(length)),
            y=list(range(length)),
            customdata=hover,
            colorscale=scale,
            zmin=low,
            zmax=high,
            colorbar={"title": {"text": KINDS[kind], "side": "right"}, "thickness": 12, "len": 0.8},
            hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>"
            + KINDS[kind]
            + " %{z:.4f}<extra></extra>",
            hoverongaps=False,
            name=title,
        )
    )
    step = max(1, math.ceil(length / MAX_TOKEN_LABELS))
    ticks = {
        "tickmode": "array",
        "tickvals": list(range(0, length, step)),
        "ticktext": labels[::step],
        "tickfont": {"size": TOKEN_FONT_PX},
        "showgrid": False,
        "zeroline": False,
        "automargin": False,  # margins from the labels (_token_margins): drawn in one pass
    }
    size = min(760, max(440, 12 * length + 200))
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title, "x": 0.0, "xanchor": "left"},
        xaxis={
            **ticks,
            "title": "key token",
            "side": "bottom",
            "tickangle": -60,
            "constrain": "domain",
        },
        yaxis={
            **ticks,
            "title": "query token",
            "autorange": "reversed",
            "scaleanchor": "x",
            "constrain": "domain",
        },
        plot_bgcolor=MASKED_COLOR,
        height=size,
        margin={"r": 10, "t": 60, **_token_margins(labels[::step])},
        uirevision=UIREVISION,
    )
    return fig


def layer_attention_figure(
    matrices: np.ndarray, layer: int, kind: str = "weights", causal: bool | None = None
) -> go.Figure:
    """Every head of one layer as a small heatmap (titled ``L·H``) on one shared scale; hover
    gives the query and key positions (the large heatmap names their tokens); ``causal`` as
    for :func:`attention_figure`."""
    _check_kind(kind)
    heads = len(matrices)
    cols = min(heads, 6)
    rows = math.ceil(heads / cols)
    titles = [head_name(layer, h) for h in range(heads)]
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        horizontal_spacing=0.02,
        vertical_spacing=0.06 if rows > 1 else 0.0,
    )
    scale, low, high = _scale(kind, np.asarray(matrices, dtype=float))
    for h in range(heads):
        row, col = divmod(h, cols)
        fig.add_trace(
            go.Heatmap(
                z=_masked(matrices[h], kind, causal),
                coloraxis="coloraxis",
                hoverongaps=False,
                name=titles[h],
                hovertemplate=f"{titles[h]}<br>query %{{y}} → key %{{x}}<br>{KINDS[kind]} "
                "%{z:.4f}<extra></extra>",
            ),
            row=row + 1,
            col=col + 1,
        )
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(
        showticklabels=False,
        showgrid=False,
        zeroline=False,
        autorange="reversed",
        constrain="domain",
    )
    for h in range(heads):
        fig.update_yaxes(scaleanchor=f"x{h + 1 if h else ''}", row=h // cols + 1, col=h % cols + 1)
    fig.update_layout(
        template=TEMPLATE,
        coloraxis={
            "colorscale": scale,
            "cmin": low,
            "cmax": high,
            "colorbar": {"title": {"text": KINDS[kind], "side": "right"}, "thickness": 12},
        },
        plot_bgcolor=MASKED_COLOR,
        height=int(190 * rows + 90),
        margin={"l": 10, "r": 10, "t": 70, "b": 10},  # subplot titles below the toolbar
        uirevision=UIREVISION,
    )
    return fig


def parity_jitter(frame: pd.DataFrame) -> np.ndarray:
    """A deterministic spread of ±0.18 per head, so heads of one parity do not overlap."""
    key = (
        frame["layer"].to_numpy().astype(int) * 7919 + frame["head"].to_numpy().astype(int) * 104729
    )
    return ((key % 37) / 36.0 - 0.5) * 0.36


def _check_columns(frame: pd.DataFrame, geometry: str, score: str) -> None:
    if geometry not in GEOMETRY_COLUMNS:
        raise FigureInputError(
            f"unknown geometric column {geometry!r}; accepted: " + ", ".join(GEOMETRY_COLUMNS)
        )
    if score not in BEHAVIOUR_COLUMNS:
        raise FigureInputError(
            f"unknown behaviour score {score!r}; accepted: " + ", ".join(BEHAVIOUR_COLUMNS)
        )
    missing = {"layer", "head", "parity", geometry, score} - set(frame.columns)
    if missing:
        raise FigureInputError("the frame lacks " + ", ".join(sorted(missing)))


def parity_traces(
    frame: pd.DataFrame, x: np.ndarray, y: np.ndarray, model: str, columns: list[str]
) -> list[go.Scatter]:
    """One clickable trace of head markers per parity type, in the parity colours."""
    traces = []
    for parity, name in PARITY_NAMES.items():
        rows = (frame["parity"] == parity).to_numpy() & np.isfinite(x) & np.isfinite(y)
        if not rows.any():
            continue
        part = frame[rows]
        marker = {
            "symbol": PARITY_SYMBOLS[parity],
            "size": MARKER_SIZE_2D,
            "color": PARITY_COLORS[parity],
            "line": {"width": PARITY_LINE_WIDTH},  # open and line symbols: the marker colour
        }
        traces.append(
            go.Scatter(
                x=x[rows],
                y=y[rows],
                mode="markers",
                marker=marker,
                name=name,
                customdata=head_customdata(part, model),
                text=[
                    head_name(lay, h) for lay, h in zip(part["layer"], part["head"], strict=True)
                ],
                hovertemplate="%{text}<br>x %{x:.3f}<br>y %{y:.3f}<extra>" + name + "</extra>",
                meta={
                    "role": "heads",
                    "model": model,
                    "parity": parity,
                    "choices": head_choices(part, columns),
                },
            )
        )
    return traces


def against_geometry(
    frame: pd.DataFrame, geometry: str, column: str, model: str, selected: Selected = None
) -> tuple[go.Figure, dict]:
    """Every head as a point, ``geometry`` across and ``column`` up, marker and colour by parity
    (parity drawn as three columns with a fixed spread within each), the selected head ringed;
    with the x axis' settings (parity's three named ticks). The builders of a score or an
    edit's cost against the geometry add their titles."""
    x = frame[geometry].to_numpy(dtype=float)
    if geometry == "parity_rank":
        x = x + parity_jitter(frame)
    y = frame[column].to_numpy(dtype=float)
    fig = go.Figure(parity_traces(frame, x, y, model, [geometry, column]))
    found = selected_row({model: frame}, selected, [geometry, column])
    if fig.data and found is not None:
        row, name = found
        index = int(np.flatnonzero(frame.index == row.index[0])[0])
        fig.add_trace(selected_marker(row, name, {"x": x[[index]], "y": y[[index]]}))
    xaxis: dict = {"title": CORRELATION_COLUMNS[geometry], "zeroline": False}
    if geometry == "parity_rank":
        xaxis.update(
            tickmode="array",
            tickvals=[-1, 0, 1],
            ticktext=[PARITY_NAMES["I-"], PARITY_NAMES["II"], PARITY_NAMES["I+"]],
            range=[-1.5, 1.5],
        )
    return fig, xaxis


def geometry_behaviour_figure(
    frame: pd.DataFrame,
    geometry: str,
    score: str,
    model: str,
    correlation: Correlation,
    selected: Selected = None,
) -> go.Figure:
    """Every head as a point: a geometric column across, a head-type score up, marker and colour
    by parity; the title gives Spearman's rho and its bootstrap interval. Parity is drawn as three
    columns with a fixed spread of the heads within each."""
    _check_columns(frame, geometry, score)
    fig, xaxis = against_geometry(frame, geometry, score, model, selected)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{BEHAVIOUR_COLUMNS[score]} against {GEOMETRY_COLUMNS[geometry]}"
            f"<br><sup>Spearman {correlation.text()} (95% bootstrap interval)</sup>",
            "x": 0.0,
            "xanchor": "left",
        },
        xaxis=xaxis,
        yaxis={"title": BEHAVIOUR_COLUMNS[score], "zeroline": False},
        legend={"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        height=520,
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
        uirevision=UIREVISION,
    )
    return fig


def simplex_plane_figure(
    frame: pd.DataFrame, score: str, model: str, selected: Selected = None
) -> go.Figure:
    """Where heads of high and low score sit: every head at (c − d, a) (the simplex seen with the
    symmetric bias across and the antisymmetric share up), coloured by ``score`` and drawn in
    increasing order of it (the highest on top), marker by parity, with Theta's two branches in
    red. The axes cover the heads (and Theta's apex) with a margin."""
    _check_columns(frame, "c_minus_d", score)
    values = frame[score].to_numpy(dtype=float)
    shown = frame[np.isfinite(values)].iloc[np.argsort(values[np.isfinite(values)], kind="stable")]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[1.0, 0.0, -1.0],
            y=[0.0, 0.5, 0.0],
            mode="lines",
            line={"color": THETA_COLOR, "width": 1.5},
            name="Θ (a = b, c·d = 0)",
            hoverinfo="skip",
            meta={"role": "theta"},
        )
    )
    for parity, name in PARITY_NAMES.items():  # legend entries for the marker shapes
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                marker={
                    "symbol": PARITY_SYMBOLS[parity],
                    "color": "#555555",
                    "size": MARKER_SIZE_2D,
                    "line": {"width": PARITY_LINE_WIDTH},
                },
                name=name,
                hoverinfo="skip",
                meta={"role": "hint"},  # decorative: no data to export
            )
        )
    symbols = [PARITY_SYMBOLS.get(p, "circle-open") for p in shown["parity"]]
    fig.add_trace(
        go.Scatter(
            x=shown["c_minus_d"],
            y=shown["a"],
            mode="markers",
            marker={
                "symbol": symbols,
                "size": MARKER_SIZE_2D,
                "color": shown[score],
                "coloraxis": "coloraxis",
                "line": {"width": PARITY_LINE_WIDTH},  # the stroke takes the score's colour
            },
            name="heads",
            showlegend=False,
            customdata=head_customdata(shown, model),
            text=[head_name(lay, h) for lay, h in zip(shown["layer"], shown["head"], strict=True)],
            hovertemplate="%{text}<br>c − d %{x:.3f}<br>a %{y:.3f}<br>"
            + BEHAVIOUR_COLUMNS[score]
            + " %{marker.color:.3f}<extra></extra>",
            meta={
                "role": "heads",
                "model": model,
                "choices": head_choices(shown, ["c_minus_d", "a", score]),
            },
        )
    )
    found = selected_row({model: frame}, selected, ["c_minus_d", "a"])
    if found is not None:
        row, name = found
        fig.add_trace(
            selected_marker(row, name, {"x": row["c_minus_d"].to_numpy(), "y": row["a"].to_numpy()})
        )
    finite = values[np.isfinite(values)]
    x = np.append(shown["c_minus_d"].to_numpy(dtype=float), 0.0)
    y = np.append(shown["a"].to_numpy(dtype=float), 0.5)
    pad_x, pad_y = max(0.05, 0.06 * np.ptp(x)), max(0.03, 0.06 * np.ptp(y))
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Heads on the simplex, coloured by {BEHAVIOUR_COLUMNS[score]}",
            "x": 0.0,
            "xanchor": "left",
        },
        xaxis={
            "title": "c − d (← towards NSD, towards PSD →)",
            "range": [max(-1.05, x.min() - pad_x), min(1.05, x.max() + pad_x)],
        },
        yaxis={
            "title": "a (antisymmetric share)",
            "range": [max(-0.03, y.min() - pad_y), min(1.03, y.max() + pad_y)],
        },
        coloraxis={
            "colorscale": CONTINUOUS_SCALE,
            "cmin": float(finite.min()) if finite.size else 0.0,
            "cmax": float(finite.max()) if finite.size else 1.0,
            "colorbar": {"title": {"text": BEHAVIOUR_COLUMNS[score], "side": "right"}},
        },
        legend={"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"},
        height=520,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        uirevision=UIREVISION,
    )
    return fig
