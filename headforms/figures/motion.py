"""Heads in motion: the simplex and the triangle with every head at each point of a path
(:class:`headforms.paths.HeadPaths`: RoPE positions, training steps, two models), one head's
curves along the path, arrows from one model to another, and the distance each head moved.

The animated views are :func:`headforms.figures.simplex.simplex_figure` and
:func:`~headforms.figures.simplex.triangle_figure` at the first point, plus one Plotly frame per
point holding the head traces (:func:`~headforms.figures.simplex.head_traces`) and the selected
head's ring there, and a slider (and Play button) that animates them in the browser: every
frame travels once with the figure, so moving the slider redraws the markers without asking the
server. The selected head's path through every point is drawn as a line (from its Gaussian
baseline when one is given: where training starts).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..forms import PARITY_LABELS, PARITY_TYPE_II_TEXT
from ..paths import HeadPaths
from .geometry import SIMPLEX_VERTICES, TRIANGLE_VERTICES, barycentric_points
from .heatmaps import HeatmapPanel, heatmap_panels_figure
from .simplex import head_traces, hover_text, simplex_figure, triangle_figure
from .style import (
    BASELINE_COLOR,
    PARITY_COLORS,
    PARITY_NAMES,
    SELECTED_COLOR,
    TEMPLATE,
    UIREVISION,
    FigureInputError,
    Selected,
    head_customdata,
    head_name,
    model_color,
    selected_marker,
)

VIEWS: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
    "simplex": (("a", "b", "c", "d"), SIMPLEX_VERTICES),
    "triangle": (("b_sym", "c_sym", "d_sym"), TRIANGLE_VERTICES),
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


def _check(paths: HeadPaths, view: str, start: int) -> None:
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
        "x": 0.12,
        "len": 0.86,
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
    framing follows the heads at ``start``)."""
    _check(paths, view, start)
    columns, vertices = VIEWS[view]
    three_d = view == "simplex"
    models = point_models(paths)
    first = {models[start]: paths.heads_at(start)}
    fig = (
        simplex_figure(first, color_by, None, frame=frame)
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
    extra = [
        t.to_plotly_json() for t in _extras(paths, view, three_d, selected, baseline, every_path)
    ]
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
    frames = []
    for point in range(paths.n_points):
        parts = [part(point, label, False) for label in PARITY_LABELS]
        indices = list(range(first_head, first_head + len(PARITY_LABELS)))
        if ring is not None:
            parts.append(ring(point, False))
            indices.append(len(data) - 1)
        frames.append(go.Frame(name=str(paths.values[point]), data=parts, traces=indices))
    fig = go.Figure(data=data, layout=fig.layout, frames=frames)
    sliders, menus = _slider(paths, start, f"{AXIS_NAMES.get(paths.axis, paths.axis)} = ")
    fig.update_layout(
        sliders=sliders,
        updatemenus=menus,
        title={"text": _path_title(paths, view)},
        margin={"b": (fig.layout.margin.b or 0) + 150},
        height=(fig.layout.height or 600) + 130,
        meta={**(fig.layout.meta or {}), "frames": "path", "axis": paths.axis},
        # under the slider: the plot area (and the slider) keep the figure's whole width
        legend={
            "orientation": "h",
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
    if three_d:  # the selected head's label rides with its ring: no fixed scene annotation
        fig.layout.scene.annotations = [
            a for a in fig.layout.scene.annotations if a.name != "selected"
        ]
    return fig


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
        if whole:
            marker = selected_marker(row, models[point], coordinates).to_plotly_json()
            part = {**marker, **part, "hovertemplate": "%{hovertext}<extra></extra>"}
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
    taken from :func:`~headforms.figures.simplex.head_traces` of one head of that type, so the
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


def _path_title(paths: HeadPaths, view: str) -> str:
    what = "Profiles on the simplex Δ₃" if view == "simplex" else "Symmetric profiles on Δ"
    name = paths.card.spec or paths.card.name
    along = {
        "rope_position": f"at RoPE positions d = {paths.values[0]}…{paths.values[-1]}",
        "step": f"over {paths.n_points} checkpoints, steps {paths.values[0]}…{paths.values[-1]}",
        "model": "",
    }.get(paths.axis, "")
    return f"{what}: {name}<br><sup>{along}</sup>" if along else f"{what}: {name}"


# ---------------------------------------------------------------------------------------------
# One head along the path


def curves_figure(curves: pd.DataFrame, axis: str, head: str, model: str) -> go.Figure:
    """One head's profile (a, b, c, d) against the axis (above) and its parity there (below:
    one row per type, the head's type marked at each point, with the Type II band's rule), from
    :func:`headforms.analyses.paths.head_curves`."""
    if axis not in curves.columns:
        raise FigureInputError(f"the curves have no column {axis!r}")
    x = curves[axis].to_numpy()
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.72, 0.28],
        vertical_spacing=0.06,
    )
    for name in ("a", "b", "c", "d"):
        fig.add_trace(
            go.Scatter(
                x=x,
                y=curves[name].to_numpy(float),
                mode="lines+markers" if len(x) <= 40 else "lines",
                marker={"size": 5},
                line={"width": 2, "color": PROFILE_COLORS[name]},
                name=name,
                hovertemplate=f"{AXIS_NAMES.get(axis, axis)} %{{x}}: {name} = %{{y:.4f}}"
                "<extra></extra>",
            ),
            row=1,
            col=1,
        )
    parity = curves["parity"].to_numpy()
    for label in PARITY_LABELS:
        at = parity == label
        fig.add_trace(
            go.Scatter(
                x=x[at],
                y=[PARITY_NAMES[label]] * int(at.sum()),
                mode="markers",
                marker={"symbol": "square", "size": 8, "color": PARITY_COLORS[label]},
                name=PARITY_NAMES[label],
                showlegend=False,
                hovertemplate=f"{AXIS_NAMES.get(axis, axis)} %{{x}}: {PARITY_NAMES[label]}"
                "<extra></extra>",
            ),
            row=2,
            col=1,
        )
    names = [AXIS_NAMES.get(axis, axis)]
    label = {"rope_position": "RoPE relative position d", "step": "training step"}.get(axis, axis)
    fig.update_yaxes(title={"text": "share of ‖L‖²"}, range=[0, 1], row=1, col=1)
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=[PARITY_NAMES[p] for p in reversed(PARITY_LABELS)],
        title={"text": "parity"},
        row=2,
        col=1,
    )
    fig.update_xaxes(title={"text": label}, row=2, col=1)
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{head} of {model}: profile and parity against {names[0]}<br><sup>parity: "
            f"Type II if c_S + d_S ≤ {PARITY_TYPE_II_TEXT}, else I+ if c_S > d_S, else I−</sup>"
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        height=460,
        margin={"l": 60, "r": 20},
        uirevision=UIREVISION,
    )
    return fig


