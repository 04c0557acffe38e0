"""The whole view in the URL (ui/links.py), under Streamlit's AppTest: each option the dashboard
binds itself, changed through its widget as a visitor would, goes into the URL, and a new session
opening that URL shows the same state (and the same rows of the heads table); a link sets the
widgets Streamlit binds (their changes are written by the browser: tests/system/browser/
test_links_browser.py); a link's value no widget could hold is corrected with a visible notice
naming it, and the URL then says what is shown; a model that fails to load leaves the page and
the sidebar usable, with one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from page_runner import notice_lines, plain, run_app
from streamlit.testing.v1 import AppTest

from headforms import DEFAULT_MODEL, HeadformsError, analyze
from headforms.analyses import theorem5
from headforms.models.source import open_model
from ui import guard, links, notices, state
from ui.tables import MIN_DIGITS, short_bound

OTHER = "minilm-l6"
VIEW = state.DEFAULTS[state.FRAME_KEY]
OTHER_VIEW = next(view for view in ("heads", "simplex") if view != VIEW)
SLIDER = f"table_range:{DEFAULT_MODEL}:0:energy"
CAMERA = {
    "eye": {"x": 1.25, "y": -0.75, "z": 0.5},
    "center": {"x": 0.0, "y": 0.0, "z": -0.1},
    "up": {"x": 0.0, "y": 0.0, "z": 1.0},
}


def assert_quiet(at: AppTest) -> None:
    """No exception, no error and no notice."""
    assert not at.exception, [e.message for e in at.exception]
    assert not notice_lines(at), notice_lines(at)


def url(at: AppTest) -> dict[str, list[str]]:
    """The query parameters the run wrote, each as a list of values."""
    return {k: v if isinstance(v, list) else [v] for k, v in dict(at.query_params).items()}


def heads_in_table(at: AppTest) -> list[tuple[int, int]]:
    """(layer, head) of the heads table's rows, in their order."""
    frame = at.dataframe[-1].value  # the table is the page's last
    return list(zip(frame["layer"].astype(int), frame["head"].astype(int), strict=True))


# A case: the page, what the visitor does (through the widgets), the URL parameters it gives,
# and the session keys a new session opening that URL must hold as they were.
Action = Callable[[AppTest], Any]


