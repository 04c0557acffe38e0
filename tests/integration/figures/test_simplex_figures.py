"""Figure builders of the simplex and the triangle: their geometry, click data, colours, the
chooser's labels, the camera's framing."""

from __future__ import annotations

import colorsys
import itertools
import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from figure_checks import (
    PROFILE,
    SYMMETRIC,
    check_clickable_points,
    points,
    synthetic_heads,
    traces_with,
    valid_heads,
    vertex_coords,
)
from plotly.colors import hex_to_rgb

from headforms import HeadformsError
from headforms.figures import camera as FC
from headforms.figures import simplex as FS
from headforms.figures import style as FT
from headforms.figures import triangle as FTR
from headforms.forms import PARITY_LABELS, head_forms


def test_simplex_vertices_form_a_regular_tetrahedron():
    fig = FS.simplex_figure({"synthetic": synthetic_heads()})
    vertices = vertex_coords(fig)
    assert vertices.shape == (4, 3)
    distances = [np.linalg.norm(p - q) for p, q in itertools.combinations(vertices, 2)]
    np.testing.assert_allclose(distances, distances[0], rtol=1e-12)
    assert distances[0] > 0
    labels = [a for a in fig.layout.scene.annotations if a.name == "vertex"]
    # each vertex says which one it is and what lies over it (Table 3)
    meanings = ("antisymmetric", "H", "P (PSD)", "−P (NSD)")
    for label, letter, meaning in zip(labels, "abcd", meanings, strict=True):
        assert label.text.startswith(f"{letter} = 1") and meaning in label.text
    np.testing.assert_allclose([[a.x, a.y, a.z] for a in labels], vertices)


def test_simplex_edges_cover_all_six_edges():
    """Five solid edges vertex to vertex; the edge {a = b = 0} (c to d) dashed along its line."""
    fig = FS.simplex_figure({"synthetic": synthetic_heads()})
    vertices = vertex_coords(fig)
    vc, vd = vertices[2], vertices[3]
    found, dashes = set(), []
    for trace in traces_with(fig, "edges"):
        xyz = points(trace)
        for start, end in zip(xyz[:-1], xyz[1:], strict=True):
            if np.isnan(start).any() or np.isnan(end).any():
                continue
            gaps = np.linalg.norm(vertices - start, axis=1), np.linalg.norm(vertices - end, axis=1)
            if (
                gaps[0].min() < 1e-12
                and gaps[1].min() < 1e-12
                and {*map(np.argmin, gaps)} != {2, 3}
            ):
                found.add(frozenset((int(np.argmin(gaps[0])), int(np.argmin(gaps[1])))))
                continue
            # a dash: both ends on the segment from c to d
            for point in (start, end):
                t = (point - vc) @ (vd - vc) / ((vd - vc) @ (vd - vc))
                np.testing.assert_allclose(point, vc + t * (vd - vc), atol=1e-12)
                assert -1e-12 <= t <= 1 + 1e-12
            dashes.append(
                sorted(((s_ - vc) @ (vd - vc) / ((vd - vc) @ (vd - vc))) for s_ in (start, end))
            )
    assert found == {frozenset(e) for e in itertools.combinations(range(4), 2)} - {
        frozenset((2, 3))
    }
    dashes.sort()
    assert (
        len(dashes) >= 5 and dashes[0][0] == pytest.approx(0) and dashes[-1][1] == pytest.approx(1)
    )
    covered = sum(b - a for a, b in dashes)
    assert 0.3 < covered < 0.8  # dashed: gaps between the dashes
    assert all(b0 < a1 for (_, b0), (a1, _) in zip(dashes[:-1], dashes[1:], strict=True))


