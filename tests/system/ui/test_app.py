"""The dashboard's pages run headless (Streamlit AppTest) on the bundled default model and on
tiny random models built in the session: they render, follow the selection in session state
and in the URL, and show engine errors as ``st.error``."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from page_runner import assert_clean, run_app
from streamlit.testing.v1 import AppTest
from tiny_models import build

from headforms import DEFAULT_MODEL, analyze
from headforms.baseline import gaussian_baseline
from headforms.columns import ALL_SPECTRA, METRIC_COLUMNS
from headforms.figures import head as head_figures
from ui import state
from ui.exports import heads_csv, spectra_npz
from ui.loading import DASHBOARD_SPECTRA, dashboard_options, warm
from ui.widgets import GOTO_KEY, format_layers

PAGES = {
    "simplex": "Profiles on the simplex",
    "table": "Heads table",
    "heatmaps": "Layer × head heatmaps",
    "overview": "Model overview",
}
TABLE_KEY = "heads_table"


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random llama (RoPE, GQA 4/2 heads, 2 layers) saved with save_pretrained."""
    directory = tmp_path_factory.mktemp("tiny-llama")
    build("llama", directory, seed=3)
    return str(directory)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny random GPT-2 (learned absolute positions: no RoPE)."""
    directory = tmp_path_factory.mktemp("tiny-gpt2")
    build("gpt2", directory, seed=4)
    return str(directory)


@pytest.fixture(params=["default", "tiny"])
def spec(request: pytest.FixtureRequest) -> str:
    """The bundled default model and a tiny local model."""
    return DEFAULT_MODEL if request.param == "default" else request.getfixturevalue("tiny_llama")


def title(at: AppTest) -> str:
    """The page's title (one per page)."""
    titles = [t.value for t in at.title]
    assert len(titles) == 1, titles
    return titles[0]


def metric(at: AppTest, label: str) -> str:
    """The displayed value of the metric called ``label``."""
    return next(m.value for m in at.metric if m.label == label)


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders(spec: str, page: str) -> None:
    at = run_app(page, {"model": spec})
    assert_clean(at)
    assert title(at) == PAGES[page]
    assert at.session_state[state.MODEL_KEY] == spec


def test_head_page_follows_the_selection_in_state(spec: str) -> None:
    heads = analyze(spec).heads
    layer, head = int(heads["layer"].max()), int(heads["head"].max()) - 1
    at = run_app("head", {"model": spec})
    assert_clean(at)
    assert title(at) == "Layer 0 · Head 0"
    at.session_state[state.LAYER_KEY] = layer
    at.session_state[state.HEAD_KEY] = head
    at.run()
    assert_clean(at)
    assert title(at) == f"Layer {layer} · Head {head}"
    row = heads[(heads["layer"] == layer) & (heads["head"] == head)].iloc[0]
    assert metric(at, "Symmetric energy") == f"{row['energy']:.3f}"
    assert metric(at, "Pairing score") == f"{row['pairing']:.3f}"
    assert metric(at, "Parity") == row["parity"]
    assert at.query_params["layer"] == str(layer) and at.query_params["head"] == str(head)


def test_previous_and_next_buttons_walk_the_heads_and_wrap(tiny_llama: str) -> None:
    card = analyze(tiny_llama).card
    last_layer, last_head = card.n_layers - 1, card.n_heads - 1
    at = run_app("head", {"model": tiny_llama, "layer": "0", "head": str(last_head)})
    assert title(at) == f"Layer 0 · Head {last_head}"
    next_button = next(b for b in at.button if b.label == "Next")
    next_button.click().run()
    assert title(at) == "Layer 1 · Head 0"
    at.session_state[state.LAYER_KEY] = 0
    at.session_state[state.HEAD_KEY] = 0
    at.run()
    previous = next(b for b in at.button if b.label == "Previous")
    previous.click().run()
    assert_clean(at)
    assert title(at) == f"Layer {last_layer} · Head {last_head}"


