"""The plot component in headless chromium at 1280 x 800 (issue 28, items 3 and 5): the mouse
wheel over a plot scrolls the page and leaves the plot as it was, Ctrl + wheel zooms it; the
Simplex page shows every head on its first screen; the chooser of overlapping heads leaves the
scene around it drawn and rings the marker of the entry under the pointer. Issue 28, item 8: a
rerun that leaves a plot's figure as it is does not draw it again, and a new selection keeps the
3D scene's canvas and its unchanged traces."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect
from plotly_scene import (
    SCENE_POINTS_JS,
    SCRIPT_RUNNING_JS,
    click,
    most_isolated,
    scene_ready_js,
    settled_points,
)
from servers import free_port, serving
from waiting import eventually

from ui.plot import PICK_RADIUS_PX, WHEEL_ZOOM_TEXT

pytestmark = pytest.mark.browser

VIEWPORT_HEIGHT = 800
HOVER_LABEL_PX = 40
"""Room below a head's marker for its hover label, on the first screen."""


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app (scripts/start.sh) on a free loopback port, the default model analysed first."""
    from ui.loading import warm

    warm()
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


SCROLL_TOP_JS = """
(el, to) => {
  // The page's scroll position: of the plot's nearest scrolling ancestor (Streamlit's main
  // area), or of the document. With `to`: scroll there first.
  let box = el.parentElement;
  while (box && box !== document.body) {
    const style = getComputedStyle(box);
    if (/(auto|scroll)/.test(style.overflowY) && box.scrollHeight > box.clientHeight) break;
    box = box.parentElement;
  }
  if (!box || box === document.body) box = document.scrollingElement;
  if (to !== null && to !== undefined) box.scrollTop = to;
  return box.scrollTop;
}
"""

SCENE_VIEW_JS = "(gd) => Array.from(gd._fullLayout.scene._scene.glplot.cameraParams.view)"
AXES_JS = "(gd) => [gd._fullLayout.xaxis.range.slice(), gd._fullLayout.yaxis.range.slice()]"
TRIANGLE_READY_JS = """() => {
  const gd = document.querySelector('div[data-hf-plot="triangle"]');
  return Boolean(gd && gd._fullLayout && gd._fullLayout.xaxis && gd._fullLayout.xaxis.range);
}"""


def open_simplex(page, url: str) -> tuple[object, object]:
    """The Simplex page with both plots drawn and the page settled: (simplex, triangle)."""
    page.goto(url)
    page.wait_for_function(scene_ready_js("simplex"))
    page.wait_for_function(TRIANGLE_READY_JS)
    simplex = page.locator('div[data-hf-plot="simplex"]')
    settled_points(page, simplex)
    return simplex, page.locator('div[data-hf-plot="triangle"]')


def centre(locator, top: float = 0.5) -> tuple[float, float]:
    box = locator.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] * top


def near_the_top(page, plot) -> float:
    """Scroll the page so that ``plot`` starts 100 px below the window's top (a plot below the
    first screen is brought into view; the page can still scroll further down): the page's
    scroll position then."""
    top = plot.evaluate(SCROLL_TOP_JS, None) + plot.bounding_box()["y"] - 100
    plot.evaluate(SCROLL_TOP_JS, max(0.0, top))
    page.wait_for_timeout(300)
    return plot.evaluate(SCROLL_TOP_JS, None)


def wheel_at(page, at: tuple[float, float], dy: float, modifier: str | None = None) -> None:
    page.mouse.move(*at)
    page.wait_for_timeout(200)
    if modifier:
        page.keyboard.down(modifier)
    page.mouse.wheel(0, dy)
    page.wait_for_timeout(700)
    if modifier:
        page.keyboard.up(modifier)
    page.wait_for_timeout(300)


def test_the_wheel_over_a_plot_scrolls_the_page_and_leaves_the_plot(page, server: str) -> None:
    simplex, triangle = open_simplex(page, server)
    for plot, state_js in ((simplex, SCENE_VIEW_JS), (triangle, AXES_JS)):
        start = near_the_top(page, plot)
        before = plot.evaluate(state_js)
        wheel_at(page, centre(plot, 0.4), 240)
        eventually(
            lambda plot=plot: plot.evaluate(SCROLL_TOP_JS, None),
            lambda top, start=start: top > start + 100,
            what="the page's scroll by the wheel",
        )
        assert plot.evaluate(state_js) == before, "the wheel changed the plot"
    # both plots say how to zoom
    expect(page.get_by_text(WHEEL_ZOOM_TEXT.split(";")[0], exact=False).nth(1)).to_be_attached()


def test_ctrl_and_the_wheel_zoom_the_plot_and_leave_the_page(page, server: str) -> None:
    simplex, triangle = open_simplex(page, server)
    for plot, state_js in ((simplex, SCENE_VIEW_JS), (triangle, AXES_JS)):
        start = near_the_top(page, plot)
        before = plot.evaluate(state_js)
        wheel_at(page, centre(plot, 0.4), -240, modifier="Control")
        eventually(
            lambda plot=plot, state_js=state_js: plot.evaluate(state_js),
            lambda now, before=before: now != before,
            what="the plot's zoom by Ctrl + wheel",
        )
        assert plot.evaluate(SCROLL_TOP_JS, None) == start, "Ctrl + wheel scrolled the page"


def test_every_head_of_the_simplex_is_on_the_first_screen(page, server: str) -> None:
    simplex, _ = open_simplex(page, server)
    points = settled_points(page, simplex)
    assert simplex.evaluate(SCROLL_TOP_JS, None) == 0
    lowest = max(point["y"] for point in points)
    assert lowest <= VIEWPORT_HEIGHT - HOVER_LABEL_PX, (
        f"the lowest head is drawn at y = {lowest:.0f} px of {VIEWPORT_HEIGHT}"
    )
    assert min(point["y"] for point in points) >= simplex.bounding_box()["y"]


def grey(page) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("L")).astype(int)


def settled_grey(page) -> np.ndarray:
    """The page's picture once it has stopped changing: the same in two shots 300 ms apart
    (a scene redraws on its next animation frames, later on a busy machine)."""
    shots = [grey(page)]

    def shot() -> np.ndarray:
        page.wait_for_timeout(300)
        shots.append(grey(page))
        return shots[-1]

    return eventually(shot, lambda now: np.array_equal(now, shots[-2]), what="a settled page")


def neighbours(point: dict, points: list[dict]) -> int:
    radius = PICK_RADIUS_PX - 1
    return sum(
        1
        for q in points
        if q is not point and (q["x"] - point["x"]) ** 2 + (q["y"] - point["y"]) ** 2 <= radius**2
    )


def test_the_chooser_leaves_the_scene_drawn_and_rings_the_entry_under_the_pointer(
    page, server: str
) -> None:
    simplex, _ = open_simplex(page, f"{server}/?view=heads")
    points = settled_points(page, simplex)
    crowded = [p for p in points if p["inView"] and p["y"] < VIEWPORT_HEIGHT - 20]
    target = max(crowded, key=lambda p: neighbours(p, points))
    assert neighbours(target, points) >= 2
    click(page, target)
    chooser = page.locator(".hf-chooser")
    chooser.wait_for()
    # the plot's pixels outside the chooser (and its shadow) are the same with it shown or not
    shown = settled_grey(page)
    chooser.evaluate("(box) => { box.style.visibility = 'hidden'; }")
    hidden = settled_grey(page)
    chooser.evaluate("(box) => { box.style.visibility = ''; }")
    plot, box = simplex.bounding_box(), chooser.bounding_box()
    outside = np.zeros_like(shown, dtype=bool)
    bottom = int(min(VIEWPORT_HEIGHT, plot["y"] + plot["height"]))
    outside[int(plot["y"]) : bottom, int(plot["x"]) : int(plot["x"] + plot["width"])] = True
    y0, x0 = max(0, int(box["y"]) - 20), max(0, int(box["x"]) - 20)
    outside[y0 : int(box["y"] + box["height"]) + 20, x0 : int(box["x"] + box["width"]) + 20] = False
    changed = int(((np.abs(shown - hidden) > 30) & outside).sum())
    assert changed < 20, f"{changed} pixels of the scene around the chooser are not drawn"
    # the entry under the pointer: its marker ringed where the scene draws it
    entry = page.locator(".hf-chooser .hf-choice").nth(1)
    layer, head = (int(v) for v in entry.get_attribute("data-hf-head").split(","))
    entry.hover()
    marker = next(
        p for p in simplex.evaluate(SCENE_POINTS_JS) if (p["layer"], p["head"]) == (layer, head)
    )

    def ring_centre() -> tuple[float, float] | None:
        ring = page.locator(".hf-ring").bounding_box()
        return ring and (ring["x"] + ring["width"] / 2, ring["y"] + ring["height"] / 2)

    eventually(
        ring_centre,
        lambda at: (
            at is not None and abs(at[0] - marker["x"]) < 1.5 and abs(at[1] - marker["y"]) < 1.5
        ),
        what=f"the ring on the marker at {marker}",
    )


def test_a_wrapped_title_sits_below_the_toolbar(page, server: str) -> None:
    """The triangle's title, wrapped to two lines in a window 1000 px wide (ui/plot.js
    fitTitle; at 1280 it fits on one), starts below the toolbar shown on hover, not under it
    (plotly.js lifts a title's added lines)."""
    page.set_viewport_size({"width": 1000, "height": 800})
    _, triangle = open_simplex(page, server + "/")
    near_the_top(page, triangle)
    page.mouse.move(*centre(triangle))
    toolbar = triangle.locator(".modebar").first
    toolbar.wait_for(state="visible")
    title = triangle.locator(".gtitle").first.bounding_box()
    bar = toolbar.bounding_box()
    assert title["height"] > 30, title  # two lines: what this test is about
    assert title["y"] >= bar["y"] + bar["height"], (title, bar)


MARKS_JS = "(name) => performance.getEntriesByType('mark').filter((m) => m.name === name).length"


def marks(page, kind: str, key: str) -> int:
    """How many times ui/plot.js drew (``drawn``) or kept (``kept``) the plot ``key``."""
    return page.evaluate(MARKS_JS, f"hf:{kind}:{key}")


def wait_for_mark(page, kind: str, key: str, more_than: int) -> None:
    """Until the plot ``key`` is drawn or kept again, and the page has settled after it."""
    page.wait_for_function(f"() => ({MARKS_JS})('hf:{kind}:{key}') > {more_than}")
    page.wait_for_timeout(1500)
    page.wait_for_function(f"() => !({SCRIPT_RUNNING_JS})()")
    page.wait_for_timeout(500)


def test_a_rerun_that_leaves_a_figure_unchanged_does_not_draw_it(page, server: str) -> None:
    """A rotation of the scene is reported to Python, whose rerun sends the scene its figure
    again with the camera it shows: it is not drawn again (Streamlit itself does not call a
    component whose data did not change at all, as the triangle's)."""
    simplex, triangle = open_simplex(page, server)
    drawn = {key: marks(page, "drawn", key) for key in ("simplex", "triangle")}
    kept = marks(page, "kept", "simplex")
    x, y = centre(simplex, 0.4)
    page.mouse.move(x, y)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(x + 8 * step, y + 2 * step)
    page.mouse.up()
    page.wait_for_timeout(200)
    turned = simplex.evaluate(SCENE_VIEW_JS)
    wait_for_mark(page, "kept", "simplex", kept)
    assert {key: marks(page, "drawn", key) for key in drawn} == drawn
    assert simplex.evaluate(SCENE_VIEW_JS) == turned  # the visitor's view, as it was
    # the kept plots still answer a click: a marker opens its head
    target = most_isolated([p for p in settled_points(page, simplex) if p["inView"]])
    click(page, target)
    heading = page.get_by_role("heading", name=f"Layer {target['layer']} · Head {target['head']}")
    heading.wait_for()


SCENE_TAG_JS = """(gd) => {
  gd.hfTestCanvas = gd.querySelector("canvas");
  gd.data.forEach((trace) => { trace.hfTestTag = true; });
}"""
SCENE_KEPT_JS = """(gd) => ({
  canvas: gd.querySelector("canvas") === gd.hfTestCanvas,
  heads: gd.data.filter((t) => t.meta && t.meta.role === "heads").map((t) => Boolean(t.hfTestTag)),
  newTraces: gd.data.filter((t) => !t.hfTestTag).map((t) => t.meta && t.meta.role),
})"""


def test_a_new_selection_keeps_the_scene_and_its_unchanged_traces(page, server: str) -> None:
    """A head chosen in the sidebar draws the scene again with the same WebGL canvas and the
    same trace objects for the heads (only the selected head's traces are new)."""
    simplex, _ = open_simplex(page, server)
    simplex.evaluate(SCENE_TAG_JS)
    drawn = marks(page, "drawn", "simplex")
    field = page.locator('section[data-testid="stSidebar"]').get_by_label("Head", exact=True)
    field.fill(str((int(field.input_value()) + 1) % 9))
    field.press("Enter")
    wait_for_mark(page, "drawn", "simplex", drawn)
    kept = simplex.evaluate(SCENE_KEPT_JS)
    assert kept["canvas"], "the scene's canvas was replaced"
    assert kept["heads"] and all(kept["heads"]), kept
    assert kept["newTraces"] and set(kept["newTraces"]) <= {"selected"}, kept
