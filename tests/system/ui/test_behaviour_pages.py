"""The dashboard's forward passes (AppTest): the Head page's prompt and heatmap, the layer's head
picker, pre-softmax scores, the Geometry vs behaviour page, head-type columns in the Heads table;
a model that cannot run, an empty or too long prompt: one line, the geometry views unaffected."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import numpy as np
import pytest
import tiny_models
import tiny_runnable
from page_runner import assert_clean, run_app
from streamlit.testing.v1 import AppTest

from headforms.behaviour import attention
from ui import behaviour, state
from ui.gateway import kinds


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("ui-llama")
    tiny_runnable.checkpoint("llama", directory, seed=3)
    return str(directory)


def figures(at: AppTest) -> list[dict]:
    return [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]


def heatmap(at: AppTest) -> dict:
    (figure,) = [
        f
        for f in figures(at)
        if f["data"]
        and f["data"][0]["type"] == "heatmap"
        and "xaxis2" not in f["layout"]
        and "grid" not in (f["layout"].get("meta") or {})
    ]  # not the grid of every head
    return figure


def decoded(values) -> np.ndarray:
    """A figure's z (JSON lists, or plotly's typed-array encoding)."""
    if isinstance(values, dict):
        import base64

        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = [int(n) for n in str(values.get("shape", "-1")).split(",")]
        return raw.reshape(shape).astype(float)
    return np.array(values, dtype=float)


def head_page(model: str, **session) -> AppTest:
    selection = {state.MODEL_KEY: model, state.LAYER_KEY: 1, state.HEAD_KEY: 2}
    at = run_app("head", **selection, **session)
    assert_clean(at)
    return at


def test_typing_a_prompt_shows_its_tokens_and_the_heads_weights(model_dir: str) -> None:
    at = head_page(model_dir)
    text = tiny_runnable.words([5, 9, 11, 5, 9, 11])
    at.text_area(key=behaviour.PROMPT_KEY).input(text).run()
    assert_clean(at)
    figure = heatmap(at)
    labels = figure["layout"]["xaxis"]["ticktext"]
    assert labels == [f"w{i} ·{p}" for p, i in enumerate([5, 9, 11, 5, 9, 11])]
    want = attention(model_dir, text).head(1, 2)
    z = decoded(figure["data"][0]["z"])
    np.testing.assert_allclose(np.nan_to_num(z), want, atol=1e-7)
    assert "Layer 1 · Head 2" in figure["layout"]["title"]["text"]
    metrics = {m.label: m.value for m in at.metric}
    assert "induction · probe" in metrics and "previous token · prompt" in metrics


def test_the_layers_other_heads_are_one_click_away(model_dir: str) -> None:
    at = head_page(model_dir)
    (picker,) = [s for s in at.segmented_control if s.label == "Heads of layer 1"]
    assert picker.value == 2 and picker.options == ["H0", "H1", "H2", "H3"]
    picker.set_value(3).run()
    assert_clean(at)
    assert (at.session_state[state.LAYER_KEY], at.session_state[state.HEAD_KEY]) == (1, 3)
    assert "Layer 1 · Head 3" in heatmap(at)["layout"]["title"]["text"]


def test_pre_softmax_scores(model_dir: str) -> None:
    at = head_page(model_dir, **{behaviour.PRE_SOFTMAX_KEY: True})
    figure = heatmap(at)
    assert "pre-softmax" in figure["layout"]["title"]["text"]
    text = str(at.session_state[behaviour.PROMPT_KEY])
    want = attention(model_dir, text).head(1, 2, "scores")
    np.testing.assert_allclose(decoded(figure["data"][0]["z"]), want, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize(
    ("prompt", "env", "line"),
    [
        ("   ", {}, "the prompt is empty: type some text to run the model on"),
        ("w5 " * 30, {"HEADFORMS_PROMPT_TOKENS": "8"}, "the prompt is 30 tokens long"),
    ],
)
def test_a_bad_prompt_is_one_line_and_the_geometry_stays(
    model_dir: str, prompt: str, env: dict, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = head_page(model_dir, **{behaviour.PROMPT_KEY: prompt})
    notes = [i.value for i in at.info]
    assert len(notes) == 1 and notes[0].startswith(line)
    assert any("Eigenvalues of S" in str(f["layout"].get("title")) for f in figures(at))


def test_a_model_that_cannot_run_says_so_and_its_geometry_works(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    tiny_models.build("gpt2", bare)  # a checkpoint without tokenizer files
    at = head_page(str(bare))
    notes = [i.value for i in at.info]
    assert len(notes) == 1 and "has no tokenizer files" in notes[0]
    assert at.metric  # the profile metrics are drawn
    at = run_app("behaviour", **{state.MODEL_KEY: str(bare)})
    assert_clean(at)
    assert [i.value for i in at.info] == notes


def test_a_failure_inside_the_forward_pass_is_one_line_and_the_geometry_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of torch, transformers or ours during a pass (here a RuntimeError) is one error line
    per pass that failed, naming the error, never a traceback; the profile views are drawn."""
    model = tmp_path / "fresh"  # a model no earlier test ran, so nothing is kept for it
    tiny_runnable.checkpoint("llama", model, seed=8)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a kernel failed\nwith a second line")

    monkeypatch.setattr(kinds, "attention", broken)  # the forward passes the gateway runs
    monkeypatch.setattr(kinds, "head_type_scores", broken)
    at = run_app("head", **{state.MODEL_KEY: str(model), state.LAYER_KEY: 1, state.HEAD_KEY: 2})
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert errors and all("could not run the model: RuntimeError: a kernel failed" in e
                          for e in errors)  # fmt: skip
    assert all("\n" not in e for e in errors)
    assert at.metric  # the profile metrics are drawn
    assert any("Eigenvalues of S" in str(f["layout"].get("title")) for f in figures(at))


