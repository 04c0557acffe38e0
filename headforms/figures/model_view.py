"""Every head's attention on one prompt at a glance, as BertViz's model view shows it: a layer x
head grid of small heatmaps (one forward pass gives them all), the selected head outlined, each
thumbnail clickable.

Rows are layers, columns heads; a model of many layers and few heads is wrapped into side-by-side
blocks of consecutive layers (SmolLM2's 30 x 9 as two blocks of 15 layers), whichever number of
blocks draws the largest thumbnails within :data:`WIDTH_PX` x :data:`MAX_HEIGHT_PX`. The
thumbnails are one heatmap of small whole numbers (:func:`codes`: a gap, a masked key, or the
value in :data:`LEVELS` steps), so that the grid is a few hundred kB whatever the number of
heads; a long prompt is pooled to at most :data:`MAX_CELLS` cells a side (each cell the mean of
its block). Clicks go to one transparent square marker per thumbnail carrying its head (a
heatmap's cells report no head). The figure without a selection is built once per prompt;
:func:`outlined` adds the selected head's frame to it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..sources.specs import short_name
from .behaviour import KINDS, MASKED_COLOR, WEIGHTS_SCALE
from .style import (
    CONTINUOUS_SCALE,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    head_customdata,
)

MAX_CELLS = 28
"""Cells a side of a thumbnail at most (a longer prompt is pooled into blocks): about one per
pixel of the thumbnails drawn."""

WIDTH_PX = 760
"""The grid's width (px) it is laid out for (the Head page's at 1280 x 800)."""

MAX_HEIGHT_PX = 760
"""The grid's height (px) at most (short of the smallest thumbnails)."""

THUMB_PX = (20, 60)
"""Smallest and largest side of a thumbnail (px)."""

GAP_PX = 2
"""Between two thumbnails (px)."""

BLOCK_GAP_PX = 34
"""Between two blocks of layers (px): room for the second block's layer names."""

MAX_BLOCKS = 4

MARGIN = {"l": 52, "r": 90, "t": 64, "b": 40}

GAP_CODE, MASKED_CODE, FIRST_LEVEL = 0, 1, 2
LEVELS = 254
"""A value is drawn as one of these steps (codes 2-255) of its colour scale."""


def pooled(values: np.ndarray, cells: int = MAX_CELLS) -> np.ndarray:
    """``values`` (..., T, T; NaN where masked) as at most ``cells`` x ``cells`` block means over
    the last two axes (a block with no finite value stays NaN); unchanged when small enough."""
    values = np.asarray(values, dtype=float)
    size = values.shape[-1]
    if size <= cells:
        return values
    starts = np.linspace(0, size, cells + 1).round().astype(int)[:-1]
    finite = np.isfinite(values)

    def blocks(array: np.ndarray) -> np.ndarray:
        return np.add.reduceat(np.add.reduceat(array, starts, axis=-2), starts, axis=-1)

    sums, counts = blocks(np.where(finite, values, 0.0)), blocks(finite.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)


def masked(values: np.ndarray, kind: str, causal: bool | None) -> np.ndarray:
    """Every head's pattern with what no query sees as NaN: a causal model's weights above the
    diagonal (the pre-softmax scores carry their NaN already). ``causal`` None: read from the
    weights (causal when nothing above the diagonal has weight)."""
    values = np.asarray(values, dtype=float)
    above = np.triu(np.ones(values.shape[-2:], bool), 1)
    if causal is None:
        causal = bool(np.all(values[..., above] == 0))
    if kind == "weights" and causal:
        return np.where(above, np.nan, values)
    return values


def value_range(kind: str, values: np.ndarray) -> tuple[list, float, float]:
    """``(colour scale, low, high)``: weights on a fixed 0-1 scale, scores on their own range
    (as the head's own heatmap)."""
    if kind == "weights":
        return WEIGHTS_SCALE, 0.0, 1.0
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return CONTINUOUS_SCALE, low, (high if high > low else low + 1.0)


