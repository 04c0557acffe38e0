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
    page.wait_for_function(f"() => !({SCRIPT_RUNNING_JS})()")
    page.wait_for_timeout(1000)


def test_a_new_servers_first_page_lists_no_page_files(page, server: str) -> None:
    """The first page of a new server (this module's): its navigation never shows the pages/
    folder's file names (on main, "app", "behaviour", ... for about a second), and shows the
    app's own menu."""
    page.add_init_script(f"({NAV_JS})()")
    page.goto(f"{server}/?model={DEFAULT_MODEL}")
    page.get_by_role("heading", name="Profiles on the simplex").wait_for()
    page.get_by_role("link", name="Geometry vs behaviour").wait_for()
    seen = set(page.evaluate("() => Array.from(window.hfNavSeen)"))
    assert any(text.endswith("Geometry vs behaviour") for text in seen), seen
    assert not seen & (PAGE_FILES | {"app"}), seen & (PAGE_FILES | {"app"})


def test_compare_draws_every_models_cells_one_size_and_its_ticks_apart(page, server: str) -> None:
    page.goto(f"{server}/compare?model={DEFAULT_MODEL}&models=minilm-l6")
    plot = page.locator('div[data-hf-plot="compare_heatmaps"]')
    plot.wait_for()
    page.wait_for_function(
        """() => { const gd = document.querySelector('div[data-hf-plot="compare_heatmaps"]');
                   return Boolean(gd && gd._fullLayout && gd._fullLayout.xaxis4); }""",
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
        "() => document.querySelectorAll('div.hf-plot').length >= 6"
    )
    settled(page)
    plots = page.locator("div.hf-plot")
    checked = 0
    for index in range(plots.count()):
        plot = plots.nth(index)
        plot.scroll_into_view_if_needed()
        plot.locator(".main-svg").first.wait_for()  # drawn
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


LABELS_JS = """
(gd) => {
  // Each scene label as given (name, text), whether drawn, its drawn box and where its point
  // projects; the scene's area and where the selected head's ring is, in page pixels.
  const full = gd._fullLayout, size = full._size, dom = full.scene.domain;
  const rect = gd.getBoundingClientRect();
  const scene = full.scene._scene, cam = scene.glplot.cameraParams, scale = scene.dataScale;
  const left = size.l + dom.x[0] * size.w, width = (dom.x[1] - dom.x[0]) * size.w;
  const top = size.t + (1 - dom.y[1]) * size.h, height = (dom.y[1] - dom.y[0]) * size.h;
  const mul = (m, v) =>
    [0, 1, 2, 3].map((r) => m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r] * v[3]);
  const project = (x, y, z) => {
    const c = mul(cam.projection, mul(cam.view, mul(cam.model,
                  [x * scale[0], y * scale[1], z * scale[2], 1])));
    return { x: rect.left + left + ((c[0] / c[3] + 1) / 2) * width,
             y: rect.top + top + ((1 - c[1] / c[3]) / 2) * height, front: c[3] > 0 };
  };
  const drawn = {};
  for (const g of gd.querySelectorAll(".annotation-scene")) {
    const r = g.querySelector(".annotation-text-g").getBoundingClientRect();
    drawn[g.getAttribute("data-index")] = { left: r.left, right: r.right, top: r.top,
                                            bottom: r.bottom };
  }
  const ring = gd._fullData.find((t) => t.meta && t.meta.role === "selected");
  return {
    area: { left: rect.left + left, right: rect.left + left + width,
            top: rect.top + top, bottom: rect.top + top + height },
    ring: ring ? project(ring.x[0], ring.y[0], ring.z[0]) : null,
    labels: gd.layout.scene.annotations.map((a, i) => ({
      name: a.name, text: a.text, box: drawn[i] || null, at: project(a.x, a.y, a.z) })),
  };
}
"""


