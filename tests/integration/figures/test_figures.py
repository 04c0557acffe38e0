"""Figure builders: geometry of the simplex and triangle, click data, colour scales, titles."""

from __future__ import annotations

import colorsys
import itertools
import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.colors import hex_to_rgb

from headforms import HeadformsError, analyze
from headforms.analyses.parity import parity_by_layer
from headforms.columns import ALL_SPECTRA
from headforms.figures import camera as FC
from headforms.figures import export as FE
from headforms.figures import head as FH
from headforms.figures import heatmaps as FM
from headforms.figures import parity as FP
from headforms.figures import simplex as FS
from headforms.figures import style as FT
from headforms.figures import triangle as FTR
from headforms.forms import PARITY_LABELS, head_forms
from headforms.model_analysis import model_baseline

PROFILE = ["a", "b", "c", "d"]
SYMMETRIC = ["b_sym", "c_sym", "d_sym"]


@pytest.fixture(scope="module")
def minilm():
    return analyze("minilm-l6", spectra=ALL_SPECTRA)


@pytest.fixture(scope="module")
def smollm():
    return analyze("smollm2-135m", spectra=ALL_SPECTRA)


def synthetic_heads() -> pd.DataFrame:
    """Four heads with hand-picked profiles, plus one vanishing form (parity 'zero', NaNs)."""
    rows = [
        # layer, head, a, b, c, d, b_sym, c_sym, d_sym, energy, pairing, parity
        (0, 0, 0.1, 0.2, 0.3, 0.4, 0.2, 0.35, 0.45, 0.9, 0.4, "I-"),
        (0, 1, 1.0, 0.0, 0.0, 0.0, 0.99, 0.005, 0.005, 0.0, 0.95, "II"),
        (1, 0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, "I+"),
        (1, 1, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, "zero"),
        (2, 1, 0.25, 0.25, 0.25, 0.25, 0.5, 0.3, 0.2, 0.75, 0.7, "I+"),
    ]
    cols = ["layer", "head", *PROFILE, *SYMMETRIC, "energy", "pairing", "parity"]
    return pd.DataFrame(rows, columns=cols)


def synthetic_baseline() -> pd.DataFrame:
    """A baseline table for :func:`synthetic_heads` (same rows)."""
    frame = synthetic_heads()[["layer", "head"]].copy()
    frame["energy"] = [0.51, 0.49, 0.5, 0.5, 0.52]
    frame["pairing"] = [0.97, 0.96, 0.98, 0.97, 0.95]
    return frame


def traces_with(fig: go.Figure, role: str) -> list:
    return [t for t in fig.data if isinstance(t.meta, dict) and t.meta.get("role") == role]


def points(trace) -> np.ndarray:
    coords = [trace.x, trace.y] + ([trace.z] if hasattr(trace, "z") else [])
    return np.column_stack([np.asarray(c, dtype=float) for c in coords])


def vertex_coords(fig: go.Figure) -> np.ndarray:
    """The vertex label annotations: the simplex's in its 3D scene, the triangle's in 2D."""
    if fig.layout.scene.annotations:
        return np.array(
            [[a.x, a.y, a.z] for a in fig.layout.scene.annotations if a.name == "vertex"]
        )
    return np.array([[a.x, a.y] for a in fig.layout.annotations if a.name == "vertex"])