def test_known_profiles_land_at_their_barycentric_points():
    heads = synthetic_heads()
    fig = FS.simplex_figure({"synthetic": heads})
    va, vb, vc, vd = vertex_coords(fig)
    by_head = {}
    for trace in traces_with(fig, "heads"):
        for (_, layer, head), point in zip(trace.customdata, points(trace), strict=True):
            by_head[(layer, head)] = point
    np.testing.assert_allclose(by_head[(0, 0)], 0.1 * va + 0.2 * vb + 0.3 * vc + 0.4 * vd)
    np.testing.assert_allclose(by_head[(0, 1)], va, atol=1e-12)
    np.testing.assert_allclose(by_head[(1, 0)], vc, atol=1e-12)
    np.testing.assert_allclose(by_head[(2, 1)], (va + vb + vc + vd) / 4)
    assert (1, 1) not in by_head  # the vanishing form has no profile


def test_theta_segments_join_c_and_d_to_the_midpoint_of_ab():
    fig = FS.simplex_figure({"synthetic": synthetic_heads()})
    va, vb, vc, vd = vertex_coords(fig)
    (theta,) = traces_with(fig, "theta")
    assert theta.line.color == "red"
    xyz = points(theta)
    segments = [xyz[i : i + 2] for i in range(0, len(xyz), 3)]
    assert all(np.isnan(xyz[i]).all() for i in range(2, len(xyz), 3))
    mid = (va + vb) / 2
    np.testing.assert_allclose(segments[0], [vc, mid], atol=1e-12)
    np.testing.assert_allclose(segments[1], [vd, mid], atol=1e-12)