ENERGY = analyze(DEFAULT_MODEL).heads["energy"]
LOW, HIGH = float(ENERGY.quantile(0.3)), float(ENERGY.quantile(0.8))
CASES: dict[str, tuple[str, Action, dict[str, list[str]], list[str]]] = {
    "model": (
        "overview",
        lambda at: at.sidebar.selectbox(key=state.MODEL_KEY).set_value(OTHER),
        {"model": [OTHER]},
        [state.MODEL_KEY],
    ),
    "layer and head": (
        "head",
        lambda at: (
            at.sidebar.number_input(key=state.LAYER_KEY).set_value(7),
            at.sidebar.number_input(key=state.HEAD_KEY).set_value(4),
        ),
        {"layer": ["7"], "head": ["4"]},
        [state.LAYER_KEY, state.HEAD_KEY],
    ),
    "colour": (
        "simplex",
        lambda at: at.sidebar.selectbox(key=state.COLOR_KEY).set_value("energy"),
        {"color": ["energy"]},
        [state.COLOR_KEY],
    ),
    "open on click": (
        "heatmaps",
        lambda at: at.toggle(key=state.JUMP_KEY).set_value(False),
        {"open": ["0"]},
        [state.JUMP_KEY],
    ),
    "overlays": (
        "simplex",
        lambda at: at.multiselect(key=state.OVERLAY_KEY).set_value([OTHER]),
        {"overlay": [OTHER]},
        [state.OVERLAY_KEY],
    ),
    "3D view": (
        "simplex",
        lambda at: at.button_group(key=state.FRAME_KEY).set_value(OTHER_VIEW),
        {"view": [OTHER_VIEW]},
        [state.FRAME_KEY],
    ),
    "simplex baseline": (
        "simplex",
        lambda at: at.toggle(key="simplex_baseline").set_value(True),
        {"baseline": ["1"]},
        ["simplex_baseline"],
    ),
    "layers filter": (
        "table",
        lambda at: at.slider(key=f"table_layers:{DEFAULT_MODEL}").set_value((3, 7)),
        {"layers": ["3-7"]},
        [f"table_layers:{DEFAULT_MODEL}"],
    ),
    "range filter": (
        "table",
        lambda at: (
            at.multiselect(key="table_range_columns").set_value(["energy"]).run(),
            at.slider(key=SLIDER).set_value((LOW, HIGH)),
        ),
        {"range": [f"energy~{short_bound(LOW, ENERGY, True)}~{short_bound(HIGH, ENERGY, False)}"]},
        ["table_range_columns"],
    ),
    "sort": (
        "table",
        lambda at: (
            at.selectbox(key="table_sort").set_value("pairing").run(),
            at.toggle(key="table_sort_descending").set_value(True),
        ),
        {"sort": ["-pairing"]},
        ["table_sort", "table_sort_descending"],
    ),
    "baseline columns": (
        "table",
        lambda at: at.toggle(key="table_baseline").set_value(True),
        {"baseline": ["1"]},
        ["table_baseline"],
    ),
    "compared models": (
        "compare",
        lambda at: at.multiselect(key="compare_models").set_value(["gemma3-270m", OTHER]),
        {"models": ["gemma3-270m", OTHER]},
        ["compare_models"],
    ),
    "no compared model": (
        "compare",
        lambda at: at.multiselect(key="compare_models").set_value([]),
        {"models": [""]},
        ["compare_models"],
    ),
    "compare heatmap": (
        "compare",
        lambda at: at.radio(key="compare_heatmap").set_value("pairing"),
        {"heatmap": ["pairing"]},
        ["compare_heatmap"],
    ),
    "observations models": (
        "observations",
        lambda at: at.multiselect(key="observations_models").set_value([OTHER]),
        {"models": [OTHER]},
        ["observations_models"],
    ),
    "pairing models": (
        "pairing",
        lambda at: at.multiselect(key="pairing_models").set_value([OTHER]),
        {"models": [OTHER]},
        ["pairing_models"],
    ),
    "heatmaps models and scale": (
        "heatmaps",
        lambda at: (
            at.multiselect(key="heatmaps_models").set_value([OTHER]).run(),
            at.toggle(key="heatmaps_shared_scale").set_value(False),
        ),
        {"models": [OTHER], "shared_scale": ["0"]},
        ["heatmaps_models", "heatmaps_shared_scale"],
    ),
    "clusters": (
        "spectra",
        lambda at: (
            at.selectbox(key="spectra_k").set_value(4).run(),
            at.radio(key="spectra_projection").set_value("pca"),
        ),
        {"k": ["4"], "projection": ["pca"]},
        ["spectra_k", "spectra_projection"],
    ),
}


HEAVY = {"compared models"}
"""Cases that analyse another model first (Gemma-3: about 15 s, more on a busy machine)."""


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=[pytest.mark.slow] if c in HEAVY else []) for c in CASES]
)
def test_each_option_goes_into_the_url_and_a_link_brings_it_back(case: str) -> None:
    page, act, params, keys = CASES[case]
    at = run_app(page)
    assert_quiet(at)
    before = url(at)
    assert set(before) == {"model", "layer", "head"}  # at the defaults, nothing else is written
    act(at)
    at.run()
    assert_quiet(at)
    written = url(at)
    assert {k: written[k] for k in params} == params
    assert set(written) - set(params) <= {"model", "layer", "head"}  # nothing else changed
    reopened = run_app(page, dict(at.query_params))
    assert_quiet(reopened)
    for key in keys:
        assert reopened.session_state[key] == at.session_state[key], key
    assert url(reopened) == written
    if page == "table":
        assert heads_in_table(reopened) == heads_in_table(at)


# The parameters Streamlit binds (ui.links.check): a visitor's change of their widgets is written
# to the URL by the browser, which AppTest does not run (tests/system/browser/
# test_links_browser.py changes them there); a link opening them is checked here. A case: the
# page, the link's parameters, and the session state (key: the parameter) it must give.
STREAMLIT_BOUND: dict[str, tuple[str, dict[str, str | list[str]], dict[str, Any]]] = {
    "rope": ("head", {"rope": "3"}, {"rope": 3}),
    "tolerance": ("overview", {"tol": "0.05"}, {"tol": 0.05}),
    "parity filter": ("table", {"parity": ["II", "I-"]}, {"parity": ["II", "I-"]}),
    "heads colour": ("spectra", {"heads_color": "parity"}, {"heads_color": "parity"}),
    "theorem 5": (
        "theorem5",
        {"mu": "-0.7", "nu": "2.5", "k": "3", "spectra": "20", "seed": "7", "n": ["16", "64"]},
        {"mu": -0.7, "nu": 2.5, "k": 3.0, "spectra": 20, "seed": 7, "n": [16, 64]},
    ),
}


