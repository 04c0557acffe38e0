"""The Head page's grid of every head's pattern in headless Debian chromium at 1280 x 800: a
click on a thumbnail opens that head (its page's title and its frame in the grid), on SmolLM2.
The server is scripts/start.sh on a free loopback port with the session's cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from plotly_scene import SCRIPT_RUNNING_JS
from servers import free_port, serving

from headforms import DEFAULT_MODEL

pytestmark = pytest.mark.browser


THUMBNAIL_JS = """
(gd, [layer, head]) => {
  // The page position of a head's thumbnail centre (its clickable marker), through the axes.
  const trace = gd._fullData.find((t) => t.meta && t.meta.role === "thumbnails");
  const i = Array.from(trace.customdata).findIndex((c) => c[1] === layer && c[2] === head);
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, rect = gd.getBoundingClientRect();
  return { x: rect.left + xa._offset + xa.c2p(trace.x[i]),
           y: rect.top + ya._offset + ya.c2p(trace.y[i]) };
}
"""

FRAMED_JS = """
(gd) => {
  const frame = (gd._fullLayout.shapes || []).find((s) => s.name === "selected");
  const trace = gd._fullData.find((t) => t.meta && t.meta.role === "thumbnails");
  if (!frame || !trace) return null;
  const i = Array.from(trace.x).findIndex((x, k) => frame.x0 < x && x < frame.x1
                                               && frame.y0 < trace.y[k] && trace.y[k] < frame.y1);
  return i < 0 ? null : [trace.customdata[i][1], trace.customdata[i][2]];
}
"""


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory) -> Iterator[str]:
    from ui.loading import warm

    warm()
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def grid(page) -> object:
    page.wait_for_function(
        """() => {
          const gd = document.querySelector('div[data-hf-plot="model_view"]');
          return Boolean(gd && gd._fullData && gd._fullData.some(
            (t) => t.meta && t.meta.role === "thumbnails"));
        }""",
    )
    return page.locator('div[data-hf-plot="model_view"]')


def test_a_click_on_a_thumbnail_opens_that_head(page, server: str) -> None:
    page.goto(f"{server}/head?model={DEFAULT_MODEL}&layer=3&head=2")
    plot = grid(page)
    plot.scroll_into_view_if_needed()
    page.wait_for_function(
        "(gd) => JSON.stringify((" + FRAMED_JS + ")(gd)) === '[3,2]'",
        arg=plot.element_handle(),
    )
    page.wait_for_function(f"() => !({SCRIPT_RUNNING_JS})()")  # page done
    page.wait_for_timeout(500)
    at = plot.evaluate(THUMBNAIL_JS, [21, 7])
    page.mouse.move(at["x"], at["y"])
    page.wait_for_timeout(300)  # plotly.js finds the point under a pointer that has hovered
    page.mouse.click(at["x"], at["y"], delay=50)
    page.get_by_role("heading", name="Layer 21 · Head 7").wait_for()
    plot = grid(page)
    page.wait_for_function(
        "(gd) => JSON.stringify((" + FRAMED_JS + ")(gd)) === '[21,7]'",
        arg=plot.element_handle(),
    )