PROFILE_COLORS = {"a": "#7f7f7f", "b": "#009E73", "c": "#E69F00", "d": "#0072B2"}
"""Curve colours of the profile's shares: a grey, b, c, d in the colours of the parity types
they make (b: Type II's, c: I+'s, d: I−'s)."""


# ---------------------------------------------------------------------------------------------
# One model against another


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
    _check(paths, view, 0)
    columns, vertices = VIEWS[view]
    three_d = view == "simplex"
    first, second = (str(value) for value in paths.values)
    ends = [paths.heads_at(0), paths.heads_at(1)]
    if three_d:
        fig = simplex_figure(
            {second: ends[1]}, "parity", selected and (second, *selected[1:]), frame
        )
    else:
        fig = triangle_figure({second: ends[1]}, "parity", selected and (second, *selected[1:]))
    start = barycentric_points(ends[0][list(columns)].to_numpy(float), vertices)
    end = barycentric_points(ends[1][list(columns)].to_numpy(float), vertices)
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
        for a, b in zip(start, end, strict=True):
            if np.isfinite(a).all() and np.isfinite(b).all() and np.linalg.norm(b - a) > 1e-3:
                fig.add_annotation(
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
    if selected is not None:
        index = paths.card.n_heads * int(selected[1]) + int(selected[2])
        if 0 <= index < len(start) and np.isfinite(start[index]).all():
            pair = np.stack([start[index], end[index]])
            fig.add_trace(
                trace(
                    **dict(zip("xyz" if three_d else "xy", pair.T, strict=True)),
                    mode="lines",
                    line={"color": SELECTED_COLOR, "width": 5 if three_d else 2.5},
                    hoverinfo="skip",
                    showlegend=False,
                    name="selected arrow",
                    meta={"role": "selected"},
                )
            )
    what = "Profiles on the simplex Δ₃" if three_d else "Symmetric profiles on Δ"
    fig.update_layout(
        title={"text": f"{what}: from A to B<br><sup>A: {first} · B: {second}</sup>"},
        # below: long model names in a legend at the right would squeeze the plot
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": -0.02, "yanchor": "top"},
        margin={"b": 110},
    )
    return fig


def distance_figure(movement: pd.DataFrame, model: str, selected: Selected = None) -> go.Figure:
    """The distance each head moved on the simplex (:func:`headforms.analyses.paths.movement`)
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
        color_range=(0.0, max(top, 1e-12)),
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
    """The heads that moved farthest (:func:`headforms.analyses.paths.moved_most`) as bars,
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
        title={"text": f"The heads that moved most ({AXIS_NAMES.get(axis, axis)}): {model}"},
        xaxis={
            "title": {"text": "distance moved on the simplex (unit edges)"},
            # room beside the longest bar for its "I+ → II"
            "range": [0.0, 1.3 * max(float(rows["distance"].max(skipna=True)), 1e-12)]
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
