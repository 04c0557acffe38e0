"""Why heads attend in the dashboard (AppTest, a tiny llama): the Head page's "Why it attends"
(four heatmaps that add up to the head's pre-softmax scores on the page's prompt, the shares,
the spectrum's directions and the chosen one's readout, ``direction`` in the link), nothing of
it when the prompt cannot run; the "Why heads attend" page (a button, then the heatmap and the
triangle of every head); the Experiments page's correlation against a realised share."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tiny_runnable
from page_runner import assert_clean, run_app
from streamlit.testing.v1 import AppTest

from headforms.behaviour import attention
from headforms.why import why_table
from ui import behaviour, state
from ui import why as splits


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("ui-why")
    tiny_runnable.checkpoint("llama", directory, seed=7)
    return str(directory)


PROMPT = tiny_runnable.words([5, 9, 11, 5, 9, 11, 40])


def figures(at: AppTest) -> list[dict]:
    return [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]


def decoded(values) -> np.ndarray:
    if isinstance(values, dict):
        import base64

        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = [int(n) for n in str(values.get("shape", "-1")).split(",")]
        return raw.reshape(shape).astype(float)
    return np.array(values, dtype=float)


def titled(at: AppTest, words: str) -> dict:
    (found,) = [f for f in figures(at) if words in str(f["layout"].get("title", {}).get("text"))]
    return found


def head_page(model: str, **session) -> AppTest:
    selection = {state.MODEL_KEY: model, state.LAYER_KEY: 1, state.HEAD_KEY: 2}
    at = run_app("head", **{behaviour.PROMPT_KEY: PROMPT, **selection, **session})
    assert_clean(at)
    return at


def test_the_four_parts_add_up_to_the_heads_scores(model_dir: str) -> None:
    at = head_page(model_dir)
    assert "Why it attends" in [s.value for s in at.subheader]
    parts = titled(at, "its scores split by the form's parts")
    z = np.stack([decoded(trace["z"]) for trace in parts["data"]])
    assert z.shape == (4, 7, 7)
    want = attention(model_dir, PROMPT).head(1, 2, "scores")
    seen = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(z[0]), seen)
    np.testing.assert_allclose(z.sum(0)[seen], want[seen], atol=1e-5 * np.abs(want[seen]).max())
    shares = titled(at, "who carries it")
    bars = {trace["name"]: decoded(trace["x"]) for trace in shares["data"]}
    assert set(bars) == {"positive lobe", "negative lobe", "antisymmetric part"}
    np.testing.assert_allclose(sum(bars.values()), 1.0, atol=1e-9)  # each bar sums to 1


def test_a_direction_is_chosen_and_read_out(model_dir: str) -> None:
    at = head_page(model_dir)
    spectrum = titled(at, "Eigenvalues of S at d = 0")
    markers = [t for t in spectrum["data"] if t.get("meta", {}).get("role") == "directions"]
    payloads = [tuple(point) for trace in markers for point in trace["customdata"]]
    assert ("positive", 1) in payloads and ("negative", 1) in payloads
    assert "Direction λ₊1" in " ".join(m.value for m in at.markdown)
    at.session_state[splits.DIRECTION_KEY] = "n2"
    at.run()
    assert_clean(at)
    assert "Direction λ₋2" in " ".join(m.value for m in at.markdown)
    assert at.query_params["direction"] == "n2"
    pairs, vocabulary = at.dataframe[-2].value, at.dataframe[-1].value
    assert len(pairs) == 10 and {"query_token", "key_token", "contribution"} <= set(pairs)
    assert len(vocabulary) == 12 and (vocabulary["plus_projection"] >= 0).all()
    again = run_app(
        "head",
        params={"model": model_dir, "layer": "1", "head": "2", "prompt": PROMPT, "direction": "n2"},
    )
    assert_clean(again)
    assert again.session_state[splits.DIRECTION_KEY] == "n2"


def test_a_prompt_that_cannot_run_draws_no_split(model_dir: str) -> None:
    at = run_app(
        "head",
        **{state.MODEL_KEY: model_dir, state.LAYER_KEY: 1, state.HEAD_KEY: 2},
        **{behaviour.PROMPT_KEY: "   "},
    )
    assert not at.exception
    assert "Why it attends" not in [s.value for s in at.subheader]
    assert len(at.info) == 1  # the attention section's line alone


def test_every_head_once_asked(model_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run_app("why", **{state.MODEL_KEY: model_dir})
    assert_clean(at)
    (button,) = [b for b in at.button if "Split every head's scores" in b.label]
    assert not figures(at)
    button.click().run()
    assert_clean(at)
    heatmap = titled(at, "antisymmetric part share on the text (mean square)")
    cells = [t for t in heatmap["data"] if t.get("customdata") is not None]
    assert sum(len(t["customdata"]) for t in cells) == 2 * 8  # text and weights, 8 heads
    triangle = titled(at, "Shares on the text (mean square) and in the weights")
    heads = [t for t in triangle["data"] if t.get("meta", {}).get("role") == "heads"]
    assert sum(len(t["customdata"]) for t in heads) == 2 * 8
    want = why_table(model_dir, max_tokens=128)
    shown = at.dataframe[0].value
    assert shown.loc["share_anti", "all (8)"] == pytest.approx(float(want["share_anti"].median()))
    at.selectbox(key="hf_why_share").select("spread_neg").run()
    at.selectbox(key="hf_why_kind").select("spread").run()
    assert_clean(at)
    titled(at, "negative lobe share on the text (within-row spread)")
    titled(at, "Shares on the text (within-row spread)")
    assert (at.query_params["share"], at.query_params["kind"]) == ("spread_neg", "spread")


def test_the_experiments_correlation_against_a_realised_share(model_dir: str) -> None:
    """A sweep of edits set against a share: the split of every head is asked for (the same
    button, unless an earlier view of this server computed it), then rho is computed over the
    heads with both."""
    from headforms.interventions import intervention
    from ui import interventions as edits

    intervention(model_dir, edits.sweep_request("zero", 0, 0))  # the sweep, stored
    at = run_app("experiments", params={"model": model_dir, "geometry": "share_anti"})
    assert_clean(at)
    for button in [b for b in at.button if "Split every head's scores" in b.label]:
        button.click().run()
        assert_clean(at)
    scatter = titled(at, "against antisymmetric part share on the text (mean square)")
    assert "Spearman" in scatter["layout"]["title"]["text"]
