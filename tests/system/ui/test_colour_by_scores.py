"""Colouring the heads by a head-type score (AppTest, tiny runnable llama): the Simplex page's
tetrahedron, triangle and swarm colour each head by its score on the probe, as the library
computes it; a model that cannot run (a published table) is coloured by parity type after one
line; the heads in motion (RoPE positions) by parity type, saying so."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import tiny_runnable
from page_runner import assert_clean, run_app
from published_tables import author_table
from streamlit.testing.v1 import AppTest

from headforms.analyses.behaviour import BEHAVIOUR_COLUMNS as TITLES
from headforms.behaviour import head_type_scores
from ui import state


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("colour-llama")
    tiny_runnable.checkpoint("llama", directory, seed=4)
    return str(directory)


def figures(at: AppTest) -> dict[str, dict]:
    """Each plot's figure, by its key."""
    found = {}
    for element in at.get("bidi_component"):
        data = json.loads(element.proto.json)
        found[data["key"]] = json.loads(data["figure"])
    return found


def values(encoded) -> np.ndarray:
    if isinstance(encoded, dict):  # plotly's typed-array encoding
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"]).astype(
            float
        )
    return np.asarray(encoded, dtype=float)


@pytest.mark.parametrize("score", list(state.SCORE_COLORS))
def test_the_simplex_page_colours_every_head_by_a_score(model_dir: str, score: str) -> None:
    at = run_app(None, {"model": model_dir, "color": score})
    assert_clean(at)
    want = head_type_scores(model_dir).table.set_index(["layer", "head"])[score]
    shown = figures(at)
    for key in ("simplex", "triangle", "parity_swarm"):
        figure = shown[key]
        assert figure["layout"]["coloraxis"]["colorbar"]["title"]["text"] == TITLES[score], key
        seen = 0
        for trace in figure["data"]:
            if (trace.get("meta") or {}).get("role") != "heads":
                continue
            colours = values(trace["marker"]["color"])
            for (_, layer, head), colour in zip(trace["customdata"], colours, strict=True):
                assert colour == pytest.approx(want[(layer, head)], abs=1e-12), (key, layer, head)
                seen += 1
        assert seen == len(want), key


def test_a_model_that_cannot_run_is_coloured_by_parity_after_one_line(tmp_path) -> None:
    table = tmp_path / "published.csv"
    author_table("toy", 2, 4, 4, 64, seed=1).to_csv(table, index=False)
    at = run_app(None, {"model": f"{table}::toy", "color": "induction"})
    assert not at.exception
    shown = figures(at)
    assert "coloraxis" not in shown["simplex"]["layout"] or not shown["simplex"]["layout"][
        "coloraxis"
    ].get("colorbar")
    assert any("coloured by parity type" in c.value for c in at.caption)


def test_the_heads_in_motion_are_coloured_by_parity_saying_so(model_dir: str) -> None:
    at = run_app("positions", {"model": model_dir, "color": "previous_token", "positions": "0:4"})
    assert_clean(at)
    assert any("coloured by parity type" in c.value for c in at.caption)
    figure = figures(at)["motion_simplex"]
    heads = [t for t in figure["data"] if (t.get("meta") or {}).get("role") == "heads"]
    assert heads and all(isinstance(t["marker"]["color"], str) for t in heads)
