"""What the simplex views show in headless Debian chromium at 1280 x 800: every parity type
visible where the heads crowd (on the three bundled models), the selected head on top and inside
the frame (RoPE positions, Simplex zoomed), labels inside the plot and off one another after a
rotation (in the page and in the image export), and the legend's hidden entries kept in the
link. The server is scripts/start.sh on a free loopback port with the session's cache, in which
the SmolLM2 sweep is made first."""

from __future__ import annotations

import colorsys
import io
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from PIL import Image
from plotly_scene import SCENE_POINTS_JS, scene_ready_js, settled_points
from servers import free_port, serving

from headforms import DEFAULT_MODEL
from headforms.engine import sweep

pytestmark = pytest.mark.browser


PARITY_HUES = {"I+": (25, 55), "II": (140, 178), "I-": (185, 215)}
"""Hue ranges (degrees) of the parity colours as the 3D scene shades them (Okabe-Ito orange,
bluish green, blue)."""

MIN_PARITY_PIXELS = 50
"""Pixels of each parity colour that must show in the crowd: on main before this change, Type
II (42 % of SmolLM2's heads) showed 29, 28 and 0 pixels on SmolLM2, Gemma-3 and MiniLM."""

CROWD_HALF_PX = 45
"""Half the side of the square around the heads' median screen position that is measured."""

LABELS_JS = """
(gd) => {
  // The scene's area and every scene annotation's drawn box, in the plot's pixels.
  const full = gd._fullLayout, size = full._size, dom = full.scene.domain;
  const origin = gd.getBoundingClientRect();
  const area = {
    left: size.l + dom.x[0] * size.w, right: size.l + dom.x[1] * size.w,
    top: size.t + (1 - dom.y[1]) * size.h, bottom: size.t + (1 - dom.y[0]) * size.h,
  };
  const boxes = Array.from(gd.querySelectorAll(".annotation-scene .annotation-text-g")).map(
    (g) => {
      const r = g.getBoundingClientRect();
      return { text: g.textContent, left: r.left - origin.left, right: r.right - origin.left,
               top: r.top - origin.top, bottom: r.bottom - origin.top };
    });
  return { area, boxes };
}
"""

EXPORT_LABELS_JS = """
async (gd) => {
  // The labels of the image the toolbar exports (Plotly.toImage with the options its buttons
  // give Plotly.downloadImage; SVG so that its labels can be measured), drawn hidden.
  const url = await gd.hfPlotly.toImage(gd, gd.hfImageOptions({ format: "svg" }));
  const text = decodeURIComponent(url.slice(url.indexOf(",") + 1));
  const holder = document.createElement("div");
  holder.style.cssText = "position: absolute; left: 0; top: 0; visibility: hidden;";
  holder.innerHTML = text;
  document.body.appendChild(holder);
  const svg = holder.querySelector("svg");
  const origin = svg.getBoundingClientRect();
  const boxes = Array.from(svg.querySelectorAll(".annotation-scene .annotation-text-g")).map(
    (g) => {
      const r = g.getBoundingClientRect();
      return { text: g.textContent, left: r.left - origin.left, right: r.right - origin.left,
               top: r.top - origin.top, bottom: r.bottom - origin.top };
    });
  holder.remove();
  return boxes;
}
"""

ROTATE_JS = """
async (gd) => {
  // A visitor's rotation: the camera turned to look along the edge a-c, close.
  await gd.hfPlotly.relayout(gd, {
    "scene.camera": { eye: { x: -1.1, y: 0.9, z: 0.25 }, center: { x: 0, y: 0, z: 0 },
                      up: { x: 0, y: 0, z: 1 } },
  });
}
"""

LINK_CAMERA = "1.2~1.3~0.3~0~0~0~0~0~1"
"""A shared link's camera, close from the side: on main, the vertex c's label was cut at the
plot's bottom and two pairs of labels overlapped."""


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory) -> Iterator[str]:
    from ui.loading import warm

    warm()
    sweep(DEFAULT_MODEL)  # the RoPE positions page's sweep
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    with serving(port, env, tmp_path_factory.mktemp("server") / "streamlit.log", 90):
        yield f"http://127.0.0.1:{port}"


def drawn(page, key: str) -> object:
    """Wait until the 3D scene of plot ``key`` is drawn; returns the plot."""
    page.locator(f'div[data-hf-plot="{key}"] canvas').first.wait_for()
    page.wait_for_function(scene_ready_js(key))
    return page.locator(f'div[data-hf-plot="{key}"]')


