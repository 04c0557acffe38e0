"""Published per-head tables in the dashboard (AppTest): the picker lists a table's models,
simplex / heatmaps / overview / pairing / compare work, pages that need spectra say so in one
line, a table's models overlay a live model, and the heatmap figure draws without a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from page_runner import assert_clean, run_app, sharing_components
from published_tables import author_table
from streamlit.testing.v1 import AppTest

from headforms.figures import heatmaps
from ui import state


@pytest.fixture(scope="module")
def table_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The author's column names, two models, no model dim N."""
    path = tmp_path_factory.mktemp("published") / "head_statistics.csv"
    frame = pd.concat([author_table("pub-a", 3, 4, 2, 16, 0), author_table("pub-b", 2, 6, 6, 8, 1)])
    frame.to_csv(path, index=False)
    return path


def run(page: str, model: str, **session) -> AppTest:
    """Run ``page`` on ``model``; the run must draw no exception and no error."""
    at = run_app(page, **{state.MODEL_KEY: model, **session})
    assert_clean(at)
    return at


def test_picker_lists_a_table_files_models(table_file: Path):
    at = run("simplex", str(table_file))
    picker = at.sidebar.selectbox[0]
    assert picker.value == f"{table_file}::pub-a"  # the table's first model is opened
    shown = {f"pub-a · {table_file.name}", f"pub-b · {table_file.name}"}  # not the whole path
    assert shown <= set(picker.options)


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
        "per-head table without its spectra file (<model>_spectra.npz beside the table), so it "
        "has only the profiles and scores."
    ]


def test_overlay_a_tables_models_on_a_live_model(table_file: Path):
    at = run("simplex", "minilm-l6", **{state.OVERLAY_KEY: [str(table_file)]})
    figures = [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]
    names = [str(trace.get("name", "")) for figure in figures for trace in figure["data"]]
    for model in ("pub-a", "pub-b", "minilm-l6"):
        assert any(model in name for name in names), names


def test_heatmap_without_a_baseline_has_one_panel(table_file: Path):
    from headforms import analyze

    heads = analyze(f"{table_file}::pub-a").heads
    fig = heatmaps.heatmap_pair_figure(heads, None, "energy", "pub-a", selected=("pub-a", 1, 2))
    cells = [t for t in fig.data if t.meta and t.meta.get("role") == "cells"]
    assert [t.meta["panel"] for t in cells] == ["trained"]
    assert list(cells[0].marker.color) == list(heads["energy"])
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"


@pytest.mark.parametrize("value", [0.5, 2e7, -3e9, 1e300])
def test_a_constant_column_gets_a_range_slider_that_keeps_every_row(value: float):
    """A constant column (any magnitude; before: low + 1e-9 == low above ~1.7e7 and st.slider
    raised) gets a slider of positive width; untouched, it keeps every row, missing ones too."""

    def script(value: float) -> None:
        import pandas as pd
        import streamlit as st

        from ui.tables import range_filter

        table = pd.DataFrame({"x": [value, value, float("nan")]})
        st.session_state["kept"] = int(range_filter(st, table, "x", key="x_range").sum())

    at = sharing_components(AppTest.from_function(script, args=(value,))).run()
    assert not at.exception, [e.message for e in at.exception]
    low, high = at.slider(key="x_range").value
    assert low == value < high
    assert at.session_state["kept"] == 3


def test_a_range_filter_keeps_rows_in_range_and_missing_ones_only_while_untouched():
    from ui.tables import range_mask, value_bounds

    column = pd.Series([0.1, 0.5, np.nan, 0.9, np.inf])
    bounds = value_bounds(column)
    assert bounds == (0.1, 0.9)  # finite values only
    assert list(range_mask(column, bounds, bounds)) == [True, True, True, True, False]
    assert list(range_mask(column, (0.2, 0.9), bounds)) == [False, True, False, True, False]
    assert value_bounds(pd.Series([np.nan, np.inf])) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([2], 2),
        ([0], 0),
        (["1"], 1),
        ([], None),
        ([99999], None),
        (["x"], None),
        ([-1], None),
        ([True], None),
        ([1.5], None),
        ([None], None),
        ("abc", None),
        ({"a": 1}, None),
    ],
)
def test_a_table_selection_from_the_browser_is_checked(rows, expected):
    """Only a whole number naming a shown row selects it (before: [99999] IndexError, ["x"]
    TypeError, [-1] silently the last row)."""
    from ui.tables import selected_row

    assert selected_row(rows, 3) == expected


def test_overview_says_when_the_weight_files_size_is_unknown(table_file: Path):
    """A published table has no weight files: 'unknown', not '0.0 MiB'."""
    at = run("overview", f"{table_file}::pub-a")
    card = at.table[0].value
    values = dict(zip(card["property"], card["value"], strict=True))
    assert values["weight files"] == "unknown"
