"""How far heads moved: arrows from one model to another head by head
(:class:`headforms.diff.ModelDiff`), the distance each head moved as a layer x head grid, and
the heads that moved most."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..head_paths import HeadPaths
from ..sources.specs import short_name
from .animated import AXIS_NAMES, VIEWS, check_path_view
from .geometry import barycentric_points
from .head_markers import hover_text, selected_on_top
from .heatmaps import HeatmapPanel, heatmap_panels_figure
from .simplex import simplex_figure
from .style import (
    BASELINE_COLOR,
    OPACITY_3D,
    PARITY_COLORS,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
    head_customdata,
    head_name,
    model_color,
)
from .triangle import triangle_figure

ARROW_SHAFT = 0.82
"""Share of the way from A to B that an arrow's line covers in 3D (B's marker is its head)."""


def diff_figure(
    paths: HeadPaths,
    view: str = "simplex",
    selected: Selected = None,
    frame: str = "heads",
) -> go.Figure:
    """Arrows from model A to model B (``paths`` of a :class:`headforms.diff.ModelDiff`), head by
    head: B's heads as the simplex draws them (clickable: they open B's head), A's as small grey
    dots, a line from each A to its B (on the triangle an arrow); the selected head's arrow in
    black. ``frame`` as for the simplex (zoomed to the heads by default: most move little)."""
    if paths.n_points != 2:
        raise FigureInputError("a diff figure needs two models (A and B)")
    check_path_view(paths, view, 0)
    columns, vertices = VIEWS[view]
    three_d = view == "simplex"
    first, second = (str(value) for value in paths.values)
    ends = [paths.heads_at(0), paths.heads_at(1)]
    start = barycentric_points(ends[0][list(columns)].to_numpy(float), vertices)
    end = barycentric_points(ends[1][list(columns)].to_numpy(float), vertices)
    index = -1 if selected is None else paths.card.n_heads * int(selected[1]) + int(selected[2])
    chosen = start[index : index + 1] if 0 <= index < len(start) else None
    if three_d:  # the selected head's A end stays in the frame too
        chosen_b = selected and (second, *selected[1:])
        fig = simplex_figure({second: ends[1]}, "parity", chosen_b, frame, in_frame=chosen)
    else:
        fig = triangle_figure({second: ends[1]}, "parity", selected and (second, *selected[1:]))
    trace = go.Scatter3d if three_d else go.Scatter
    # each line stops short of B's marker: a click there picks the marker, not the line
    short = start + (ARROW_SHAFT if three_d else 1.0) * (end - start)
    segments = np.stack([start, short, np.full_like(start, np.nan)], axis=1)
    segments = segments.reshape(-1, start.shape[1])
    fig.add_trace(
        trace(
            **dict(zip("xyz" if three_d else "xy", segments.T, strict=True)),
            mode="lines",
            line={"color": model_color(0), "width": 2 if three_d else 1.2},
            hoverinfo="skip",
            name=f"A → B ({first} → {second})",
            meta={"role": "arrows"},
        )
    )
    fig.add_trace(
        trace(
            **dict(zip("xyz" if three_d else "xy", start.T, strict=True)),
            mode="markers",
            marker={"size": 2.5 if three_d else 4, "color": BASELINE_COLOR},
            text=hover_text(ends[0], first, columns),
            hovertemplate="%{text}<extra>A</extra>",
            name=f"A: {first}",
            meta={"role": "start", "model": first},
        )
    )
    if not three_d:
        # added at once: plotly's add_annotation validates every earlier annotation again on
        # each call (quadratic; 270 arrows took 10-20 s one by one)
        arrows = [
            go.layout.Annotation(
                x=b[0],
                y=b[1],
                ax=a[0],
                ay=a[1],
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                showarrow=True,
                arrowhead=2,
                arrowsize=1,
                arrowwidth=1,
                arrowcolor=model_color(0),
                text="",
                name="arrow",
            )
            for a, b in zip(start, end, strict=True)
            if np.isfinite(a).all() and np.isfinite(b).all() and np.linalg.norm(b - a) > 1e-3
        ]
        fig.update_layout(annotations=[*fig.layout.annotations, *arrows])
    if chosen is not None and np.isfinite(chosen).all():
        pair = np.stack([start[index], end[index]])
        fig.add_trace(
            trace(
                **dict(zip("xyz" if three_d else "xy", pair.T, strict=True)),
                mode="lines",
                line={"color": SELECTED_COLOR, "width": 5 if three_d else 2.5},
                opacity=OPACITY_3D if three_d else 1.0,  # drawn in trace order (OPACITY_3D)
                hoverinfo="skip",
                showlegend=False,
                name="selected arrow",
                meta={"role": "selected"},
            )
        )
    selected_on_top(fig)
    what = "Profiles on the simplex Δ₃" if three_d else "Symmetric profiles on Δ"
    fig.update_layout(
        title={"text": f"{what}: from A to B<br><sup>A: {first} · B: {second}</sup>"},
        # below: long model names in a legend at the right would squeeze the plot
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": -0.02, "yanchor": "top"},
        margin={"b": 110},
    )
    return fig


SMALLEST_DISTANCE_RANGE = 1e-3
"""The least span of a distance axis or colour bar (unit edges; profiles are shown to 3
decimals): heads that did not move get ticks 0 to 0.001, not plotly's SI "pico" ticks of a
range 1e-12 wide."""


def distance_figure(movement: pd.DataFrame, model: str, selected: Selected = None) -> go.Figure:
    """The distance each head moved on the simplex (:func:`headforms.analyses.motion.movement`)
    as a layer x head grid (clickable: a cell opens that head of ``model``), white at 0."""
    heads = movement[["layer", "head"]].reset_index(drop=True)
    values = movement["distance"].to_numpy(float)
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    panel = HeatmapPanel("moved", "distance moved", model, heads, values)
    return heatmap_panels_figure(
        [panel],
        "distance",
        f"Distance each head moved on the simplex (unit edges): {model}",
        selected,
        color_range=(0.0, max(top, SMALLEST_DISTANCE_RANGE)),
        colorscale=SEQUENTIAL_SCALE,
    )


SEQUENTIAL_SCALE: list[list] = [
    [0.0, "#ffffff"],
    [0.15, "#a5db36"],
    [0.4, "#35b779"],
    [0.65, "#26828e"],
    [0.85, "#3e4989"],
    [1.0, "#440154"],
]
"""White where a head did not move, darker the farther it moved (viridis from its light end)."""


def moved_most_figure(moved: pd.DataFrame, model: str, axis: str = "model") -> go.Figure:
    """The heads that moved farthest (:func:`headforms.analyses.motion.moved_most`) as bars,
    farthest on top, coloured by their parity at the end (clickable: a bar opens the head of
    ``model``); the parity at the start and at the end in the hover."""
    rows = moved.reset_index(drop=True)
    names = [
        head_name(layer, head) for layer, head in zip(rows["layer"], rows["head"], strict=True)
    ]
    colors = [PARITY_COLORS.get(p, BASELINE_COLOR) for p in rows["parity_last"]]
    fig = go.Figure(
        go.Bar(
            x=rows["distance"].to_numpy(float),
            y=names,
            orientation="h",
            marker={"color": colors},
            customdata=head_customdata(rows, model),
            text=[
                f"{first} → {last}"
                for first, last in zip(rows["parity_first"], rows["parity_last"], strict=True)
            ],
            # beside the bar at full size (plotly.js would shrink it to fit a short bar)
            textposition="outside",
            textfont={"size": 11},
            constraintext="none",
            cliponaxis=False,
            hovertemplate="%{y}: moved %{x:.4f}<br>parity %{text}<extra></extra>",
            name="distance",
            meta={"role": "heads"},
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"The heads that moved most ({AXIS_NAMES.get(axis, axis)}): {short_name(model)}"
        },
        xaxis={
            "title": {"text": "distance moved on the simplex (unit edges)"},
            # room beside the longest bar for its "I+ → II"
            "range": [
                0.0,
                1.3 * max(float(rows["distance"].max(skipna=True)), SMALLEST_DISTANCE_RANGE),
            ]
            if rows["distance"].notna().any()
            else None,
        },
        yaxis={"autorange": "reversed", "type": "category"},
        height=max(300, 26 * len(rows) + 140),
        margin={"l": 90},
        showlegend=False,
        uirevision=UIREVISION,
    )
    return fig