def test_next_finds_the_next_heads_figures_built_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Head page builds the next and previous heads' figures in the background: the "Next"
    step draws them from the cache, building none of its own (a fresh model: nothing kept)."""
    build("llama", tmp_path, seed=11)
    threads: list[str] = []
    original = head_figures.eigenvalue_histogram

    def counted(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(head_figures, "eigenvalue_histogram", counted)
    at = run_app("head", {"model": str(tmp_path), "layer": "0", "head": "0"})
    assert_clean(at)
    deadline = time.monotonic() + 60
    while sum(name.startswith("headforms-ahead") for name in threads) < 2:  # next and previous
        assert time.monotonic() < deadline, threads
        time.sleep(0.2)
        at.run()  # the same head again: a guess dropped while others' were waiting is made again
    before = len(threads)
    next(b for b in at.button if b.label == "Next").click().run()
    assert_clean(at)
    assert title(at) == "Layer 0 · Head 1"
    assert all(name.startswith("headforms-ahead") for name in threads[before:]), threads


def test_a_shared_link_opens_the_same_head(tiny_llama: str) -> None:
    params = {"model": tiny_llama, "rope": "3", "layer": "1", "head": "2"}
    at = run_app("head", params)
    assert_clean(at)
    assert title(at) == "Layer 1 · Head 2"
    assert at.session_state[state.ROPE_KEY] == 3
    assert any("RoPE position d = 3" in c.value for c in at.caption)
    rotated = analyze(tiny_llama, rope_position=3).heads.iloc[analyze(tiny_llama).row(1, 2)]
    assert metric(at, "Symmetric energy") == f"{rotated['energy']:.3f}"
    assert dict(at.query_params) == params


def test_out_of_range_url_values_are_clamped(tiny_llama: str) -> None:
    at = run_app("head", {"model": tiny_llama, "rope": "-99999999", "layer": "99", "head": "-4"})
    assert_clean(at)
    card = analyze(tiny_llama).card
    assert title(at) == f"Layer {card.n_layers - 1} · Head 0"
    assert at.session_state[state.ROPE_KEY] == -(10**7)


def test_rope_position_is_disabled_and_reset_for_models_without_rope(tiny_gpt2: str) -> None:
    at = run_app("overview", {"model": tiny_gpt2, "rope": "5"})
    assert_clean(at)
    rope = at.sidebar.number_input(key=state.ROPE_KEY)
    assert rope.disabled and rope.value == 0
    assert "rope" not in at.query_params  # 0, the default, is left out of the URL
    (notice,) = [w.value for w in at.warning]
    assert "rope=5 applies to RoPE models only" in notice


def test_overlaid_models_and_a_bad_overlay(tiny_llama: str) -> None:
    at = run_app("simplex", {"model": DEFAULT_MODEL}, **{state.OVERLAY_KEY: [tiny_llama]})
    assert_clean(at)
    at.session_state[state.OVERLAY_KEY] = [tiny_llama, "/no/such/overlay"]
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "/no/such/overlay" in at.error[0].value
    assert title(at) == PAGES["simplex"]


def test_overview_card_and_parity_table(tiny_llama: str) -> None:
    analysis = analyze(tiny_llama)
    at = run_app("overview", {"model": tiny_llama})
    assert_clean(at)
    card = at.table[0].value.set_index("property")["value"]
    assert card["layers"] == str(analysis.card.n_layers)
    assert card["key/value heads per layer"] == f"{analysis.card.n_kv_heads} (GQA)"
    assert card["positional encoding"] == analysis.card.positional
    parity = at.dataframe[0].value
    assert parity["heads"].iloc[0] == analysis.card.total_heads
    assert parity[["I+", "II", "I-"]].sum(axis=1).iloc[0] == pytest.approx(100.0)


def test_downloads_round_trip(tiny_llama: str) -> None:
    analysis = analyze(tiny_llama, spectra=ALL_SPECTRA)
    baseline = gaussian_baseline(analysis.card.baseline_shapes)
    table = pd.read_csv(io.StringIO(heads_csv(analysis, baseline)))
    assert list(table.columns) == [
        *analysis.heads.columns,
        *(f"rand_{c}" for c in METRIC_COLUMNS),
    ]
    np.testing.assert_allclose(table["energy"], analysis.heads["energy"], rtol=1e-12)
    np.testing.assert_allclose(table["rand_energy"], baseline.heads["energy"], rtol=1e-12)
    with np.load(io.BytesIO(spectra_npz(analysis, baseline))) as npz:
        assert set(npz.files) == set(ALL_SPECTRA) | {f"rand_{k}" for k in baseline.spectra} | {
            "layer",
            "head",
        }
        np.testing.assert_array_equal(npz["eig_s"], analysis.spectra["eig_s"])
        np.testing.assert_array_equal(npz["rand_sv_a"], baseline.spectra["sv_a"])
        np.testing.assert_array_equal(npz["head"], analysis.heads["head"])


def test_the_result_cache_keeps_the_most_recently_used_analyses(tiny_llama: str) -> None:
    """Within its byte budget (here room for two analyses), the least recently used goes."""
    from headforms.bounded import sizeof
    from ui.gateway import ResultCache

    analysis = analyze(tiny_llama)
    cache = ResultCache(max_bytes=sizeof(analysis) * 5 // 2)
    cache.put(("a", 0), analysis, "visitor")
    cache.put(("b", 0), analysis, "visitor")
    assert cache.get(("a", 0), "visitor") is analysis  # "a" is now the most recently used
    cache.put(("c", 0), analysis, "visitor")
    assert cache.get(("b", 0), "visitor") is None
    assert cache.get(("a", 0), "visitor") is analysis
    assert cache.get(("c", 0), "visitor") is analysis


@pytest.mark.parametrize(
    ("layers", "text"),
    [([0, 1, 2, 3, 4, 6, 7, 8, 12], "0–4, 6–8, 12"), ([5, 11, 17], "5, 11, 17"), ([3], "3")],
)
def test_layer_lists_are_shown_as_ranges(layers: list[int], text: str) -> None:
    assert format_layers(layers) == text


def test_heads_table_lists_every_head_and_selects_the_current_one(spec: str) -> None:
    heads = analyze(spec).heads
    layer, head = int(heads["layer"].max()), 1
    at = run_app("table", {"model": spec, "layer": str(layer), "head": str(head)})
    assert_clean(at)
    assert title(at) == "Heads table"
    shown = at.dataframe[-1].value  # the table (the selected head's row may be shown above it)
    assert len(shown) == len(heads)
    pd.testing.assert_series_equal(shown["energy"], heads["energy"], check_names=False)
    (row,) = at.session_state[TABLE_KEY]["selection"]["rows"]
    assert (shown["layer"].iloc[row], shown["head"].iloc[row]) == (layer, head)
    if row >= 16:  # past the table's first screen (620 px): the row is also shown above it
        assert len(at.dataframe) == 2
        pinned = at.dataframe[0].value
        assert list(zip(pinned["layer"], pinned["head"], strict=True)) == [(layer, head)]
        assert any(f"row {row + 1} of {len(heads)}" in c.value for c in at.caption)
    else:
        assert len(at.dataframe) == 1


def test_heads_table_filters_by_parity_layers_and_ranges(tiny_llama: str) -> None:
    heads = analyze(tiny_llama).heads
    parity = heads["parity"].value_counts().index[0]
    energy = heads["energy"].sort_values().to_numpy()
    low, high = float(energy[1]), float(energy[-2])
    at = run_app(
        "table",
        {"model": tiny_llama},
        parity=[parity],
        table_range_columns=["energy"],
        **{
            f"table_layers:{tiny_llama}": (1, 1),
            f"table_range:{tiny_llama}:0:energy": (low, high),
        },
    )
    assert_clean(at)
    shown = at.dataframe[-1].value
    expected = heads[
        (heads["parity"] == parity) & (heads["layer"] == 1) & heads["energy"].between(low, high)
    ]
    assert 0 < len(expected) < len(heads)  # the filters keep some heads, not all
    assert sorted(zip(shown["layer"], shown["head"], strict=True)) == sorted(
        zip(expected["layer"], expected["head"], strict=True)
    )
    if not ((expected["layer"] == 0) & (expected["head"] == 0)).any():
        assert at.session_state[TABLE_KEY]["selection"]["rows"] == []
        assert any("filtered out" in c.value for c in at.caption)


def test_a_head_typed_out_of_range_is_clamped_with_a_notice(tiny_llama: str) -> None:
    card = analyze(tiny_llama).card
    at = run_app("head", {"model": tiny_llama})
    at.session_state[state.HEAD_KEY] = card.n_heads + 5
    at.run()
    assert_clean(at)
    assert title(at) == f"Layer 0 · Head {card.n_heads - 1}"
    assert at.sidebar.number_input(key=state.HEAD_KEY).value == card.n_heads - 1
    assert any(f"head {card.n_heads + 5} does not exist" in t.value.lower() for t in at.toast)


def test_the_go_to_box_selects_a_head_and_explains_a_bad_one(tiny_llama: str) -> None:
    card = analyze(tiny_llama).card
    at = run_app("simplex", {"model": tiny_llama})
    at.text_input(key=GOTO_KEY).input(f"L{card.n_layers - 1}H2").run()
    assert_clean(at)
    assert at.session_state[state.LAYER_KEY] == card.n_layers - 1
    assert at.session_state[state.HEAD_KEY] == 2
    assert any(s.value == f"Selected: Layer {card.n_layers - 1} · Head 2" for s in at.subheader)
    assert at.text_input(key=GOTO_KEY).value == ""
    at.text_input(key=GOTO_KEY).input(f"L{card.n_layers}H0").run()
    assert not at.exception
    assert at.session_state[state.LAYER_KEY] == card.n_layers - 1  # unchanged
    assert any("does not exist" in t.value for t in at.toast)
    at.text_input(key=GOTO_KEY).input("head five").run()
    assert any("Type a head as L3H5" in t.value for t in at.toast)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("L3H5", (3, 5)),
        ("l3·h5", (3, 5)),
        ("3.5", (3, 5)),
        ("3, 5", (3, 5)),
        ("layer 3 head 5", (3, 5)),
        ("L12 H0", (12, 0)),
    ],
)
def test_head_names_are_parsed(text: str, expected: tuple[int, int]) -> None:
    assert state.parse_head(text, 30, 9) == expected


@pytest.mark.parametrize("text", ["35", "", "H3", "L3", "L30H0", "L3H9", "3.5.1"])
def test_bad_head_names_get_a_one_line_message(text: str) -> None:
    with pytest.raises(ValueError) as error:
        state.parse_head(text, 30, 9)
    assert "\n" not in str(error.value) and (
        "L3H5" in str(error.value) or "exist" in str(error.value)
    )


def test_a_model_loads_on_one_shared_job_that_reports_progress(
    tiny_gpt2: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One job for two sessions, with progress; the Gaussian baseline is not part of it (the
    first view needs the heads only; a view that draws the baseline asks for it)."""
    from concurrent.futures import ThreadPoolExecutor

    from headforms import baseline as baselines
    from headforms.sources import locate
    from ui.gateway import Analysis, GaussianBaseline, LocalGateway

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the baseline was computed while the model loaded")

    jobs = []

    class Counting(LocalGateway):
        def compute(self, job):  # type: ignore[no-untyped-def]
            jobs.append(job)
            return super().compute(job)

    monkeypatch.setattr(baselines, "compute_baseline", forbidden)
    gateway = Counting()
    request = Analysis(locate(tiny_gpt2), dashboard_options())
    with ThreadPoolExecutor(2) as sessions:
        first, second = sessions.map(lambda _: gateway.run(request, visitor="v"), range(2))
    assert first is second and len(jobs) == 1  # two sessions asking at once share one analysis
    assert gateway.peek(request) is first
    assert set(DASHBOARD_SPECTRA) <= set(first.spectra)
    done, total, message = jobs[0].progress
    assert done == total and "baseline" not in message
    monkeypatch.undo()
    baseline = gateway.run(GaussianBaseline(first.card.baseline_shapes))  # on demand
    assert baseline.heads.shape[0] == len(first.heads)


