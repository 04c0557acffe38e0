"""The simplex and the triangle on synthetic heads: the parity types' draw order, the selected
head drawn last and kept in the frame, labels on a clear background."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from headforms.figures.camera import view_coordinates
from headforms.figures.geometry import barycentric_points
from headforms.figures.head_markers import PARITY_DRAW_ORDER, selected_on_top
from headforms.figures.simplex import simplex_figure
from headforms.figures.style import LABEL_BACKGROUND, OPACITY_3D
from headforms.figures.triangle import triangle_figure

PROFILE = ["a", "b", "c", "d"]


def crowd(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """``n`` heads near Θ's midpoint (a = b = 1/2), parity types mixed, and one far head,
    L9·H9, near the vertex c."""
    rng = np.random.default_rng(seed)
    profiles = np.abs(np.array([0.48, 0.48, 0.02, 0.02]) + rng.normal(0, 0.01, (n, 4)))
    profiles = np.vstack([profiles, [0.02, 0.03, 0.9, 0.05]])
    profiles /= profiles.sum(axis=1, keepdims=True)
    parity = np.array(["II", "I+", "I-"])[np.arange(n + 1) % 3]
    frame = pd.DataFrame(profiles, columns=PROFILE)
    frame["b_sym"], frame["c_sym"], frame["d_sym"] = 0.9, 0.06, 0.04
    frame["layer"] = np.r_[np.arange(n) // 6, 9]
    frame["head"] = np.r_[np.arange(n) % 6, 9]
    frame["energy"], frame["pairing"], frame["parity"] = 0.5, 0.5, parity
    return frame


def roles(fig: go.Figure) -> list[str | None]:
    return [(t.meta or {}).get("role") for t in fig.data]


@pytest.mark.parametrize("build", [simplex_figure, triangle_figure])
def test_parity_types_are_drawn_in_the_draw_order_and_the_selected_ring_last(build) -> None:
    fig = build({"m": crowd()}, "parity", ("m", 1, 2))
    heads = [t for t in fig.data if (t.meta or {}).get("role") == "heads"]
    assert [t.meta["parity"] for t in heads] == list(PARITY_DRAW_ORDER)
    assert PARITY_DRAW_ORDER[-1] == "II"  # the open circles over the filled diamonds
    assert roles(fig)[-1] == "selected"


def test_in_3d_heads_and_ring_are_all_a_little_transparent_so_trace_order_holds() -> None:
    fig = simplex_figure({"m": crowd()}, "parity", ("m", 1, 2))
    drawn = [t for t in fig.data if (t.meta or {}).get("role") in ("heads", "selected")]
    assert {t.marker.opacity for t in drawn} == {OPACITY_3D}
    assert OPACITY_3D < 1


@pytest.mark.parametrize("selected", [("m", 9, 9), ("m", 0, 0)])
def test_zoomed_to_the_heads_the_selected_head_stays_in_view(selected) -> None:
    heads = crowd()
    fig = simplex_figure({"m": heads}, "parity", selected, frame="heads")
    camera = fig.layout.scene.camera.to_plotly_json()
    row = heads[(heads["layer"] == selected[1]) & (heads["head"] == selected[2])]
    point = barycentric_points(row[PROFILE].to_numpy())
    x, y, depth = view_coordinates(point, camera)[0]
    assert depth > 0 and abs(x) < 0.9 and abs(y) < 0.9


def test_points_kept_in_frame_are_in_view_and_widen_only_as_needed() -> None:
    heads = crowd()[:-1]  # the crowd alone
    far = barycentric_points(np.array([[0.0, 0.0, 0.0, 1.0]]))  # the vertex d
    tight = simplex_figure({"m": heads}, frame="heads").layout.scene.camera.to_plotly_json()
    kept = simplex_figure({"m": heads}, frame="heads", in_frame=far)
    camera = kept.layout.scene.camera.to_plotly_json()
    x, y, depth = view_coordinates(far, camera)[0]
    assert depth > 0 and abs(x) < 0.9 and abs(y) < 0.9
    _, _, tight_depth = view_coordinates(far, tight)[0]
    assert depth > tight_depth  # the camera stepped back for it
    assert not (np.abs(view_coordinates(far, tight)[0][:2]) < 0.9).all()


def test_every_label_has_a_clear_background_and_the_selected_name_an_arrow() -> None:
    heads = crowd()
    for frame in ("simplex", "heads"):
        notes = simplex_figure({"m": heads}, "parity", ("m", 9, 9), frame=frame)
        notes = notes.layout.scene.annotations
        assert notes and all(n.bgcolor == LABEL_BACKGROUND for n in notes)
        (name,) = [n for n in notes if n.name == "selected"]
        assert name.showarrow and name.text == "<b>L9·H9</b>"
    triangle = triangle_figure({"m": heads}, "parity", ("m", 9, 9))
    assert all(n.bgcolor == LABEL_BACKGROUND for n in triangle.layout.annotations if n.text)
    (name,) = [n for n in triangle.layout.annotations if n.name == "selected"]
    assert name.showarrow and name.xref == "x" and name.bordercolor
    (ring,) = [t for t in triangle.data if (t.meta or {}).get("role") == "selected"]
    assert ring.mode == "markers"  # the name is the annotation, not text without background


def test_selected_on_top_moves_only_the_selected_traces_last_in_their_order() -> None:
    fig = go.Figure(
        [
            go.Scatter(name="ring", meta={"role": "selected"}),
            go.Scatter(name="a", meta={"role": "heads"}),
            go.Scatter(name="arrow", meta={"role": "selected"}),
            go.Scatter(name="b"),
        ]
    )
    assert [t.name for t in selected_on_top(fig).data] == ["a", "b", "ring", "arrow"]
