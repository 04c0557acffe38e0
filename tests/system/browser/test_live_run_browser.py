"""A training run followed live in headless Debian chromium: the Training run page pointed at a run
store that is still growing says "live, last record at step S"; when a record arrives the page
shows it (a new step on the slider, the selected head's path one point longer) while the point
the visitor moved the slider to and the 3D camera are kept, and a slider left at the last step
follows the new last step; when the run ends, the page says so. The records are those of a
tiny llama's checkpoints, written while the page is open. The screenshots go to
$HEADFORMS_SHOTS_DIR when it is set (the docs' picture of the live page)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiny_models as tm
from playwright.sync_api import expect
from servers import free_port, serving
from waiting import eventually

from headforms.integrations import Recorder

pytestmark = pytest.mark.browser

STEPS = (0, 2, 4, 6)

SLIDER_JS = """
(gd) => {
  const slider = gd._fullLayout.sliders[0];
  const label = gd.querySelector(".slider-container .slider-group > text.slider-label");
  const path = gd._fullData.find((t) => t.meta && t.meta.role === "path");
  const eye = gd._fullLayout.scene.camera.eye;
  return {
    steps: slider.steps.map((s) => s.label),
    shown: label ? label.textContent : null,
    path: path ? path.x.length : 0,
    eye: [eye.x, eye.y, eye.z],
  };
}
"""


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return tm.train_run("llama", tmp_path_factory.mktemp("live") / "run", steps=STEPS)


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def recorded(recorder: Recorder, folder: Path, step: int) -> None:
    """Record the checkpoint in ``folder`` as the run's step ``step`` (as the callback does)."""
    from transformers import AutoModelForCausalLM

    recorder.record(AutoModelForCausalLM.from_pretrained(folder), step)


def shot(page, name: str) -> None:
    """A screenshot of the page's first screen (into $HEADFORMS_SHOTS_DIR, when it is set)."""
    folder = os.environ.get("HEADFORMS_SHOTS_DIR")
    if folder:
        page.locator("h1").first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(Path(folder) / name))


def test_a_growing_run_is_followed_and_keeps_the_view(
    page, server: str, checkpoints: list[Path], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    recorder = Recorder(store, every=2)
    for step, folder in zip(STEPS[:2], checkpoints, strict=False):
        recorded(recorder, folder, step)
    page.goto(f"{server}/training?run={store}&layer=1&head=2")
    line = page.get_by_text("last record at step 2", exact=False)
    line.wait_for()
    expect(page.get_by_text("last record at step", exact=False)).to_contain_text("live")
    plot = page.locator('div[data-hf-plot="series_simplex"]')
    plot.locator("canvas").first.wait_for()
    state = eventually(
        lambda: plot.evaluate(SLIDER_JS),
        lambda s: s["steps"] == ["0", "2"] and (s["shown"] or "").endswith("= 2"),
        what="two records, the slider at the last",
    )
    assert state["path"] == 3  # the Gaussian counterpart, then steps 0 and 2
    shot(page, "live-two-records.png")

    # the visitor turns the camera and moves the slider back to step 0
    plot.evaluate(
        "(gd) => gd.hfPlotly.relayout(gd, {'scene.camera.eye': {x: 2.1, y: -0.4, z: 0.6}})"
    )
    rail = plot.locator(".slider-container .slider-rail-rect")
    rail.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # the scroll has ended: the rail is where it is measured
    box = rail.bounding_box()
    page.mouse.click(box["x"] + 10, box["y"] + box["height"] / 2)  # not the Pause button
    eventually(
        lambda: plot.evaluate(SLIDER_JS),
        lambda s: (s["shown"] or "").endswith("= 0"),
        what="the slider moved to step 0",
    )

    recorded(recorder, checkpoints[2], STEPS[2])  # a record arrives
    page.get_by_text("last record at step 4", exact=False).wait_for()
    state = eventually(
        lambda: plot.evaluate(SLIDER_JS),
        # the visitor's point is kept: drawn at the new last step, the plot goes back to it
        lambda s: (
            s["steps"] == ["0", "2", "4"] and s["path"] == 4 and (s["shown"] or "").endswith("= 0")
        ),
        what="the new record on the slider and the path, the slider kept at step 0",
    )
    assert state["eye"] == pytest.approx([2.1, -0.4, 0.6], abs=1e-6)  # and the camera
    assert "layer=1" in page.url and "head=2" in page.url

    # at the last step, the slider follows the next record
    rail.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    box = rail.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    eventually(
        lambda: plot.evaluate(SLIDER_JS),
        lambda s: (s["shown"] or "").endswith("= 4"),
        what="the slider moved to the last step",
    )
    recorded(recorder, checkpoints[3], STEPS[3])
    state = eventually(
        lambda: plot.evaluate(SLIDER_JS),
        lambda s: s["steps"] == ["0", "2", "4", "6"] and (s["shown"] or "").endswith("= 6"),
        what="the slider following the new last step",
    )
    page.get_by_text("last record at step 6", exact=False).wait_for()
    shot(page, "live-four-records.png")

    recorder.finish(6)  # the run ends: the page says so and stops looking
    page.get_by_text("the run ended at step 6", exact=False).wait_for()
    expect(page.get_by_text("last record at step", exact=False)).to_have_count(0)