def codes(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """``values`` as whole numbers 2-255 (``LEVELS`` steps from ``low`` to ``high``), NaN as
    :data:`MASKED_CODE` (uint8)."""
    steps = np.clip((np.asarray(values, dtype=float) - low) / (high - low), 0.0, 1.0)
    levels = np.rint(np.nan_to_num(steps) * (LEVELS - 1)).astype(np.uint8) + FIRST_LEVEL
    return np.where(np.isfinite(values), levels, MASKED_CODE).astype(np.uint8)


def coded_scale(scale: list) -> list:
    """The colour scale of the codes (0-255): white for a gap, grey for a masked key, then
    ``scale`` over the value codes."""
    edge = FIRST_LEVEL - 0.5  # between the masked code and the first value code
    stops = [[0.0, "white"], [0.49 / 255, "white"], [0.51 / 255, MASKED_COLOR]]
    stops += [[(edge - 0.01) / 255, MASKED_COLOR]]
    stops += [[(edge + (255 - edge) * float(at)) / 255, colour] for at, colour in scale]
    return stops


@dataclass(frozen=True)
class Layout:
    """How the grid is laid out: ``blocks`` side by side of ``rows`` layers each, thumbnails of
    ``thumb`` px, in a plot of ``width`` x ``height`` px (its margins aside)."""

    blocks: int
    rows: int
    thumb: float
    width: float
    height: float


def layout(n_layers: int, n_heads: int) -> Layout:
    """The number of blocks (1 to :data:`MAX_BLOCKS`) that draws the largest thumbnails within
    :data:`WIDTH_PX` x :data:`MAX_HEIGHT_PX` (fewer blocks on a tie), within :data:`THUMB_PX`."""
    low, high = THUMB_PX
    best = None
    for blocks in range(1, MAX_BLOCKS + 1):
        rows = -(-n_layers // blocks)
        if blocks > 1 and rows * (blocks - 1) >= n_layers:
            break  # an empty block
        across = (WIDTH_PX - MARGIN["l"] - MARGIN["r"] - (blocks - 1) * BLOCK_GAP_PX) / (
            blocks * n_heads
        ) - GAP_PX
        down = (MAX_HEIGHT_PX - MARGIN["t"] - MARGIN["b"]) / rows - GAP_PX
        thumb = max(low, min(high, across, down))
        if best is None or thumb > best.thumb + 0.5:
            width = blocks * n_heads * (thumb + GAP_PX) + (blocks - 1) * BLOCK_GAP_PX
            best = Layout(blocks, rows, thumb, width, rows * (thumb + GAP_PX))
    assert best is not None
    return best


@dataclass(frozen=True)
class Grid:
    """Where the thumbnails lie in the heatmap's cells (kept in the figure's ``layout.meta``)."""

    n_layers: int
    n_heads: int
    rows: int
    cells: int
    gap: int
    block_gap: int

    @property
    def step(self) -> int:
        return self.cells + self.gap

    @property
    def block_width(self) -> int:
        return self.n_heads * self.step - self.gap

    def origin(self, layer: int, head: int) -> tuple[int, int]:
        """The top left cell (row, column) of a head's thumbnail."""
        block, row = divmod(int(layer), self.rows)
        return row * self.step, block * (self.block_width + self.block_gap) + int(head) * self.step


def model_view_figure(
    values: np.ndarray,
    model: str,
    selected: tuple[int, int] | None = None,
    kind: str = "weights",
    causal: bool | None = None,
    n_tokens: int | None = None,
) -> go.Figure:
    """Every head's pattern (``values``: layers x heads x T x T, weights or pre-softmax scores)
    as a grid of thumbnails (module doc), layer 0 at the top left, head 0 at the left of its
    block; ``selected`` (layer, head) outlined (:func:`outlined`); a click on a thumbnail
    reports ``[model, layer, head]``. ``causal``: the model's own (None: read from the weights),
    so that the keys no query sees are drawn masked; ``n_tokens``: the prompt's length, for the
    title."""
    if kind not in KINDS:
        raise FigureInputError(f"unknown pattern kind {kind!r}; accepted: weights, scores")
    values = np.asarray(values, dtype=float)
    if values.ndim != 4 or values.shape[2] != values.shape[3] or not values.shape[2]:
        raise FigureInputError(
            f"patterns must be layers x heads x T x T with T >= 1, got shape {values.shape}"
        )
    n_layers, n_heads, size = values.shape[:3]
    cells = min(size, MAX_CELLS)
    shape = layout(n_layers, n_heads)
    per_px = cells / shape.thumb
    grid = Grid(
        n_layers,
        n_heads,
        shape.rows,
        cells,
        max(1, round(GAP_PX * per_px)),
        round(BLOCK_GAP_PX * per_px),
    )
    scale, low, high = value_range(kind, values)
    thumbs = codes(pooled(masked(values, kind, causal), cells), low, high)
    width = shape.blocks * grid.block_width + (shape.blocks - 1) * grid.block_gap
    z = np.full((grid.rows * grid.step - grid.gap, width), GAP_CODE, dtype=np.uint8)
    layer_of, head_of = np.divmod(np.arange(n_layers * n_heads), n_heads)
    corners = np.array([grid.origin(lay, hd) for lay, hd in zip(layer_of, head_of, strict=True)])
    for (top, left), layer, head in zip(corners, layer_of, head_of, strict=True):
        z[top : top + cells, left : left + cells] = thumbs[layer, head]
    centre = (cells - 1) / 2
    ticks = np.linspace(low, high, 6)
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=z,
            zmin=0,
            zmax=255,
            colorscale=coded_scale(scale),
            colorbar={
                "title": {"text": KINDS[kind], "side": "right"},
                "thickness": 12,
                "tickvals": [FIRST_LEVEL + (LEVELS - 1) * (t - low) / (high - low) for t in ticks],
                "ticktext": [f"{t:.3g}" for t in ticks],
            },
            hoverinfo="skip",
            name="patterns",
        )
    )
    heads = pd.DataFrame({"layer": layer_of, "head": head_of})
    fig.add_trace(
        go.Scatter(
            x=corners[:, 1] + centre,
            y=corners[:, 0] + centre,
            mode="markers",
            marker={"symbol": "square", "size": shape.thumb, "color": "rgba(0,0,0,0.004)"},
            customdata=head_customdata(heads, model),
            hovertemplate="<b>L%{customdata[1]}·H%{customdata[2]}</b><br>click to open this "
            "head<extra></extra>",
            name="heads",
            meta={"role": "thumbnails", "model": model},
        )
    )
    names = [  # the layers of the blocks after the first (set at once: one validation)
        {
            "x": block * (grid.block_width + grid.block_gap) - 0.5,
            "y": row * grid.step + centre,
            "xanchor": "right",
            "text": f"L{block * grid.rows + row}",
            "showarrow": False,
            "font": {"size": 11, "color": "#444444"},
            "name": "layer",
        }
        for block in range(1, shape.blocks)
        for row in range(grid.rows)
        if block * grid.rows + row < n_layers
    ]
    tokens = n_tokens if n_tokens is not None else size
    note = f", pooled to {cells} × {cells}" if cells < size else ""
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"Every head's {KINDS[kind]}s on the prompt: {short_name(model)}<br><sup>"
            f"{n_layers} layers × {n_heads} heads, {tokens} tokens{note}; grey: masked</sup>"
        },
        plot_bgcolor="white",
        width=int(shape.width + MARGIN["l"] + MARGIN["r"]),
        height=int(shape.height + MARGIN["t"] + MARGIN["b"]),
        margin=MARGIN,
        showlegend=False,
        uirevision=UIREVISION,
        meta={"grid": asdict(grid)},
        annotations=names,
        xaxis={
            "title": {"text": "head"},
            "tickvals": [
                float(grid.origin(block * grid.rows, head)[1] + centre)
                for block in range(shape.blocks)
                for head in range(n_heads)
            ],
            "ticktext": [f"H{h}" for h in range(n_heads)] * shape.blocks,
            **_fixed(width),
        },
        yaxis={
            "title": {"text": "layer"},
            "tickvals": [float(row * grid.step + centre) for row in range(grid.rows)],
            "ticktext": [f"L{row}" for row in range(grid.rows)],
            **_fixed(z.shape[0], reversed_=True),
        },
    )
    return outlined(fig, selected)