def labels_placed(page, plot) -> dict:
    """The labels once two readings 400 ms apart agree (they are placed after the draw)."""
    last = None
    for _ in range(80):
        now = plot.evaluate(LABELS_JS)
        if now == last:
            return now
        last = now
        page.wait_for_timeout(400)
    raise AssertionError("the labels did not settle")


@pytest.mark.parametrize(
    ("path", "key"),
    [
        (f"/positions?model={DEFAULT_MODEL}&positions=0:16&view=heads&layer=5&head=3",
         "motion_simplex"),
        (f"/?model={DEFAULT_MODEL}&view=heads&layer=5&head=3", "simplex"),
    ],
)  # fmt: skip
def test_zoomed_labels_name_what_is_there_and_hints_sit_at_the_edge(
    page, server: str, path: str, key: str
) -> None:
    """Issue 39.4, zoomed to the heads: a vertex label is drawn only at its vertex in view (on
    main, one out of view was pinned to a far corner), a hint toward each vertex out of view
    sits at the edge of the view on the vertex's side (on main, mid-plot over the selected
    head's ring), and no label covers the ring."""
    page.goto(server + path)
    plot = page.locator(f'div[data-hf-plot="{key}"]')
    page.wait_for_function(
        f"""() => {{ const gd = document.querySelector('div[data-hf-plot="{key}"]');
                    const s = gd && gd._fullLayout && gd._fullLayout.scene;
                    return Boolean(s && s._scene && s._scene.glplot); }}""",
    )
    settled(page)
    plot.scroll_into_view_if_needed()
    shown = labels_placed(page, plot)
    area, ring = shown["area"], shown["ring"]
    inside = lambda at: (  # noqa: E731
        at["front"]
        and area["left"] <= at["x"] <= area["right"]
        and area["top"] <= at["y"] <= area["bottom"]
    )
    vertices = [label for label in shown["labels"] if label["name"] == "vertex"]
    hints = {label["text"]: label for label in shown["labels"] if label["name"] == "hint"}
    assert any(not inside(v["at"]) for v in vertices)  # the zoom leaves a vertex out
    for vertex in vertices:
        if inside(vertex["at"]):
            box = vertex["box"]
            assert box is not None, vertex["text"]
            gap = max(box["left"] - vertex["at"]["x"], vertex["at"]["x"] - box["right"], 0) + max(
                box["top"] - vertex["at"]["y"], vertex["at"]["y"] - box["bottom"], 0
            )
            assert gap <= 30, (vertex["text"], gap)  # beside its vertex
            continue
        assert vertex["box"] is None, vertex["text"]  # not pinned somewhere else
        name = vertex["text"].replace("<br>", " ")
        (hint,) = [h for text, h in hints.items() if text.endswith(name)]
        box = hint["box"]
        assert box is not None, name
        to_edge = min(
            box["left"] - area["left"],
            area["right"] - box["right"],
            box["top"] - area["top"],
            area["bottom"] - box["bottom"],
        )
        assert to_edge <= 20, (name, to_edge)  # at the edge, not mid-plot
        centre = ((box["left"] + box["right"]) / 2, (box["top"] + box["bottom"]) / 2)
        mid = ((area["left"] + area["right"]) / 2, (area["top"] + area["bottom"]) / 2)
        towards = (vertex["at"]["x"] - mid[0], vertex["at"]["y"] - mid[1])
        if not vertex["at"]["front"]:
            towards = (-towards[0], -towards[1])
        assert (centre[0] - mid[0]) * towards[0] + (centre[1] - mid[1]) * towards[1] > 0, name
    if ring is not None:
        ring_box = {
            "left": ring["x"] - 8,
            "right": ring["x"] + 8,
            "top": ring["y"] - 8,
            "bottom": ring["y"] + 8,
        }
        covering = [
            label["text"]
            for label in shown["labels"]
            if label["box"] and label["name"] != "selected" and overlaps(label["box"], ring_box)
        ]
        assert not covering, covering
