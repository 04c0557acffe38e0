"""Heads in motion, animated: the simplex and the triangle with every head at each point of a
path (:class:`headforms.head_paths.HeadPaths`: RoPE positions, training steps, two models).

The animated views are :func:`headforms.figures.simplex.simplex_figure` and
:func:`~headforms.figures.triangle.triangle_figure` at the first point, plus one Plotly frame per
point holding the head traces (:func:`~headforms.figures.head_markers.head_traces`) and the selected
head's ring there, and a slider (and Play button) that animates them in the browser: every
frame travels once with the figure, so moving the slider redraws the markers without asking the
server. The selected head's name rides with its ring as an annotation on a background (each
frame's layout carries the plot's annotations with it at that point). The selected head's path
through every point is drawn as a line (from its Gaussian baseline when one is given: where
training starts).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..columns import PROFILE, SYMMETRIC_PROFILE
from ..forms import PARITY_LABELS
from ..head_paths import HeadPaths
from .geometry import SIMPLEX_VERTICES, TRIANGLE_VERTICES, barycentric_points
from .head_markers import head_traces
from .simplex import simplex_figure
from .style import (
    BASELINE_COLOR,
    PARITY_NAMES,
    FigureInputError,
    Selected,
    head_customdata,
    head_name,
    selected_label,
    selected_marker,
)
from .triangle import triangle_figure

VIEWS: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
    "simplex": (PROFILE, SIMPLEX_VERTICES),
    "triangle": (SYMMETRIC_PROFILE, TRIANGLE_VERTICES),
}
"""The two views of a path: the coordinates drawn and the vertices they are drawn on."""

AXIS_NAMES = {"rope_position": "d", "step": "step", "model": "model"}
"""How the slider and the curves name each axis."""

PLAY_FRAME_MS = 90
"""Milliseconds per frame when the path is played."""

LABELLED_STEPS = 24
"""Slider steps labelled under the slider at most (beyond, only the current value is shown:
129 labels would overprint one another)."""

PATH_COLOR = "#222222"
"""The selected head's path: near black, like its ring (not Theta's red, not a parity colour)."""

EVERY_PATH_COLOR = "rgba(90, 90, 90, 0.35)"


def point_models(paths: HeadPaths) -> list[str]:
    """The model each point's heads belong to (what their clicks open): each checkpoint's spec
    along a series, each side's along a diff, the model's own along a sweep."""
    if "checkpoint" in paths.point_columns:
        return [str(spec) for spec in paths.point_columns["checkpoint"]]
    if paths.axis == "model":
        return [str(value) for value in paths.values]
    return [paths.card.spec] * paths.n_points


def check_path_view(paths: HeadPaths, view: str, start: int) -> None:
    """A one-line FigureInputError unless ``view`` is a path view and ``start`` a point of it."""
    if view not in VIEWS:
        raise FigureInputError(f"view must be one of {tuple(VIEWS)}, got {view!r}")
    if not 0 <= start < paths.n_points:
        raise FigureInputError(f"start must be a point of the path (0-{paths.n_points - 1})")


def _hover_values(values: np.ndarray) -> np.ndarray:
    """Every head's coordinates at every point as short hover text, ``.123, .456, .012, .409``
    (points x heads, object array; empty where the head has no profile): a frame carries one
    per head, so they are kept short."""
    text = np.char.mod("%.3f", np.round(np.where(np.isfinite(values), values, 0.0), 3))
    text = np.char.replace(text, "0.", ".")
    joined = np.array([", ".join(row) for row in text.reshape(-1, values.shape[-1])], dtype=object)
    joined = joined.reshape(values.shape[:2])
    return np.where(np.isfinite(values).all(axis=-1), joined, "")


def hover_template(columns: tuple[str, ...]) -> str:
    """Hover of the animated heads: the head from its click payload, its type from its trace,
    its coordinates at the point shown from the frame's text."""
    names = ", ".join(
        c.removesuffix("_sym") + ("_S" if c.endswith("_sym") else "") for c in columns
    )
    return (
        "<b>%{customdata[0]}</b><br>layer %{customdata[1]}, head %{customdata[2]} · "
        f"%{{fullData.name}}<br>({names}) = (%{{text}})<extra></extra>"
    )


