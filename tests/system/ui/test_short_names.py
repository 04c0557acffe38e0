"""Names where room is short (issue 39.7), under AppTest: a published table's models are named
by their name and the table file's in the sidebar's picker and the figures' titles, never by the
table's whole path (titles were cut, and the picker could not show which of six models was
selected); the library's short name of every kind of spec."""

from __future__ import annotations

import json

import pytest
from page_runner import assert_clean, run_app
from published_tables import author_table

from headforms.sources.specs import short_name
from ui import state

MODELS = ["gpt2", "gpt2-medium", "pythia-160m", "pythia-410m", "opt-125m", "opt-350m"]


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("/srv/data/author-head-statistics-table2-models.csv::gpt2",
         "gpt2 · author-head-statistics-table2-models.csv"),
        ("runs/heads.parquet", "heads.parquet"),
        ("smollm2-135m", "smollm2-135m"),
        ("org/name@main", "org/name@main"),
        ("demo:run/checkpoint-25", "demo:run/checkpoint-25"),
        ("/models/llama", "/models/llama"),
    ],
)  # fmt: skip
def test_short_names(spec: str, shown: str) -> None:
    assert short_name(spec) == shown


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("deep") / "a" / "long" / "folder"
    folder.mkdir(parents=True)
    path = folder / "author-head-statistics-table2-models.csv"
    frames = [author_table(m, 2, 4, 4, 64, seed=i) for i, m in enumerate(MODELS)]
    import pandas as pd

    pd.concat(frames).to_csv(path, index=False)
    return str(path)


def test_a_tables_models_are_named_short_in_the_picker_and_the_titles(table: str) -> None:
    at = run_app(None, {"model": f"{table}::pythia-160m"})
    assert_clean(at)
    picker = at.selectbox(key=state.MODEL_KEY)
    shown = [picker.format_func(option) for option in picker.options]
    for model in MODELS:
        assert f"{model} · author-head-statistics-table2-models.csv" in shown
    assert picker.format_func(picker.value) == (
        "pythia-160m · author-head-statistics-table2-models.csv"
    )
    titles = [
        json.loads(json.loads(e.proto.json)["figure"])["layout"]["title"]["text"]
        for e in at.get("bidi_component")
    ]
    assert titles and all("/a/long/folder" not in title for title in titles), titles
    assert any("pythia-160m · author-head-statistics-table2-models.csv" in t for t in titles)
