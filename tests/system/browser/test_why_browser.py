"""In headless Debian chromium, on the bundled SmolLM2: the Head page's "Why it attends", asked
for by the link (``split=1``), draws its four heatmaps, and a click on a direction's marker
below the spectrum shows that direction's readout and writes it to the link. The server is
scripts/start.sh on a free loopback port."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from plotly_scene import wait_clickable
from servers import free_port, serving

from headforms import DEFAULT_MODEL

pytestmark = pytest.mark.browser


MARKERS_JS = """
(gd) => {
  // Screen position of each top direction's marker (traces with meta.role "directions").
  const full = gd._fullLayout, rect = gd.getBoundingClientRect(), points = [];
  gd._fullData.forEach((trace) => {
    if (!trace.meta || trace.meta.role !== "directions") return;
    const xa = full[trace.xaxis.replace("x", "xaxis")];
    const ya = full[trace.yaxis.replace("y", "yaxis")];
    for (let i = 0; i < trace.x.length; i++) {
      points.push({
        x: rect.left + xa._offset + xa.l2p(trace.x[i]),
        y: rect.top + ya._offset + ya.l2p(trace.y[i]),
        lobe: trace.customdata[i][0],
        rank: trace.customdata[i][1],
      });
    }
  });
  return points;
}
"""


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from ui.loading import warm

    warm()  # the analysis, as the install does; forward passes start cold
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def test_a_click_on_a_direction_shows_its_readout(page, server: str) -> None:
    page.goto(f"{server}/head?model={DEFAULT_MODEL}&layer=18&head=8&split=1")
    page.get_by_text("Direction λ₊1").wait_for()
    parts = page.locator('div[data-hf-plot="why_parts"]')
    assert parts.evaluate("(gd) => gd._fullData.filter((t) => t.type === 'heatmap').length") == 4
    spectrum = page.locator('div[data-hf-plot="why_spectrum"]')
    spectrum.scroll_into_view_if_needed()
    wait_clickable(page, "why_spectrum")
    markers = spectrum.evaluate(MARKERS_JS)
    assert {(m["lobe"], m["rank"]) for m in markers} >= {("negative", 1), ("positive", 8)}
    (target,) = [m for m in markers if (m["lobe"], m["rank"]) == ("negative", 3)]
    page.mouse.move(target["x"], target["y"])
    page.wait_for_timeout(300)
    page.mouse.click(target["x"], target["y"], delay=100)
    page.get_by_text("Direction λ₋3").wait_for()
    page.wait_for_function("() => window.location.search.includes('direction=n3')")
    assert parse_qs(urlparse(page.url).query)["direction"] == ["n3"]