def _trail(
    paths: HeadPaths,
    selected: Selected,
    view: str,
    three_d: bool,
    start_row: pd.Series | None,
) -> list[go.BaseTraceType]:
    """The selected head's path through every point (from ``start_row``, its Gaussian baseline,
    when given), drawn once, not animated."""
    if selected is None:
        return []
    columns, vertices = VIEWS[view]
    _, layer, head = selected
    if not (0 <= int(layer) < paths.card.n_layers and 0 <= int(head) < paths.card.n_heads):
        return []
    path = paths.path(int(layer), int(head))
    values = path[list(columns)].to_numpy(float)
    labels = [f"{AXIS_NAMES.get(paths.axis, paths.axis)} = {v}" for v in path[paths.axis]]
    if start_row is not None:
        values = np.vstack([start_row[list(columns)].to_numpy(float), values])
        labels = ["Gaussian baseline (same n, N)", *labels]
    xyz = barycentric_points(values, vertices)
    text = [
        f"<b>{head_name(layer, head)}</b> · {label}<br>("
        + ", ".join(f"{c.removesuffix('_sym')} {v:.3f}" for c, v in zip(columns, row, strict=True))
        + ")"
        for label, row in zip(labels, values, strict=True)
    ]
    trace = go.Scatter3d if three_d else go.Scatter
    coordinates = dict(zip("xyz" if three_d else "xy", xyz.T, strict=True))
    line = {"color": PATH_COLOR, "width": 4 if three_d else 2.5}
    traces = [
        trace(
            **coordinates,
            mode="lines+markers",
            line=line,
            marker={"size": 3 if three_d else 5, "color": PATH_COLOR},
            text=text,
            hovertemplate="%{text}<extra>path</extra>",
            name=f"path of {head_name(layer, head)}",
            meta={"role": "path"},
        )
    ]
    if start_row is not None:
        start = {k: [v[0]] for k, v in coordinates.items()}
        traces.append(
            trace(
                **start,
                mode="markers",
                marker={"size": 6 if three_d else 10, "color": BASELINE_COLOR, "symbol": "square"},
                text=[text[0]],
                hovertemplate="%{text}<extra>start</extra>",
                name="start: Gaussian baseline",
                meta={"role": "path-start"},
            )
        )
    return traces


def _every_path(
    paths: HeadPaths, view: str, three_d: bool, start: pd.DataFrame | None
) -> go.BaseTraceType:
    """Every head's path as one faint polyline (NaN breaks), from its baseline when given."""
    columns, vertices = VIEWS[view]
    stacked = np.stack([paths.stacked(c).astype(float) for c in columns], axis=-1)
    if start is not None:
        stacked = np.concatenate([start[list(columns)].to_numpy(float)[None], stacked])
    points = barycentric_points(stacked.reshape(-1, len(columns)), vertices).reshape(
        *stacked.shape[:2], -1
    )
    gaps = np.full((1, points.shape[1], points.shape[2]), np.nan)
    line = np.concatenate([points, gaps]).transpose(1, 0, 2).reshape(-1, points.shape[2])
    trace = go.Scatter3d if three_d else go.Scatter
    return trace(
        **dict(zip("xyz" if three_d else "xy", line.T, strict=True)),
        mode="lines",
        line={"color": EVERY_PATH_COLOR, "width": 1.5},
        hoverinfo="skip",
        name="every head's path",
        meta={"role": "paths"},
    )