def test_geometry_against_behaviour_page(model_dir: str) -> None:
    at = run_app("behaviour", **{state.MODEL_KEY: model_dir})
    assert_clean(at)
    drawn = figures(at)
    assert len(drawn) == 2
    heads = [t for t in drawn[0]["data"] if t.get("meta", {}).get("role") == "heads"]
    assert sum(len(t["customdata"]) for t in heads) == 8  # every head of the tiny model
    assert "Spearman ρ" in drawn[0]["layout"]["title"]["text"]
    at.selectbox(key="hf_behaviour_geometry").select("parity_rank").run()
    at.selectbox(key="hf_behaviour_score").select("previous_token").run()
    assert_clean(at)
    assert "previous-token score against parity" in figures(at)[0]["layout"]["title"]["text"]
    table = at.dataframe[0].value
    assert len(table) == 6 and set(table["heads"]) == {8}


def test_the_heads_table_gains_the_score_columns(model_dir: str) -> None:
    at = run_app("table", **{state.MODEL_KEY: model_dir, "table_behaviour": True})
    assert_clean(at)
    frame = at.dataframe[-1].value
    for column in ("previous_token", "first_token", "duplicate_token", "induction"):
        assert column in frame.columns and frame[column].notna().all()


def link(at: AppTest) -> dict[str, str]:
    """The URL the run wrote (one value per parameter here)."""
    return {k: v if isinstance(v, str) else v[-1] for k, v in dict(at.query_params).items()}


def test_the_head_pages_options_are_in_its_link(model_dir: str) -> None:
    """The pre-softmax switch and the layer view, set through their widgets, are URL parameters,
    beside a link's prompt (its text area is bound by Streamlit: typing writes the URL in the
    browser, tests/system/browser/test_behaviour_browser.py); a new session opening that URL
    shows the same."""
    text = tiny_runnable.words([30, 31, 32, 30, 31, 32])
    at = run_app("head", params={"model": model_dir, "layer": "1", "head": "2", "prompt": text})
    at.toggle(key=behaviour.PRE_SOFTMAX_KEY).set_value(True).run()
    at.toggle(key=behaviour.LAYER_VIEW_KEY).set_value(True).run()
    assert_clean(at)
    params = link(at)
    assert (params["prompt"], params["scores"], params["layer_view"]) == (text, "1", "1")
    again = run_app("head", params=params)
    assert_clean(again)
    assert again.session_state[behaviour.PROMPT_KEY] == text
    assert again.session_state[behaviour.PRE_SOFTMAX_KEY] is True
    assert "pre-softmax" in heatmap(again)["layout"]["title"]["text"]


