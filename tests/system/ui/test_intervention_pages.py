"""Interventions in the dashboard (AppTest, a tiny runnable model): the Head page's "Edit this
head" runs nothing until an edit is chosen and asked for (a step to another head computes
nothing; a stored result shows at once), then shows the library's numbers on the chosen text
(the prompt, or a shipped text), every measure against its controls (ΔCE, KL, the induction
loss), each control's score change, the patterns before and after, the profile and scores; the
Experiments page's per-head heatmap, scatter and whole-model table on its chosen text, and a
published table refused before any button; a link's bad edit is corrected with a notice."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tiny_runnable
from page_runner import assert_clean, notice_lines, run_app
from streamlit.testing.v1 import AppTest

from headforms.interventions import intervention
from ui import interventions, state
from ui.gateway import kinds

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("ui-edit-llama")
    tiny_runnable.checkpoint("llama", directory, seed=3)
    return str(directory)


@pytest.fixture
def private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HEADFORMS_CACHE_DIR", str(tmp_path / "cache"))
    from ui import compute

    compute.gateway().clear()


def figures(at: AppTest) -> list[dict]:
    return [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]


def titled(at: AppTest, words: str) -> dict:
    (found,) = [f for f in figures(at) if words in f["layout"].get("title", {}).get("text", "")]
    return found


def decoded(values) -> np.ndarray:
    """A figure's array (JSON lists, or plotly's typed-array encoding)."""
    if isinstance(values, dict):
        import base64

        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        return raw.astype(float)
    return np.array(values, dtype=float)


def head_page(model: str, params: dict[str, str] | None = None) -> AppTest:
    selection = {state.MODEL_KEY: model, state.LAYER_KEY: 1, state.HEAD_KEY: 2}
    at = run_app("head", params, **selection)
    assert_clean(at)
    return at


def test_nothing_runs_until_an_edit_is_chosen(
    model_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "intervention", lambda *a, **k: pytest.fail("an edit ran"))
    at = head_page(model_dir)
    (box,) = [s for s in at.selectbox if s.label == "Edit"]
    assert box.value == interventions.NO_EDIT
    assert not [m for m in at.metric if m.label == DCE]


DCE = "ΔCE on the text (nats)"


def test_a_chosen_edit_runs_on_request_and_a_step_computes_nothing(
    model_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an edit chosen, the section offers a button (its cost in passes); nothing runs until
    it is pressed (bench_steps: a step to the next head stays cheap)."""
    monkeypatch.setattr(kinds, "intervention", lambda *a, **k: pytest.fail("an edit ran"))
    at = head_page(model_dir, {"edit": "flip", "controls": "2"})
    (button,) = [b for b in at.button if b.label.startswith("Run flip on Layer 1 · Head 2")]
    assert "(6 sequence passes from layer 1 up)" in button.label  # (1 + 2) x (text, probe)
    assert not [m for m in at.metric if m.label == DCE]


def run_edit(model_dir: str, params: dict[str, str]) -> AppTest:
    at = head_page(model_dir, params)
    (button,) = [
        b for b in at.button if b.label.startswith("Run ") and "sequence passes" in b.label
    ]
    button.click().run()
    assert_clean(at)
    return at


def test_an_edit_of_the_head_shows_the_librarys_numbers(model_dir: str) -> None:
    at = run_edit(model_dir, {"edit": "flip", "controls": "3", "edit_seed": "2"})
    want = intervention(model_dir, interventions.head_request(1, 2, "flip", 3, 2))
    row = want.table.iloc[0]
    metrics = {m.label: m for m in at.metric}
    assert metrics[DCE].value == f"{row['delta_ce']:.4g}"
    assert f"p = {row['p_value']:.4g}" in metrics[DCE].delta
    assert metrics["KL (nats)"].value == f"{row['kl']:.4g}"
    induction = metrics["Δ induction loss (nats)"]
    assert induction.value == f"{row['delta_induction_loss']:.4g}"
    assert f"p = {row['induction_p_value']:.4g}" in induction.delta
    assert metrics["score change (RMS)"].value == f"{row['score_rms']:.4g}"
    controls = titled(at, "against its matched controls")
    np.testing.assert_allclose(decoded(controls["data"][0]["x"]), want.controls["delta_ce"][0])
    (table,) = [d.value for d in at.dataframe if "score RMS" in d.value.columns]
    # each control's score change beside its measures
    np.testing.assert_allclose(table["score RMS"].iloc[1:], want.controls["score_rms"][0])
    np.testing.assert_allclose(table["score RMS"].iloc[1:], row["score_rms"], rtol=1e-6)
    np.testing.assert_allclose(
        table["delta_induction_loss"].iloc[1:], want.controls["delta_induction_loss"][0]
    )
    patterns = titled(at, "tokens of the text")
    assert [t["type"] for t in patterns["data"]] == ["heatmap", "heatmap"]
    profile = titled(at, "Profile (a, b, c, d) at d = 0")
    assert list(decoded(profile["data"][1]["y"])) == pytest.approx(
        [row[f"{c}_edited"] for c in "abcd"]
    )
    scores = titled(at, "Head-type scores on the probe")
    assert decoded(scores["data"][1]["y"])[-1] == pytest.approx(row["induction_after"])
    (box,) = [s for s in at.selectbox if s.label == "Edit"]
    box.select("none").run()  # back to nothing: the section's numbers go
    assert_clean(at)
    assert not [m for m in at.metric if m.label == DCE]
    again = head_page(model_dir, {"edit": "flip", "controls": "3", "edit_seed": "2"})
    assert [m for m in again.metric if m.label == DCE]  # stored: shown with no button


