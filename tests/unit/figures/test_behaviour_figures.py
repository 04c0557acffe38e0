"""Figures of what heads do: attention heatmaps, a layer's heads, geometry against behaviour."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headforms.analyses.behaviour import behaviour_frame, rank_correlation
from headforms.figures import behaviour as figures
from headforms.figures.style import FigureInputError


def causal_weights(length: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = np.where(
        np.tril(np.ones((length, length), bool)), rng.normal(size=(length,) * 2), -np.inf
    )
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def test_a_heatmap_has_one_cell_per_position_even_for_repeated_tokens() -> None:
    tokens = ["<bos>", "The", " cat", "\n", " ", "The", " cat"]
    weights = causal_weights(len(tokens))
    fig = figures.attention_figure(tokens, weights, "L0·H0")
    (heat,) = fig.data
    z = np.array(heat.z, dtype=float)
    assert z.shape == (7, 7)
    upper = np.triu(np.ones((7, 7), bool), 1)
    assert np.isnan(z[upper]).all()  # the causal triangle is drawn as masked
    np.testing.assert_array_equal(z[~upper], weights[~upper])
    labels = list(fig.layout.xaxis.ticktext)
    assert labels == list(fig.layout.yaxis.ticktext)
    assert labels[1] == "The ·1" and labels[5] == "The ·5"  # repeated tokens stay apart
    assert labels[3] == "↵ ·3" and labels[4] == "␣ ·4"  # whitespace is visible
    custom = np.array(heat.customdata)
    assert tuple(custom[6, 2]) == (labels[6], labels[2])  # hover: (query, key)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed"


@pytest.mark.parametrize("length", [7, 40, 41, 120, 1000])
def test_token_labels_are_legible_and_never_overlap(length: int) -> None:
    """Token labels at 11 px or more, and each with a row at least that tall on the heatmap's
    plot area (the figure's height less its margins and the rotated key labels, ~100 px)."""
    fig = figures.attention_figure([f"t{i}" for i in range(length)], causal_weights(length), "t")
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.tickfont.size >= 11
        shown = len(axis.tickvals)
        assert shown >= min(length, 20)  # thinned, not dropped
        assert (fig.layout.height - 170) / shown >= axis.tickfont.size
        assert list(axis.tickvals) == list(range(0, length, axis.tickvals[1] if shown > 1 else 1))


def test_an_encoders_full_pattern_and_pre_softmax_scores() -> None:
    rng = np.random.default_rng(1)
    full = rng.dirichlet(np.ones(5), size=5)
    fig = figures.attention_figure(list("abcde"), full, "enc")
    assert np.isfinite(np.array(fig.data[0].z, dtype=float)).all()  # nothing masked
    scores = rng.normal(size=(5, 5))
    scores[np.triu_indices(5, 1)] = np.nan
    fig = figures.attention_figure(list("abcde"), scores, "scores", kind="scores")
    finite = scores[np.isfinite(scores)]
    assert (fig.data[0].zmin, fig.data[0].zmax) == (finite.min(), finite.max())
    assert "pre-softmax score" in fig.data[0].hovertemplate
    with pytest.raises(FigureInputError, match="for 4 tokens"):
        figures.attention_figure(list("abcd"), full, "bad")
    with pytest.raises(FigureInputError, match="unknown pattern kind"):
        figures.attention_figure(list("abcde"), full, "bad", kind="probabilities")


def test_a_layers_heads_share_one_scale() -> None:
    matrices = np.stack([causal_weights(6, seed) for seed in range(9)])
    fig = figures.layer_attention_figure(matrices, layer=4)
    assert len(fig.data) == 9
    assert [a.text for a in fig.layout.annotations] == [f"L4·H{h}" for h in range(9)]
    assert {t.coloraxis for t in fig.data} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    np.testing.assert_array_equal(np.nan_to_num(np.array(fig.data[8].z, dtype=float)), matrices[8])


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 24
    heads = pd.DataFrame(rng.dirichlet(np.ones(4), size=n), columns=["a", "b", "c", "d"])
    heads.insert(0, "head", np.tile(np.arange(6), 4))
    heads.insert(0, "layer", np.repeat(np.arange(4), 6))
    heads["parity"] = np.where(heads["c"] > heads["d"], "I+", "I-")
    heads.loc[[0, 5], "parity"] = "II"
    heads["pairing"] = rng.uniform(size=n)
    heads["energy"] = rng.uniform(size=n)
    scores = heads[["layer", "head"]].copy()
    scores["induction"] = rng.uniform(size=n)
    scores.loc[3, "induction"] = np.nan  # a head without a score is left out
    return behaviour_frame(heads, scores)


def points(fig) -> pd.DataFrame:
    rows = []
    for trace in fig.data:
        if (trace.meta or {}).get("role") != "heads":
            continue
        for x, y, custom in zip(trace.x, trace.y, trace.customdata, strict=True):
            rows.append({"x": x, "y": y, "model": custom[0], "layer": custom[1], "head": custom[2]})
    return pd.DataFrame(rows)


def test_every_head_is_one_clickable_point(frame: pd.DataFrame) -> None:
    found = rank_correlation(frame["c_minus_d"], frame["induction"])
    fig = figures.geometry_behaviour_figure(
        frame, "c_minus_d", "induction", "m", found, ("m", 1, 2)
    )
    drawn = points(fig)
    assert len(drawn) == 23 and not drawn.duplicated(["layer", "head"]).any()
    merged = drawn.merge(frame, on=["layer", "head"])
    np.testing.assert_allclose(merged["x"], merged["c_minus_d"])
    np.testing.assert_allclose(merged["y"], merged["induction"])
    assert set(drawn["model"]) == {"m"}
    assert found.text() in fig.layout.title.text
    selected = [t for t in fig.data if (t.meta or {}).get("role") == "selected"]
    assert len(selected) == 1 and list(selected[0].customdata[0]) == ["m", 1, 2]


def test_parity_is_drawn_as_three_spread_columns(frame: pd.DataFrame) -> None:
    found = rank_correlation(frame["parity_rank"], frame["induction"])
    fig = figures.geometry_behaviour_figure(frame, "parity_rank", "induction", "m", found)
    drawn = points(fig).merge(frame, on=["layer", "head"])
    offsets = drawn["x"] - drawn["parity_rank"]
    assert offsets.abs().max() <= 0.18 and offsets.nunique() > 1
    assert list(fig.layout.xaxis.tickvals) == [-1, 0, 1]
    with pytest.raises(FigureInputError, match="unknown geometric column"):
        figures.geometry_behaviour_figure(frame, "rho", "induction", "m", found)


def test_the_plane_draws_the_highest_scores_last(frame: pd.DataFrame) -> None:
    fig = figures.simplex_plane_figure(frame, "induction", "m")
    (heads,) = [t for t in fig.data if (t.meta or {}).get("role") == "heads"]
    colours = np.array(heads.marker.color, dtype=float)
    assert len(colours) == 23 and (np.diff(colours) >= 0).all()
    drawn = points(fig).merge(frame, on=["layer", "head"])
    np.testing.assert_allclose(drawn["x"], drawn["c_minus_d"])
    np.testing.assert_allclose(drawn["y"], drawn["a"])
    low, high = fig.layout.xaxis.range
    assert low <= drawn["x"].min() and drawn["x"].max() <= high  # every head inside the axes
    low, high = fig.layout.yaxis.range
    assert low <= drawn["y"].min() and drawn["y"].max() <= high


def test_the_token_margins_hold_the_widest_label_without_plotlys_automargin() -> None:
    """Fixed margins (automargin draws the figure again and again): the left one holds the
    widest label, the bottom one that label turned by 60 degrees; a wide character counts
    wider than a narrow one."""
    tokens = ["a", "Ġextraordinarily", "b"]
    fig = figures.attention_figure(tokens, causal_weights(3), "t")
    widest = figures.label_width("Ġextraordinarily ·1")
    assert fig.layout.xaxis.automargin is False and fig.layout.yaxis.automargin is False
    assert fig.layout.margin.l >= widest + figures.AXIS_TITLE_PX
    assert fig.layout.margin.b >= widest * np.sin(np.radians(60)) + figures.AXIS_TITLE_PX
    short = figures.attention_figure(["a", "b", "c"], causal_weights(3), "t")
    assert short.layout.margin.l < fig.layout.margin.l
    assert figures.label_width("漢字") > figures.label_width("ab")
