"""Heads in motion in headless Debian chromium: the RoPE position slider moves every marker (to
the sweep's values at that position, without a rerun), the Training run page draws the
selected head's path from its Gaussian baseline through every checkpoint, and a click on a diff
arrow's head opens that head of model B. The server is scripts/start.sh on a free loopback port
with the session's cache, in which the SmolLM2 sweep and a tiny training run are made first."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tiny_models as tm
from plotly_scene import click, most_isolated, scene_ready_js, settled_points
from servers import free_port, serving
from waiting import eventually

from headforms import DEFAULT_MODEL, analyze
from headforms.engine import sweep
from headforms.figures.geometry import SIMPLEX_VERTICES, barycentric_points
from headforms.model_analysis import model_baseline

pytestmark = pytest.mark.browser


HEADS_JS = """
(gd) => {
  // Every head marker's data coordinates now (NaN where a trace does not draw that head), in
  // trace order, and the slider's active step and shown value.
  const heads = gd._fullData.filter((t) => t.meta && t.meta.role === "heads");
  const slider = gd._fullLayout.sliders[0];
  const label = gd.querySelector(".slider-container .slider-group > text.slider-label");
  return {
    xyz: heads.map((t) => Array.from(t.x).map((x, i) => [x, t.y[i], t.z[i]])),
    customdata: heads.map((t) => Array.from(t.customdata)),
    active: slider.active,
    shown: label ? label.textContent : null,
  };
}
"""

PATH_JS = """
(gd) => {
  const path = gd._fullData.find((t) => t.meta && t.meta.role === "path");
  if (!path) return null;
  return { name: path.name, xyz: Array.from(path.x).map((x, i) => [x, path.y[i], path.z[i]]) };
}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A tiny llama trained a few steps, saved as checkpoint-0, -2, -4 of a run directory."""
    return tm.train_run("llama", tmp_path_factory.mktemp("run") / "run", steps=(0, 2, 4))


@pytest.fixture(scope="module")
def server(isolated_cache: Path, run, tmp_path_factory) -> Iterator[str]:
    from ui.loading import warm

    warm()
    sweep(DEFAULT_MODEL)  # the slider's sweep, as a visitor who waited for it once would have
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def drawn(page, key: str) -> object:
    """Wait until the 3D scene of plot ``key`` is drawn; returns the plot."""
    page.locator(f'div[data-hf-plot="{key}"] canvas').first.wait_for()
    page.wait_for_function(scene_ready_js(key))
    return page.locator(f'div[data-hf-plot="{key}"]')


def finite_points(state: dict) -> dict[tuple[int, int], np.ndarray]:
    """(layer, head) -> the 3D point where its marker is drawn (from any parity trace)."""
    found = {}
    for xyz, customdata in zip(state["xyz"], state["customdata"], strict=True):
        for point, (_, layer, head) in zip(xyz, customdata, strict=True):
            if point[0] is not None and np.isfinite(point[0]):
                found[(layer, head)] = np.asarray(point, dtype=float)
    return found


def test_the_position_slider_moves_every_marker(page, server: str) -> None:
    """Clicking the slider's far end shows d = 128: every head's marker moves to its profile at
    d = 128 (the sweep's), in the browser, with no new script run."""
    page.goto(f"{server}/positions?model={DEFAULT_MODEL}&layer=3&head=2")
    plot = drawn(page, "motion_simplex")
    before = eventually(
        lambda: plot.evaluate(HEADS_JS),
        lambda state: state["active"] == 0 and (state["shown"] or "").endswith("= 0"),
        what="the slider at d = 0",
    )
    result = sweep(DEFAULT_MODEL)
    at = result.heads_at(result.index(128))
    expected = barycentric_points(at[["a", "b", "c", "d"]].to_numpy(float), SIMPLEX_VERTICES)
    heads = list(zip(at["layer"], at["head"], strict=True))

    def moved_there(state: dict) -> bool:
        end = finite_points(state)
        return (state["shown"] or "").endswith("= 128") and all(
            key in end and np.allclose(end[key], expected[row], atol=1e-6)
            for row, key in enumerate(heads)
        )

    draws = "() => performance.getEntriesByName('hf:drawn:motion_simplex').length"
    runs = page.evaluate(draws)
    slider = plot.locator(".slider-container .slider-rail-rect")
    slider.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    rail = slider.bounding_box()
    page.mouse.click(rail["x"] + rail["width"] - 1, rail["y"] + rail["height"] / 2)
    page.wait_for_function(
        """() => document.querySelector('div[data-hf-plot="motion_simplex"]')
                 ._fullLayout.sliders[0].active === 128""",
    )
    # the frame is drawn when the slider's transition ends: wait for the markers to arrive
    after = eventually(lambda: plot.evaluate(HEADS_JS), moved_there, what="the frame d = 128")
    assert after["shown"].endswith("= 128")
    assert page.evaluate(draws) == runs  # no rerun: the plot component drew nothing new
    start, end = finite_points(before), finite_points(after)
    assert len(end) == result.card.total_heads
    moved = 0
    for row, (layer, head) in enumerate(zip(at["layer"], at["head"], strict=True)):
        np.testing.assert_allclose(end[(layer, head)], expected[row], atol=1e-6)  # float32
        moved += not np.allclose(start[(layer, head)], end[(layer, head)], atol=1e-6)
    assert moved > 0.9 * len(end)  # (almost) every head moved with d


def test_a_path_is_drawn_for_the_selected_head(page, server: str, run: list[Path]) -> None:
    """The Training run page draws the selected head's path: its Gaussian counterpart, then its
    profile at each checkpoint in step order."""
    page.goto(f"{server}/training?model={DEFAULT_MODEL}&layer=1&head=2")
    box = page.get_by_label("Checkpoints", exact=True)
    box.wait_for()
    box.fill(str(run[0].parent))
    box.press("Control+Enter")
    plot = drawn(page, "series_simplex")
    path = plot.evaluate(PATH_JS)
    assert path is not None and path["name"] == "path of L1·H2"
    profiles = [analyze(str(folder)).heads.iloc[4 + 2] for folder in run]
    last = analyze(str(run[-1]))
    baseline = model_baseline(last.card).heads.iloc[4 + 2]
    expected = barycentric_points(
        np.array([[row[c] for c in "abcd"] for row in (baseline, *profiles)], dtype=float),
        SIMPLEX_VERTICES,
    )
    np.testing.assert_allclose(np.asarray(path["xyz"], dtype=float), expected, atol=1e-9)


def test_clicking_a_diff_arrow_opens_that_head(page, server: str, run: list[Path]) -> None:
    """On the Model diff page (A: the first checkpoint, B: the last), a click on the head of an
    arrow (B's marker) opens that head of B."""
    first, last = run[0], run[-1]
    page.goto(f"{server}/diff?model={first}&layer=0&head=0")
    picker = page.get_by_label("B: the model to compare", exact=True)
    picker.wait_for()
    picker.fill(str(last))
    picker.press("Enter")
    plot = drawn(page, "diff_simplex")
    points = [p for p in settled_points(page, plot) if p["inView"]]
    target = most_isolated([p for p in points if (p["layer"], p["head"]) != (0, 0)])
    click(page, target)
    title = page.locator("h1", has_text=f"Layer {target['layer']} · Head {target['head']}")
    title.wait_for()
    assert f"layer={target['layer']}&head={target['head']}" in page.url
    assert "checkpoint-4" in page.url  # B's head, not A's