def outlined(fig: go.Figure, selected: tuple[int, int] | None) -> go.Figure:
    """``fig`` (a :func:`model_view_figure`) with the thumbnail of ``selected`` (layer, head)
    framed, just outside it (so its edge cells stay in view); a head it lacks is not framed."""
    fig.layout.shapes = [s for s in fig.layout.shapes if s.name != "selected"]
    grid = Grid(**fig.layout.meta["grid"])
    if selected is None or not (
        0 <= selected[0] < grid.n_layers and 0 <= selected[1] < grid.n_heads
    ):
        return fig
    top, left = grid.origin(*selected)
    pad = 0.5 + grid.gap / 2  # the middle of the gap: its edge cells stay in view
    fig.add_shape(
        type="rect",
        x0=left - pad,
        x1=left + grid.cells - 1 + pad,
        y0=top - pad,
        y1=top + grid.cells - 1 + pad,
        line={"color": SELECTED_COLOR, "width": 2.5},
        name="selected",
    )
    return fig


def _fixed(extent: int, reversed_: bool = False) -> dict:
    """An axis over the grid's cells, fixed (no zoom: the grid is a map of the heads)."""
    span = [-0.5, extent - 0.5]
    return {
        "range": span[::-1] if reversed_ else span,
        "showgrid": False,
        "zeroline": False,
        "fixedrange": True,
        "tickfont": {"size": 11},
    }