def _slider(paths: HeadPaths, start: int, prefix: str) -> tuple[list[dict], list[dict]]:
    """The slider (one step per frame) and the Play / Pause buttons."""
    animate = {"mode": "immediate", "frame": {"duration": 0, "redraw": True}}
    steps = [
        {
            "method": "animate",
            "label": str(value),
            "args": [[str(value)], {**animate, "transition": {"duration": 0}}],
        }
        for value in paths.values
    ]
    labelled = len(steps) <= LABELLED_STEPS
    slider = {
        "active": start,
        "steps": steps,
        "currentvalue": {
            "prefix": prefix,
            "font": {"size": 15, "color": "#222222"},
            "xanchor": "left",
        },
        "pad": {"t": 8, "b": 4},
        # right of the Play and Pause buttons (about 110 px) in a figure 600 px wide or more
        "x": 0.19,
        "len": 0.79,
        "y": 0.0,
        "yanchor": "top",
        "font": {"size": 11 if labelled else 1, "color": "#444" if labelled else "rgba(0,0,0,0)"},
        "ticklen": 4 if labelled else 2,
        "name": "position",
    }
    play = {
        "type": "buttons",
        "direction": "left",
        "x": 0.0,
        "y": 0.0,
        "xanchor": "left",
        "yanchor": "top",
        "pad": {"t": 36, "r": 4},
        "showactive": False,
        "buttons": [
            {
                "label": "▶ Play",
                "method": "animate",
                "args": [
                    None,
                    {
                        "mode": "immediate",
                        "fromcurrent": True,
                        "frame": {"duration": PLAY_FRAME_MS, "redraw": True},
                        "transition": {"duration": 0},
                    },
                ],
            },
            {
                "label": "❚❚",
                "method": "animate",
                "args": [[None], {"mode": "immediate", "frame": {"duration": 0, "redraw": False}}],
            },
        ],
    }
    return [slider], [play]


def animated_figure(
    paths: HeadPaths,
    view: str = "simplex",
    color_by: str = "parity",
    selected: Selected = None,
    frame: str = "simplex",
    start: int = 0,
    baseline: pd.DataFrame | None = None,
    every_path: bool = False,
    follow_last: bool = False,
) -> go.Figure:
    """The simplex (``view="simplex"``: profiles on Delta_3) or the triangle (``"triangle"``:
    symmetric profiles) with every head at each point of ``paths`` (module doc), showing point
    ``start`` first; a slider and Play button move every marker in the browser.

    Each parity type keeps one trace holding every head in table order, drawn only where the
    head has that type (elsewhere NaN, which plotly.js leaves out): a frame then carries only
    coordinates and short hover texts (and the click payloads where the model changes along
    the path, as along a series), so a 129-position sweep of 270 heads is a few MB.
    ``selected`` (its model is ignored: the head is found at each point) is ringed at each point
    and its path drawn; ``baseline`` (the Gaussian baseline's per-head table, same rows) starts
    that path, and every path of ``every_path``, at the head's Gaussian counterpart.
    ``color_by`` and ``frame`` as for :func:`~headforms.figures.simplex.simplex_figure` (the
    framing follows the heads at ``start``). ``follow_last``: the path is still growing (a
    training run that records): a browser showing its last point when a longer figure comes
    shows the new last point (``layout.meta.follow``, read by ui/plot.js)."""
    check_path_view(paths, view, start)
    columns, vertices = VIEWS[view]
    three_d = view == "simplex"
    models = point_models(paths)
    first = {models[start]: paths.heads_at(start)}
    extras = _extras(paths, view, three_d, selected, baseline, every_path)
    fig = (
        simplex_figure(first, color_by, None, frame=frame, in_frame=_kept_in_frame(extras))
        if three_d
        else triangle_figure(first, color_by, None)
    )
    kept = [t.to_plotly_json() for t in fig.data if (t.meta or {}).get("role") != "heads"]
    values = np.stack([paths.stacked(c).astype(float) for c in columns], axis=-1)
    xyz = barycentric_points(values.reshape(-1, len(columns)), vertices).astype(np.float32)
    xyz = xyz.reshape(*values.shape[:2], -1)
    parity = paths.stacked("parity")
    hover = _hover_values(values)
    shift = len(set(models)) > 1  # clicks name each point's model
    style = _parity_styles(
        paths.heads_at(start), models[start], columns, vertices, color_by, three_d
    )
    color = paths.stacked(color_by).astype(float) if color_by not in ("parity", "model") else None
    labels = [head_name(layer, head) for layer, head in zip(*_layer_head(paths), strict=True)]
    extra = [t.to_plotly_json() for t in extras]
    data = kept + extra
    first_head = len(data)

    def part(point: int, label: str, whole: bool) -> dict:
        drawn = parity[point] == label
        coordinates = np.where(drawn[:, None], xyz[point], np.nan).astype(np.float32)
        trace: dict = {"type": "scatter3d" if three_d else "scatter"}
        trace.update(zip("xyz" if three_d else "xy", coordinates.T, strict=False))
        trace["text"] = np.where(drawn, hover[point], "")
        if shift or whole:
            trace["customdata"] = head_customdata(paths.heads_at(point), models[point])
        if color is not None:
            trace["marker"] = {**style[label]["marker"], "color": color[point].astype(np.float32)}
        if whole:
            names = f" · {PARITY_NAMES[label]}"
            trace.update(
                {k: v for k, v in style[label].items() if k not in POINT_KEYS},
                hovertemplate=hover_template(columns),
                meta={**style[label]["meta"], "choices": [n + names for n in labels]},
            )
        return trace

    data += [part(start, label, True) for label in PARITY_LABELS]
    ring = _ring(paths, models, selected, xyz, hover, start, three_d)
    if ring is not None:
        data.append(ring(start, True))
    layout = fig.layout
    fixed = [  # the plot's own labels, and the selected head's name at each point after them
        a.to_plotly_json()
        for a in (layout.scene.annotations if three_d else layout.annotations)
        if a.name != "selected"
    ]
    notes = _ring_notes(paths, selected, xyz, three_d)

    def annotated(point: int) -> dict:
        every = fixed + [notes(point)]
        return {"scene": {"annotations": every}} if three_d else {"annotations": every}

    frames = []
    for point in range(paths.n_points):
        parts = [part(point, label, False) for label in PARITY_LABELS]
        indices = list(range(first_head, first_head + len(PARITY_LABELS)))
        extra_layout = {}
        if ring is not None:
            parts.append(ring(point, False))
            indices.append(len(data) - 1)
            extra_layout = annotated(point)
        frames.append(
            go.Frame(name=str(paths.values[point]), data=parts, traces=indices, layout=extra_layout)
        )
    fig = go.Figure(data=data, layout=layout, frames=frames)
    if ring is not None:
        fig.update_layout(annotated(start))
    sliders, menus = _slider(paths, start, f"{AXIS_NAMES.get(paths.axis, paths.axis)} = ")
    fig.update_layout(
        sliders=sliders,
        updatemenus=menus,
        title={"text": _path_title(paths, view)},
        margin={"b": (fig.layout.margin.b or 0) + 150},
        height=(fig.layout.height or 600) + 130,
        meta={
            **(fig.layout.meta or {}),
            "frames": "path",
            "axis": paths.axis,
            **({"follow": True} if follow_last else {}),
        },
        # under the slider: the plot area (and the slider) keep the figure's whole width, in one
        # row (grouped, a model's parity types would stack into a column)
        legend={
            "orientation": "h",
            "traceorder": "normal",
            "x": 0.0,
            "xanchor": "left",
            "yref": "container",
            "y": 0.0,
            "yanchor": "bottom",
        },
    )
    if fig.layout.coloraxis.colorscale is not None:  # upright at the right: the slider is below
        fig.update_layout(
            coloraxis_colorbar={
                "orientation": "v",
                "x": 1.0,
                "xanchor": "left",
                "y": 0.5,
                "yanchor": "middle",
                "len": 0.6,
                "title": {"side": "right"},
            },
            margin_r=80,
        )
    return fig


