"""The slider of the animated views (RoPE positions, Training run) in headless Debian chromium at
1280 x 800: a moved slider survives a switch of the figure (issue 39.2: the triangle became the
word "undefined"), where it was moved is in the link and a link opens the figure there, and the
whole figure, slider included, is on the first screen. The server is scripts/start.sh on a free
loopback port with the session's cache; the sweep is short (d = 0..16) and the run tiny."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import tiny_models as tm
from servers import free_port, serving

from headforms import DEFAULT_MODEL

pytestmark = pytest.mark.browser

POSITIONS = "0:16"
VIEWPORT = {"width": 1280, "height": 800}

SLIDER_JS = """
(gd) => {
  // The animated figure now: its frames held, its slider's active step and shown value, its
  // traces' kinds, and what the plot's box holds besides the figure (a failed draw's text).
  const slider = gd._fullLayout && gd._fullLayout.sliders && gd._fullLayout.sliders[0];
  const label = gd.querySelector(".slider-container .slider-group > text.slider-label");
  return {
    frames: gd._transitionData ? gd._transitionData._frames.length : 0,
    active: slider ? slider.active : null,
    shown: label ? label.textContent : null,
    types: (gd._fullData || []).map((t) => t.type),
    failed: !gd.querySelector(".main-svg") && gd.textContent.trim().length > 0,
  };
}
"""

BOXES_JS = """
(gd) => {
  // The plot's box, its scene's or its axes' area and its slider's rail, in page pixels.
  const rect = gd.getBoundingClientRect(), full = gd._fullLayout, size = full._size;
  const dom = full.scene ? full.scene.domain : { x: [0, 1], y: [0, 1] };
  const rail = gd.querySelector(".slider-container .slider-rail-rect").getBoundingClientRect();
  return {
    plot: { top: rect.top, bottom: rect.bottom },
    area: { top: rect.top + size.t + (1 - dom.y[1]) * size.h,
            bottom: rect.top + size.t + (1 - dom.y[0]) * size.h },
    rail: { top: rail.top, bottom: rail.bottom, left: rail.left, width: rail.width },
  };
}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama trained a few steps, saved as checkpoint-0, -2, -4 of a run directory."""
    folder = tmp_path_factory.mktemp("run") / "run"
    tm.train_run("llama", folder, steps=(0, 2, 4))
    return folder


@pytest.fixture(scope="module")
def server(isolated_cache: Path, run: Path, tmp_path_factory) -> Iterator[str]:
    from ui.loading import warm

    warm()
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def plot_of(page, key: str) -> object:
    """The plot ``key`` once its animated figure is drawn with its frames."""
    page.wait_for_function(
        f"""() => {{
          const gd = document.querySelector('div[data-hf-plot="{key}"]');
          return Boolean(gd && gd._fullLayout && gd._fullLayout.sliders
                         && gd._fullLayout.sliders.length && gd._transitionData
                         && gd._transitionData._frames.length);
        }}""",
    )
    return page.locator(f'div[data-hf-plot="{key}"]')


def move_slider(page, plot, step: int, steps: int) -> None:
    """Click the slider's rail at ``step`` of ``steps`` and wait until it shows that step."""
    plot.locator(".slider-container .slider-rail-rect").scroll_into_view_if_needed()
    rail = plot.evaluate(BOXES_JS)["rail"]
    x = rail["left"] + rail["width"] * step / (steps - 1)
    page.mouse.click(x, (rail["top"] + rail["bottom"]) / 2)
    page.wait_for_function(
        """([gd, step]) => gd._fullLayout.sliders[0].active === step""",
        arg=[plot.element_handle(), step],
    )


def at_in_url(page, value: str) -> None:
    """Wait until the page's URL holds ``at=value``."""
    page.wait_for_function(
        "(value) => new URLSearchParams(location.search).get('at') === value",
        arg=value,
    )


