"""The demo on the Motion pages under Streamlit's AppTest: "Try the demo" builds it and fills the
page's inputs with its names (``demo:run``: the URL, so a link reproduces the view, and the titles
name it without the cache's path; the Model diff page's own A and B, never the sidebar's model),
the page says what it is (a toy, not a real model) and draws it without an error."""

from __future__ import annotations

import json

from page_runner import assert_clean, run_app

from headforms.demo import build_demo
from ui import state

PARAMS = {"model": "smollm2-135m", "layer": "0", "head": "0"}


def try_the_demo(page: str):
    at = run_app(page, PARAMS)
    assert_clean(at)
    button = next(b for b in at.button if b.label == "Try the demo")
    button.click().run(timeout=600)
    assert_clean(at)
    assert not [b for b in at.button if b.label == "Try the demo"]
    said = [*at.info, *at.caption]  # beside the Training run's figure: a caption
    assert any("not a real model" in i.value for i in said)
    return at


def shown_text(at) -> str:
    """Every text the page shows: its markdown, captions and figures (titles, legends)."""
    texts = [e.value for kind in (at.markdown, at.caption, at.info, at.title) for e in kind]
    texts += [json.loads(e.proto.json)["figure"] for e in at.get("bidi_component")]
    return "\n".join(texts)


def test_the_training_run_page_shows_the_demo_run() -> None:
    at = try_the_demo("training")
    demo = build_demo()  # built by the click: read back
    assert at.session_state[state.SERIES_KEY] == "demo:run"
    assert at.query_params["run"] == "demo:run"
    text = shown_text(at)
    assert "demo:run" in text and str(demo.directory) not in text
    assert at.subheader[0].value == "Steps at which heads change parity"
    assert f"steps {demo.steps[0]}…{demo.steps[-1]}" in " ".join(c.value for c in at.caption)


def test_the_model_diff_page_shows_the_demo_pair() -> None:
    at = try_the_demo("diff")
    demo = build_demo()
    base = "demo:base"
    assert at.session_state[state.DIFF_A_KEY] == base
    assert at.session_state[state.DIFF_KEY] == "demo:finetuned"
    assert at.session_state[state.MODEL_KEY] == "smollm2-135m"  # the sidebar's stays
    assert at.query_params["model"] == "smollm2-135m"
    assert at.query_params["a"] == base and at.query_params["b"] == "demo:finetuned"
    text = shown_text(at)
    assert "demo:finetuned" in text and str(demo.directory) not in text
    assert any("heads change parity type" in m.value for m in at.markdown)