def _ring_notes(
    paths: HeadPaths, selected: Selected, xyz: np.ndarray, three_d: bool
) -> Callable[[int], dict]:
    """The selected head's name at a point (``notes(point)``): an annotation with an arrow to
    its ring, on a background as the simplex's and the triangle's selected label (plotly.js
    draws a trace's text without one); :func:`_ring` says whether there is a selected head."""
    layer, head = (int(selected[1]), int(selected[2])) if selected is not None else (0, 0)
    index = paths.card.n_heads * layer + head

    def note(point: int) -> dict:
        where = xyz[point, index]
        place = {"z": float(where[2])} if three_d else {"xref": "x", "yref": "y"}
        label = selected_label(where[0], where[1], head_name(layer, head), 36, -30, **place)
        return {**label, "visible": bool(np.all(np.isfinite(where)))}

    return note


def _ring(
    paths: HeadPaths,
    models: list[str],
    selected: Selected,
    xyz: np.ndarray,
    hover: np.ndarray,
    start: int,
    three_d: bool,
) -> Callable[[int, bool], dict] | None:
    """The selected head's ring at a point (``ring(point, whole)``: the whole trace, as
    :func:`~headforms.figures.style.selected_marker` draws it, or what a frame changes), or None
    when no head is selected or it is not in the model."""
    if selected is None:
        return None
    layer, head = int(selected[1]), int(selected[2])
    if not (0 <= layer < paths.card.n_layers and 0 <= head < paths.card.n_heads):
        return None
    index = paths.card.n_heads * layer + head
    axes = "xyz" if three_d else "xy"
    row = pd.DataFrame({"layer": [layer], "head": [head]})

    def ring(point: int, whole: bool) -> dict:
        coordinates = {a: xyz[point, index, i : i + 1] for i, a in enumerate(axes)}
        text = f"<b>{head_name(layer, head)}</b> (selected)<br>({hover[point, index]})"
        part = {
            "type": "scatter3d" if three_d else "scatter",
            **coordinates,
            "customdata": head_customdata(row, models[point]),
            "hovertext": [text],
        }
        if whole:  # its name: an annotation on a background (_ring_notes)
            marker = selected_marker(row, models[point], coordinates).to_plotly_json()
            part = {**marker, **part, "hovertemplate": "%{hovertext}<extra></extra>"}
            part.update(mode="markers")
            part.pop("hoverinfo", None)
        return part

    return ring


