"""Layer x head views: heatmaps of a per-head column beside its Gaussian baseline, or of several
models side by side on one scale (Figures 13, 14)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..sources.specs import short_name
from .style import (
    COLUMN_TITLES,
    DIVERGING_SCALE,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
    head_customdata,
)


def heatmap_range(values: Sequence[np.ndarray], mid: float = 0.5) -> tuple[float, float]:
    """A colour range symmetric about ``mid`` covering every finite value (both panels)."""
    spread = max(
        (
            float(np.nanmax(np.abs(np.asarray(v, float) - mid)))
            for v in values
            if np.isfinite(np.asarray(v, float)).any()
        ),
        default=0.0,
    )
    spread = max(spread, 1e-3)
    return mid - spread, mid + spread


PLOT_WIDTH = 620.0
"""Pixels of plot area the panels of a heatmap figure share in the dashboard's main column at
the default 1280 px window (the colour bar and margins excluded): square cells are sized from
it, so that they tile rather than overlap."""

PLOT_HEIGHT = 640.0
"""Largest plot-area height of a heatmap figure, in pixels."""


@dataclass(frozen=True)
class HeatmapPanel:
    """One layer x head grid: ``values`` of ``column`` at the rows of ``heads`` (which give the
    positions and the click payload: a baseline panel opens the trained head of its cell);
    ``label`` names the panel in hover texts and trace metadata, ``title`` above it."""

    label: str
    title: str
    model_name: str
    heads: pd.DataFrame
    values: np.ndarray


def heatmap_pair_figure(
    heads: pd.DataFrame,
    baseline: pd.DataFrame | None,
    column: str,
    model_name: str,
    selected: Selected = None,
    color_range: tuple[float, float] | None = None,
) -> go.Figure:
    """Layer x head grid of ``column`` for the trained heads beside the same column of the
    Gaussian baseline's table (same rows), Figures 13/14: square scatter markers (clickable),
    shared diverging colour scale white at 1/2, red above, blue below, one colour bar.
    ``baseline`` None (a published table without N): the trained heads alone.
    ``color_range``: a range shared with other models' figures (default: this pair's own)."""
    frames = (("heads", heads),) if baseline is None else (("heads", heads), ("baseline", baseline))
    for name, frame in frames:
        if column not in frame.columns:
            raise FigureInputError(f"{name} has no column {column!r}")
    if baseline is not None and len(baseline) != len(heads):
        raise FigureInputError(
            f"the baseline has {len(baseline)} rows for {len(heads)} heads: not the same shapes"
        )
    panels = [
        HeatmapPanel("trained", "trained heads", model_name, heads, heads[column].to_numpy(float))
    ]
    if baseline is not None:
        panels.append(
            HeatmapPanel(
                "baseline",
                "Gaussian baseline (same n, N)",
                model_name,
                heads,
                baseline[column].to_numpy(float),
            )
        )
    title = f"{COLUMN_TITLES.get(column, column)}: {short_name(model_name)}"
    return heatmap_panels_figure(panels, column, title, selected, color_range)


def heatmap_models_figure(
    models: Mapping[str, pd.DataFrame],
    column: str,
    selected: Selected = None,
    color_range: tuple[float, float] | None = None,
    baselines: Mapping[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """Figures 13/14 across models: one layer x head grid of ``column`` per model, side by side,
    each followed by its Gaussian baseline's grid when ``baselines`` has it (same rows), on one
    diverging colour scale (white at 1/2; ``color_range`` default: every grid's)."""
    baselines = baselines or {}
    panels = []
    for name, heads in models.items():
        if column not in heads.columns:
            raise FigureInputError(f"{name} has no column {column!r}")
        panels.append(HeatmapPanel(name, name, name, heads, heads[column].to_numpy(float)))
        base = baselines.get(name)
        if base is not None:
            if len(base) != len(heads):
                raise FigureInputError(
                    f"the baseline of {name} has {len(base)} rows for {len(heads)} heads"
                )
            panels.append(
                HeatmapPanel(
                    f"{name} baseline",
                    "Gaussian baseline",
                    name,
                    heads,
                    base[column].to_numpy(float),
                )
            )
    with_baselines = " beside their Gaussian baselines" if len(panels) > len(models) else ""
    title = f"{COLUMN_TITLES.get(column, column)}: trained heads{with_baselines}, one scale"
    return heatmap_panels_figure(panels, column, title, selected, color_range)


def heatmap_panels_figure(
    panels: Sequence[HeatmapPanel],
    column: str,
    title: str,
    selected: Selected = None,
    color_range: tuple[float, float] | None = None,
    colorscale: list[list] | None = None,
) -> go.Figure:
    """Grids side by side: square cells of one size in every panel (a model of more heads gets
    a wider panel, one of fewer layers a shorter one: the grids compare cell for cell), sized
    from :data:`PLOT_WIDTH` and :data:`PLOT_HEIGHT` (the same data unit per pixel on both axes
    of a panel), ticks only as dense as they can be read, one colour axis (``colorscale``,
    default the diverging scale white at 1/2), the selected head outlined in every panel of its
    model (a rectangle in data coordinates: exact at any size and zoom)."""
    if not panels:
        raise FigureInputError("no layer x head grid to draw")
    cmin, cmax = color_range or heatmap_range([panel.values for panel in panels])
    grids = [_grid(panel.heads) for panel in panels]
    spacing = 0.04 if len(panels) <= 2 else 0.06
    across = PLOT_WIDTH * (1 - spacing * (len(panels) - 1)) / sum(n for _, n in grids)
    cell = float(np.clip(min(across, PLOT_HEIGHT / max(n for n, _ in grids)), 4.0, 34.0))
    cells = [cell] * len(panels)
    height = int(max(320.0, cell * max(n for n, _ in grids) + 170.0))
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        horizontal_spacing=spacing,
        column_widths=[n_heads for _, n_heads in grids],  # one cell size in every panel
        subplot_titles=[panel.title for panel in panels],
    )
    for index, (panel, cell, (n_layers, n_heads)) in enumerate(
        zip(panels, cells, grids, strict=True), start=1
    ):
        heads = panel.heads
        fig.add_trace(
            go.Scatter(
                x=heads["head"],
                y=heads["layer"],
                mode="markers",
                marker={
                    "symbol": "square",
                    "size": cell * 0.92,
                    "color": panel.values,
                    "coloraxis": "coloraxis",
                    "line": {"width": 0},
                },
                customdata=head_customdata(heads, panel.model_name),
                name=panel.label,
                showlegend=False,
                text=[f"{value:.4f}" for value in panel.values],
                hovertemplate=f"{panel.label}<br>layer %{{y}}, head %{{x}}<br>{column} "
                "%{text}<extra></extra>",
                meta={"role": "cells", "panel": panel.label},
            ),
            row=1,
            col=index,
        )
        suffix = "" if index == 1 else str(index)
        fig.update_xaxes(
            title={"text": "head"},
            range=[-0.5, n_heads - 0.5],
            showgrid=False,
            zeroline=False,
            dtick=_tick_step(n_heads, cell, TICK_WIDTH_PX),
            constrain="domain",
            scaleanchor=f"y{suffix}",  # one data unit, the same pixels on both axes
            scaleratio=1,
            row=1,
            col=index,
        )
        fig.update_yaxes(
            title={"text": "layer" if index == 1 else ""},
            range=[n_layers - 0.5, -0.5],
            showgrid=False,
            zeroline=False,
            dtick=_tick_step(n_layers, cell, TICK_HEIGHT_PX),
            constrain="domain",
            row=1,
            col=index,
        )
        if selected is not None and selected[0] == panel.model_name:
            _, layer, head = selected
            if ((heads["layer"] == int(layer)) & (heads["head"] == int(head))).any():
                fig.add_shape(
                    type="rect",
                    x0=int(head) - 0.5,
                    x1=int(head) + 0.5,
                    y0=int(layer) - 0.5,
                    y1=int(layer) + 0.5,
                    xref=f"x{suffix}",
                    yref=f"y{suffix}",
                    line={"color": SELECTED_COLOR, "width": 3},
                    layer="above",
                    name="selected",
                )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": title},
        coloraxis={
            "colorscale": colorscale or DIVERGING_SCALE,
            "cmin": cmin,
            "cmax": cmax,
            "colorbar": {"title": {"text": column}},
        },
        uirevision=UIREVISION,
        height=height,
        margin={"t": 80},
        plot_bgcolor="#f4f4f4",
    )
    return fig


TICK_WIDTH_PX = 16.0
"""Room a head's number takes under a grid (two digits at 11 px, and a little between)."""
TICK_HEIGHT_PX = 13.0
"""Room a layer's number takes beside a grid."""


def _tick_step(count: int, cell: float, room: float) -> int:
    """Every how many cells a tick is labelled: never closer than ``room`` px, and at most 16
    labels (cells of ``cell`` px)."""
    return max(1, count // 16, int(np.ceil(room / cell)))


def _grid(heads: pd.DataFrame) -> tuple[int, int]:
    """(layers, heads per layer) of a per-head table."""
    if not len(heads):
        return 1, 1
    return int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1


def heatmap_table(heads: pd.DataFrame, baseline: pd.DataFrame | None, column: str) -> pd.DataFrame:
    """The data of :func:`heatmap_pair_figure` as a tidy table: layer, head, the column and the
    baseline's (``rand_<column>``, when there is a baseline), one row per head (what its CSV
    export holds)."""
    table = pd.DataFrame(
        {
            "layer": heads["layer"].to_numpy(),
            "head": heads["head"].to_numpy(),
            column: heads[column].to_numpy(),
        }
    )
    if baseline is not None:
        table[f"rand_{column}"] = baseline[column].to_numpy()
    return table
