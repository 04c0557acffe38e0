"""The paper-view pages (spectra, fits, Theorem 5, pairing, compare) render headless without
exceptions on a bundled model, and their figure builders for several models are well formed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from page_runner import APP, TIMEOUT, run_app, sharing_components
from streamlit.testing.v1 import AppTest
from tiny_models import build

from headforms import analyze
from headforms.figures import distributions, parity
from ui import state

MODEL = "minilm-l6"
TITLES = {
    "spectra": "Spectra of the symmetric parts",
    "fits": "Distribution fits of the spectral lobes",
    "theorem5": "Theorem 5: sampled gamma lobes",
    "pairing": "Pairing scores per model",
    "compare": "Compare models",
    "observations": "Observations",
}


@pytest.fixture(scope="module")
def models():
    """Two bundled models' per-head tables (disk-cached across the test session)."""
    return {name: analyze(name).heads for name in ("minilm-l6", "smollm2-135m")}


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random GPT-2 (2 layers x 4 heads): few heads for clusters and fits."""
    directory = tmp_path_factory.mktemp("tiny-gpt2-paper")
    build("gpt2", directory, seed=11)
    return str(directory)


def _run_page(page: str, model: str = MODEL, **session) -> AppTest:
    return run_app(page, **{state.MODEL_KEY: model, **session})


@pytest.mark.parametrize("page", list(TITLES))
def test_page_renders_without_exceptions(page):
    at = _run_page(page)
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert [t.value for t in at.title] == [TITLES[page]]


def test_spectra_page_with_a_chosen_k_and_selected_head():
    at = _run_page("spectra", spectra_k=3, heads_color="parity", **{state.LAYER_KEY: 2})
    assert not at.exception, [e.message for e in at.exception]
    clusters = at.dataframe[0].value
    assert len(clusters) == 3 and clusters["size"].sum() == 72


def test_theorem5_page_reports_bad_parameters(monkeypatch):
    """Sizes over the sampler's bound are one line, refused before the visitor's budget is
    spent (hosted mode, where the budget exists)."""
    from headforms.hosted import LOCAL, api

    monkeypatch.setenv("HEADFORMS_HOSTED", "1")
    monkeypatch.setattr(api, "hosting", api.Hosting())

    def samplings() -> int:
        """New samplings this visitor started (none while the figures come from the cache)."""
        return len(api.hosting.budgets._starts.get((LOCAL, "samples"), ()))

    at = _run_page("theorem5")
    assert not at.exception and not at.error
    spent = samplings()
    at.multiselect[0].set_value([64, 4096]).run()  # 4096 x 100 spectra: over the limit
    assert not at.exception
    assert "exceeds" in at.error[0].value
    assert samplings() == spent  # refused before the session's budget is spent
    at.multiselect[0].set_value([]).run()
    assert not at.exception and at.info


def test_theorem5_page_opened_without_the_app_draws_the_sidebar():
    """Run on its own (a fresh server's first request for its URL), the page needs no model
    but still draws the shared sidebar through page_context()."""
    at = sharing_components(
        AppTest.from_file(str(Path(APP).parent / "pages" / "theorem5.py"), default_timeout=TIMEOUT)
    )
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert [t.value for t in at.title] == [TITLES["theorem5"]]
    assert at.sidebar.selectbox  # the model picker


def test_comparison_figures_and_table(models):
    table = parity.parity_comparison_table(models)
    assert list(table["source"]).count("paper, Table 2") == 6
    assert set(table.loc[table["source"] == "computed here", "model"]) == set(models)
    figures = (
        parity.parity_comparison_figure(table),
        distributions.distribution_figure(models, "pairing"),
        distributions.distribution_figure(models, "energy", "symmetric energy"),
    )
    for fig in figures:
        assert fig.layout.title.text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    medians = [s for s in figures[1].layout.shapes if s.line.dash == "dash"]
    assert len(medians) == len(models)


@pytest.mark.parametrize("k", [3, "best silhouette", 5])
def test_spectra_page_projection_and_cluster_options(k):
    at = _run_page("spectra", spectra_k=k, spectra_projection="pca", heads_color="cluster")
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    clusters = at.dataframe[0].value
    heads = analyze(MODEL).heads
    assert clusters["size"].sum() == len(heads)
    if k == 3:
        from headforms.analyses.spectra import CLUSTER_NAMES

        # neutral names (rank and where Figure 4 hangs them), never a parity type's
        assert list(clusters["name"]) == list(CLUSTER_NAMES)
    assert any("PCA" in c.value for c in at.caption)


def test_type2_tolerance_from_the_sidebar_changes_the_parity_shares():
    heads = analyze(MODEL).heads
    total = heads["c_sym"] + heads["d_sym"]
    for page, tolerance in (("overview", 0.1), ("compare", 0.05)):
        at = _run_page(page, **{state.TOLERANCE_KEY: tolerance})
        assert not at.exception, [e.message for e in at.exception]
        table = at.dataframe[0].value
        row = table.iloc[0] if page == "overview" else table[table["model"] == MODEL].iloc[0]
        assert row["II"] == pytest.approx(100 * np.mean(total <= tolerance))
        assert any(f"{tolerance:g}" in c.value for c in at.caption)


def test_observations_page_tables_follow_the_models():
    at = _run_page("observations", observations_models=["smollm2-135m"])
    assert not at.exception, [e.message for e in at.exception]
    theorem3, theta, bias, obs5 = (d.value for d in at.dataframe[:4])
    assert list(theorem3.index) == [MODEL, "smollm2-135m"]
    assert theorem3.loc["smollm2-135m", "generic"] == pytest.approx(100.0)
    assert set(theta["heads"]) == {"trained", "Gaussian baseline"} and len(theta) == 4
    assert list(bias["model"]) == [MODEL, "smollm2-135m"]  # Observation 4
    heads = analyze("smollm2-135m").heads
    assert bias.iloc[1]["above 1/2 (%)"] == pytest.approx(100 * np.mean(heads["energy"] > 0.5))
    assert len(obs5) == 4


@pytest.mark.parametrize("page", list(TITLES))
def test_pages_render_for_a_tiny_model(page, tiny_gpt2):
    at = _run_page(page, model=tiny_gpt2)
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert [t.value for t in at.title] == [TITLES[page]]


@pytest.fixture(scope="module")
def table_file(tmp_path_factory: pytest.TempPathFactory):
    """A published per-head table with the author's columns (no spectra, no n_pos, no N)."""
    from published_tables import author_table

    path = tmp_path_factory.mktemp("published-paper") / "head_statistics.csv"
    author_table("pub-a", 3, 4, 2, 16, 0).to_csv(path, index=False)
    return f"{path}::pub-a"


@pytest.mark.parametrize("page", ["observations", "compare"])
def test_table_models_on_the_observation_and_compare_pages(page, table_file):
    key = "observations_models" if page == "observations" else "compare_models"
    at = _run_page(page, **{key: [table_file], state.TOLERANCE_KEY: 0.05})
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    if page == "observations":
        theorem3 = at.dataframe[0].value
        assert np.isnan(theorem3.loc[table_file, "balanced"])  # not in the table: not 0%
        assert theorem3.loc[MODEL, "balanced"] == pytest.approx(100.0)
        theta = at.dataframe[1].value
        assert set(theta["model"]) == {MODEL, table_file}
        assert len(theta[theta["model"] == table_file]) == 1  # no baseline without N


@pytest.fixture(scope="module")
def two_head_gpt2(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random GPT-2 of one layer with two heads: too few heads to cluster."""
    directory = tmp_path_factory.mktemp("tiny-gpt2-two-heads")
    build("gpt2", directory, seed=12, n_head=2, n_layer=1)
    return str(directory)


def test_spectra_page_offers_only_feasible_cluster_counts(tiny_gpt2):
    """8 heads: every k offered is below 8, and the largest one clusters without an error."""
    at = _run_page("spectra", model=tiny_gpt2)
    options = [o for o in at.selectbox(key="spectra_k").options if o != "best silhouette"]
    ks = [int(o.removesuffix(" (paper)")) for o in options]
    assert ks and max(ks) == 7 and min(ks) == 2
    at.selectbox(key="spectra_k").set_value(max(ks)).run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.dataframe[0].value["size"].sum() == 8


def test_spectra_page_says_in_one_line_when_clustering_is_impossible(two_head_gpt2):
    at = _run_page("spectra", model=two_head_gpt2, spectra_k="best silhouette")
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.info) == 1 and "at least 3 heads" in at.info[0].value


def test_fig4_caption_says_up_to_the_extreme_count(tiny_gpt2):
    """8 heads: each cluster has fewer heads than the 10 extreme ones the caption counts."""
    from headforms.analyses import spectra as sp

    at = _run_page("spectra", model=tiny_gpt2)
    summary = at.dataframe[0].value
    assert (summary["n_extreme"] == summary["size"]).all()
    caption = next(c.value for c in at.caption if c.value.startswith("Fig 4"))
    assert f"up to {sp.extreme_count(8)} of the cluster's most extreme heads" in caption
    assert f"{sp.N_EXTREME} per {sp.HEADS_PER_EXTREME} heads" in caption


def test_spectra_figures_follow_the_requested_k(tiny_gpt2, monkeypatch):
    """Two requested k that both yield 3 clusters (k-means may leave clusters empty) must not
    share the summary: cache keys follow the requested k."""
    from dataclasses import replace

    from headforms.analyses import spectra as sp
    from ui import compute

    real = sp.cluster_spectra

    def three_clusters(eig_s, k):
        clusters = real(eig_s, 3)
        return replace(clusters, names=tuple(f"asked {k}, cluster {j}" for j in range(3)))

    monkeypatch.setattr(sp, "cluster_spectra", three_clusters)
    try:
        at = _run_page("spectra", model=tiny_gpt2, spectra_k=4)
        assert list(at.dataframe[0].value["name"])[0] == "asked 4, cluster 0"
        at.selectbox(key="spectra_k").set_value(5).run()
        assert not at.exception, [e.message for e in at.exception]
        assert list(at.dataframe[0].value["name"])[0] == "asked 5, cluster 0"
    finally:
        compute.gateway().clear()  # no fake clusters for later tests


def test_fits_and_compare_share_one_definition_of_the_fit_errors(monkeypatch):
    """Both pages get a model's average fit errors from the gateway's Observation3Fits kind
    (one cache entry, one computation), and the compare page says a size it cannot place is
    unknown for its source (not only for partly opened shards)."""
    import copy
    import dataclasses

    from ui import compute, loading
    from ui.gateway import Observation3Fits

    calls = []
    computed = []
    real = compute.derive
    real_compute = Observation3Fits.compute

    def counted(computation, *args, **kwargs):
        if isinstance(computation, Observation3Fits):
            calls.append(computation.analysis.card.spec)
        return real(computation, *args, **kwargs)

    def sizeless(*args, **kwargs):
        analyses = real_load(*args, **kwargs)
        for name, analysis in analyses.items():
            analyses[name] = copy.copy(analysis)
            analyses[name].card = dataclasses.replace(analysis.card, n_parameters=None)
        return analyses

    real_load = loading.load_models
    compute.gateway().clear()  # the model's fits computed here, once
    monkeypatch.setattr(compute, "derive", counted)
    monkeypatch.setattr(
        Observation3Fits, "compute", lambda self: computed.append(1) or real_compute(self)
    )
    monkeypatch.setattr(loading, "load_models", sizeless)
    fits_page = _run_page("fits")
    compare_page = _run_page("compare")
    for at in (fits_page, compare_page):
        assert not at.exception, [e.message for e in at.exception]
    assert calls[0] == MODEL and MODEL in calls[1:]  # the fits page, then every compared model
    assert len(computed) == len(set(calls))  # one computation per model, shared by both pages
    assert any(
        f"parameter count unknown for this source: {MODEL}" in c.value for c in compare_page.caption
    )


def _figures(at: AppTest) -> list[dict]:
    """The figures the page drew (the payloads of its plot components)."""
    import json

    return [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]


def test_observations_departure_histogram_covers_every_departure():
    """Departures of non-negative lobes reach past 1 (a spike against a flat lobe) up to √2: the
    histogram's bins span [0, √2]."""
    from headforms.forms import MAX_LOBE_DEPARTURE, lobe_metrics

    n = 64
    spike, flat = np.eye(1, n)[0], np.ones(n)
    departure = lobe_metrics(spike, flat)["lobe_departure"]
    assert 1 < departure < MAX_LOBE_DEPARTURE
    at = _run_page("observations")
    assert not at.exception, [e.message for e in at.exception]
    (figure,) = [f for f in _figures(at) if "departure" in str(f["layout"]["xaxis"]["title"])]
    ends = {t["xbins"]["end"] for t in figure["data"] if t["type"] == "histogram"}
    assert ends and all(end == pytest.approx(np.sqrt(2)) for end in ends)


def test_observations_scatters_are_not_rebuilt_for_another_selected_head(monkeypatch):
    """The Θ scatter and the two 'against' scatters do not show the selected head: selecting
    another head reuses them (their cache keys hold no selection)."""
    from headforms.figures import observations as figures_obs
    from ui import compute

    built = []
    for name in ("theta_scatter_figure", "against_figure"):
        real = getattr(figures_obs, name)

        def counting(*args, real=real, name=name, **kwargs):
            built.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(figures_obs, name, counting)
    compute.gateway().clear()
    at = _run_page("observations", **{state.LAYER_KEY: 0, state.HEAD_KEY: 0})
    assert not at.exception, [e.message for e in at.exception]
    first = sorted(built)
    at.session_state[state.HEAD_KEY] = 1
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert first == ["against_figure", "against_figure", "theta_scatter_figure"]
    assert sorted(built) == first


def test_pairing_caption_describes_what_the_figure_shows():
    """Baseline histograms start hidden (legend only); the visible dotted lines are the
    baseline medians, and the caption says so."""
    at = _run_page("pairing")
    assert not at.exception, [e.message for e in at.exception]
    (figure, *_) = _figures(at)
    baseline = [t for t in figure["data"] if "Gaussian baseline" in t.get("name", "")]
    assert baseline and all(t["visible"] == "legendonly" for t in baseline)
    dotted = [s for s in figure["layout"]["shapes"] if s["line"]["dash"] == "dot"]
    assert len(dotted) == len(baseline)
    caption = at.caption[0].value
    assert "dotted lines the medians of Gaussian K, Q" in caption and "outlines" not in caption


def _figures(at: AppTest) -> list[dict]:
    """The figures the page sent to the plot component."""
    return [json.loads(json.loads(e.proto.json)["figure"]) for e in at.get("bidi_component")]


def test_heatmaps_page_draws_several_models_on_one_colour_scale():
    at = _run_page("heatmaps", heatmaps_models=["smollm2-135m"])
    assert not at.exception and not at.error
    figures = [f for f in _figures(at) if "coloraxis" in f["layout"]]
    assert len(figures) == 4  # energy and pairing, for both models
    by_column = {}
    for figure in figures:
        axis = figure["layout"]["coloraxis"]
        title = figure["layout"]["title"]["text"]
        by_column.setdefault(title.split(":")[0], set()).add((axis["cmin"], axis["cmax"]))
        assert MODEL in title or "smollm2-135m" in title  # each figure names its model
    assert len(by_column) == 2 and all(len(ranges) == 1 for ranges in by_column.values())
    at.toggle(key="heatmaps_shared_scale").set_value(False).run()
    ranges = {
        (f["layout"]["coloraxis"]["cmin"], f["layout"]["coloraxis"]["cmax"]) for f in _figures(at)
    }
    assert len(ranges) == 4  # each pair on its own range


def test_observations_show_their_status_in_the_paper():
    """Table 14 beside each observation's view, and Observation 4's labelled view."""
    at = _run_page("observations")
    assert not at.exception and not at.error
    statuses = [c.value for c in at.caption if "Status in the paper (Table 14)" in c.value]
    assert len(statuses) == 4  # Observations 1, 2, 4, 5 on this page
    assert "Proved" in statuses[0] and "Theorem 3" in statuses[0]
    assert any("Observation 4" in s.value for s in at.subheader)
    bias = next(f for f in _figures(at) if "energy" in f["layout"]["xaxis"]["title"]["text"])
    labels = {a["text"]: a["x"] for a in bias["layout"]["annotations"] if "‖A‖" in a["text"]}
    assert list(labels.values()) == [0.5]  # 1/2 marked and labelled: ‖S‖² = ‖A‖²
    fits = _run_page("fits")
    assert sum("Table 14" in c.value for c in fits.caption) == 2  # Observations 3 and 6
