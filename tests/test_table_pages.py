"""Published per-head tables in the dashboard (AppTest): the picker lists a table's models,
simplex / heatmaps / overview / pairing / compare work, pages that need spectra say so in one
line, a table's models overlay a live model, and the heatmap figure draws without a baseline."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from test_tables import author_table

from headforms.figures import heatmaps
from ui import state

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.fixture(scope="module")
def table_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The author's column names, two models, no model dim N."""
    path = tmp_path_factory.mktemp("published") / "head_statistics.csv"
    frame = pd.concat([author_table("pub-a", 3, 4, 2, 16, 0), author_table("pub-b", 2, 6, 6, 8, 1)])
    frame.to_csv(path, index=False)
    return path


def run(page: str, model: str, **session) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state[state.MODEL_KEY] = model
    for key, value in session.items():
        at.session_state[key] = value
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def test_picker_lists_a_table_files_models(table_file: Path):
    at = run("simplex", str(table_file))
    picker = at.sidebar.selectbox[0]
    assert picker.value == f"{table_file}::pub-a"  # the table's first model is opened
    assert {f"{table_file}::pub-a", f"{table_file}::pub-b"} <= set(picker.options)


@pytest.mark.parametrize("page", ["simplex", "heatmaps", "overview", "pairing", "compare"])
def test_pages_work_on_a_table_model(table_file: Path, page: str):
    at = run(page, f"{table_file}::pub-b")
    if page == "heatmaps":
        assert any("No Gaussian baseline" in i.value for i in at.info)


@pytest.mark.parametrize("page, name", [("head", "Head"), ("spectra", "Spectra"), ("fits", "Fits")])
def test_pages_needing_spectra_say_so_in_one_line(table_file: Path, page: str, name: str):
    at = run(page, f"{table_file}::pub-a")
    notes = [i.value for i in at.info]
    assert notes == [
        f"The {name} page needs the eigenvalue spectra of S; pub-a comes from a published "
        "per-head table, which has only the profiles and scores."
    ]


def test_overlay_a_tables_models_on_a_live_model(table_file: Path):
    at = run("simplex", "minilm-l6", **{state.OVERLAY_KEY: [str(table_file)]})
    legend = " ".join(str(e.proto) for e in at.get("bidi_component")) or str(at)
    for model in ("pub-a", "pub-b", "minilm-l6"):
        assert model in legend


def test_heatmap_without_a_baseline_has_one_panel(table_file: Path):
    from headforms import analyze

    heads = analyze(f"{table_file}::pub-a").heads
    fig = heatmaps.heatmap_pair_figure(heads, None, "energy", "pub-a", selected=("pub-a", 1, 2))
    cells = [t for t in fig.data if t.meta and t.meta.get("role") == "cells"]
    assert [t.meta["panel"] for t in cells] == ["trained"]
    assert list(cells[0].marker.color) == list(heads["energy"])
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