def distance_to_segment(p: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    t = np.clip((p - start) @ (end - start) / ((end - start) @ (end - start)), 0, 1)
    return float(np.linalg.norm(p - (start + t * (end - start))))


def test_rank_one_forms_are_drawn_on_theta():
    """SPEC fact 1 through the figure: rank-one heads (n = 1) sit on the red segments."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((6, 1, 20))
    k = rng.standard_normal((6, 1, 20))
    k[:3] = np.abs(k[:3]) * np.sign(q[:3])  # some positively aligned pairs
    metrics = head_forms(q, k).metrics()
    heads = pd.DataFrame({col: metrics[col] for col in [*PROFILE, "energy", "pairing"]})
    heads["parity"] = metrics["parity"]
    heads["layer"], heads["head"] = 0, np.arange(6)
    fig = FS.simplex_figure({"rank one": heads})
    (theta,) = traces_with(fig, "theta")
    xyz = points(theta)
    segments = [(xyz[0], xyz[1]), (xyz[3], xyz[4])]
    markers = np.vstack([points(t) for t in traces_with(fig, "heads")])
    assert len(markers) == 6
    for point in markers:
        assert min(distance_to_segment(point, *seg) for seg in segments) < 1e-9


def test_simplex_marker_count_and_customdata_round_trip(minilm):
    heads = minilm.heads
    fig = FS.simplex_figure({"minilm": heads})
    assert check_clickable_points(fig, {"minilm": heads}, PROFILE) == len(
        valid_heads(heads, PROFILE)
    )
    # what the browser receives: JSON lists [str, int, int], one per valid head
    sent = [
        tuple(item)
        for trace in json.loads(fig.to_json())["data"]
        if trace.get("meta", {}).get("role") == "heads"
        for item in trace["customdata"]
    ]
    assert sorted(sent) == sorted(("minilm", int(r.layer), int(r.head)) for r in heads.itertuples())
    synthetic = synthetic_heads()
    fig = FS.simplex_figure({"synthetic": synthetic})
    assert check_clickable_points(fig, {"synthetic": synthetic}, PROFILE) == 4


def test_simplex_traces_are_per_parity_with_palette_and_symbols(minilm):
    fig = FS.simplex_figure({"minilm": minilm.heads})
    head_traces = traces_with(fig, "heads")
    assert len(head_traces) == len(set(minilm.heads["parity"]) & set(PARITY_LABELS))
    symbols = {t.meta["parity"]: t.marker.symbol for t in head_traces}
    assert len(set(symbols.values())) == len(symbols)
    # 3D markers are text glyphs: + for Type I+ and an open circle for Type II, as the
    # captions draw them; never "x" (an emoji glyph, a blank box without an emoji font)
    assert symbols["I+"] == "cross" and symbols["II"] == "circle-open"
    assert all("x" not in symbol.split("-") for symbol in symbols.values())
    for trace in head_traces:
        assert trace.marker.color == FT.PARITY_COLORS[trace.meta["parity"]]
        assert "layer" in trace.text[0] and "energy" in trace.text[0]


PLUS, OPEN_CIRCLE, DASH = "cross-thin-open", "circle-open", "line-ew-open"
"""plotly's 2D symbols that draw a thin +, an open circle and a horizontal dash in the marker
colour (the captions' markers of Type I+, II and I-)."""


@pytest.mark.parametrize("overlay", [False, True])
def test_2d_parity_markers_are_plus_open_circle_and_dash_for_every_model(minilm, smollm, overlay):
    """Figures 2, 8 and 9: + Type I+, open circle Type II, dash Type I-, for every model of the
    figure (an overlaid model keeps the meaning of each shape), drawn with a visible stroke."""
    models = {"smollm2": smollm.heads, **({"minilm": minilm.heads} if overlay else {})}
    fig = FTR.triangle_figure(models)
    expected = {"I+": PLUS, "II": OPEN_CIRCLE, "I-": DASH}
    for trace in traces_with(fig, "heads"):
        assert trace.marker.symbol == expected[trace.meta["parity"]], trace.name
        assert trace.marker.line.width >= 1.5  # line symbols vanish without a stroke
    for trace in traces_with(fig, "heads"):  # the legend names the type (and the model)
        assert trace.name.endswith(FT.PARITY_NAMES[trace.meta["parity"]])
        assert (trace.meta["model"] in trace.name) == overlay


@pytest.mark.parametrize("color_by", ["layer", "energy", "pairing"])
def test_simplex_continuous_colouring_has_a_colour_bar(minilm, color_by):
    heads = minilm.heads
    fig = FS.simplex_figure({"minilm": heads}, color_by=color_by)
    assert fig.layout.coloraxis.colorbar.title.text
    for trace in traces_with(fig, "heads"):
        assert trace.marker.coloraxis == "coloraxis"
        keys = [(layer, head) for _, layer, head in trace.customdata]
        expected = (
            heads.set_index(["layer", "head"], drop=False).loc[keys, color_by].to_numpy(float)
        )
        np.testing.assert_allclose(np.asarray(trace.marker.color, float), expected)
    cmin, cmax = fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax
    values = valid_heads(heads, PROFILE)[color_by]
    assert cmin <= values.min() and values.max() <= cmax
    # the scale spans the heads drawn (not a fixed [0, 1] that crowds them in a few colours)
    assert values.max() == pytest.approx(cmax)
    if color_by != "layer":
        assert values.min() == pytest.approx(cmin)


def relative_luminance(color: str) -> float:
    """WCAG relative luminance of a hex colour (white 1, black 0)."""
    channels = np.array(hex_to_rgb(color)) / 255.0
    linear = np.where(channels <= 0.03928, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


@pytest.mark.parametrize("color_by", ["layer", "energy", "pairing"])
def test_continuous_colours_stay_visible_on_white(minilm, color_by):
    """Every colour a head can take contrasts with the white background (WCAG ratio >= 1.5;
    the old diverging scale was white at 1/2, where most heads' energy lies)."""
    fig = FS.simplex_figure({"minilm": minilm.heads}, color_by=color_by)
    assert fig.layout.template.layout.paper_bgcolor == "white"
    for _, color in fig.layout.coloraxis.colorscale:
        assert 1.05 / (relative_luminance(color) + 0.05) >= 1.5, color


def test_invalid_color_by_is_a_clear_error():
    with pytest.raises(HeadformsError, match="color_by"):
        FS.simplex_figure({"synthetic": synthetic_heads()}, color_by="colour")


def test_overlay_has_one_legend_group_per_model(minilm, smollm):
    models = {"minilm": minilm.heads, "smollm2": smollm.heads}
    fig = FS.simplex_figure(models)
    groups = {t.legendgroup for t in traces_with(fig, "heads")}
    assert groups == set(models)
    total = sum(len(valid_heads(h, PROFILE)) for h in models.values())
    assert check_clickable_points(fig, models, PROFILE) == total
    for name in models:
        assert len([t for t in traces_with(fig, "heads") if t.legendgroup == name]) <= 3


def is_reddish(color: str) -> bool:
    """A saturated colour whose hue is within 20 degrees of red (Theta's red)."""
    r, g, b = (c / 255 for c in hex_to_rgb(color))
    hue, lightness, saturation = colorsys.rgb_to_hls(r, g, b)
    return (hue < 20 / 360 or hue > 340 / 360) and saturation > 0.5 and 0.25 < lightness < 0.75


@pytest.mark.parametrize("three_d", [True, False])
@pytest.mark.parametrize("color_by", ["parity", "energy", "model"])
def test_each_overlaid_model_has_its_own_colour_and_the_same_shapes(
    minilm, smollm, three_d, color_by
):
    models = {"smollm2": smollm.heads, "minilm": minilm.heads, "again": minilm.heads}
    build = FS.simplex_figure if three_d else FTR.triangle_figure
    fig = build(models, color_by=color_by)
    by_model: dict[str, list] = {}
    for trace in traces_with(fig, "heads"):
        by_model.setdefault(trace.legendgroup, []).append(trace)
    overlay_colours = []
    for name in ("minilm", "again"):
        colours = {t.marker.color for t in by_model[name]}
        assert len(colours) == 1  # one colour per overlaid model, whatever the colouring
        (colour,) = colours
        assert not is_reddish(colour), colour
        assert colour.lower() not in {c.lower() for c in FT.PARITY_COLORS.values()}
        overlay_colours.append(colour)
    assert len(set(overlay_colours)) == 2
    # models are told apart by colour: each parity type has one shape whatever the model
    symbols = {n: {t.meta["parity"]: t.marker.symbol for t in by_model[n]} for n in models}
    for parity in PARITY_LABELS:
        assert len({m[parity] for m in symbols.values() if parity in m}) <= 1, parity
    for mapping in symbols.values():  # parity types stay apart within a model
        assert len(set(mapping.values())) == len(mapping)
    if color_by == "model":
        assert not is_reddish(by_model["smollm2"][0].marker.color)


def choice_rows(trace) -> list[tuple[int, int, str, list[float]]]:
    """Parse the chooser entries of a head trace: {'label': 'L3·H5 · I+', 'coords': {...}}."""
    rows = []
    for choice in trace.meta["choices"]:
        name, parity = choice["label"].split(" · ")
        layer, head = map(int, re.fullmatch(r"L(\d+)·H(\d+)", name).groups())
        rows.append((layer, head, parity, list(choice["coords"].values())))
    return rows


@pytest.mark.parametrize("three_d", [True, False])
def test_chooser_labels_name_each_marker_with_its_profile(minilm, three_d):
    """The list shown when markers overlap: one line per marker naming that marker's head."""
    heads = minilm.heads
    columns = PROFILE if three_d else SYMMETRIC
    fig = (FS.simplex_figure if three_d else FTR.triangle_figure)({"minilm": heads})
    indexed = heads.set_index(["layer", "head"])
    for trace in traces_with(fig, "heads"):
        rows = choice_rows(trace)
        assert len(rows) == len(trace.customdata)
        for (layer, head, parity, values), (_, c_layer, c_head) in zip(
            rows, trace.customdata, strict=True
        ):
            assert (layer, head) == (c_layer, c_head)
            assert parity == indexed.loc[(layer, head), "parity"] == trace.meta["parity"]
            np.testing.assert_allclose(
                values, indexed.loc[(layer, head), columns].to_numpy(float), atol=1e-8
            )


def look_at_projection(points: np.ndarray, camera: dict, aspect: float) -> np.ndarray:
    """Screen coordinates in [-1, 1]^2 (and depth) of scene points under a perspective camera
    with plotly's 45° vertical field of view: an independent lookAt + perspective."""
    eye = np.array([camera["eye"][k] for k in "xyz"])
    target = np.array([camera["center"][k] for k in "xyz"])
    up = np.array([camera["up"][k] for k in "xyz"])
    z_axis = eye - target
    z_axis /= np.linalg.norm(z_axis)
    x_axis = np.cross(up, z_axis)
    x_axis /= np.linalg.norm(x_axis)
    y_axis = np.cross(z_axis, x_axis)
    view = (points - eye) @ np.column_stack([x_axis, y_axis, z_axis])
    focal = 1 / np.tan(np.pi / 8)
    depth = -view[:, 2]
    return np.column_stack([focal * view[:, 0] / depth / aspect, focal * view[:, 1] / depth, depth])


def scene_points(fig: go.Figure, cartesian: np.ndarray) -> np.ndarray:
    """Cartesian points in plotly's normalised scene coordinates, from the layout's own axis
    ranges and aspect ratio (each range maps to [-ratio/2, ratio/2])."""
    scene = fig.layout.scene
    lows = np.array([scene[f"{a}axis"].range[0] for a in "xyz"])
    highs = np.array([scene[f"{a}axis"].range[1] for a in "xyz"])
    ratio = np.array([scene.aspectratio[a] for a in "xyz"])
    return ratio * (cartesian - (lows + highs) / 2) / (highs - lows)


def head_points(fig: go.Figure) -> np.ndarray:
    return np.vstack([points(t) for t in traces_with(fig, "heads")])


def on_screen(fig: go.Figure, cartesian: np.ndarray) -> np.ndarray:
    camera = fig.layout.scene.camera.to_plotly_json()
    return look_at_projection(scene_points(fig, cartesian), camera, FC.VIEW_ASPECT)


def visible(screen: np.ndarray) -> np.ndarray:
    return (np.abs(screen[:, :2]) <= 1).all(axis=1) & (screen[:, 2] > 0)


@pytest.mark.parametrize("model", ["smollm", "minilm"])
def test_fit_to_heads_frames_most_heads_and_pulls_the_crowd_apart(request, model):
    heads = request.getfixturevalue(model).heads
    screens = {}
    for frame in FS.FRAMES:
        fig = FS.simplex_figure({"m": heads}, frame=frame)
        xyz = head_points(fig)
        screens[frame] = on_screen(fig, xyz)
        # the axis ranges never clip: every head lies inside the scene's box in both frames
        for i, axis in enumerate("xyz"):
            low, high = fig.layout.scene[f"{axis}axis"].range
            assert (xyz[:, i] >= low).all() and (xyz[:, i] <= high).all()
    assert visible(screens["simplex"]).all()
    whole = FS.simplex_figure({"m": heads}, frame="simplex")
    assert visible(on_screen(whole, vertex_coords(whole))).all()
    fig = FS.simplex_figure({"m": heads}, frame="heads")
    assert visible(screens["heads"]).mean() >= FC.FRAMED_SHARE  # what the caption promises
    # the camera turns about the heads' median profile
    xyz = head_points(fig)
    centre = np.median(xyz, axis=0)
    camera = fig.layout.scene.camera
    np.testing.assert_allclose(
        [camera.center[k] for k in "xyz"], scene_points(fig, centre[None, :])[0], atol=1e-9
    )
    # the crowd (the half of the heads nearest the median) is spread over more of the plot
    crowd = np.argsort(np.linalg.norm(xyz - centre, axis=1))[: len(xyz) // 2]

    def spread(screen: np.ndarray) -> float:
        part = screen[crowd, :2]
        return float(np.median(np.linalg.norm(part - part.mean(axis=0), axis=1)))

    assert spread(screens["heads"]) >= 3 * spread(screens["simplex"])


def test_fit_to_heads_points_to_the_vertices_out_of_view(smollm):
    fig = FS.simplex_figure({"m": smollm.heads}, frame="heads")
    annotations = fig.layout.scene.annotations
    vertices = {
        a.text.replace("<br>", " "): np.array([a.x, a.y, a.z])
        for a in annotations
        if a.name == "vertex"
    }
    hints = {
        a.text.removeprefix("→ toward "): np.array([a.x, a.y, a.z])
        for a in annotations
        if a.name == "hint"
    }
    assert hints  # the crowd is far from at least one vertex
    centre = np.median(head_points(fig), axis=0)
    anchors = {a.text.replace("<br>", " "): a for a in annotations if a.name == "vertex"}
    for text, vertex in vertices.items():
        screen = on_screen(fig, vertex[None, :])
        shown = bool(visible(screen)[0])
        assert (text in hints) != shown, text
        if shown and abs(screen[0, 0]) > 0.5:  # near a side: the label grows toward the middle
            assert anchors[text].xanchor == ("left" if screen[0, 0] < 0 else "right"), text
        if text in hints:
            hint = hints[text]
            assert visible(on_screen(fig, hint[None, :]))[0]
            # on the segment from the framed centre toward the vertex
            direction = (vertex - centre) / np.linalg.norm(vertex - centre)
            offset = hint - centre
            np.testing.assert_allclose(offset, (offset @ direction) * direction, atol=1e-9)
            assert 0 < offset @ direction < np.linalg.norm(vertex - centre)
    with pytest.raises(HeadformsError, match="frame"):
        FS.simplex_figure({"m": smollm.heads}, frame="zoomed")


@pytest.mark.parametrize("frame", ["simplex", "heads"])
def test_selected_head_is_ringed_larger_and_labelled_inside_the_frame(minilm, frame):
    heads = minilm.heads
    fig = FS.simplex_figure({"minilm": heads}, selected=("minilm", 2, 5), frame=frame)
    row = heads[(heads["layer"] == 2) & (heads["head"] == 5)][PROFILE].to_numpy(float)
    where = (row @ vertex_coords(fig))[0]
    (label,) = [a for a in fig.layout.scene.annotations if a.name == "selected"]
    assert "L2·H5" in label.text and label.showarrow and label.font.size >= 11
    np.testing.assert_allclose([label.x, label.y, label.z], where)
    # the head is in view, its label's box toward the middle of the view: inside the frame
    assert visible(on_screen(fig, where[None, :]))[0]
    x, y, _ = on_screen(fig, where[None, :])[0]
    assert np.sign(label.ax) == -np.sign(x) or abs(x) < 0.2
    assert np.sign(label.ay) == np.sign(y) or abs(y) < 0.3  # screen y grows downward
    # every head marker has one size per trace (plotly.js shrinks per-point size arrays);
    # the selected head gets a larger black ring of its own, clickable like its marker
    head_sizes = {float(t.marker.size) for t in traces_with(fig, "heads")}
    assert all(np.ndim(t.marker.size) == 0 for t in traces_with(fig, "heads"))
    (ring,) = traces_with(fig, "selected")
    assert tuple(ring.customdata[0]) == ("minilm", 2, 5)
    np.testing.assert_allclose(points(ring)[0], where)
    assert ring.marker.size > max(head_sizes) and ring.marker.symbol == "circle-open"
    plain = FS.simplex_figure({"minilm": heads})
    assert not [a for a in plain.layout.scene.annotations if a.name == "selected"]
    other = FS.simplex_figure({"minilm": heads}, selected=("other", 2, 5))
    assert not [a for a in other.layout.scene.annotations if a.name == "selected"]
    assert not traces_with(other, "selected")


def test_zoomed_to_the_heads_the_selected_outlier_stays_in_view(smollm):
    """The head farthest from the crowd, selected, is inside the zoomed frame."""
    heads = smollm.heads
    xyz = heads[PROFILE].to_numpy(float) @ vertex_coords(FS.simplex_figure({"m": heads}))
    far = int(np.argmax(np.linalg.norm(xyz - np.median(xyz, axis=0), axis=1)))
    selected = ("m", int(heads["layer"].iloc[far]), int(heads["head"].iloc[far]))
    plain = FS.simplex_figure({"m": heads}, frame="heads")
    assert not visible(on_screen(plain, xyz[far][None, :]))[0]  # out of the usual frame
    fig = FS.simplex_figure({"m": heads}, frame="heads", selected=selected)
    assert visible(on_screen(fig, xyz[far][None, :]))[0]


def test_the_whole_tetrahedron_is_the_default_view(smollm):
    """The default 3D view shows every vertex and every head, with the faces labelled."""
    fig = FS.simplex_figure({"m": smollm.heads})
    assert fig.layout.meta["frame"] == "simplex"
    assert visible(on_screen(fig, vertex_coords(fig))).all()
    assert visible(on_screen(fig, head_points(fig))).all()
    faces = {a.text.split(":")[0] for a in fig.layout.scene.annotations if a.name == "facet"}
    assert faces == {"a = 0", "b = 0", "c = 0", "d = 0"}
    # no filled face: plotly.js would pick it instead of the heads behind it
    assert all(trace.type == "scatter3d" for trace in fig.data)


def test_simplex_layout_keeps_the_camera_and_hides_axes(minilm):
    one = FS.simplex_figure({"minilm": minilm.heads})
    two = FS.simplex_figure({"minilm": minilm.heads}, color_by="energy", selected=("minilm", 0, 0))
    assert one.layout.uirevision == two.layout.uirevision == FT.UIREVISION
    assert isinstance(one.layout.uirevision, str)
    assert one.layout.scene.xaxis.visible is False
    assert one.layout.scene.camera.eye.y is not None
    assert one.layout.title.text and one.layout.template.layout.paper_bgcolor == "white"


def test_triangle_geometry_band_and_points(minilm):
    heads = minilm.heads
    fig = FTR.triangle_figure({"minilm": heads}, selected=("minilm", 1, 2))
    assert all(isinstance(t, go.Scatter) for t in fig.data)
    vertices = vertex_coords(fig)
    labels = [a.text for a in fig.layout.annotations if a.name == "vertex"]
    # as Figure 10 draws the edge {d = 0}: c = 1 left, b = 1 right, horizontal; d on top
    assert [label.split(" = ")[0] for label in labels] == ["b_S", "c_S", "d_S"]
    vb, vc, vd = vertices
    assert vc[0] < vb[0] and vc[1] == vb[1] < vd[1]
    edges = {a.text.split(":")[0] for a in fig.layout.annotations if a.name == "edge"}
    assert edges == {"d_S = 0", "c_S = 0", "b_S = 0"}  # labelled as in Figure 7
    sides = [np.linalg.norm(p - q) for p, q in itertools.combinations(vertices, 2)]
    np.testing.assert_allclose(sides, sides[0], rtol=1e-12)
    ends = np.vstack([points(t) for t in traces_with(fig, "edges")])
    ends = np.unique(ends[~np.isnan(ends).any(axis=1)].round(12), axis=0)
    np.testing.assert_allclose(np.sort(ends, axis=0), np.sort(vertices, axis=0), atol=1e-12)
    selectable = [t for t in fig.data if "markers" in (t.mode or "") or "text" in (t.mode or "")]
    assert all(t.customdata is not None for t in selectable)  # selections hold heads only
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    (band,) = traces_with(fig, "band")
    corners = points(band)[:3]
    vb, vc, vd = vertices
    np.testing.assert_allclose(corners, [vb, 0.98 * vb + 0.02 * vc, 0.98 * vb + 0.02 * vd])
    assert check_clickable_points(fig, {"minilm": heads}, SYMMETRIC) == len(
        valid_heads(heads, SYMMETRIC)
    )
    (sel,) = traces_with(fig, "selected")
    assert tuple(sel.customdata[0]) == ("minilm", 1, 2)
    # every Type II head lies inside the band polygon (b_S >= 0.98), beside the vertex b = 1
    # on the right
    for trace in traces_with(fig, "heads"):
        if trace.meta["parity"] == "II":
            assert (points(trace)[:, 0] >= corners[1:, 0].min() - 1e-12).all()