def test_the_edit_runs_on_the_chosen_text(model_dir: str) -> None:
    """The prompt typed above, or a shipped text: the library's numbers on that text."""
    prompt = tiny_runnable.words([5, 9, 11, 40, 7, 5, 9, 11, 40, 7])
    at = run_edit(
        model_dir,
        {"edit": "symmetric", "controls": "1", "edit_text": "prompt", "prompt": prompt},
    )
    want = intervention(
        model_dir, interventions.head_request(1, 2, "symmetric", 1, 0, text=prompt)
    ).table.iloc[0]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[DCE] == f"{want['delta_ce']:.4g}"
    assert want["tokens"] == 10


def test_a_links_unknown_edit_is_corrected_with_a_notice(model_dir: str) -> None:
    at = head_page(model_dir, {"edit": "sideways"})
    lines = notice_lines(at)
    assert any("sideways" in line and "is not an edit" in line for line in lines), lines
    assert not [m for m in at.metric if m.label == DCE]


def test_the_experiments_page_sweeps_every_head_and_tabulates_whole_model_edits(
    model_dir: str,
) -> None:
    at = run_app(
        "experiments",
        {"sweep_edit": "symmetric", "geometry": "energy"},
        **{state.MODEL_KEY: model_dir},
    )
    assert_clean(at)
    (button,) = [b for b in at.button if b.label.startswith("Edit each of the")]
    button.click().run()
    assert_clean(at)
    heatmap = titled(at, "of 'symmetric' on each head alone")
    cells = heatmap["data"][0]
    want = intervention(model_dir, interventions.sweep_request("symmetric", 0, 0)).table
    assert len(decoded(cells["x"])) == len(want)
    first = [cells["customdata"][0][1], cells["customdata"][0][2]]
    assert first == [0, 0]
    np.testing.assert_allclose(decoded(cells["marker"]["color"])[0], want["delta_ce"].iloc[0])
    scatter = titled(at, "against symmetric energy")
    assert "Spearman ρ" in scatter["layout"]["title"]["text"]
    (run_all,) = [b for b in at.button if b.label.startswith("Run the 10 whole-model")]
    run_all.click().run()
    assert_clean(at)
    table = at.dataframe[-1].value
    assert list(table["edit"])[:2] == ["identity", "symmetric"]
    assert abs(table["delta_ce"].iloc[0]) < 1e-4  # identity reproduces the model
    assert table["exceeds"].iloc[1].endswith("of 8")
    symmetric = intervention(
        model_dir, interventions.whole_model_request("symmetric", 0)
    ).table.iloc[0]
    assert table["p_value"].iloc[1] == pytest.approx(symmetric["p_value"])
    assert table["score_rms"].iloc[1] == pytest.approx(symmetric["score_rms"])
    assert any(b.label.startswith("Run the study (") for b in at.button)


def test_a_published_table_is_refused_before_any_button(tmp_path: Path) -> None:
    """A published table has no weights: the page says so in words about weights, up front."""
    from published_tables import author_table

    path = tmp_path / "head_statistics.csv"
    author_table("tiny", 2, 4, 4, 32, seed=1).to_csv(path, index=False)
    at = run_app("experiments", None, **{state.MODEL_KEY: f"{path}::tiny"})
    assert_clean(at)
    assert not at.button
    (info,) = [i.value for i in at.info]
    assert "published per-head table" in info and "weights" in info
    assert "pattern" not in info
