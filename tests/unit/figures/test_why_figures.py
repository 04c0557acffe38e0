"""Figures of score splits on synthetic data: the four parts on one scale symmetric about 0 (masked
cells left as gaps), the shares' stacked bars, the spectrum with clickable top directions on rows
by rank, the layer x head heatmap of a share beside the weights', the triangle with each head
twice joined by a line (clickable, in barycentric coordinates); and the realised shares as
correlation columns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from headforms.analyses.behaviour import SHARE_COLUMNS, with_shares
from headforms.analyses.interventions import edit_correlation, edit_frame
from headforms.figures import why as figures
from headforms.figures.style import FigureInputError


def table(layers: int = 3, heads: int = 4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame(
        {
            "layer": np.repeat(np.arange(layers), heads),
            "head": np.tile(np.arange(heads), layers),
            "parity": (["I+", "II", "I-"] * heads * layers)[: layers * heads],
        }
    )
    for kind in ("share", "spread", "weight"):
        values = rng.dirichlet(np.ones(3), size=len(rows))
        for index, part in enumerate(("pos", "neg", "anti")):
            rows[f"{kind}_{part}"] = values[:, index]
    rows["rest_share"] = 0.0
    return rows


def test_the_parts_share_one_scale_symmetric_about_zero() -> None:
    rng = np.random.default_rng(1)
    length = 5
    parts = rng.standard_normal((4, length, length))
    parts[:, np.triu_indices(length, 1)[0], np.triu_indices(length, 1)[1]] = np.nan
    parts[1, 4, 0] = -7.5  # the largest size, in the negative lobe
    fig = figures.parts_figure([f"t{i}" for i in range(length)], parts, "L1·H2")
    assert len(fig.data) == 4 and {t.coloraxis for t in fig.data} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (-7.5, 7.5)
    np.testing.assert_array_equal(np.asarray(fig.data[1].z, float), parts[1])
    assert [a.text for a in fig.layout.annotations][:3] == list(figures.PART_TITLES[:3])
    assert list(fig.data[0].customdata[4][0]) == ["t4 ·4", "t0 ·0"]  # query, key
    with pytest.raises(FigureInputError, match="parts of shape"):
        figures.parts_figure(["a"], parts, "x")


def test_a_rest_of_zeros_says_so() -> None:
    parts = np.zeros((4, 2, 2))
    parts[0] = 1.0
    fig = figures.parts_figure(["a", "b"], parts, "L0·H0")
    assert fig.layout.annotations[3].text == "the rest (0: no biases)"


def test_the_shares_are_three_bars_each_summing_to_one() -> None:
    row = table().iloc[2]
    fig = figures.shares_figure(row, "L0·H2")
    assert [t.name for t in fig.data] == ["positive lobe", "negative lobe", "antisymmetric part"]
    assert fig.layout.barmode == "stack"
    totals = np.sum([np.asarray(t.x, float) for t in fig.data], axis=0)
    np.testing.assert_allclose(totals, 1.0)
    bars = list(fig.data[2].y)
    assert fig.data[2].x[bars.index("weights (d = 0)")] == pytest.approx(row["weight_anti"])
    assert fig.data[0].x[bars.index("mean square")] == pytest.approx(row["share_pos"])
    with pytest.raises(FigureInputError, match="the row lacks"):
        figures.shares_figure(row.drop("spread_neg"), "x")


def test_the_spectrum_marks_each_top_direction_on_its_rank_row() -> None:
    spectrum = np.array([3.0, 2.0, 1.0, 0.5, -0.2, -1.0, -2.5, -4.0])
    directions = pd.DataFrame(
        {
            "lobe": ["positive", "positive", "negative", "negative"],
            "rank": [1, 2, 1, 2],
            "eigenvalue": [3.0, 2.0, -4.0, -2.5],
        }
    )
    fig = figures.spectrum_figure(spectrum, directions, ("negative", 2))
    (histogram,) = [t for t in fig.data if t.type == "bar"]
    assert int(np.sum(histogram.y)) == len(spectrum)
    markers = {t.name: t for t in fig.data if t.meta and t.meta.get("role") == "directions"}
    positive = markers["top directions, positive lobe"]
    assert [list(c) for c in positive.customdata] == [["positive", 1], ["positive", 2]]
    norm = np.linalg.norm(spectrum)
    np.testing.assert_allclose(positive.x, [3.0 / norm, 2.0 / norm])
    assert positive.y[0] > positive.y[1]  # rank 1 nearest the bars
    (ring,) = [t for t in fig.data if t.meta and t.meta.get("role") == "selected"]
    assert ring.x[0] == pytest.approx(-2.5 / norm) and ring.y[0] == positive.y[1]
    assert min(fig.layout.yaxis.tickvals) == 0  # no count ticks among the markers


def test_the_share_heatmap_sits_beside_the_weights() -> None:
    data = table()
    fig = figures.share_heatmap_figure(data, "share_anti", "m", selected=("m", 1, 2))
    cells = [t for t in fig.data if t.meta and t.meta.get("role") == "cells"]
    assert len(cells) == 2 and all(len(t.customdata) == len(data) for t in cells)
    colours = [np.asarray(t.marker.color, float) for t in cells]
    np.testing.assert_allclose(colours[0], data["share_anti"])
    np.testing.assert_allclose(colours[1], data["weight_anti"])
    with pytest.raises(FigureInputError, match="unknown realised share"):
        figures.share_heatmap_figure(data, "weight_anti", "m")


def test_the_triangle_draws_each_head_twice_joined() -> None:
    data = table()
    fig = figures.shares_triangle_figure(data, "m", "spread", selected=("m", 2, 3))
    heads = [t for t in fig.data if t.meta and t.meta.get("role") == "heads"]
    realised = [t for t in heads if t.meta.get("parity")]
    weights = [t for t in heads if not t.meta.get("parity")]
    assert sum(len(t.customdata) for t in realised) == len(data)
    assert len(weights) == 1 and len(weights[0].customdata) == len(data)
    top = figures.TRIANGLE["anti"]
    first = realised[0]
    layer, head = first.customdata[0][1:]
    row = data[(data["layer"] == layer) & (data["head"] == head)].iloc[0]
    x = row["spread_neg"] * 1.0 + row["spread_anti"] * top[0]
    y = row["spread_anti"] * top[1]
    assert (first.x[0], first.y[0]) == (pytest.approx(x), pytest.approx(y))
    (lines,) = [t for t in fig.data if t.meta and t.meta.get("role") == "band"]
    assert len(lines.x) == 3 * len(data)  # realised, weights, a gap per head
    assert sum(1 for v in lines.x if v is None or (isinstance(v, float) and math.isnan(v))) == 12
    assert [t for t in fig.data if t.meta and t.meta.get("role") == "selected"]
    with pytest.raises(FigureInputError, match="unknown share"):
        figures.shares_triangle_figure(data, "m", "weight")


def test_realised_shares_are_correlation_columns() -> None:
    data = table()
    geometry = data[["layer", "head", "parity"]].copy()
    for name in ("a", "b", "c", "d", "pairing", "energy"):
        geometry[name] = 0.25
    rows = data[["layer", "head"]].copy()
    rows["delta_ce"] = np.arange(len(data), dtype=float)
    frame = with_shares(edit_frame(geometry, rows), data.iloc[:-1])  # one head without a split
    assert set(SHARE_COLUMNS) <= set(frame.columns) and np.isnan(frame["share_anti"].iloc[-1])
    found = edit_correlation(frame, "share_anti")
    assert found.n == len(data) - 1
    with pytest.raises(ValueError, match="unknown geometric column 'weight_anti'"):
        edit_correlation(frame, "weight_anti")