def valid_heads(heads: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    ok = heads["parity"].isin(PARITY_LABELS) & np.isfinite(heads[columns]).all(axis=1)
    return heads[ok]


def check_clickable_points(fig: go.Figure, models: dict, columns: list[str]) -> int:
    """Each head marker's customdata names a head whose profile maps to that marker."""
    vertices = vertex_coords(fig)
    seen = 0
    for trace in traces_with(fig, "heads"):
        xyz = points(trace)
        for (model, layer, head), point in zip(trace.customdata, xyz, strict=True):
            assert isinstance(model, str) and isinstance(layer, int) and isinstance(head, int)
            frame = models[model]
            row = frame[(frame["layer"] == layer) & (frame["head"] == head)]
            assert len(row) == 1
            assert row["parity"].iloc[0] == trace.meta["parity"]
            expected = row[columns].to_numpy(float)[0] @ vertices
            np.testing.assert_allclose(point, expected, atol=1e-9)
            seen += 1
    return seen


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


def test_heatmap_pair_shares_a_diverging_scale_white_at_half(minilm):
    heads, base = minilm.heads, model_baseline(minilm.card).heads
    fig = FM.heatmap_pair_figure(heads, base, "energy", "minilm", selected=("minilm", 3, 7))
    axis = fig.layout.coloraxis
    assert (axis.cmin + axis.cmax) / 2 == pytest.approx(0.5)
    for values in (heads["energy"], base["energy"]):
        assert axis.cmin <= values.min() and values.max() <= axis.cmax
    scale = dict((pos, color) for pos, color in axis.colorscale)
    assert hex_to_rgb(scale[0.5]) == (255, 255, 255)
    low = hex_to_rgb(scale[0.0])
    assert low[2] > low[0]  # blue below
    high = hex_to_rgb(scale[1.0])
    assert high[0] > high[2]  # red above
    cells = traces_with(fig, "cells")
    assert [t.meta["panel"] for t in cells] == ["trained", "baseline"]
    assert {t.xaxis for t in cells} == {"x", "x2"}
    for trace, values in zip(cells, (heads["energy"], base["energy"]), strict=True):
        assert trace.marker.coloraxis == "coloraxis"
        assert trace.marker.symbol == "square"
        np.testing.assert_allclose(np.asarray(trace.marker.color, float), values)
        for (model, layer, head), x, y in zip(trace.customdata, trace.x, trace.y, strict=True):
            assert (model, layer, head) == ("minilm", y, x)
    assert sum(1 for t in fig.data if getattr(t.marker, "showscale", None)) == 0
    # the selected head is outlined in both panels: exactly its cell, in data coordinates
    outlines = [shape for shape in fig.layout.shapes if shape.name == "selected"]
    assert sorted(shape.xref for shape in outlines) == ["x", "x2"]
    for shape in outlines:
        assert (shape.x0, shape.x1, shape.y0, shape.y1) == (6.5, 7.5, 2.5, 3.5)
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


def test_heatmaps_of_several_models_side_by_side_on_one_scale(minilm, smollm):
    models = {"minilm": minilm.heads, "smollm": smollm.heads}
    fig = FM.heatmap_models_figure(models, "pairing", selected=("smollm", 29, 8))
    cells = traces_with(fig, "cells")
    assert [t.meta["panel"] for t in cells] == ["minilm", "smollm"]
    for trace, (name, heads) in zip(cells, models.items(), strict=True):
        np.testing.assert_allclose(np.asarray(trace.marker.color, float), heads["pairing"])
        assert {tuple(c) for c in trace.customdata} == {
            (name, int(layer), int(head))
            for layer, head in zip(heads["layer"], heads["head"], strict=True)
        }
    axis = fig.layout.coloraxis
    every = np.concatenate([heads["pairing"].to_numpy() for heads in models.values()])
    assert axis.cmin <= every.min() and every.max() <= axis.cmax
    assert (axis.cmin + axis.cmax) / 2 == pytest.approx(0.5)
    # each panel spans its own grid (6 x 12 and 30 x 9)
    assert tuple(fig.layout.yaxis.range) == (5.5, -0.5) and tuple(fig.layout.xaxis.range) == (
        -0.5,
        11.5,
    )
    assert tuple(fig.layout.yaxis2.range) == (29.5, -0.5)
    outlines = [shape for shape in fig.layout.shapes if shape.name == "selected"]
    assert [(s.xref, s.x0, s.y0) for s in outlines] == [("x2", 7.5, 28.5)]
    with pytest.raises(HeadformsError, match="no column 'balance'"):
        FM.heatmap_models_figure({"m": minilm.heads.drop(columns="balance")}, "balance")


def test_heatmap_range_is_symmetric_about_half_and_covers_both_panels():
    heads, base = synthetic_heads(), synthetic_baseline()
    fig = FM.heatmap_pair_figure(heads, base, "pairing", "synthetic")
    axis = fig.layout.coloraxis
    assert axis.cmin == pytest.approx(0.0) and axis.cmax == pytest.approx(1.0)
    with pytest.raises(HeadformsError, match="baseline has no column 'balance'"):
        FM.heatmap_pair_figure(heads.assign(balance=1.0), base, "balance", "synthetic")
    with pytest.raises(HeadformsError, match="not the same shapes"):
        FM.heatmap_pair_figure(heads, base.iloc[:3], "pairing", "synthetic")


def test_heatmap_marker_size_shrinks_with_the_grid(minilm, smollm):
    small = FM.heatmap_pair_figure(
        minilm.heads, model_baseline(minilm.card).heads, "energy", "minilm"
    )
    large = FM.heatmap_pair_figure(
        smollm.heads, model_baseline(smollm.card).heads, "energy", "smollm"
    )
    assert traces_with(large, "cells")[0].marker.size < traces_with(small, "cells")[0].marker.size


def test_eigenvalue_histogram_counts_nonzero_eigenvalues_scaled_by_norm(minilm):
    eig = minilm.spectra["eig_s"][4].copy()
    eig[-3:] = 0.0  # pretend three are exact zeros
    fig = FH.eigenvalue_histogram(
        eig, model_baseline(minilm.card).spectra["eig_s"][4], title="L0H4"
    )
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert sum(float(np.sum(b.y)) for b in bars) == pytest.approx(np.count_nonzero(eig))
    positive, negative = bars
    assert (np.asarray(positive.x) > 0).all() and (np.asarray(negative.x) < 0).all()
    assert positive.marker.color != negative.marker.color
    assert float(np.sum(positive.y)) == np.count_nonzero(eig > 0)
    extent = max(np.abs(np.asarray(b.x)).max() for b in bars)
    assert extent <= np.abs(eig).max() / np.linalg.norm(eig) + 1e-12
    assert "3 exactly 0" in fig.layout.title.text and f"2n = {eig.size}" in fig.layout.title.text
    assert "‖S‖" in fig.layout.xaxis.title.text
    (outline,) = [t for t in fig.data if isinstance(t, go.Scatter)]
    assert "baseline" in outline.name


def test_eigenvalue_histogram_pools_several_heads_per_head(minilm):
    eig = minilm.spectra["eig_s"]
    fig = FH.eigenvalue_histogram(eig, model_baseline(minilm.card).spectra["eig_s"])
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    total = sum(float(np.sum(b.y)) for b in bars)
    assert total == pytest.approx(np.count_nonzero(eig) / eig.shape[0])


def test_lobes_figure_accepts_lobes_or_eigenvalues_for_the_baseline(minilm):
    sp = minilm.spectra
    i = 7
    pos, neg = sp["lobe_pos"][i], sp["lobe_neg"][i]
    rand = model_baseline(minilm.card).spectra["eig_s"][i]
    rpos = np.sort(rand[rand > 0])[::-1]
    rneg = np.sort(-rand[rand < 0])[::-1]
    by_lobes = FH.lobes_figure(pos, neg, rpos, rneg)
    by_eigs = FH.lobes_figure(pos, neg, rand)
    head, base = by_lobes.data[1], by_lobes.data[2]
    norm = np.sqrt(np.sum(sp["eig_s"][i] ** 2))
    keep = (pos > 0) | (neg > 0)
    np.testing.assert_allclose(head.x, pos[keep] / norm)
    np.testing.assert_allclose(head.y, neg[keep] / norm)
    np.testing.assert_allclose(by_eigs.data[2].x, base.x)
    np.testing.assert_allclose(by_eigs.data[2].y, base.y)
    diagonal = by_lobes.data[0]
    assert list(diagonal.x) == list(diagonal.y)


def test_singular_values_figure_keeps_distinct_values(minilm):
    sv = minilm.spectra["sv_a"][3]
    fig = FH.singular_values_figure(sv, model_baseline(minilm.card).spectra["sv_a"][3])
    head, base = fig.data
    n = minilm.card.head_dim
    assert len(head.y) == len(base.y) == n
    assert float(np.sum(np.square(head.y))) == pytest.approx(1.0)
    assert list(head.x) == list(range(1, n + 1))
    # every singular value of A appears twice (A's eigenvalues are +-i sigma): the figure shows
    # each pair once, scaled so that the distinct values have unit length
    scale = np.sqrt(np.sum(np.square(sv)) / 2)
    np.testing.assert_allclose(
        np.repeat(np.asarray(head.y, dtype=float), 2) * scale, np.sort(sv)[::-1], rtol=1e-12
    )


def test_figure_12_is_a_white_to_black_grid_of_each_layers_parity_shares(minilm, smollm):
    """Figure 12 as the paper draws it: per model a type x layer grid, one shared scale from
    white (0%) to black (100%), each layer's column the percent of its heads of each type, drawn
    as vector cells."""
    frames = {"minilm": parity_by_layer(minilm.heads), "smollm": parity_by_layer(smollm.heads)}
    fig = FP.parity_by_layer_figure(frames)
    grids = traces_with(fig, "cells")
    assert [t.name for t in grids] == list(frames)
    scale = fig.layout.coloraxis
    assert (scale.cmin, scale.cmax) == (0, 100)
    assert [tuple(stop) for stop in scale.colorscale] == [(0.0, "#ffffff"), (1.0, "#000000")]
    assert all(t.marker.coloraxis == "coloraxis" for t in grids)  # one scale for every model
    cells = {(s.xref, round(s.x0 + 0.5), round(s.y0 + 0.5)): s.fillcolor for s in fig.layout.shapes}
    for index, (trace, analysis) in enumerate(zip(grids, (minilm, smollm), strict=True)):
        heads = analysis.heads
        xref = "x" if index == 0 else f"x{index + 1}"
        for layer, row, percent in zip(trace.x, trace.y, trace.marker.color, strict=True):
            parity = PARITY_LABELS[int(row)]
            in_layer = heads[heads["layer"] == layer]["parity"]
            assert percent == pytest.approx(100 * (in_layer == parity).mean())
            level = round(255 * (1 - percent / 100))  # white at 0 %, black at 100 %
            assert cells[(xref, int(layer), int(row))] == f"rgb({level},{level},{level})"
        totals = pd.Series(trace.marker.color).groupby(np.asarray(trace.x)).sum()
        np.testing.assert_allclose(totals.to_numpy(), 100.0)
    assert FE.exports_as_vector(fig)


def test_profile_bar_figure_uses_the_baseline_columns(minilm):
    row, base_row = minilm.heads.iloc[5], model_baseline(minilm.card).heads.iloc[5]
    fig = FH.profile_bar_figure(row, base_row)
    head, base = fig.data
    np.testing.assert_allclose(head.y[:4], row[PROFILE].to_numpy(float))
    np.testing.assert_allclose(base.y[:4], base_row[PROFILE].to_numpy(float))


def all_figures(analysis) -> dict[str, go.Figure]:
    heads, sp = analysis.heads, analysis.spectra
    base, bsp = model_baseline(analysis.card).heads, model_baseline(analysis.card).spectra
    models = {"m": heads}
    return {
        "simplex": FS.simplex_figure(models),
        "triangle": FTR.triangle_figure(models, color_by="layer"),
        "histogram": FH.eigenvalue_histogram(sp["eig_s"][0], bsp["eig_s"][0]),
        "lobes": FH.lobes_figure(sp["lobe_pos"][0], sp["lobe_neg"][0], bsp["eig_s"][0]),
        "singular": FH.singular_values_figure(sp["sv_a"][0], bsp["sv_a"][0]),
        "heatmap": FM.heatmap_pair_figure(heads, base, "pairing", "m"),
        "parity": FP.parity_by_layer_figure({"m": parity_by_layer(heads)}),
        "profile": FH.profile_bar_figure(heads.iloc[0], base.iloc[0]),
    }


def test_every_figure_has_titles_and_the_template(minilm):
    for name, fig in all_figures(minilm).items():
        assert fig.layout.title.text, name
        assert fig.layout.template.layout.paper_bgcolor == "white", name
        if name == "simplex":
            assert all(fig.layout.scene[a].title.text for a in ("xaxis", "yaxis", "zaxis"))
            continue
        if name == "triangle":  # barycentric: the vertex labels name the directions, no axes
            assert len(vertex_coords(fig)) == 3 and not fig.layout.xaxis.showticklabels
            continue
        axes = [k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert {"xaxis", "yaxis"} <= set(axes), name
        titled = [fig.layout[k].title.text for k in axes if fig.layout[k].title.text]
        assert len(titled) >= 2, name


def test_one_colour_scale_across_models_white_at_one_half(minilm, smollm):
    """Figures 13/14 of several models on one scale: the same range for every model's pair,
    symmetric about 1/2 (white), covering every trained and baseline value; per model, the
    ranges differ (so the shared scale is what makes colours comparable)."""
    tables = {"minilm": minilm, "smollm": smollm}
    for column in ("energy", "pairing"):
        values = [t.heads[column] for t in tables.values()]
        values += [model_baseline(t.card).heads[column] for t in tables.values()]
        scale = FM.heatmap_range(values)
        assert (scale[0] + scale[1]) / 2 == pytest.approx(0.5)
        own = []
        for name, analysis in tables.items():
            heads, base = analysis.heads, model_baseline(analysis.card).heads
            fig = FM.heatmap_pair_figure(heads, base, column, name, color_range=scale)
            axis = fig.layout.coloraxis
            assert (axis.cmin, axis.cmax) == scale
            assert axis.colorscale[len(axis.colorscale) // 2][1].lower() == "#ffffff"
            for trace in traces_with(fig, "cells"):
                drawn = np.asarray(trace.marker.color, float)
                drawn = drawn[np.isfinite(drawn)]
                assert scale[0] <= drawn.min() and drawn.max() <= scale[1]
            alone = FM.heatmap_pair_figure(heads, base, column, name).layout.coloraxis
            own.append((alone.cmin, alone.cmax))
        assert own[0] != own[1]


def test_2d_figures_export_as_vector_svg_and_3d_ones_as_high_resolution_png(smollm):
    """The toolbar offers SVG only for figures drawn entirely as SVG elements; a WebGL scene or
    an image trace would be a raster picture inside the SVG."""
    from headforms.analyses import spectra as sp
    from headforms.figures import spectra as FSP

    figures = all_figures(smollm)
    eig_s = smollm.spectra["eig_s"]
    clusters = sp.cluster_spectra(eig_s, 3)
    summary, means = sp.cluster_summary(smollm.heads, eig_s, clusters)
    figures["fig4"] = FSP.cluster_spectra_figure(summary, means, "m", None, clusters.places)
    figures["fig3"] = FSP.mean_spectrum_figure(sp.mean_unit_spectrum(eig_s))
    for name, fig in figures.items():
        assert FE.exports_as_vector(fig) == (name != "simplex"), name
    assert not FE.exports_as_vector(go.Figure(go.Heatmap(z=[[1, 2]])))  # an <image> in SVG


def test_figures_serialise_to_json(smollm):
    """The dashboard sends figures to plotly.js as JSON: every builder's output must survive
    the round trip with every trace and every point (numpy arrays become typed arrays)."""
    import base64

    def decoded(values: object) -> np.ndarray:
        if isinstance(values, dict):  # a typed array: {"dtype": ..., "bdata": base64[, "shape"]}
            flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
            shape = [int(n) for n in str(values.get("shape", len(flat))).split(",")]
            return flat.reshape(shape)
        return np.asarray(values)

    for name, fig in all_figures(smollm).items():
        back = json.loads(fig.to_json())
        assert len(back["data"]) == len(fig.data), name
        for original, sent in zip(fig.data, back["data"], strict=True):
            for axis in ("x", "y", "z"):
                values = getattr(original, axis, None)
                if values is not None and np.asarray(values).dtype.kind in "fiu":
                    np.testing.assert_array_equal(
                        decoded(sent[axis]), np.asarray(values), err_msg=f"{name} {axis}"
                    )
        assert back["layout"]["title"]["text"] == fig.layout.title.text, name


def test_profile_and_heatmap_tables_hold_what_is_drawn(minilm, smollm):
    models = {"minilm": minilm.heads, "smollm2": smollm.heads}
    table = FS.profile_table(models)
    assert len(table) == sum(len(h) for h in models.values())
    fig = FS.simplex_figure(models)
    drawn = {}
    for trace in traces_with(fig, "heads"):
        for (model, layer, head), point in zip(trace.customdata, points(trace), strict=True):
            drawn[(model, layer, head)] = point
    vertices = vertex_coords(fig)
    for row in table.itertuples():
        point = drawn.get((row.model, row.layer, row.head))
        if point is not None:  # every drawn marker is the table's profile
            np.testing.assert_allclose(point, np.array([row.a, row.b, row.c, row.d]) @ vertices)
    assert len(drawn) == len(valid_heads(table, PROFILE))
    heads, base = minilm.heads, model_baseline(minilm.card).heads
    cells = FM.heatmap_table(heads, base, "pairing")
    np.testing.assert_array_equal(cells["pairing"], heads["pairing"])
    np.testing.assert_array_equal(cells["rand_pairing"], base["pairing"])
    assert list(cells.columns) == ["layer", "head", "pairing", "rand_pairing"]


def test_figure_table_reads_back_every_data_point(minilm):
    from headforms.figures.export import figure_table

    heads, base = minilm.heads, model_baseline(minilm.card).heads
    fig = FM.heatmap_pair_figure(heads, base, "energy", "minilm", selected=("minilm", 1, 1))
    table = figure_table(fig)
    assert set(table["trace"]) == {"trained", "baseline"}  # no selection ring
    trained = table[table["trace"] == "trained"].sort_values(["layer", "head"])
    np.testing.assert_allclose(trained["value"], heads.sort_values(["layer", "head"])["energy"])
    np.testing.assert_array_equal(trained["x"].astype(int), trained["head"].astype(int))
    eig = minilm.spectra["eig_s"][3]
    hist = figure_table(
        FH.eigenvalue_histogram(eig, model_baseline(minilm.card).spectra["eig_s"][3])
    )
    bars = hist[hist["trace"].str.contains("lobe")]
    assert bars["y"].astype(float).sum() == pytest.approx(np.count_nonzero(eig))
    assert "Gaussian baseline" in set(hist["trace"])
    geometry = figure_table(FS.simplex_figure({"minilm": heads}))
    assert set(geometry["trace"]) <= {f"Type {p}" for p in ("I+", "II", "I−")}
    assert len(geometry) == len(valid_heads(heads, PROFILE))


def test_fit_head_figure_frames_the_lobe_not_its_farthest_eigenvalue():
    from headforms.analyses import fits
    from headforms.figures.fits import FIT_VIEW_MASS, fit_head_figure

    rng = np.random.default_rng(3)
    lobe = np.sort(rng.gamma(2.0, 1.0, 64))[::-1]
    lobe[0] = 60.0  # one far eigenvalue: 20 equal bins would put the rest in the first few
    spectra = {"lobe_pos": lobe[None, :], "lobe_neg": np.sort(rng.gamma(3.0, 1.0, 64))[::-1][None]}
    result = fits.fit_lobes(spectra)
    hist, curves = fits.head_histograms(result, 0), fits.head_fit_curves(result, 0)
    fig = fit_head_figure(hist, curves, "synthetic")
    plus = hist[hist["lobe"] == "+"]
    unit = lobe / lobe.mean()
    x_end = fig.layout.xaxis.range[1]
    assert x_end < unit.max() / 2  # the view is not stretched to the far eigenvalue
    assert np.mean(unit <= x_end) >= FIT_VIEW_MASS - 1 / unit.size
    beyond = 1 - (plus["height"] * plus["width"])[plus["centre"] < x_end].sum()
    notes = [a.text for a in fig.layout.annotations if "beyond" in (a.text or "")]
    assert notes and f"{100 * beyond:.1f}%" in notes[0] and f"{unit.max():.1f}" in notes[0]
    # every value the error compares is inside the y range: bin heights
    assert plus["height"].max() <= fig.layout.yaxis.range[1]
    # one legend entry per family, naming its errors on both lobes
    named = [t.name for t in fig.data if t.showlegend is not False and t.type == "scatter"]
    assert len(named) == len(fits.FAMILIES)
    assert fig.layout.legend.orientation == "h"


def test_comparison_table_counts_heads_and_the_size_plot_draws_no_trend(minilm, smollm):
    from headforms.figures.fits import fit_error_vs_size_figure
    from headforms.figures.parity import parity_comparison_table

    models = {"minilm": minilm.heads, "smollm2": smollm.heads}
    table = parity_comparison_table(models)
    ours = table[table["source"] == "computed here"].set_index("model")["heads"]
    assert ours.to_dict() == {name: len(h) for name, h in models.items()}
    assert str(table["heads"].dtype) == "Int64"
    errors = pd.DataFrame({"both": [0.2, 0.3]}, index=["gamma", "weibull"])
    fig = fit_error_vs_size_figure({"a": (72, errors), "b": (270, errors * 0.9)})
    assert all("lines" not in t.mode for t in fig.data)  # two models are two points, not a trend


@pytest.mark.parametrize("sizes", [(22_700_000, 134_500_000), (72_000_000, 13_000_000_000)])
def test_figure_6_names_each_models_column_and_labels_only_round_ticks(sizes):
    """Every column of dots (one model, one dot per family) is named above it, and the log axis
    carries only labelled round ticks (1-2-5 on a narrow range): never "2 3 ... 9 100M 2"."""
    from headforms.figures.fits import fit_error_vs_size_figure

    errors = pd.DataFrame({"both": [0.2, 0.3, 0.25]}, index=["gamma", "weibull", "lognormal"])
    fig = fit_error_vs_size_figure({"small": (sizes[0], errors), "large": (sizes[1], errors / 2)})
    names = {a.text: a.x for a in fig.layout.annotations if a.name == "model"}
    assert names.keys() == {"small", "large"}
    for name, size in zip(("small", "large"), sizes, strict=True):
        assert names[name] == pytest.approx(np.log10(size))  # above its own column
    axis = fig.layout.xaxis
    assert axis.type == "log" and len(axis.tickvals) >= 2
    assert len(axis.ticktext) == len(axis.tickvals)
    for value, text in zip(axis.tickvals, axis.ticktext, strict=True):
        mantissa = value / 10 ** np.floor(np.log10(value))
        assert round(mantissa, 9) in (1, 2, 5) and re.fullmatch(r"\d+[kMBT]?", text), text
        assert axis.range[0] <= np.log10(value) <= axis.range[1]