POINT_KEYS = ("x", "y", "z", "text", "customdata")
"""What a head trace holds per point (the rest of its style is the simplex's)."""


def _layer_head(paths: HeadPaths) -> tuple[np.ndarray, np.ndarray]:
    return paths.stacked("layer")[0].astype(int), paths.stacked("head")[0].astype(int)


def _parity_styles(
    heads: pd.DataFrame,
    model: str,
    columns: tuple[str, ...],
    vertices: np.ndarray,
    color_by: str,
    three_d: bool,
) -> dict[str, dict]:
    """Each parity type's head trace as the simplex draws it (marker, name, legend group):
    taken from :func:`~headforms.figures.head_markers.head_traces` of one head of that type, so the
    animated views keep its encodings exactly."""
    styles = {}
    for label in PARITY_LABELS:
        one = heads.iloc[:1].assign(parity=label)
        (trace,) = head_traces({model: one}, columns, vertices, color_by, three_d)
        styles[label] = trace
    return styles


def _extras(
    paths: HeadPaths,
    view: str,
    three_d: bool,
    selected: Selected,
    baseline: pd.DataFrame | None,
    every_path: bool,
) -> list[go.BaseTraceType]:
    """The static traces under the heads: every head's path (if asked), the selected one's."""
    start_row = None
    if baseline is not None and selected is not None:
        index = paths.card.n_heads * int(selected[1]) + int(selected[2])
        if 0 <= index < len(baseline):
            start_row = baseline.iloc[index]
    extra = [_every_path(paths, view, three_d, baseline)] if every_path else []
    return extra + _trail(paths, selected, view, three_d, start_row)


def _kept_in_frame(extras: list[go.BaseTraceType]) -> np.ndarray | None:
    """The points of the selected head's path (and its start): the 3D frame keeps them in view,
    so the ring at every point and the path the legend names are inside the plot."""
    kept = [
        np.column_stack([t.x, t.y, t.z]).astype(float)
        for t in extras
        if (t.meta or {}).get("role") in ("path", "path-start") and t.z is not None
    ]
    return np.vstack(kept) if kept else None


def _points_name(paths: HeadPaths) -> str:
    """What the points of a training run are: its records (a run store's series) or checkpoints."""
    return "records" if getattr(paths, "run", None) is not None else "checkpoints"


def _path_title(paths: HeadPaths, view: str) -> str:
    what = "Profiles on the simplex Δ₃" if view == "simplex" else "Symmetric profiles on Δ"
    name = paths.card.spec or paths.card.name
    along = {
        "rope_position": f"at RoPE positions d = {paths.values[0]}…{paths.values[-1]}",
        "step": f"over {paths.n_points} {_points_name(paths)}, steps "
        f"{paths.values[0]}…{paths.values[-1]}",
        "model": "",
    }.get(paths.axis, "")
    return f"{what}: {name}<br><sup>{along}</sup>" if along else f"{what}: {name}"
