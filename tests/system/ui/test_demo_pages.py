"""The demo on the Motion pages under Streamlit's AppTest: "Try the demo" builds it and fills the
page's inputs (the URL names its folders, so a link reproduces the view), the page says what it
is (a toy, not a real model) and draws it without an error."""

from __future__ import annotations

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
    assert any("not a real model" in i.value for i in at.info)
    return at


def test_the_training_run_page_shows_the_demo_run() -> None:
    at = try_the_demo("training")
    demo = build_demo()  # built by the click: read back
    assert at.session_state[state.SERIES_KEY] == str(demo.run)
    assert at.query_params["run"] == str(demo.run)
    assert at.subheader[0].value == "Steps at which heads change parity"
    assert f"steps {demo.steps[0]}…{demo.steps[-1]}" in " ".join(c.value for c in at.caption)


def test_the_model_diff_page_shows_the_demo_pair() -> None:
    at = try_the_demo("diff")
    demo = build_demo()
    assert at.session_state[state.MODEL_KEY] == str(demo.base)
    assert at.session_state[state.DIFF_KEY] == str(demo.finetuned)
    assert at.query_params["model"] == str(demo.base)
    assert at.query_params["b"] == str(demo.finetuned)
    assert any("heads change parity type" in m.value for m in at.markdown)
