"""In headless Debian chromium, on the bundled SmolLM2: a prompt typed on the Head page draws the
head's heatmap with the prompt's tokens; a click on a point of the geometry-against-behaviour
page opens that head. The server is scripts/start.sh on a free loopback port."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from plotly_scene import wait_clickable
from servers import free_port, serving

from headforms import DEFAULT_MODEL
from headforms.behaviour import attention
from headforms.figures.behaviour import token_label

pytestmark = pytest.mark.browser

PROMPT = "Alice gave Bob a red apple. Alice gave Bob a red apple."

POINTS_JS = """
(gd) => {
  // Screen position of every head marker of a 2D scatter (traces with meta.role "heads").
  const full = gd._fullLayout, rect = gd.getBoundingClientRect(), points = [];
  gd._fullData.forEach((trace) => {
    if (!trace.meta || trace.meta.role !== "heads") return;
    const xa = full[trace.xaxis.replace("x", "xaxis")];
    const ya = full[trace.yaxis.replace("y", "yaxis")];
    for (let i = 0; i < trace.x.length; i++) {
      points.push({
        x: rect.left + xa._offset + xa.l2p(trace.x[i]),
        y: rect.top + ya._offset + ya.l2p(trace.y[i]),
        layer: trace.customdata[i][1],
        head: trace.customdata[i][2],
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


def test_a_typed_prompt_draws_the_heads_heatmap_with_its_tokens(page, server: str) -> None:
    page.goto(f"{server}/head?model={DEFAULT_MODEL}&layer=18&head=6")
    page.locator("h1", has_text="Layer 18 · Head 6").wait_for()
    box = page.get_by_role("textbox", name="Prompt")
    box.wait_for()
    box.fill(PROMPT)
    box.press("Control+Enter")
    want = [f"{token_label(t)} ·{i}" for i, t in enumerate(attention(DEFAULT_MODEL, PROMPT).tokens)]
    plot = page.locator('div[data-hf-plot="behaviour_head_pattern"]')
    page.wait_for_function(
        """(want) => {
          const gd = document.querySelector('div[data-hf-plot="behaviour_head_pattern"]');
          const ticks = gd && gd._fullLayout && gd._fullLayout.xaxis.ticktext;
          return Boolean(ticks) && JSON.stringify(ticks) === JSON.stringify(want);
        }""",
        arg=want,
    )
    title = plot.evaluate("(gd) => gd._fullLayout.title.text")
    assert title.startswith("Layer 18 · Head 6: attention weights on")
    assert parse_qs(urlparse(page.url).query)["prompt"] == [PROMPT]  # Streamlit binds the box
    assert plot.evaluate("(gd) => gd._fullData[0].type") == "heatmap"


def test_clicking_a_point_of_geometry_against_behaviour_opens_that_head(page, server: str) -> None:
    page.goto(f"{server}/behaviour?model={DEFAULT_MODEL}")
    scatter = page.locator('div[data-hf-plot="behaviour_scatter"]')
    page.wait_for_function(
        """() => {
          const gd = document.querySelector('div[data-hf-plot="behaviour_scatter"]');
          return Boolean(gd && gd._fullData && gd._fullData.length);
        }""",
    )
    wait_clickable(page, "behaviour_scatter")
    points = scatter.evaluate(POINTS_JS)
    assert len(points) == 270  # every head of SmolLM2
    lonely = max(
        points,
        key=lambda p: min(
            (p["x"] - q["x"]) ** 2 + (p["y"] - q["y"]) ** 2 for q in points if q is not p
        ),
    )
    page.mouse.move(lonely["x"], lonely["y"])
    page.wait_for_timeout(300)
    page.mouse.click(lonely["x"], lonely["y"], delay=100)
    heading = f"Layer {lonely['layer']} · Head {lonely['head']}"
    page.locator("h1", has_text=heading).wait_for()
    assert f"layer={lonely['layer']}&head={lonely['head']}" in page.url
