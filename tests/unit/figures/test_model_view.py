"""The grid of every head's pattern (figures/model_view.py) on synthetic patterns: each
thumbnail decodes back to its head's pattern (pooled as block means, checked against a loop),
masked keys grey and gaps white, one clickable marker per head at its thumbnail's centre, the
selected head framed around its thumbnail, a layout that fits its width."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from headforms.figures import model_view
from headforms.figures.style import FigureInputError


def patterns(n_layers: int, n_heads: int, tokens: int, seed: int = 0) -> np.ndarray:
    """Causal attention weights (rows sum to 1, nothing above the diagonal)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_layers, n_heads, tokens, tokens))
    logits[..., np.triu(np.ones((tokens, tokens), bool), 1)] = -np.inf
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def decoded(fig: go.Figure, layer: int, head: int) -> np.ndarray:
    """A head's thumbnail read back from the figure: values (NaN where masked)."""
    grid = model_view.Grid(**fig.layout.meta["grid"])
    z = np.asarray(fig.data[0].z, dtype=float)
    top, left = grid.origin(layer, head)
    codes = z[top : top + grid.cells, left : left + grid.cells]
    values = (codes - model_view.FIRST_LEVEL) / (model_view.LEVELS - 1)
    return np.where(codes == model_view.MASKED_CODE, np.nan, values)


def block_means(matrix: np.ndarray, cells: int) -> np.ndarray:
    """The pooling written as a loop over the blocks (the reference)."""
    edges = np.linspace(0, len(matrix), cells + 1).round().astype(int)
    out = np.full((cells, cells), np.nan)
    for i in range(cells):
        for j in range(cells):
            block = matrix[edges[i] : edges[i + 1], edges[j] : edges[j + 1]]
            if np.isfinite(block).any():
                out[i, j] = np.nanmean(block)
    return out


@pytest.mark.parametrize(("n_layers", "n_heads", "tokens"), [(6, 12, 9), (30, 9, 40), (2, 1, 1)])
def test_each_thumbnail_is_its_heads_pattern(n_layers: int, n_heads: int, tokens: int) -> None:
    values = patterns(n_layers, n_heads, tokens)
    fig = model_view.model_view_figure(values, "m", causal=True)
    cells = min(tokens, model_view.MAX_CELLS)
    masked = np.where(np.triu(np.ones((tokens, tokens), bool), 1), np.nan, values)
    for layer in range(n_layers):
        for head in range(n_heads):
            want = block_means(masked[layer, head], cells)
            got = decoded(fig, layer, head)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, atol=0.5 / (model_view.LEVELS - 1) + 1e-12)
    z = np.asarray(fig.data[0].z)
    assert z.dtype == np.uint8
    grid = model_view.Grid(**fig.layout.meta["grid"])
    inside = np.zeros(z.shape, bool)
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = grid.origin(layer, head)
            inside[top : top + cells, left : left + cells] = True
    assert (z[~inside] == model_view.GAP_CODE).all()  # the gaps: white
    assert (z[inside] != model_view.GAP_CODE).all()


def test_one_clickable_marker_per_head_at_its_thumbnail() -> None:
    values = patterns(30, 9, 12)
    fig = model_view.model_view_figure(values, "m")
    (marks,) = [t for t in fig.data if (t.meta or {}).get("role") == "thumbnails"]
    grid = model_view.Grid(**fig.layout.meta["grid"])
    assert len(marks.customdata) == 270
    centre = (grid.cells - 1) / 2
    for (model, layer, head), x, y in zip(marks.customdata, marks.x, marks.y, strict=True):
        assert model == "m"
        top, left = grid.origin(layer, head)
        assert (x, y) == (left + centre, top + centre)
    assert fig.layout.xaxis.fixedrange and fig.layout.yaxis.fixedrange
    assert fig.layout.width <= model_view.WIDTH_PX
    assert model_view.layout(30, 9).blocks == 2  # 30 layers of 9 heads: two blocks of 15


def test_the_selected_head_is_framed_around_its_thumbnail_and_moves() -> None:
    values = patterns(4, 3, 6)
    fig = model_view.model_view_figure(values, "m", selected=(2, 1))
    grid = model_view.Grid(**fig.layout.meta["grid"])
    (frame,) = [s for s in fig.layout.shapes if s.name == "selected"]
    top, left = grid.origin(2, 1)
    assert frame.x0 < left - 0.5 and frame.x1 > left + grid.cells - 0.5
    assert frame.y0 < top - 0.5 and frame.y1 > top + grid.cells - 0.5
    assert frame.x0 > left - grid.step + grid.cells - 0.5  # not over its neighbour
    moved = model_view.outlined(go.Figure(fig), (0, 0))
    (frame,) = [s for s in moved.layout.shapes if s.name == "selected"]
    assert frame.x0 < 0 and frame.y0 < 0
    assert not [s for s in model_view.outlined(go.Figure(fig), (9, 9)).layout.shapes]


def test_pre_softmax_scores_use_their_own_range_and_keep_their_nan() -> None:
    rng = np.random.default_rng(2)
    scores = rng.normal(3, 2, size=(2, 2, 5, 5))
    scores[..., np.triu(np.ones((5, 5), bool), 1)] = np.nan
    fig = model_view.model_view_figure(scores, "m", kind="scores")
    ticks = [float(t) for t in fig.data[0].colorbar.ticktext]
    assert ticks[0] == pytest.approx(np.nanmin(scores), rel=1e-2)
    assert ticks[-1] == pytest.approx(np.nanmax(scores), rel=1e-2)
    assert np.isnan(decoded(fig, 1, 1)[0, 4])


def test_a_long_prompt_is_pooled_and_bad_shapes_refused() -> None:
    fig = model_view.model_view_figure(patterns(2, 2, 100), "m")
    grid = model_view.Grid(**fig.layout.meta["grid"])
    assert grid.cells == model_view.MAX_CELLS
    assert "pooled to" in fig.layout.title.text
    with pytest.raises(FigureInputError):
        model_view.model_view_figure(np.zeros((2, 2, 3, 4)), "m")
    with pytest.raises(FigureInputError):
        model_view.model_view_figure(patterns(1, 1, 3), "m", kind="logits")