def test_a_links_prompt_longer_than_the_cap_is_cut_with_a_notice(
    model_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from page_runner import notice_lines

    monkeypatch.setenv("HEADFORMS_PROMPT_CHARACTERS", "12")
    at = run_app("head", params={"model": model_dir, "prompt": "w5 w6 w7 w8 w9 w10"})
    assert not at.exception
    assert at.session_state[behaviour.PROMPT_KEY] == "w5 w6 w7 w8 "
    assert any(
        "prompt" in line and "longer than 12 characters" in line for line in notice_lines(at)
    )


def test_the_geometry_pages_and_the_tables_options_are_in_their_links(model_dir: str) -> None:
    at = run_app("behaviour", **{state.MODEL_KEY: model_dir})
    at.selectbox(key="hf_behaviour_geometry").select("energy").run()
    at.selectbox(key="hf_behaviour_score").select("duplicate_token").run()
    assert_clean(at)
    params = link(at)
    assert (params["geometry"], params["score"]) == ("energy", "duplicate_token")
    again = run_app("behaviour", params=params)
    assert_clean(again)
    assert (
        "duplicate-token score against symmetric energy"
        in figures(again)[0]["layout"]["title"]["text"]
    )
    table = run_app("table", params={"model": model_dir, "scores": "1"})
    assert_clean(table)
    assert "induction" in table.dataframe[0].value.columns


def test_a_session_keeps_no_copy_of_a_pattern_and_a_stored_one_is_read_once(
    model_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a session holds of a pattern is the gateway's one copy (bounded per visitor and
    server-wide): a session that drew it keeps none of its own once its run ended, not even in
    its download buttons (kept by Streamlit until the session goes; the heatmap's CSV is made
    when clicked), so letting it go frees it; sessions re-opening the stored pattern read it
    once, also while the cache has let go of it but a page still holds it."""
    from streamlit.delta_generator import DeltaGenerator

    from headforms.behaviour import cache as pattern_store
    from ui import compute
    from ui.gateway import PromptAttention

    downloads: dict[object, object] = {}  # what the session's download buttons make, kept
    button = DeltaGenerator.download_button

    def kept(self: DeltaGenerator, label: str, data: object, *args: object, **kwargs: object):
        downloads[kwargs.get("key")] = data
        return button(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", kept)
    prompt = tiny_runnable.words([7, 3, 12, 7, 3, 12, 4])  # no other test's prompt
    head_page(model_dir, **{behaviour.PROMPT_KEY: prompt})  # computed and stored
    gateway = compute.gateway()
    request = PromptAttention(behaviour.runnable_model(model_dir), prompt)
    drawn = weakref.ref(gateway.peek(request))
    gateway.clear()  # the cache lets go of it (past a visitor's bytes, or the server's)
    gc.collect()
    assert drawn() is None  # the session that drew it keeps no reference
    csv = downloads["behaviour_head_pattern__csv"]
    reads: list[str] = []
    real = pattern_store.get_pattern

    def counted(*args: object) -> object:
        reads.append("read")
        return real(*args)

    monkeypatch.setattr(pattern_store, "get_pattern", counted)
    head_page(model_dir, **{behaviour.PROMPT_KEY: prompt})  # a new session re-opens it: read
    held = gateway.peek(request)  # as a page still drawing it holds it
    gateway.cache.clear()
    head_page(model_dir, **{behaviour.PROMPT_KEY: prompt})  # another: the same copy
    assert str(csv()).startswith("query_position,query_token")  # the first session's CSV too
    assert gateway.peek(request) is held and reads == ["read"]