def test_a_moved_slider_survives_the_triangle(page, server: str) -> None:
    """Issue 39.2: move the RoPE positions slider, switch View to the triangle: the triangle is
    drawn with every frame, the slider where it was (on main: no frames, the word undefined)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server}/positions?model={DEFAULT_MODEL}&positions={POSITIONS}")
    plot = plot_of(page, "motion_simplex")
    move_slider(page, plot, 5, 17)
    page.get_by_text("Triangle Δ").click()
    page.wait_for_function(
        """(gd) => (gd._fullData || []).length > 0
                   && gd._fullData.every((t) => t.type === "scatter")""",
        arg=plot.element_handle(),
    )
    page.wait_for_function(
        "(gd) => gd._fullLayout.sliders[0].active === 5 && gd._transitionData._frames.length",
        arg=plot.element_handle(),
    )
    state = plot.evaluate(SLIDER_JS)
    assert state["frames"] == 17 and not state["failed"], state
    assert state["shown"].endswith("= 5"), state
    move_slider(page, plot, 9, 17)  # the triangle's frames play
    assert plot.evaluate(SLIDER_JS)["shown"].endswith("= 9")
    assert not errors, errors


def test_the_slider_position_is_in_the_link(page, browser, server: str) -> None:
    """Where the visitor leaves the slider goes into the URL (``at``), and that link opens the
    figure at it in another browser."""
    page.goto(f"{server}/positions?model={DEFAULT_MODEL}&positions={POSITIONS}")
    plot = plot_of(page, "motion_simplex")
    move_slider(page, plot, 12, 17)
    at_in_url(page, "12")
    link = page.url
    assert parse_qs(urlparse(link).query)["at"] == ["12"]
    other = browser.new_context(viewport=VIEWPORT).new_page()
    try:
        other.goto(link)
        shown = plot_of(other, "motion_simplex")
        other.wait_for_function(
            "(gd) => gd._fullLayout.sliders[0].active === 12",
            arg=shown.element_handle(),
        )
        assert shown.evaluate(SLIDER_JS)["shown"].endswith("= 12")
    finally:
        other.context.close()


@pytest.mark.parametrize("view", ["simplex", "heads", "triangle"])
def test_the_whole_figure_and_its_slider_are_on_the_first_screen(
    page, server: str, view: str
) -> None:
    """At 1280 x 800, the RoPE positions figure (its scene or axes, and the slider under it)
    lies inside the first screen, in either 3D view and as the triangle."""
    figure = "triangle" if view == "triangle" else "simplex"
    frame = "heads" if view == "heads" else "simplex"
    page.goto(
        f"{server}/positions?model={DEFAULT_MODEL}&positions={POSITIONS}"
        f"&figure={figure}&view={frame}"
    )
    plot = plot_of(page, "motion_simplex")
    page.wait_for_timeout(500)  # the page below the plot has arrived and settled
    boxes = plot.evaluate(BOXES_JS)
    assert boxes["plot"]["top"] >= 0 and boxes["area"]["top"] >= 0, boxes
    assert boxes["area"]["bottom"] <= VIEWPORT["height"], boxes
    assert boxes["rail"]["bottom"] <= VIEWPORT["height"], boxes


def test_the_training_run_slider_is_in_the_link_and_on_the_first_screen(
    page, browser, server: str, run: Path
) -> None:
    """The Training run's step slider: on the first screen with its scene, where it is moved
    goes into the link, and the link opens the figure at that step."""
    page.goto(f"{server}/training?run={run}")
    plot = plot_of(page, "series_simplex")
    page.wait_for_timeout(500)
    boxes = plot.evaluate(BOXES_JS)
    assert boxes["area"]["top"] >= 0 and boxes["area"]["bottom"] <= VIEWPORT["height"], boxes
    assert boxes["rail"]["bottom"] <= VIEWPORT["height"], boxes
    move_slider(page, plot, 1, 3)  # step 2 of 0, 2, 4
    at_in_url(page, "2")
    other = browser.new_context(viewport=VIEWPORT).new_page()
    try:
        other.goto(page.url)
        shown = plot_of(other, "series_simplex")
        other.wait_for_function(
            "(gd) => gd._fullLayout.sliders[0].active === 1",
            arg=shown.element_handle(),
        )
    finally:
        other.context.close()