def parity_pixels(png: bytes) -> dict[str, int]:
    """Pixels of each parity colour (saturated, in its hue range) in a screenshot."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float).reshape(-1, 3) / 255
    saturated = rgb.max(axis=1) - rgb.min(axis=1) > 0.25
    hue = np.array([colorsys.rgb_to_hsv(*pixel)[0] * 360 for pixel in rgb])
    return {
        label: int((saturated & (hue >= low) & (hue <= high)).sum())
        for label, (low, high) in PARITY_HUES.items()
    }


def outside(boxes: list[dict], area: dict) -> list[str]:
    return [
        b["text"]
        for b in boxes
        if b["left"] < area["left"] - 0.5
        or b["right"] > area["right"] + 0.5
        or b["top"] < area["top"] - 0.5
        or b["bottom"] > area["bottom"] + 0.5
    ]


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    return [
        (a["text"], b["text"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a["left"] < b["right"] - 0.5
        and b["left"] < a["right"] - 0.5
        and a["top"] < b["bottom"] - 0.5
        and b["top"] < a["bottom"] - 0.5
    ]


def labels_settled(page, plot) -> dict:
    """The labels' boxes once two readings 400 ms apart agree (placing follows a camera change
    after a short pause)."""
    last = None
    for _ in range(60):
        now = plot.evaluate(LABELS_JS)
        if now == last:
            return now
        last = now
        page.wait_for_timeout(400)
    raise AssertionError("the labels did not settle")


@pytest.mark.parametrize("model", ["smollm2-135m", "gemma3-270m", "minilm-l6"])
def test_every_parity_type_shows_in_the_crowd(page, server: str, model: str) -> None:
    """Issue 28.1: in the default whole-simplex view, the heads at Θ's midpoint show each
    parity type's colour (Type II's were hidden under the Type I− diamonds)."""
    page.goto(f"{server}/?model={model}")
    plot = drawn(page, "simplex")
    settled_points(page, plot)
    plot.scroll_into_view_if_needed()  # the crowd inside the viewport, which is what is shot
    points = settled_points(page, plot)
    x, y = np.median([[p["x"] for p in points], [p["y"] for p in points]], axis=1)
    clip = {
        "x": float(x) - CROWD_HALF_PX,
        "y": float(y) - CROWD_HALF_PX,
        "width": 2 * CROWD_HALF_PX,
        "height": 2 * CROWD_HALF_PX,
    }
    counts = parity_pixels(page.screenshot(clip=clip))
    assert min(counts.values()) >= MIN_PARITY_PIXELS, counts


def test_a_hidden_legend_entry_is_kept_in_the_link(page, server: str) -> None:
    """Issue 28.1: hiding "Type I−" in the legend writes hide= into the URL, and the link opens
    the simplex with it hidden."""
    page.goto(f"{server}/?model={DEFAULT_MODEL}")
    plot = drawn(page, "simplex")
    settled_points(page, plot)
    plot.locator("g.traces", has_text="Type I−").locator("rect.legendtoggle").click()
    page.wait_for_function("() => location.search.includes('hide=')")
    assert parse_qs(urlparse(page.url).query)["hide"] == ["Type I−"]
    page.goto(page.url)
    plot = drawn(page, "simplex")
    settled_points(page, plot)
    hidden = plot.evaluate(
        "(gd) => gd._fullData.filter((t) => t.visible === 'legendonly').map((t) => t.name)"
    )
    assert hidden == ["Type I−"]


@pytest.mark.parametrize(
    ("path", "key"),
    [
        (f"positions?model={DEFAULT_MODEL}&layer=14&head=3", "motion_simplex"),
        (f"?model={DEFAULT_MODEL}&view=heads&layer=14&head=3", "simplex"),
    ],
)
def test_the_selected_head_is_on_top_and_in_the_frame(page, server: str, path: str, key: str):
    """Issue 28.2: zoomed to the heads, the selected head's ring (and its path over the RoPE
    positions) is inside the plot, and drawn after every head."""
    page.goto(f"{server}/{path}")
    plot = drawn(page, key)
    settled_points(page, plot)
    ring = plot.evaluate(SCENE_POINTS_JS, "selected")
    assert ring and all(p["inView"] for p in ring), ring
    trail = plot.evaluate(SCENE_POINTS_JS, "path")
    assert all(p["inView"] for p in trail), [p for p in trail if not p["inView"]]
    roles = plot.evaluate("(gd) => gd._fullData.map((t) => (t.meta || {}).role || null)")
    assert roles[-1] == "selected", roles
    if key == "motion_simplex":
        assert trail, "the path of L14·H3 is drawn"


def test_labels_stay_inside_and_apart_after_a_rotation(page, server: str) -> None:
    """Issue 28.4: with a shared link's camera, after a rotation, and in the exported image,
    every label of the scene is inside the plot and off every other label."""
    page.goto(f"{server}/?model={DEFAULT_MODEL}&camera={LINK_CAMERA}")
    plot = drawn(page, "simplex")
    settled_points(page, plot)
    labels = labels_settled(page, plot)
    assert len(labels["boxes"]) >= 8
    assert not outside(labels["boxes"], labels["area"])
    assert not overlapping(labels["boxes"])
    plot.evaluate(ROTATE_JS)
    labels = labels_settled(page, plot)
    assert not outside(labels["boxes"], labels["area"])
    assert not overlapping(labels["boxes"])
    exported = plot.evaluate(EXPORT_LABELS_JS)
    assert len(exported) == len(labels["boxes"])
    assert not outside(exported, labels["area"])
    assert not overlapping(exported)
