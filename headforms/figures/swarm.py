"""Every head by parity type, each marker apart: a swarm of the heads on the quantity that decides
their type (the share of S's energy its lobes leave unpaired, ``c_S + d_S``, on a log scale).

On the simplex a trained model's heads crowd: SmolLM2's 113 Type II heads (42 %) fall within a
few pixels at Θ's midpoint, and a fifth of its heads lie within 0.001 of another head's profile,
so no view of the tetrahedron (nor a magnified inset of it) draws them apart. This figure does:
a head's height is its ``c_S + d_S`` (log scale), the paper's Type II threshold a dashed line
(Type II below, ``c_S + d_S <= 1/50``; above it Type I− on the left, ``d_S >= c_S``, and Type I+
on the right); across, each head is placed as near its group's centre line as it can be
without coming closer than :data:`SPACING_PX` to another (a beeswarm: across carries no value).
So every head can be clicked alone, and a group's spread up the axis is what tells its heads
apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..forms import PARITY_LABELS, PARITY_TYPE_II_TEXT, PARITY_TYPE_II_THRESHOLD
from ..sources.specs import short_name
from .head_markers import check_color_by, color_range, coloraxis, head_marker, hover_text
from .style import (
    PARITY_NAMES,
    TEMPLATE,
    UIREVISION,
    Selected,
    head_choices,
    head_customdata,
    head_name,
    selected_label,
    selected_marker,
    selected_row,
)

SPACING_PX = 10.0
"""Least distance (px) between two markers' centres, where the figure's width allows: more than
the dashboard's pick radius (6 px) plus a marker's half width, so a click at a marker's centre
finds it alone (no chooser)."""

MIN_SPACING_PX = 7.0
"""The least spacing a narrow figure shrinks to before its swarm runs wider than the plot."""

GROUP_GAP_PX = 18.0
"""Gap between the Type I− and the Type I+ swarms (above the threshold)."""

MARGIN = {"l": 64, "r": 12, "t": 84, "b": 12}
"""The figure's margins (px): the log axis's ticks and title on the left, the title's two lines
above (with the toolbar's band)."""

COLORBAR_MARGIN_PX = 70
"""The right margin when a colour bar stands there."""

COLUMN = "unpaired"
"""The drawn quantity's column in :func:`swarm_table`: ``c_S + d_S``."""

AXIS_TITLE = "c_S + d_S: S's unpaired share (log)"


def swarm_offsets(
    y_px: np.ndarray, spacing: float, centres: np.ndarray | float = 0.0
) -> np.ndarray:
    """Places across (px) for points at heights ``y_px`` so that no two are closer than
    ``spacing``: each point, from the lowest up, goes to the free place nearest its centre line
    (``centres``: one for all, or one per point), a beeswarm. Deterministic; ties in height keep
    the input order. Only the points less than ``spacing`` below are looked at."""
    y = np.asarray(y_px, dtype=float)
    centre = np.broadcast_to(np.asarray(centres, dtype=float), y.shape)
    x = centre.copy()
    order = np.argsort(y, kind="stable")
    placed: list[int] = []  # in order of height: the window is its last points
    start = 0
    for i in order:
        while start < len(placed) and y[placed[start]] <= y[i] - spacing:
            start += 1
        near = placed[start:]
        if near:
            dy = y[i] - y[near]
            half = np.sqrt(np.maximum(spacing**2 - dy**2, 0.0))
            low, high = x[near] - half, x[near] + half
            candidates = np.concatenate([[centre[i]], low, high])
            blocked = (candidates[:, None] > low[None, :] + 1e-9) & (
                candidates[:, None] < high[None, :] - 1e-9
            )
            free = candidates[~blocked.any(axis=1)]
            x[i] = free[np.argmin(np.abs(free - centre[i]))]
        placed.append(i)
    return x


def unpaired(heads: pd.DataFrame) -> np.ndarray:
    """``c_S + d_S`` of each head (NaN for a vanishing form)."""
    return heads["c_sym"].to_numpy(dtype=float) + heads["d_sym"].to_numpy(dtype=float)


def drawn_heads(heads: pd.DataFrame) -> pd.DataFrame:
    """The heads the swarm draws (a finite ``c_S + d_S`` and a parity type), renumbered."""
    keep = np.isfinite(unpaired(heads)) & heads["parity"].isin(PARITY_LABELS).to_numpy()
    return heads.loc[keep].reset_index(drop=True)


def _range(values: np.ndarray) -> tuple[float, float, float]:
    """The log axis's range (log10 low, log10 high) over the finite values, and the floor where
    a zero is drawn (half the least positive value)."""
    positive = values[np.isfinite(values) & (values > 0)]
    floor = float(positive.min()) / 2 if positive.size else PARITY_TYPE_II_THRESHOLD / 100
    low = np.log10(min(floor, PARITY_TYPE_II_THRESHOLD)) - 0.15
    high = np.log10(max(float(positive.max()) if positive.size else 1.0, 0.05)) + 0.12
    return float(low), float(high), floor


def swarm_table(
    heads: pd.DataFrame, height: int = 560, width: int = 340, colorbar: bool = False
) -> pd.DataFrame:
    """Where each head (of a finite profile and a parity type) is drawn: ``layer, head, parity,
    unpaired`` (``c_S + d_S``), ``shown`` (the value drawn: zero at the floor), ``x`` (px about
    the figure's middle) for a figure of ``height`` x ``width`` px, and the ``spacing`` used."""
    drawn = drawn_heads(heads)
    table = drawn[["layer", "head", "parity"]].copy()
    table[COLUMN] = unpaired(drawn)
    low, high, floor = _range(table[COLUMN].to_numpy())
    table["shown"] = np.maximum(table[COLUMN].to_numpy(), floor)
    plot_h = height - MARGIN["t"] - MARGIN["b"]
    plot_w = width - MARGIN["l"] - (COLORBAR_MARGIN_PX if colorbar else MARGIN["r"])
    y_px = (np.log10(table["shown"].to_numpy()) - low) / (high - low) * plot_h
    groups = {label: (table["parity"] == label).to_numpy() for label in PARITY_LABELS}

    def lay_out(spacing: float) -> tuple[np.ndarray, float]:
        half = {  # each group's half width, swarmed alone
            label: np.abs(swarm_offsets(y_px[mask], spacing)).max(initial=0.0) + spacing / 2
            for label, mask in groups.items()
        }
        # above the line: I− left, I+ right, side by side; below it: II about the middle; then
        # all at once, each about its group's line, so that none comes near another group's
        above = 2 * half["I-"] + GROUP_GAP_PX + 2 * half["I+"]
        centres = np.zeros(len(table))
        centres[groups["I-"]] = -above / 2 + half["I-"]
        centres[groups["I+"]] = above / 2 - half["I+"]
        x = swarm_offsets(y_px, spacing, centres)
        return x, 2 * float(np.abs(x).max(initial=0.0)) + spacing

    spacing = SPACING_PX
    x, needed = lay_out(spacing)
    while needed > plot_w and spacing > MIN_SPACING_PX:
        spacing = max(MIN_SPACING_PX, spacing - 0.5)
        x, needed = lay_out(spacing)
    table["x"] = x
    table["spacing"] = spacing
    table.attrs.update(low=low, high=high, width_px=max(needed, plot_w))
    return table


def swarm_figure(
    heads: pd.DataFrame,
    model: str,
    color_by: str = "parity",
    selected: Selected = None,
    height: int = 560,
    width: int = 340,
) -> go.Figure:
    """Every head of ``heads`` (one model's per-head table, with any colour column) as a marker
    of its parity type's symbol, at its ``c_S + d_S`` (module doc), coloured by ``color_by`` as
    on the simplex; ``selected`` ringed and named. Laid out for a plot of ``height`` x ``width``
    px (a wider one spreads the markers more, a narrower one brings them closer)."""
    check_color_by(color_by, heads)
    continuous = color_by not in ("parity", "model")
    table = swarm_table(heads, height, width, colorbar=continuous)
    rows = drawn_heads(heads)  # the table's rows, in its order
    fig = go.Figure()
    half = table.attrs["width_px"] / 2
    fig.add_shape(
        type="line",
        x0=-half,
        x1=half,
        y0=PARITY_TYPE_II_THRESHOLD,
        y1=PARITY_TYPE_II_THRESHOLD,
        line={"color": "#666666", "width": 1.5, "dash": "dash"},
        layer="below",
    )
    for label in PARITY_LABELS:
        mask = (table["parity"] == label).to_numpy()
        if not mask.any():
            continue
        part = rows[mask]
        hover = [
            f"{text}<br>c_S + d_S = {value:.4g}"
            for text, value in zip(
                hover_text(part, model, ("a", "b", "c", "d")),
                table.loc[mask, COLUMN],
                strict=True,
            )
        ]
        fig.add_trace(
            go.Scatter(
                x=table.loc[mask, "x"],
                y=table.loc[mask, "shown"],
                mode="markers",
                marker=head_marker(part, label, color_by, 0, three_d=False),
                name=PARITY_NAMES[label],
                customdata=head_customdata(part, model),
                text=hover,
                hovertemplate="%{text}<extra></extra>",
                meta={
                    "role": "heads",
                    "model": model,
                    "parity": label,
                    "choices": head_choices(part, ("b_sym", "c_sym", "d_sym")),
                },
            )
        )
    fig.add_traces(_selected(table, rows, model, selected))
    for ring in fig.data[-1:]:
        if (ring.meta or {}).get("role") == "selected":  # its name beside it, toward the middle
            x, y = float(ring.x[0]), float(ring.y[0])
            name = head_name(*_head(rows[(table["x"] == x).to_numpy()]))
            fig.add_annotation(
                selected_label(x, np.log10(y), name, -36 if x > 0 else 36, -26, xref="x", yref="y")
            )
    labels = [  # short: a narrow plot (beside a colour bar) holds both above the line
        (-half, "left", "Type I−", 1.0, "top"),
        (half, "right", "Type I+", 1.0, "top"),
        (-half, "left", f"Type II: c_S + d_S ≤ {PARITY_TYPE_II_TEXT}", None, "top"),
    ]
    for x, anchor, text, y, yanchor in labels:
        fig.add_annotation(
            x=x,
            y=1.0 if y is not None else np.log10(PARITY_TYPE_II_THRESHOLD),
            yref="paper" if y is not None else "y",
            xanchor=anchor,
            yanchor=yanchor,
            yshift=-2,
            text=text,
            showarrow=False,
            font={"size": 11, "color": "#444444"},
            bgcolor="rgba(255,255,255,0.85)",
            name="group",
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Every head by parity type<br><sup>{short_name(model)}</sup>"},
        uirevision=UIREVISION,
        height=height,
        margin={**MARGIN, "r": COLORBAR_MARGIN_PX if continuous else MARGIN["r"]},
        showlegend=False,
        xaxis={
            "range": [-half - 6, half + 6],
            "visible": False,
            "fixedrange": True,
        },
        yaxis={
            "type": "log",
            "range": [table.attrs["low"], table.attrs["high"]],
            "title": {"text": AXIS_TITLE},
            "dtick": 1,  # a tick per decade
            "fixedrange": True,
            "showgrid": True,
        },
        meta={"spacing": float(table["spacing"].iloc[0]) if len(table) else SPACING_PX},
    )
    if continuous and len(rows):
        fig.update_layout(
            coloraxis=coloraxis(color_by, *color_range(rows, color_by), y=0.5),
            coloraxis_colorbar={
                "orientation": "v",
                "x": 1.0,
                "xanchor": "left",
                "y": 0.5,
                "yanchor": "middle",
                "len": 0.6,
                "thickness": 12,
                "title": {"side": "right"},
            },
        )
    return fig


def _selected(
    table: pd.DataFrame, rows: pd.DataFrame, model: str, selected: Selected
) -> Sequence[go.BaseTraceType]:
    """The selected head's ring (and its name, an annotation added by the caller's layout)."""
    found = selected_row({model: rows}, selected, ("c_sym", "d_sym"))
    if found is None:
        return []
    row, _ = found
    index = row.index[0]
    x, y = float(table.loc[index, "x"]), float(table.loc[index, "shown"])
    ring = selected_marker(row, model, {"x": [x], "y": [y]})
    ring.update(mode="markers", hovertemplate=f"<b>{head_name(*_head(row))}</b> (selected)")
    ring.meta = {"role": "selected"}
    return [ring]


def _head(row: pd.DataFrame) -> tuple[int, int]:
    return int(row["layer"].iloc[0]), int(row["head"].iloc[0])
