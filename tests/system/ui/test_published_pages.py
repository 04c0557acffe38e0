"""The author's published files in the dashboard (AppTest): a model read from
``head_statistics.csv`` and its ``<tag>_spectra.npz`` (written from a tiny model,
tests/helpers/author_files.py) opens the pages that need spectra, with the author's other
views (clusters by layer, the spectrum of S against that of A) computed as for the model read
from its weights; unknown facts say unknown. Also the Simplex page's gallery download and the
Compare page's Figures 13-14 beside their baselines."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import tiny_models
from author_files import write_author_files
from page_runner import assert_clean, run_app
from streamlit.testing.v1 import AppTest

from headforms import analyze
from headforms.analyses.spectral_geometry import geometry_summary, spectral_geometry
from ui import state


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(the published model's spec, the same model's weights directory)."""
    root = tmp_path_factory.mktemp("published-pages")
    model = tiny_models.build("gpt2", root / "weights", seed=7)
    write_author_files(root / "survey_results", {"tiny": model})
    return f"{root / 'survey_results'}::tiny", str(root / "weights")


def run(page: str, model: str, **session) -> AppTest:
    at = run_app(page, **{state.MODEL_KEY: model, **session})
    assert_clean(at)
    return at


def test_the_spectra_page_of_published_spectra_is_that_of_the_weights(published):
    spec, weights = published
    at = run("spectra", spec)
    geometry = at.dataframe[1].value
    reference = geometry_summary(
        {spec: spectral_geometry(analyze(weights, spectra=("sv_a",)).spectra)}
    )
    pd.testing.assert_frame_equal(geometry.reset_index(drop=True), reference, rtol=1e-6)
    assert any(c.value.startswith("The clusters by layer") for c in at.caption)


@pytest.mark.parametrize("page", ["head", "fits", "overview", "observations"])
def test_pages_needing_spectra_open_a_published_model(published, page: str):
    spec, _ = published
    at = run(page, spec)
    if page == "fits":
        assert any("not in the author's published spectra" in i.value for i in at.info)
    if page == "overview":
        card = dict(zip(*at.table[0].value.to_dict("list").values(), strict=True))
        assert card["head dim n"] == "16" and card["Q/K biases"] == "unknown"
        assert card["QK-norm"] == "unknown" and card["model dim N"] == "not in the table"


def test_the_simplex_page_offers_the_gallery(published):
    _, weights = published
    at = run("simplex", weights)
    labels = [e.proto.label for e in at.get("download_button")]
    assert "Gallery: this model in one HTML file" in labels


def test_compare_draws_figures_13_and_14_beside_their_baselines(published):
    _, weights = published
    at = run("compare", "minilm-l6", compare_models=[weights])
    figures = [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]
    (heatmap,) = [f for f in figures if "one scale" in f["layout"]["title"]["text"]]
    panels = [trace["meta"]["panel"] for trace in heatmap["data"]]
    assert panels == ["minilm-l6", "minilm-l6 baseline", weights, f"{weights} baseline"]