def test_the_install_warm_up_fills_the_cache_the_dashboard_reads(tiny_gpt2: str) -> None:
    warm(tiny_gpt2)
    messages = []
    analysis = analyze(
        tiny_gpt2, spectra=DASHBOARD_SPECTRA, progress=lambda d, t, m: messages.append(m)
    )
    assert messages[-1] == "loaded from cache"
    assert not any(m.startswith("layer") for m in messages)  # nothing was computed again
    assert set(DASHBOARD_SPECTRA) <= set(analysis.spectra)


@pytest.mark.parametrize(
    ("page", "toggle"), [("simplex", "simplex_baseline"), ("table", "table_baseline")]
)
def test_a_page_computes_the_baseline_only_when_it_draws_it(
    tiny_gpt2: str, monkeypatch: pytest.MonkeyPatch, page: str, toggle: str
) -> None:
    """With its baseline switch off (the default), a page asks for no Gaussian baseline; turned
    on, it asks for it and draws it without error."""
    from ui import loading

    asked: list[object] = []
    real = loading.ensure_baseline

    def counting(analysis: object, *args: object, **kwargs: object) -> object:
        asked.append(analysis)
        return real(analysis, *args, **kwargs)

    monkeypatch.setattr(loading, "ensure_baseline", counting)
    at = run_app(None if page == "simplex" else page, **{state.MODEL_KEY: tiny_gpt2})
    assert_clean(at)
    assert not asked
    at.toggle(key=toggle).set_value(True).run()
    assert_clean(at)
    assert asked
