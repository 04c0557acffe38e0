"""What a newcomer's first hour showed drawn wrong (issue 39.8), measured in headless Debian
chromium at 1280 x 800: a new server's first page lists no pages/ file names; Compare draws every
model's heatmap with one cell size and tick labels apart; the Spectra panels' titles are whole,
clear of the ticks, and their dashed and dotted lines are in a legend; the exported gallery shows
the animated simplex's whole legend. The server is scripts/start.sh on a free loopback port with
the session's cache, fresh for this module (its first page is the server's first)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from plotly_scene import SCRIPT_RUNNING_JS
from servers import free_port, serving

from headforms import DEFAULT_MODEL

pytestmark = pytest.mark.browser

PAGE_MS = 240_000

PAGE_FILES = {p.stem for p in (Path(__file__).resolve().parents[3] / "pages").glob("*.py")}
"""The pages/ folder's file names: what Streamlit's pages-directory mode would list."""

NAV_JS = """
() => {
  // Every text the sidebar's navigation shows, from before the first byte of the page.
  window.hfNavSeen = new Set();
  const look = () => {
    for (const link of document.querySelectorAll('[data-testid="stSidebarNav"] a')) {
      window.hfNavSeen.add(link.textContent.trim());  // the app's: its icon's name, its title
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true });
}
"""

TICKS_JS = """
(gd) => {
  // Per x axis of a plot: its pixels per data unit; every tick label's box, by axis.
  const full = gd._fullLayout, scales = {}, boxes = {};
  for (const name of Object.keys(full)) {
    const axis = full[name];
    if (!/^[xy]axis\\d*$/.test(name) || !axis || !axis._length) continue;
    scales[name] = axis._length / Math.abs(axis.range[1] - axis.range[0]);
  }
  for (const tick of gd.querySelectorAll(".xtick text, .ytick text")) {
    const group = tick.closest("g[class*='tick']").parentNode.getAttribute("class") || "";
    const r = tick.getBoundingClientRect();
    if (!r.width) continue;
    (boxes[group] = boxes[group] || []).push({ left: r.left, right: r.right, top: r.top,
                                               bottom: r.bottom, text: tick.textContent });
  }
  return { scales, boxes };
}
"""

ANNOTATIONS_JS = """
(gd) => {
  // Every annotation's box (the subplot titles), every tick label's box, the plot's box.
  const box = (e) => { const r = e.getBoundingClientRect();
                       return { left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                                text: e.textContent }; };
  return {
    plot: box(gd),
    notes: Array.from(gd.querySelectorAll(".annotation-text-g")).map(box),
    ticks: Array.from(gd.querySelectorAll(".ytick text, .xtick text")).map(box),
    legend: Array.from(gd.querySelectorAll(".legend .traces")).map((t) => t.textContent),
  };
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


def overlaps(a: dict, b: dict, slack: float = 0.5) -> bool:
    return (
        a["left"] < b["right"] - slack
        and b["left"] < a["right"] - slack
        and a["top"] < b["bottom"] - slack
        and b["top"] < a["bottom"] - slack
    )


def settled(page) -> None:
    """Wait until the page's script has finished."""
    page.wait_for_function(f"() => !({SCRIPT_RUNNING_JS})()", timeout=PAGE_MS)
    page.wait_for_timeout(1000)


def test_a_new_servers_first_page_lists_no_page_files(page, server: str) -> None:
    """The first page of a new server (this module's): its navigation never shows the pages/
    folder's file names (on main, "app", "behaviour", ... for about a second), and shows the
    app's own menu."""
    page.add_init_script(f"({NAV_JS})()")
    page.goto(f"{server}/?model={DEFAULT_MODEL}")
    page.get_by_role("heading", name="Profiles on the simplex").wait_for(timeout=PAGE_MS)
    page.get_by_role("link", name="Geometry vs behaviour").wait_for(timeout=30_000)
    seen = set(page.evaluate("() => Array.from(window.hfNavSeen)"))
    assert any(text.endswith("Geometry vs behaviour") for text in seen), seen
    assert not seen & (PAGE_FILES | {"app"}), seen & (PAGE_FILES | {"app"})


def test_compare_draws_every_models_cells_one_size_and_its_ticks_apart(page, server: str) -> None:
    page.goto(f"{server}/compare?model={DEFAULT_MODEL}&models=minilm-l6")
    plot = page.locator('div[data-hf-plot="compare_heatmaps"]')
    plot.wait_for(timeout=PAGE_MS)
    page.wait_for_function(
        """() => { const gd = document.querySelector('div[data-hf-plot="compare_heatmaps"]');
                   return Boolean(gd && gd._fullLayout && gd._fullLayout.xaxis4); }""",
        timeout=PAGE_MS,
    )
    settled(page)
    plot.scroll_into_view_if_needed()
    drawn = plot.evaluate(TICKS_JS)
    widths = [scale for name, scale in drawn["scales"].items() if name.startswith("xaxis")]
    heights = [scale for name, scale in drawn["scales"].items() if name.startswith("yaxis")]
    assert len(widths) == 4 and max(widths) - min(widths) < 1.0, drawn["scales"]
    assert max(heights) - min(heights) < 1.0, drawn["scales"]
    assert min(widths) >= 10, drawn["scales"]  # a cell a visitor can point at
    for axis, boxes in drawn["boxes"].items():
        clashes = [
            (a["text"], b["text"])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if overlaps(a, b)
        ]
        assert not clashes, (axis, clashes)


def test_spectra_titles_are_whole_clear_of_the_ticks_and_the_lines_explained(
    page, server: str
) -> None:
    page.goto(f"{server}/spectra?model={DEFAULT_MODEL}")
    page.wait_for_function(  # every figure of the page has arrived (six)
        "() => document.querySelectorAll('div.hf-plot').length >= 6", timeout=PAGE_MS
    )
    settled(page)
    plots = page.locator("div.hf-plot")
    checked = 0
    for index in range(plots.count()):
        plot = plots.nth(index)
        plot.scroll_into_view_if_needed()
        plot.locator(".main-svg").first.wait_for(timeout=PAGE_MS)  # drawn
        page.wait_for_timeout(300)
        drawn = plot.evaluate(ANNOTATIONS_JS)
        for note in drawn["notes"]:
            assert drawn["plot"]["left"] - 0.5 <= note["left"], note
            assert note["right"] <= drawn["plot"]["right"] + 0.5, note  # not cut at the edge
            clashes = [tick["text"] for tick in drawn["ticks"] if overlaps(note, tick)]
            assert not clashes, (note["text"], clashes)
        text = " ".join(drawn["legend"])
        if "eigenvalue 0" in text or "median" in text:
            checked += 1
    assert checked == 2  # Fig 4's dashed and dotted lines, and the spectral geometry's


def test_the_gallerys_animated_simplex_shows_its_whole_legend(browser, tmp_path: Path) -> None:
    from headforms import analyze
    from headforms.engine import sweep
    from headforms.gallery import gallery_html

    path = tmp_path / "gallery.html"
    path.write_text(
        gallery_html(analyze(DEFAULT_MODEL), sweep(DEFAULT_MODEL, rope_positions="0:4")),
        encoding="utf-8",
    )
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_function(
            "() => document.querySelectorAll('.js-plotly-plot .legend').length >= 2",
            timeout=PAGE_MS,
        )
        first = page.locator(".js-plotly-plot").first
        legend = first.evaluate(
            """(gd) => { const r = gd.getBoundingClientRect();
                 const l = gd.querySelector('.legend').getBoundingClientRect();
                 return { plot: [r.top, r.bottom], legend: [l.top, l.bottom],
                          items: Array.from(gd.querySelectorAll('.legend .traces'))
                                      .map((t) => t.textContent) }; }"""
        )
    finally:
        context.close()
    assert {"Type I+", "Type II", "Type I−"} <= set(legend["items"]), legend
    assert legend["plot"][0] <= legend["legend"][0] and legend["legend"][1] <= legend["plot"][1]
