"""The Head page's grid of every head's pattern (AppTest, tiny runnable llama): drawn from the
page's one forward pass on its prompt (each thumbnail is that head's attention as the library
computes it), every head clickable, the selected head framed; a model that cannot run draws no
grid and no second error line."""

from __future__ import annotations

import base64
import json

import numpy as np
import plotly.graph_objects as go
import pytest
import tiny_runnable
from page_runner import assert_clean, run_app
from published_tables import author_table
from streamlit.testing.v1 import AppTest

from headforms.behaviour import DEFAULT_PROMPT, attention
from headforms.figures import model_view
from ui import state


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("grid-llama")
    tiny_runnable.checkpoint("llama", directory, seed=6)
    return str(directory)


def grid_figure(at: AppTest) -> go.Figure | None:
    for element in at.get("bidi_component"):
        data = json.loads(element.proto.json)
        if data["key"] == "model_view":
            return go.Figure(json.loads(data["figure"]))
    return None


def decoded(values) -> np.ndarray:
    """A figure's z (JSON lists, or plotly's typed-array encoding)."""
    if isinstance(values, dict):
        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        return raw.reshape([int(n) for n in str(values["shape"]).split(",")]).astype(float)
    return np.asarray(values, dtype=float)


def test_the_grid_is_every_heads_pattern_on_the_prompt(model_dir: str) -> None:
    at = run_app("head", {"model": model_dir}, **{state.LAYER_KEY: 1, state.HEAD_KEY: 3})
    assert_clean(at)
    fig = grid_figure(at)
    assert fig is not None
    want = attention(model_dir, DEFAULT_PROMPT)
    grid = model_view.Grid(**fig.layout.meta["grid"])
    assert (grid.n_layers, grid.n_heads) == want.weights.shape[:2]
    z = decoded(fig.data[0].z)
    tokens = want.weights.shape[-1]
    causal = np.triu(np.ones((tokens, tokens), bool), 1)
    for layer in range(grid.n_layers):
        for head in range(grid.n_heads):
            top, left = grid.origin(layer, head)
            codes = z[top : top + grid.cells, left : left + grid.cells]
            expected = model_view.pooled(
                np.where(causal, np.nan, want.weights[layer, head]), grid.cells
            )
            shown = (codes - model_view.FIRST_LEVEL) / (model_view.LEVELS - 1)
            assert np.array_equal(codes == model_view.MASKED_CODE, np.isnan(expected))
            np.testing.assert_allclose(
                shown[np.isfinite(expected)], expected[np.isfinite(expected)], atol=0.002
            )
    (marks,) = [t for t in fig.data if (t.meta or {}).get("role") == "thumbnails"]
    assert {(layer, head) for _, layer, head in marks.customdata} == {
        (layer, head) for layer in range(grid.n_layers) for head in range(grid.n_heads)
    }
    (frame,) = [s for s in fig.layout.shapes if s.name == "selected"]
    top, left = grid.origin(1, 3)
    assert frame.x0 < left < frame.x1 and frame.y0 < top < frame.y1


def test_a_model_that_cannot_run_draws_no_grid_and_no_second_line(tmp_path) -> None:
    table = tmp_path / "published.csv"
    author_table("toy", 2, 4, 4, 64, seed=2).to_csv(table, index=False)
    at = run_app("head", {"model": f"{table}::toy"})
    assert not at.exception and not at.error
    assert grid_figure(at) is None
    said = [m.value for m in at.info if "cannot run" in m.value or "forward pass" in m.value]
    assert len(said) <= 1
