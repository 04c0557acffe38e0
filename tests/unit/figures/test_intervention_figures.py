"""Figures of interventions on synthetic data: the per-head heatmap (clickable cells, a scale
white at 0), the scatter against a geometric column (rho in the title, the selected head ringed),
an edit against its controls, patterns before and after side by side, profile and scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headforms.analyses.behaviour import Correlation
from headforms.analyses.interventions import edit_frame
from headforms.figures import interventions as figures
from headforms.figures.style import FigureInputError


def frame(layers: int = 3, heads: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.dirichlet(np.ones(4), size=layers * heads), columns=list("abcd"))
    table.insert(0, "head", np.tile(np.arange(heads), layers))
    table.insert(0, "layer", np.repeat(np.arange(layers), heads))
    table["parity"] = ["I+", "II", "I-"] * (layers * heads // 3)
    table["pairing"] = rng.uniform(size=len(table))
    table["energy"] = rng.uniform(size=len(table))
    rows = table[["layer", "head"]].copy()
    rows["delta_ce"] = np.linspace(-0.1, 0.5, len(table))
    rows.loc[3, "delta_ce"] = np.nan  # a head without a value
    return edit_frame(table, rows)


def test_the_heatmap_has_a_clickable_cell_per_head_with_a_value() -> None:
    data = frame()
    fig = figures.sweep_heatmap_figure(data, "m", "flip", selected=("m", 2, 1))
    (cells,) = [t for t in fig.data if t.meta and t.meta.get("role") == "cells"]
    assert len(cells.x) == len(data) - 1
    assert [list(c) for c in cells.customdata][:2] == [["m", 0, 0], ["m", 0, 1]]
    low, high = fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax
    assert low == pytest.approx(-high) and high == pytest.approx(0.5)  # white at 0
    assert "flip" in fig.layout.title.text and "ΔCE" in fig.layout.title.text
    assert [s.name for s in fig.layout.shapes] == ["selected"]
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
    outlier = frame(10, 6)
    outlier.loc[5, "delta_ce"] = 40.0  # one head far above the rest: the scale saturates
    saturated = figures.sweep_heatmap_figure(outlier, "m", "flip")
    want = np.percentile(np.abs(outlier["delta_ce"].dropna()), figures.SATURATION_PERCENTILE)
    assert saturated.layout.coloraxis.cmax == pytest.approx(want) and want < 40.0
    assert "saturates" in saturated.layout.title.text


def test_the_scatter_puts_each_head_at_its_column_and_measure() -> None:
    data = frame()
    found = Correlation(0.5, 0.2, 0.7, 11)
    fig = figures.sweep_scatter_figure(data, "a", "m", "zero", found, selected=("m", 1, 0))
    heads = [t for t in fig.data if t.meta and t.meta.get("role") == "heads"]
    assert sum(len(t.x) for t in heads) == len(data) - 1
    for trace in heads:
        for x, y, (_, layer, head) in zip(trace.x, trace.y, trace.customdata, strict=True):
            row = data[(data["layer"] == layer) & (data["head"] == head)].iloc[0]
            assert (x, y) == (pytest.approx(row["a"]), pytest.approx(row["delta_ce"]))
    assert "ρ = +0.50 [+0.20, +0.70], n = 11" in fig.layout.title.text
    assert [t.meta["role"] for t in fig.data if t.meta].count("selected") == 1
    parity = figures.sweep_scatter_figure(data, "parity_rank", "m", "zero", found)
    assert list(parity.layout.xaxis.tickvals) == [-1, 0, 1]
    with pytest.raises(FigureInputError, match="unknown geometric column"):
        figures.sweep_scatter_figure(data, "norm", "m", "zero", found)
    with pytest.raises(FigureInputError, match="unknown measure"):
        figures.sweep_heatmap_figure(data, "m", "zero", "loss")


def test_the_verdict_figure_shows_each_measure_against_each_control() -> None:
    fig = figures.verdict_figure(
        {"delta_ce": 2.0, "kl": 1.0, "delta_induction_loss": 0.5},
        {"delta_ce": [0.5, 1.0, 1.5, 3.0], "kl": [0.1, 0.2], "delta_induction_loss": []},
        "flip",
        "L1.H2",
        {"delta_ce": 0.4, "kl": 1 / 3, "delta_induction_loss": float("nan")},
    )
    titles = [a.text for a in fig.layout.annotations]
    assert titles[0].startswith("ΔCE on the text") and titles[0].endswith("p = 0.4")
    assert titles[2].endswith("no controls")
    first = [t for t in fig.data if t.xaxis == "x"]
    controls, median, edit = first
    assert list(controls.x) == [0.5, 1.0, 1.5, 3.0] and list(median.x) == [1.25, 1.25]
    assert list(edit.x) == [2.0]
    assert [t.name for t in fig.data if t.xaxis == "x3"] == ["flip of L1.H2"]
    band = fig.layout.shapes[0]
    assert band.x0 == pytest.approx(np.percentile([0.5, 1, 1.5, 3], 10))
    with pytest.raises(FigureInputError):
        figures.verdict_figure({"kl": 1.0}, {}, "flip", "L1.H2", {})


def test_the_patterns_are_never_clipped() -> None:
    """Token labels push the margins (automargin), the axis titles stand off the ticks, and the
    squares give way in width, not height (no blank band above the heatmaps)."""
    tokens = [f"a long token {i}" for i in range(40)]
    matrix = np.tril(np.ones((40, 40))) / np.arange(1, 41)[:, None]
    fig = figures.patterns_figure(tokens, matrix, matrix, "x", causal=True)
    for axis in (fig.layout.xaxis, fig.layout.yaxis, fig.layout.xaxis2, fig.layout.yaxis2):
        assert axis.automargin is True and axis.constrain == "domain"
    assert fig.layout.yaxis.title.standoff == 8
    assert fig.layout.height == figures.PATTERNS_HEIGHT


def test_the_patterns_are_side_by_side_on_one_scale() -> None:
    tokens = ["a", "b", "c"]
    before = np.tril(np.full((3, 3), 1 / 3))
    after = np.eye(3)
    fig = figures.patterns_figure(tokens, before, after, "L1·H2", causal=True)
    left, right = fig.data
    assert np.isnan(left.z[0][2]) and left.z[2][0] == pytest.approx(1 / 3)  # masked above
    assert right.z[1][1] == 1.0 and (left.zmin, left.zmax) == (right.zmin, right.zmax) == (0, 1)
    assert left.xaxis == "x" and right.xaxis == "x2"
    assert list(fig.layout.xaxis2.ticktext) == ["a ·0", "b ·1", "c ·2"]
    assert [a.text for a in fig.layout.annotations] == ["before the edit", "after the edit"]


def test_profile_and_scores_before_and_after() -> None:
    before = {"a": 0.1, "b": 0.5, "c": 0.3, "d": 0.1}
    after = {"a": 0.1, "b": 0.5, "c": 0.1, "d": 0.3}
    fig = figures.profile_change_figure(before, after, ("I+", "I-"))
    assert [t.name for t in fig.data] == ["before (I+)", "after (I-)"]
    assert list(fig.data[1].y) == [0.1, 0.5, 0.1, 0.3]
    scores = figures.scores_change_figure(
        {"induction": 0.4, "first_token": 0.9}, {"induction": 0.1, "first_token": 0.2}
    )
    assert list(scores.data[0].x) == ["first token", "induction"]
    assert list(scores.data[1].y) == [0.2, 0.1]
    with pytest.raises(FigureInputError):
        figures.profile_change_figure({"a": 1.0}, after, ("I+", "I-"))


def test_long_texts_label_at_most_24_tokens_per_axis_of_each_panel() -> None:
    tokens = [f"t{i}" for i in range(128)]
    matrix = np.tril(np.ones((128, 128))) / np.arange(1, 129)[:, None]
    fig = figures.patterns_figure(tokens, matrix, matrix, "x", causal=True)
    for axis in (fig.layout.xaxis, fig.layout.xaxis2, fig.layout.yaxis):
        assert 16 <= len(axis.ticktext) <= 24 and axis.ticktext[1] == "t6 ·6"
    assert fig.layout.yaxis2.showticklabels is False
