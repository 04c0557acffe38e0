"""The gallery page that travels (``headforms export``), opened from ``file://`` in Chromium
with every other request aborted: SmolLM2's page with its 129 RoPE positions stays under 8 MB,
draws every figure, builds exactly the animated figures' frames (those of
headforms.figures.animated, compared here point by point), animates when the slider moves,
and shows a clicked head's numbers and spectrum."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import expect

from headforms import analyze
from headforms.engine import sweep
from headforms.figures.animated import animated_figure
from headforms.gallery import gallery_html
from headforms.model_analysis import model_baseline

pytestmark = pytest.mark.browser

TARGET_BYTES = 8_000_000
"""SmolLM2 with 129 RoPE positions: the page must stay below this (the author's Mistral page
with frames is 18.8 MB)."""


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    analysis = analyze("smollm2-135m")
    paths = sweep("smollm2-135m", rope_positions="0:128")
    page = gallery_html(analysis, paths, model_baseline(analysis.card))
    path = tmp_path_factory.mktemp("gallery") / "smollm2.html"
    path.write_text(page, encoding="utf-8")
    return path, paths


@pytest.fixture
def offline_page(browser) -> Iterator[tuple[object, list[str]]]:
    """A page at 1280 x 800 whose every request but file:// is aborted (and recorded)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    asked: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            asked.append(url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    yield page, asked
    context.close()


def open_gallery(page, path: Path) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_function("window.headformsGallery !== undefined")
    page.evaluate("window.headformsGallery.ready")
    return errors


def test_smollm2_with_every_position_is_under_8_mb_and_draws_offline(smollm2, offline_page):
    path, paths = smollm2
    assert path.stat().st_size < TARGET_BYTES
    page, asked = offline_page
    errors = open_gallery(page, path)
    drawn = page.evaluate(
        "Object.fromEntries(Object.entries(window.headformsGallery.plots).map(([k, gd]) => "
        "[k, gd.querySelectorAll('.main-svg, canvas').length]))"
    )
    assert set(drawn) == {"simplex", "triangle", "energy", "pairing", "parity"}
    assert all(count > 0 for count in drawn.values()), drawn
    assert (
        page.evaluate("window.headformsGallery.plots.simplex._transitionData._frames.length") == 129
    )
    assert asked == [] and errors == []


def test_the_frames_are_the_animated_figures(smollm2, offline_page):
    """The frames the page rebuilds equal those of headforms.figures.animated (float32
    coordinates; hover text to its three decimals)."""
    path, paths = smollm2
    page, _ = offline_page
    open_gallery(page, path)
    for view in ("simplex", "triangle"):
        expected = animated_figure(paths, view).frames
        for point in (0, 57, 128):
            built = page.evaluate(
                "([view, point]) => { const frame = window.headformsGallery.frames[view][point];"
                " return {name: frame.name, traces: frame.traces, data: frame.data.map((t) =>"
                " ({x: Array.from(t.x, (v) => Number.isNaN(v) ? null : v), text: t.text,"
                " z: t.z ? Array.from(t.z, (v) => Number.isNaN(v) ? null : v) : null}))}; }",
                [view, point],
            )
            frame = expected[point]
            assert built["name"] == frame.name and built["traces"] == list(frame.traces)
            for mine, theirs in zip(built["data"], frame.data, strict=True):
                for axis in ("x", "z") if view == "simplex" else ("x",):
                    got = np.array([np.nan if v is None else v for v in mine[axis]], float)
                    np.testing.assert_allclose(got, np.asarray(theirs[axis], float), atol=2e-6)
                for a, b in zip(mine["text"], theirs.text, strict=True):
                    assert (a == "") == (b == "")
                    if a:
                        left = [float(v) for v in a.split(", ")]
                        right = [float(v) for v in b.split(", ")]
                        np.testing.assert_allclose(left, right, atol=1.01e-3)


def test_the_slider_animates_and_a_clicked_head_shows_its_numbers(smollm2, offline_page):
    path, paths = smollm2
    page, asked = offline_page
    errors = open_gallery(page, path)
    before = page.evaluate("Array.from(window.headformsGallery.plots.triangle.data[0].x ?? [])")
    page.evaluate(  # its promise, awaited: resolved once the frame is drawn
        "() => Plotly.animate(window.headformsGallery.plots.triangle, ['100'], "
        "{mode: 'immediate', frame: {duration: 0, redraw: true}, transition: {duration: 0}})"
    )
    traces = page.evaluate("window.headformsGallery.frames.triangle[100].traces")
    after = page.evaluate(
        f"Array.from(window.headformsGallery.plots.triangle.data[{traces[0]}].x, "
        "(v) => Number.isNaN(v) ? null : v)"
    )
    frame_x = animated_figure(paths, "triangle").frames[100].data[0].x
    got = np.array([np.nan if v is None else v for v in after], float)
    np.testing.assert_allclose(got, np.asarray(frame_x, float), atol=2e-6)
    assert before != after
    # a click on a heatmap cell: plotly's own click event with the cell's payload
    page.locator("#energy").scroll_into_view_if_needed()
    page.evaluate(
        "() => { const gd = window.headformsGallery.plots.energy;"
        " const trace = gd.data[0]; const i = trace.customdata.findIndex("
        "(c) => c[1] === 7 && c[2] === 4);"
        " gd.emit('plotly_click', {points: [{customdata: trace.customdata[i]}]}); }"
    )
    expect(page.locator("#head-panel")).to_be_visible()
    parity = analyze("smollm2-135m").heads["parity"].iloc[7 * 9 + 4]
    expect(page.locator("#head-title")).to_have_text(re.compile(rf"L7·H4 · {re.escape(parity)}$"))
    energy = analyze("smollm2-135m").heads["energy"].iloc[7 * 9 + 4]
    shown = page.locator("#head-numbers tr", has_text="energy").first
    expect(shown).to_contain_text(f"{energy:.4g}"[:5])
    expect(page.locator("#head-spectrum .bars, #head-spectrum .barlayer").first).to_be_attached()
    page.locator("#heads tbody tr").nth(12).click()  # a table row: layer 1, head 3
    expect(page.locator("#head-title")).to_contain_text("L1·H3")
    assert asked == [] and errors == []
