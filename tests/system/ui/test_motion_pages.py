"""The Motion pages (RoPE positions, Training run, Model diff) and the Head page's curves against
d under Streamlit's AppTest, on tiny models built in the session: what they say equals the
library's paths (parity changes per head, flips, the selected head's changes) and every bad
input is one line (a model without RoPE, too many positions for a slider, an empty run
directory, models of other shapes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiny_models as tm
from page_runner import assert_clean, run_app

from headforms.analyses.motion import changes_by_head, parity_changes
from headforms.diff import diff
from headforms.engine import sweep
from headforms.series import trajectory
from ui import state
from ui.motion import MAX_SLIDER_POSITIONS


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("motion-llama")
    tm.build("llama", directory, seed=5)
    return str(directory)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return tm.train_run("llama", tmp_path_factory.mktemp("motion-run") / "run", steps=(0, 2, 4))


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_rope_positions_page_lists_where_heads_change_parity(llama: str) -> None:
    at = run_app("positions", {"model": llama, "layer": "1", "head": "2"})
    assert_clean(at)
    expected = changes_by_head(sweep(llama, "0:128"))
    assert len(expected) > 0  # the seed gives heads that change, so the page lists them
    assert any(f"{len(expected)} of 8 heads change parity type" in c for c in captions(at))
    shown = at.dataframe[-1].value
    assert shown[["layer", "head", "changes"]].values.tolist() == (
        expected[["layer", "head", "changes"]].values.tolist()
    )


def test_rope_positions_refusals_are_one_line(llama: str, tmp_path: Path) -> None:
    at = run_app("positions", {"model": llama}, **{state.POSITIONS_KEY: "0:500"})
    assert [e.value for e in at.error] == [
        f"RoPE positions 0:500: 501 positions, more than a slider holds "
        f"({MAX_SLIDER_POSITIONS}); take a step, e.g. 0:1024:8 (the command line takes more)"
    ]
    at = run_app("positions", {"model": llama}, **{state.POSITIONS_KEY: "9:2"})
    assert len(at.error) == 1 and "starts after it ends" in at.error[0].value
    gpt2 = tmp_path / "gpt2"
    tm.build("gpt2", gpt2, seed=1)
    at = run_app("positions", {"model": str(gpt2)})
    assert_clean(at)
    assert "has no rotation" in at.info[0].value


@pytest.mark.parametrize(
    ("layer", "head", "last", "changes"), [(0, 1, 64, True), (1, 2, 40, False)]
)
def test_head_page_computes_and_shows_the_heads_parity_over_d(
    llama: str, layer: int, head: int, last: int, changes: bool
) -> None:
    """A head whose parity type changes over d = 0…last (the page names where) and one whose
    type holds (the page says so); which is which comes from the library's sweep, run after the
    page's (before, the page would find the positions computed and offer no button; each case
    has its own positions for the same reason)."""
    positions = f"0:{last}"
    at = run_app(
        "head",
        {"model": llama, "layer": str(layer), "head": str(head)},
        **{state.POSITIONS_KEY: positions},
    )
    assert_clean(at)
    button = next(b for b in at.button if f"Compute every position d = 0…{last}" in b.label)
    button.click().run()
    assert_clean(at)
    own = parity_changes(sweep(llama, positions))
    own = own[(own["layer"] == layer) & (own["head"] == head)]
    assert (len(own) > 0) == changes  # the seed gives one head of each kind
    text = " ".join(captions(at))
    if changes:
        assert f"Parity changes at d = {', '.join(map(str, own['rope_position']))}." in text
    else:
        assert f"at every position d = 0…{last}" in text
    assert not any(b.label.startswith("Compute every position") for b in at.button)


def test_training_run_page_and_its_refusals(run: list[Path], tmp_path: Path) -> None:
    at = run_app("training", {"layer": "1", "head": "1"}, **{state.SERIES_KEY: str(run[0].parent)})
    assert_clean(at)
    expected = changes_by_head(trajectory(str(run[0].parent)))
    assert any(f"{len(expected)} of 8 heads change parity type" in c for c in captions(at))
    empty = tmp_path / "empty"
    empty.mkdir()
    at = run_app("training", **{state.SERIES_KEY: str(empty)})
    assert len(at.error) == 1 and "holds no checkpoint-STEP folders" in at.error[0].value
    at = run_app("training", **{state.SERIES_KEY: "org/name@main"})
    assert len(at.error) == 1 and "cannot tell the training step" in at.error[0].value


def test_training_run_page_reads_a_run_store_live_and_finished(
    run: list[Path], tmp_path: Path
) -> None:
    """A run store (records of the run's checkpoints) reads as the checkpoints do; while its run
    has not ended the page says it is live and where its last record is; then where it ended."""
    from transformers import AutoModelForCausalLM

    from headforms.integrations import Recorder
    from headforms.options import AnalysisOptions
    from headforms.run_store import RunWriter

    store = tmp_path / "store"
    recorder = Recorder(store, every=2)
    for folder in run:
        recorder.record(AutoModelForCausalLM.from_pretrained(folder), int(folder.name[11:]))
    at = run_app("training", {"layer": "1", "head": "1"}, **{state.SERIES_KEY: str(store)})
    assert_clean(at)
    live = [m.value for m in at.markdown if "last record at step" in m.value]
    assert len(live) == 1 and "live" in live[0] and "last record at step 4" in live[0]
    expected = changes_by_head(trajectory(str(run[0].parent)))  # the same heads as checkpoints
    assert any(
        f"{len(expected)} of 8 heads change parity type between records" in c for c in captions(at)
    )
    assert [t.label for t in at.toggle] == ["Every head's path"]  # a record's head opens nowhere
    recorder.finish(4)
    at = run_app("training", **{state.SERIES_KEY: str(store)})
    assert_clean(at)
    assert "Recorded while training: 3 records, the run ended at step 4." in captions(at)
    assert not [m.value for m in at.markdown if "last record at step" in m.value]
    empty = tmp_path / "empty"
    shapes = dict.fromkeys(("n_layers", "n_heads", "n_kv_heads", "head_dim", "model_dim"), 1)
    RunWriter.open(empty, "tiny", shapes, AnalysisOptions())
    at = run_app("training", **{state.SERIES_KEY: str(empty)})
    assert len(at.error) == 1 and "holds a run store with no record yet" in at.error[0].value


def test_model_diff_page_counts_the_flips_and_refuses_other_shapes(run: list[Path]) -> None:
    at = run_app("diff", {"model": str(run[0])}, **{state.DIFF_KEY: str(run[-1])})
    assert_clean(at)
    flips = int(diff(str(run[0]), str(run[-1])).table()["parity_flip"].sum())
    assert any(m.value.startswith(f"**{flips}** of 8 heads change parity") for m in at.markdown)
    at = run_app("diff", {"model": str(run[0])}, **{state.DIFF_KEY: "smollm2-135m"})
    assert len(at.error) == 1 and "their shapes differ (layers 2 vs 30" in at.error[0].value


def query(at) -> dict[str, list[str]]:
    """The query parameters the run wrote, each as a list of values."""
    return {k: v if isinstance(v, list) else [v] for k, v in dict(at.query_params).items()}


MOTION_CASES = {
    "figure": (
        "positions",
        lambda at, _: at.button_group(key=state.MOTION_FIGURE_KEY).set_value("triangle"),
        {"figure": ["triangle"]},
        state.MOTION_FIGURE_KEY,
    ),
    "view": (
        "positions",
        lambda at, _: at.button_group(key=state.MOTION_FRAME_KEY).set_value("simplex"),
        {"view": ["simplex"]},
        state.MOTION_FRAME_KEY,
    ),
    "paths": (
        "positions",
        lambda at, _: at.toggle(key=state.MOTION_PATHS_KEY).set_value(True),
        {"paths": ["1"]},
        state.MOTION_PATHS_KEY,
    ),
    "run": (
        "training",
        lambda at, run: at.text_area(key=state.SERIES_KEY).set_value(run),
        {"run": ["RUN"]},
        state.SERIES_KEY,
    ),
}


@pytest.mark.parametrize("case", list(MOTION_CASES))
def test_motion_options_go_into_the_url_and_a_link_brings_them_back(case, llama, run) -> None:
    page, act, params, key = MOTION_CASES[case]
    model = str(run[0]) if page == "diff" else llama
    folder = str(run[0].parent)
    params = {k: [v.replace("RUN", folder) for v in vs] for k, vs in params.items()}
    at = run_app(page, {"model": model})
    assert not at.exception
    assert set(query(at)) == {"model", "layer", "head"}  # at the defaults nothing else is written
    act(at, folder)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    written = query(at)
    assert {k: written[k] for k in params} == params
    reopened = run_app(page, dict(at.query_params))
    assert not reopened.exception and not reopened.error
    assert reopened.session_state[key] == at.session_state[key]
    assert query(reopened) == written


def test_a_link_sets_the_positions_streamlit_binds(llama) -> None:
    """``positions`` is bound by Streamlit: a visitor's change is written to the URL by the
    browser (tests/system/browser/test_links_browser.py); a link sets the text input and stays
    in the URL."""
    at = run_app("positions", {"model": llama, "positions": "0:64:2"})
    assert not at.exception and not at.error
    assert at.session_state[state.POSITIONS_KEY] == "0:64:2"
    assert at.text_input(key=state.POSITIONS_KEY).value == "0:64:2"
    assert query(at)["positions"] == ["0:64:2"]


def test_a_link_names_model_b(run) -> None:
    """Model B (typed into its picker, which AppTest cannot type) comes from the link and is
    written back to it."""
    at = run_app("diff", {"model": str(run[0]), "b": str(run[-1])})
    assert not at.exception and not at.error
    assert at.session_state[state.DIFF_KEY] == str(run[-1])
    assert query(at)["b"] == [str(run[-1])]
    assert any("of 8 heads change parity" in m.value for m in at.markdown)


def test_a_bad_positions_link_is_corrected_with_a_notice(llama) -> None:
    from page_runner import notice_lines

    at = run_app("positions", {"model": llama, "positions": "5:1"})
    assert not at.exception and not at.error
    assert at.session_state[state.POSITIONS_KEY] == "0:128"
    (line,) = [n for n in notice_lines(at) if "positions=5:1" in n]
    assert "is not a range of RoPE positions" in line and "starts after it ends" in line


def test_a_sweep_too_large_to_draw_is_refused_in_one_line_before_any_work(
    llama: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every head at every position is one animated figure, built in the server and sent whole:
    past MAX_DRAWN_POINTS (heads x positions) the page says so in one line and neither computes
    nor reads the sweep, nor builds a figure (the bound lowered here to the tiny model's 8 heads
    at 16 positions; a 16,384-head model at 65 positions passes the real one)."""
    from headforms.errors import OptionError
    from headforms.figures import animated
    from headforms.options import SweepOptions
    from ui import motion
    from ui.gateway import kinds

    work: list[str] = []

    def count(module: object, name: str) -> None:
        real = getattr(module, name)

        def counted(*args: object, **kwargs: object) -> object:
            work.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    for module, name in ((kinds, "sweep"), (kinds, "stored_sweep"), (animated, "animated_figure")):
        count(module, name)
    monkeypatch.setattr(motion, "MAX_DRAWN_POINTS", 8 * 16)
    at = run_app("positions", {"model": llama}, **{state.POSITIONS_KEY: "0:64:4"})
    assert [e.value for e in at.error] == [
        "17 RoPE positions x 8 heads = 136 points, more than the dashboard draws in one figure "
        "(128); take at most 16 positions (a step), or the command line (headforms analyze MODEL "
        "--rope-positions A:B)"
    ]
    assert work == []
    at = run_app("positions", {"model": llama}, **{state.POSITIONS_KEY: "0:60:4"})  # 16: drawn
    assert_clean(at)
    assert "animated_figure" in work
    monkeypatch.undo()
    with pytest.raises(OptionError, match="65 RoPE positions x 16384 heads = 1,064,960"):
        motion.check_drawable(16_384, SweepOptions("0:64"))
