"""The figures of heads in motion (headforms.figures.animated, curves, movement), without a
browser: each frame of an animated simplex holds every head where its profile is at that point
(and only in the trace of its parity type there), the slider's steps name the frames, clicks keep
naming heads, the selected head's path is its profile along the path (from its baseline), the
diff's arrows join A to B, and the curves, distances and the heads that moved most draw the
library's numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headforms import analyze
from headforms.analyses.motion import head_curves, moved_most, movement
from headforms.diff import ModelDiff
from headforms.engine import sweep
from headforms.figures import animated
from headforms.figures import curves as curve_figures
from headforms.figures import movement as movement_figures
from headforms.figures.geometry import SIMPLEX_VERTICES, TRIANGLE_VERTICES, barycentric_points
from headforms.figures.style import LABEL_BACKGROUND
from headforms.forms import PARITY_LABELS
from headforms.model_analysis import model_baseline

MODEL = "smollm2-135m"


@pytest.fixture(scope="module")
def positions():
    return sweep(MODEL, "0:16:4")


def heads_traces(data: list[dict]) -> list[dict]:
    return [t for t in data if (t.get("meta") or {}).get("role") == "heads"]


@pytest.mark.parametrize(
    ("view", "columns", "vertices"),
    [
        ("simplex", ("a", "b", "c", "d"), SIMPLEX_VERTICES),
        ("triangle", ("b_sym", "c_sym", "d_sym"), TRIANGLE_VERTICES),
    ],
)
def test_every_frame_draws_every_head_at_its_profile_there(positions, view, columns, vertices):
    fig = json.loads(animated.animated_figure(positions, view, selected=(MODEL, 3, 2)).to_json())
    frames = fig["frames"]
    assert [f["name"] for f in frames] == [str(d) for d in positions.positions]
    steps = fig["layout"]["sliders"][0]["steps"]
    assert [s["args"][0] for s in steps] == [[str(d)] for d in positions.positions]
    base = heads_traces(fig["data"])
    assert [t["meta"]["parity"] for t in base] == list(PARITY_LABELS)
    customdata = [t["customdata"] for t in base]
    for trace in customdata:  # every trace names every head, in table order
        assert [(c[1], c[2]) for c in trace] == [(l, h) for l in range(30) for h in range(9)]
    figure = animated.animated_figure(positions, view, selected=(MODEL, 3, 2))
    index = [i for i, t in enumerate(figure.data) if (t.meta or {}).get("role") == "heads"]
    for point, frame in enumerate(figure.frames):
        heads = positions.heads_at(point)
        want = barycentric_points(heads[list(columns)].to_numpy(float), vertices)
        parts = dict(zip(frame.traces, frame.data, strict=True))
        drawn = np.zeros(len(heads), dtype=int)
        for label, trace_index in zip(PARITY_LABELS, index, strict=True):
            coordinates = np.column_stack(
                [
                    np.asarray(getattr(parts[trace_index], axis), float)
                    for axis in "xyz"[: vertices.shape[1]]
                ]
            )
            here = np.isfinite(coordinates).all(axis=1)
            assert (here == (heads["parity"].to_numpy() == label)).all(), (point, label)
            np.testing.assert_allclose(coordinates[here], want[here], atol=1e-6)  # float32
            drawn += here
        assert (drawn == 1).all()  # each head once, in the trace of its type there


def test_the_selected_head_is_ringed_at_each_point_and_its_path_drawn(positions):
    figure = animated.animated_figure(positions, selected=(MODEL, 3, 2))
    ring = next(i for i, t in enumerate(figure.data) if (t.meta or {}).get("role") == "selected")
    path = next(t for t in figure.data if (t.meta or {}).get("role") == "path")
    curve = positions.path(3, 2)
    want = barycentric_points(curve[list("abcd")].to_numpy(float))
    fixed = [a.text for a in figure.layout.scene.annotations if a.name != "selected"]
    np.testing.assert_allclose(np.column_stack([path.x, path.y, path.z]), want, atol=1e-12)
    for point, frame in enumerate(figure.frames):
        part = dict(zip(frame.traces, frame.data, strict=True))[ring]
        np.testing.assert_allclose([part.x[0], part.y[0], part.z[0]], want[point], atol=1e-6)
        assert list(part.customdata[0]) == [MODEL, 3, 2]
        # its name rides with it, on a background, beside the scene's own labels
        notes = frame.layout.scene.annotations
        (note,) = [a for a in notes if a.name == "selected"]
        np.testing.assert_allclose([note.x, note.y, note.z], want[point], atol=1e-6)
        assert note.bgcolor == LABEL_BACKGROUND and note.text == "<b>L3·H2</b>"
        assert [a.text for a in notes if a.name != "selected"] == fixed
    assert figure.data[ring].mode == "markers"  # no text without a background
    (shown,) = [a for a in figure.layout.scene.annotations if a.name == "selected"]
    np.testing.assert_allclose([shown.x, shown.y, shown.z], want[0], atol=1e-6)  # the start


def test_the_selected_heads_name_in_the_triangle_rides_on_a_background(positions):
    figure = animated.animated_figure(positions, "triangle", selected=(MODEL, 3, 2))
    want = barycentric_points(
        positions.path(3, 2)[["b_sym", "c_sym", "d_sym"]].to_numpy(float), TRIANGLE_VERTICES
    )
    fixed = [a.text for a in figure.layout.annotations if a.name != "selected"]
    assert fixed  # the triangle's vertex and edge labels
    for point, frame in enumerate(figure.frames):
        (note,) = [a for a in frame.layout.annotations if a.name == "selected"]
        np.testing.assert_allclose([note.x, note.y], want[point], atol=1e-6)
        assert (note.xref, note.yref, note.bgcolor) == ("x", "y", LABEL_BACKGROUND)
        assert [a.text for a in frame.layout.annotations if a.name != "selected"] == fixed
    (first,) = [a for a in figure.layout.annotations if a.name == "selected"]
    np.testing.assert_allclose([first.x, first.y], want[0], atol=1e-6)


def test_a_series_path_starts_at_the_gaussian_baseline(tmp_path):
    import tiny_models as tm

    from headforms.series import trajectory

    run = tm.train_run("llama", tmp_path / "run", steps=(0, 2))
    series = trajectory(str(tmp_path / "run"))
    baseline = model_baseline(analyze(str(run[-1])).card).heads
    figure = animated.animated_figure(series, selected=("any", 1, 3), baseline=baseline)
    path = next(t for t in figure.data if (t.meta or {}).get("role") == "path")
    rows = [baseline.iloc[7], *(series.heads_at(i).iloc[7] for i in range(2))]
    want = barycentric_points(np.array([[r[c] for c in "abcd"] for r in rows], dtype=float))
    np.testing.assert_allclose(np.column_stack([path.x, path.y, path.z]), want, atol=1e-12)
    heads = [i for i, t in enumerate(figure.data) if (t.meta or {}).get("role") == "heads"]
    for point, frame in enumerate(figure.frames):  # clicks open each checkpoint's own head
        parts = dict(zip(frame.traces, frame.data, strict=True))
        assert {c[0] for c in parts[heads[0]].customdata} == {str(run[point])}
    every = animated.animated_figure(series, baseline=baseline, every_path=True)
    lines = next(t for t in every.data if (t.meta or {}).get("role") == "paths")
    assert len(lines.x) == series.card.total_heads * (1 + series.n_points + 1)  # + breaks
    assert "follow" not in figure.layout.meta  # a finished series: the slider stays put
    live = animated.animated_figure(series, start=1, follow_last=True)  # a run still recording
    assert live.layout.meta["follow"] is True and live.layout.sliders[0].active == 1


def test_a_continuous_colouring_follows_the_values_at_each_point(positions):
    figure = animated.animated_figure(positions, color_by="energy")
    heads = [i for i, t in enumerate(figure.data) if (t.meta or {}).get("role") == "heads"]
    last = dict(zip(figure.frames[-1].traces, figure.frames[-1].data, strict=True))
    energy = positions.heads_at(positions.n_points - 1)["energy"].to_numpy(float)
    np.testing.assert_allclose(np.asarray(last[heads[0]].marker.color, float), energy, rtol=1e-6)
    assert figure.layout.coloraxis.colorbar.orientation == "v"  # clear of the slider


def test_bad_arguments_are_refused(positions):
    with pytest.raises(ValueError, match="view must be one of"):
        animated.animated_figure(positions, "cube")
    with pytest.raises(ValueError, match="start must be a point"):
        animated.animated_figure(positions, start=99)


def test_curves_draw_the_heads_profile_and_parity():
    result = sweep(MODEL, "0:16:4")
    curves = head_curves(result, 3, 2)
    fig = curve_figures.curves_figure(curves, "rope_position", "Layer 3 · Head 2", MODEL)
    lines = {t.name: t for t in fig.data if t.mode and "lines" in t.mode}
    for name in "abcd":
        np.testing.assert_array_equal(lines[name].y, curves[name].to_numpy(float))
    marks = {t.name: list(t.x) for t in fig.data if t.mode == "markers"}
    for label, name in (("I+", "Type I+"), ("II", "Type II"), ("I-", "Type I−")):
        assert marks[name] == curves[curves["parity"] == label]["rope_position"].tolist()
    assert fig.layout.xaxis2.title.text == "RoPE relative position d"


def test_diff_arrows_join_each_head_of_a_to_the_same_head_of_b():
    a, b = analyze(MODEL), analyze(MODEL, rope_position=40)
    result = ModelDiff(a, b)
    fig = movement_figures.diff_figure(result, "triangle", selected=(MODEL, 2, 1))
    arrows = [x for x in fig.layout.annotations if x.name == "arrow"]
    start = barycentric_points(
        a.heads[["b_sym", "c_sym", "d_sym"]].to_numpy(float), TRIANGLE_VERTICES
    )
    end = barycentric_points(
        b.heads[["b_sym", "c_sym", "d_sym"]].to_numpy(float), TRIANGLE_VERTICES
    )
    moved = np.linalg.norm(end - start, axis=1) > 1e-3
    assert len(arrows) == moved.sum()
    tails = {(round(x.ax, 9), round(x.ay, 9)) for x in arrows}
    assert tails == {(round(s[0], 9), round(s[1], 9)) for s in start[moved]}
    heads = [t for t in fig.data if (t.meta or {}).get("role") == "heads"]
    assert {c[0] for t in heads for c in t.customdata} == {MODEL}  # B's heads open B
    three_d = movement_figures.diff_figure(result, "simplex")
    line = next(t for t in three_d.data if (t.meta or {}).get("role") == "arrows")
    first = barycentric_points(a.heads[list("abcd")].to_numpy(float))
    np.testing.assert_allclose([line.x[0], line.y[0], line.z[0]], first[0], atol=1e-12)


def test_distances_and_the_heads_that_moved_most():
    result = ModelDiff(analyze(MODEL), analyze(MODEL, rope_position=40))
    table = movement(result)
    grid = movement_figures.distance_figure(table, MODEL)
    cells = next(t for t in grid.data if (t.meta or {}).get("role") == "cells")
    np.testing.assert_array_equal(cells.marker.color, table["distance"].to_numpy(float))
    assert grid.layout.coloraxis.cmin == 0.0
    top = moved_most(result, 5)
    bars = movement_figures.moved_most_figure(top, MODEL).data[0]
    np.testing.assert_array_equal(bars.x, top["distance"].to_numpy(float))
    assert [list(c) for c in bars.customdata] == [
        [MODEL, int(l), int(h)] for l, h in zip(top["layer"], top["head"], strict=True)
    ]
    assert (np.diff(top["distance"].to_numpy()) <= 0).all()