@pytest.mark.parametrize("case", list(STREAMLIT_BOUND))
def test_a_link_sets_the_widgets_streamlit_binds(case: str) -> None:
    page, params, values = STREAMLIT_BOUND[case]
    at = run_app(page, params)
    assert_quiet(at)
    assert {key: at.session_state[key] for key in values} == values
    written = url(at)
    assert {k: written[k] for k in params} == {k: url_values(v) for k, v in params.items()}
    assert set(written) - set(params) <= {"model", "layer", "head"}  # nothing else written
    if page == "table":
        heads = analyze(DEFAULT_MODEL).heads
        shown = heads[heads["parity"].isin(values["parity"])]
        assert heads_in_table(at) == list(zip(shown["layer"], shown["head"], strict=True))


def url_values(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def test_a_shared_table_link_shows_the_rows_it_names() -> None:
    """The filters and the sort of a link, checked against the table computed here."""
    heads = analyze(DEFAULT_MODEL).heads
    low = short_bound(LOW, ENERGY, True)
    at = run_app(
        "table",
        {"parity": ["II", "I-"], "layers": "3-20", "range": f"energy~{low}~", "sort": "-energy"},
    )
    assert_quiet(at)
    expected = heads[
        heads["parity"].isin(["II", "I-"])
        & heads["layer"].between(3, 20)
        & (heads["energy"] >= float(low))
    ].sort_values("energy", ascending=False, kind="stable")
    assert 0 < len(expected) < len(heads)
    assert heads_in_table(at) == list(zip(expected["layer"], expected["head"], strict=True))


@pytest.mark.parametrize(
    ("page", "key"),
    [
        ("simplex", f"simplex_camera:{VIEW}"),
        ("compare", "compare_camera"),
        ("spectra", "spectra_camera:svd"),
    ],
)
def test_the_3d_camera_goes_into_the_url(page: str, key: str) -> None:
    """The camera the browser reports (ui.plot stores it under the plot's camera key) goes into
    the URL and a link gives it back (4 significant digits)."""
    at = run_app(page, **{key: CAMERA})
    assert_quiet(at)
    (written,) = url(at)["camera"]
    assert written == "1.25~-0.75~0.5~0~0~-0.1~0~0~1"
    reopened = run_app(page, dict(at.query_params))
    assert_quiet(reopened)
    assert reopened.session_state[key] == CAMERA


def test_each_3d_view_of_the_simplex_has_its_own_camera() -> None:
    at = run_app("simplex", **{f"simplex_camera:{VIEW}": CAMERA})
    at.button_group(key=state.FRAME_KEY).set_value(OTHER_VIEW).run()
    assert "camera" not in url(at)  # the whole simplex has its own (the figure's) camera
    at.button_group(key=state.FRAME_KEY).set_value(VIEW).run()
    assert url(at)["camera"] == ["1.25~-0.75~0.5~0~0~-0.1~0~0~1"]


NOTICE_CASES = [
    # (page, params, words the notice must hold, session key, value shown instead)
    (None, {"head": "-3"}, "head=-3 is not a head of smollm2-135m", state.HEAD_KEY, 0),
    (None, {"layer": "abc"}, "layer=abc is not a layer of smollm2-135m", state.LAYER_KEY, 0),
    (None, {"head": "1e9"}, "head=1e9 is not a head of smollm2-135m", state.HEAD_KEY, 0),
    (None, {"layer": "99"}, "(a whole number from 0 to 29): showing layer 29", state.LAYER_KEY, 29),
    (None, {"rope": "nan"}, "rope=nan is not a RoPE relative position", state.ROPE_KEY, 0),
    (None, {"rope": "-99999999"}, "showing RoPE position d = -10000000", state.ROPE_KEY, -(10**7)),
    (None, {"color": "purple"}, "color=purple is not a colouring", state.COLOR_KEY, "parity"),
    (None, {"tol": "2"}, "tol=2 is not a Type II tolerance", state.TOLERANCE_KEY, 1.0),
    (None, {"open": "maybe"}, "open=maybe is not 1 or 0", state.JUMP_KEY, True),
    (
        None,
        {"model": "m" * 600},
        "model spec is 600 characters long",
        state.MODEL_KEY,
        DEFAULT_MODEL,
    ),
    (None, {"head": ["1", "2"]}, "head=1,2 is given 2 times", state.HEAD_KEY, 2),
    (
        "simplex",
        {"view": "top"},
        "view=top is not a 3D view",
        state.FRAME_KEY,
        VIEW,
    ),
    ("simplex", {"camera": "1~2"}, "camera=1~2 is not a camera", f"simplex_camera:{VIEW}", None),
    ("table", {"parity": "I+,V"}, "parity=I+,V names V, not a parity", "parity", ["I+"]),
    (
        "table",
        {"layers": "a-b"},
        "layers=a-b is not a range of layers",
        "table_layers:smollm2-135m",
        (0, 29),
    ),
    ("table", {"sort": "colour"}, "sort=colour is not a column", "table_sort", ""),
    ("table", {"range": "nosuch~1~2"}, "nosuch is not a numeric column", "table_range_columns", []),
    ("spectra", {"k": "99"}, "k=99 is not a number of clusters offered here", "spectra_k", 3),
    ("theorem5", {"mu": "5"}, "mu=5 is not a negative lobe scale", "mu", -0.01),
    ("theorem5", {"n": "16,0,x"}, "n=16,0,x has values that are not values of n", "n", [16]),
    ("head", {"overlay": "gpt2"}, "overlay is not an option of the Head page", None, None),
]


@pytest.mark.parametrize(("page", "params", "words", "key", "value"), NOTICE_CASES)
def test_a_bad_link_value_is_corrected_with_a_notice(
    page: str | None, params: dict[str, Any], words: str, key: str | None, value: Any
) -> None:
    at = run_app(page, params)
    assert not at.exception, [e.message for e in at.exception]
    shown = notice_lines(at)
    assert len(shown) == 1 and words in shown[0], shown
    assert "\n" not in shown[0]
    if key is not None:
        assert at.session_state[key] == value
    assert all(len(v) <= 512 for values in url(at).values() for v in values)
    reopened = run_app(page, dict(at.query_params))  # the URL now says what is shown
    assert not notice_lines(reopened), notice_lines(reopened)
    if key is not None:
        assert reopened.session_state[key] == value


def test_a_notice_stays_until_closed_its_value_changed_or_another_page() -> None:
    at = run_app(None, {"head": "-3"})
    assert len(notice_lines(at)) == 1
    at.sidebar.selectbox(key=state.COLOR_KEY).set_value("layer").run()
    assert len(notice_lines(at)) == 1  # still there after the visitor's next change
    next(b for b in at.button if b.key.startswith(notices.CLOSE_KEY)).click().run()
    assert not notice_lines(at)
    at = run_app(None, {"head": "-3"})
    at.sidebar.number_input(key=state.HEAD_KEY).set_value(5).run()
    assert not notice_lines(at)  # the head it was about is not shown any more
    at = run_app(None, {"head": "-3"})
    at.switch_page("pages/overview.py").run()
    assert not notice_lines(at)


@pytest.mark.parametrize(
    "bad", ["nonsense", "/no/such/model/dir", "not a valid spec!", "smollm2-135m@@x"]
)
def test_a_model_that_fails_leaves_the_page_and_the_sidebar_usable(bad: str) -> None:
    """One line, the library's own message (what was wrong, what is accepted) and what is shown
    instead; the page runs on the default model and the link's other values still apply."""
    with pytest.raises(HeadformsError) as expected:
        open_model(bad)
    at = run_app("overview", {"model": bad, "head": "3"})
    assert not at.exception, [e.message for e in at.exception]
    assert [plain(e.value) for e in at.error] == [
        f"{expected.value} (showing {DEFAULT_MODEL} instead)"
    ]
    assert bad in str(expected.value) and "accepted" in str(expected.value)
    assert [t.value for t in at.title] == ["Model overview"]
    assert at.sidebar.selectbox(key=state.MODEL_KEY).value == DEFAULT_MODEL
    assert at.sidebar.number_input(key=state.HEAD_KEY).value == 3
    assert url(at)["model"] == [DEFAULT_MODEL]


def test_a_name_that_is_no_model_here_says_so() -> None:
    """Offline (the tests' HF_HUB_OFFLINE), a bare name is not blamed on the hub."""
    at = run_app(None, {"model": "no-such-model-anywhere"})
    (line,) = [plain(e.value) for e in at.error]
    assert line.startswith("no such model here: 'no-such-model-anywhere' is not a bundled model")
    assert "cannot reach the Hugging Face hub" not in line


def test_a_link_reads_a_bounded_number_of_values() -> None:
    """More values than any widget takes are cut at the link's bounds, with a notice."""
    overlays = [f"/no/such/overlay/{i}" for i in range(guard.MAX_EXTRA_MODELS + 3)]
    at = run_app("simplex", {"overlay": overlays})
    assert not at.exception
    assert at.session_state[state.OVERLAY_KEY] == overlays[: guard.MAX_EXTRA_MODELS]
    assert any(f"at most {guard.MAX_EXTRA_MODELS}" in n for n in notice_lines(at))
    sizes = [str(n) for n in range(1, links.MAX_VALUES + 10)]  # a parameter Streamlit binds
    at = run_app("theorem5", {"n": sizes})
    assert not at.exception
    assert any(f"at most {links.MAX_VALUES}" in n for n in notice_lines(at))
    # the page's own limit of 8 values of n (not among its options: kept as typed, as text)
    assert [int(n) for n in at.session_state["n"]] == list(range(1, 9))
    assert url(at)["n"] == [str(n) for n in range(1, 9)]
    many = {f"p{i}": "1" for i in range(links.MAX_PARAMETERS + 5)}
    at = run_app(None, many)
    assert any(f"more than {links.MAX_PARAMETERS} parameters" in n for n in notice_lines(at))


# ---------------------------------------------------------------------------------------------
# The pieces


@pytest.mark.parametrize("seed", range(5))
def test_a_range_bound_is_short_and_keeps_the_same_rows(seed: int) -> None:
    """The bound a link writes keeps exactly the rows of the slider's value, with the fewest
    digits (at least MIN_DIGITS) that do."""
    rng = np.random.default_rng(seed)
    values = pd.Series(np.round(rng.random(300), int(rng.integers(3, 12))))
    for value in rng.uniform(0, 1, 20):
        for low in (True, False):
            text = short_bound(float(value), values, low)

            def kept(bound: float, low: bool = low) -> pd.Series:
                return values >= bound if low else values <= bound

            assert (kept(float(text)) == kept(value)).all()
            digits = next(d for d in range(MIN_DIGITS, 18) if f"{value:.{d}g}" == text)
            if digits > MIN_DIGITS:  # one digit fewer would show other rows
                assert not (kept(float(f"{value:.{digits - 1}g}")) == kept(value)).all()


@pytest.mark.parametrize(
    "camera",
    [
        {
            "eye": {"x": float("nan"), "y": 0, "z": 1},
            "center": CAMERA["center"],
            "up": CAMERA["up"],
        },
        {"eye": {"x": 1e9, "y": 0, "z": 1}, "center": CAMERA["center"], "up": CAMERA["up"]},
        {"eye": CAMERA["center"], "center": CAMERA["center"], "up": CAMERA["up"]},
        {"eye": CAMERA["eye"], "center": CAMERA["center"], "up": {"x": 0, "y": 0, "z": 0}},
        {"eye": CAMERA["eye"], "center": CAMERA["center"]},
        {"eye": {"x": "1", "y": 0, "z": 1}, "center": CAMERA["center"], "up": CAMERA["up"]},
        [1, 2, 3],
    ],
)
def test_a_camera_from_the_browser_is_checked(camera: Any) -> None:
    assert guard.camera(camera) is None
    assert guard.camera(CAMERA) == CAMERA


def test_notices_escape_markdown() -> None:
    text = "The link's x=[a](javascript:1) :red[b] *c* $d$"
    assert plain(notices.as_text(text)) == text
    assert "[a](" not in notices.as_text(text) and ":red[" not in notices.as_text(text)


def test_theorem5_link_bounds_are_the_pages() -> None:
    """What a link may ask of Theorem 5 is what the page itself accepts."""
    at = run_app("theorem5", {"spectra": str(theorem5.MAX_EIGENVALUES + 1)})
    assert at.session_state["spectra"] == theorem5.MAX_EIGENVALUES
    assert any("spectra=" in n for n in notice_lines(at))
