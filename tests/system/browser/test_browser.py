"""Real-browser round trips in headless Debian chromium: a click on a 3D simplex marker (on the
first click; also inside the crowd, through the chooser), a heatmap cell or a row of the heads
table reaches Python and the head page shows that head, while a change of the table's filters
stays on the table; a shared link opens the head and names it in the tab, and reproduces the
overlays, filters and 3D camera it carries; a bad link value and a bad model each show one line
and leave the page usable; a figure exports as SVG and its data as CSV; no page requests
anything from another host.

The server is `streamlit run app.py` on a free loopback port with the session's cache dir.

The tests marked ``container`` are also run against the Docker image's container
(tests/system/image/test_image.py), which serves ``server.py`` in hosted mode from the image's
packaged files: every test whose outcome passes through the server (a page's script, the
gateway's hosted route, the hub allow-list, the HTTP rules, a download, the loopback walk over
every page). Under CI=true, in a run with the image test, they run only there
(helpers/run_selection.py). The rest check what the browser draws of a figure built by the same
code from the same analysis with the same plotly.js bundle (the image serves it byte for byte,
checked in test_image.py): marker sizes, the default camera, the chooser's list and the 3D PNG
export, so the local run covers them.
"""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import pandas as pd
import pytest
from browser_diagnostics import failed, report, server_log
from browser_scripts import (
    CELL_POINTS_JS,
    MARKER_PROBES_JS,
    ONE_MARKER_JS,
    PAGE_STATE_JS,
    SCENE_VIEW_JS,
    SMALLEST_TEXT_JS,
)
from chromium_launch import BROWSER_TEST_URL_ENV
from numerics import assert_shares_close
from playwright.sync_api import expect
from plotly_scene import (
    SCENE_POINTS_JS,
    SCRIPT_RUNNING_JS,
    click,
    most_isolated,
    scene_ready_js,
    settled_points,
    wait_clickable,
)
from repo import REPO as ROOT
from waiting import DEADLINE_MS, DEADLINE_S, eventually

from headforms import DEFAULT_MODEL, analyze
from ui.plot import PICK_RADIUS_PX

pytestmark = pytest.mark.browser

SIDEBAR = 'section[data-testid="stSidebar"]'
SERVER_START_S = 90

SCENE_READY_JS = scene_ready_js("simplex")


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(isolated_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`streamlit run app.py`, headless on a free loopback port; yields its base URL. The
    default model is analysed first, as the install does, so no test waits for it.

    With ``$HEADFORMS_BROWSER_TEST_URL`` set, that running server is tested instead.
    """
    if os.environ.get(BROWSER_TEST_URL_ENV):
        yield os.environ[BROWSER_TEST_URL_ENV].rstrip("/")
        return
    from ui.loading import warm

    warm()
    port = free_port()
    env = {**os.environ, "HEADFORMS_CACHE_DIR": str(isolated_cache), "HEADFORMS_THREADS": "1"}
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless=true",
        "--server.address=127.0.0.1",
        f"--server.port={port}",
        "--server.fileWatcherType=none",
        "--browser.gatherUsageStats=false",
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        with server_log(log):
            yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def page(request: pytest.FixtureRequest, browser, server: str):
    """A fresh page (1500 x 1100) of the app (the other browser tests' pages are 1280 x 800)."""
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    yield page
    if failed(request.node):
        report(context, "the test failed")
    context.close()


def wait_for_head(page, layer: int, head: int) -> None:
    """Wait until the head page's title names this head."""
    title = page.locator("h1", has_text=f"Layer {layer} · Head {head}")
    title.wait_for()


def open_simplex(page, url: str) -> object:
    """Open ``url`` and wait for the simplex's 3D scene; its plot element."""
    page.goto(url)
    page.locator('div[data-hf-plot="simplex"] canvas').first.wait_for()
    page.wait_for_function(SCENE_READY_JS)
    return page.locator('div[data-hf-plot="simplex"]')


def drag(page, x: float, y: float, dx: float, dy: float) -> None:
    """Press, move in small steps (the scene samples the pointer once a frame), release."""
    page.mouse.move(x, y)
    page.wait_for_timeout(100)
    page.mouse.down()
    for step in range(1, 16):
        page.mouse.move(x + dx * step / 15, y + dy * step / 15)
        page.wait_for_timeout(40)
    page.mouse.up()


@pytest.mark.container
def test_a_shared_link_opens_the_head(page, server: str) -> None:
    page.goto(f"{server}/head?model={DEFAULT_MODEL}&rope=0&layer=7&head=4")
    wait_for_head(page, 7, 4)
    expect(page.get_by_role("link", name="Simplex")).to_have_count(1)  # app.py's navigation
    page.wait_for_function("() => document.title.includes('L7·H4')")
    assert DEFAULT_MODEL in page.title()  # the tab names the model and the head


@pytest.mark.container
def test_clicking_a_simplex_marker_opens_its_head_on_the_first_click(page, server: str) -> None:
    plot = open_simplex(page, server)
    points = settled_points(page, plot)
    shape_text = re.compile(r"(\d+) layers × (\d+) heads")
    shape = eventually(lambda: shape_text.search(page.locator(SIDEBAR).inner_text()), bool)
    assert len(points) == int(shape[1]) * int(shape[2])  # one marker per head
    # markers the framed view leaves out (a scroll away) cannot be clicked
    target = most_isolated([p for p in points if p["inView"] and (p["layer"], p["head"]) != (0, 0)])
    click(page, target)
    try:
        wait_for_head(page, target["layer"], target["head"])
    except Exception as error:  # say where the marker is drawn now, and what the page shows
        now = [
            p
            for p in plot.evaluate(SCENE_POINTS_JS)
            if (p["layer"], p["head"]) == (target["layer"], target["head"])
        ]
        raise AssertionError(
            f"a click at {target} opened nothing in {DEADLINE_MS / 1000:.0f} s; the marker is "
            f"drawn at {now}; url {page.url}; page text: {page.inner_text('body')[:400]!r}"
        ) from error
    assert f"layer={target['layer']}&head={target['head']}" in page.url


def neighbours(point: dict, points: list[dict], radius: float) -> int:
    """How many other markers are drawn within ``radius`` pixels of ``point``."""
    return sum(
        1
        for q in points
        if q is not point and (q["x"] - point["x"]) ** 2 + (q["y"] - point["y"]) ** 2 <= radius**2
    )


def test_clicking_inside_the_crowd_opens_the_aimed_head(page, server: str) -> None:
    """The marker with the most others under the pointer: a click lists them all, and choosing
    the aimed one opens it (not whichever marker plotly.js would have picked)."""
    plot = open_simplex(page, server)
    points = settled_points(page, plot)
    target = max(
        (p for p in points if p["inView"] and (p["layer"], p["head"]) != (0, 0)),
        key=lambda p: neighbours(p, points, PICK_RADIUS_PX - 1),
    )
    assert neighbours(target, points, PICK_RADIUS_PX - 1) >= 2  # it is inside a crowd
    click(page, target)
    chooser = page.locator(".hf-chooser")
    chooser.wait_for()
    choices = page.locator(".hf-chooser .hf-choice")
    expect(choices.nth(2)).to_be_attached()  # at least three listed (drawn in one go)
    # each listed head told apart by its coordinates, nearest to the pointer first
    count, coordinates = eventually(  # the rows and their coordinates read together
        lambda: (choices.count(), choices.locator(".hf-choice-coords").all_inner_texts()),
        lambda found: found[0] >= 3 and len(found[1]) == found[0] and all(found[1]),
        what="every listed head's coordinates",
    )
    assert len(set(coordinates)) == len(coordinates), coordinates
    texts = eventually(
        lambda: choices.locator(".hf-choice-distance").all_inner_texts(),
        lambda texts: len(texts) == count and all(texts),
        what="every listed head's distance",
    )
    distances = [float(t.split()[0]) for t in texts]
    assert distances == sorted(distances) and distances[-1] <= PICK_RADIUS_PX
    # plotly's hover label, drawn at the pointer, does not cover the list
    expect(page.locator(".hf-plot g.hovertext:visible")).to_have_count(0)
    aimed = page.locator(f'.hf-choice[data-hf-head="{target["layer"]},{target["head"]}"]')
    expect(aimed).to_contain_text(f"L{target['layer']}·H{target['head']}")
    aimed.click()
    wait_for_head(page, target["layer"], target["head"])
    assert f"layer={target['layer']}&head={target['head']}" in page.url


TABLE_HEADER_PX = 35
TABLE_ROW_PX = 35
"""Streamlit's data grid: header and row heights (px); its selection boxes are in the first
column."""


@pytest.mark.container
def test_picking_a_row_of_the_heads_table_opens_that_head(page, server: str) -> None:
    page.goto(f"{server}/table?model={DEFAULT_MODEL}&layer=0&head=0")
    grid = page.locator('[data-testid="stDataFrame"]')
    grid.wait_for()
    page.wait_for_timeout(1000)
    box = grid.bounding_box()
    row = 9 + 4  # layer-major: the row of layer 1, head 4
    x, y = box["x"] + 18, box["y"] + TABLE_HEADER_PX + (row + 0.5) * TABLE_ROW_PX
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    wait_for_head(page, 1, 4)
    assert "layer=1&head=4" in page.url


def widget_text(widget) -> str:
    """What a widget shows, its inputs' values included (a selectbox shows its value in one)."""
    return widget.evaluate(
        "(e) => [e.textContent, ...[...e.querySelectorAll('input')].map((i) => i.value)].join(' ')"
    )


def expect_shown(page, count: int) -> None:
    """Wait until the heads table's caption says it shows ``count`` heads ("N of M heads
    shown"): after a filter's change the caption is redrawn by the rerun."""
    caption = page.get_by_text(re.compile(rf"^{count} of \d+ heads shown"))
    expect(caption).to_be_visible()


def wait_for_url(page, part: str) -> None:
    """Wait until the page's URL holds ``part`` (the run that wrote it has finished)."""
    page.wait_for_function(f"() => document.location.href.includes({part!r})")


@pytest.mark.container
def test_a_change_of_the_table_filters_stays_on_the_table(page, server: str) -> None:
    """With "Open head on click" on, a parity pill and the layer slider filter the table; only
    selecting a row opens a head (each filter change once opened the selected head's page)."""
    page.goto(f"{server}/table?model={DEFAULT_MODEL}&layer=0&head=0")
    page.locator('[data-testid="stDataFrame"]').wait_for()
    heads = analyze(DEFAULT_MODEL).heads
    expect_shown(page, len(heads))
    page.get_by_role("button", name="II", exact=True).click()  # II off: I+ and I- remain
    wait_for_url(page, "parity=")
    page.locator('input[aria-label="Layers — end"]').focus()
    page.keyboard.press("Home")  # layers 0-0
    wait_for_url(page, "layers=0")
    page.wait_for_timeout(1500)  # a navigation, had there been one, has happened by now
    assert urlparse(page.url).path == "/table"
    expect(page.locator("h1").first).to_have_text("Heads table")
    kept = heads[(heads["layer"] == 0) & (heads["parity"] != "II")]
    assert len(kept) > 0
    expect_shown(page, len(kept))


@pytest.mark.container
def test_a_shared_link_reproduces_overlays_filters_and_the_camera(browser, server: str) -> None:
    """A link copied from one browser opened in another: the same overlaid model, 3D view and
    camera on the simplex; the same filters, sort and rows on the heads table."""
    sender = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    receiver = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    try:
        plot = open_simplex(sender, f"{server}/?overlay=minilm-l6&view=simplex")
        box = plot.bounding_box()
        drag(sender, box["x"] + box["width"] * 0.45, box["y"] + 300, 120, -45)
        wait_for_url(sender, "camera=")
        view = plot.evaluate(SCENE_VIEW_JS)
        link = sender.url
        shared = open_simplex(receiver, link)
        models = shared.evaluate(
            "(gd) => [...new Set(gd._fullData.filter((t) => t.meta && t.meta.role === 'heads')"
            ".map((t) => t.meta.model))]"
        )
        assert sorted(models) == sorted([DEFAULT_MODEL, "minilm-l6"])
        pressed = receiver.locator('[data-testid="stButtonGroup"] button[aria-checked="true"]')
        expect(pressed.filter(has_text="Whole simplex")).to_have_count(1)
        received = shared.evaluate(SCENE_VIEW_JS)
        assert max(abs(a - b) for a, b in zip(view, received, strict=True)) < 2e-3

        sender.goto(f"{server}/table?model={DEFAULT_MODEL}&range=energy~0.5~&sort=-pairing")
        # the table is the page's last grid (the selected head's row may be repeated above it)
        sender.locator('[data-testid="stDataFrame"]').last.wait_for()
        sender.get_by_role("button", name="I+", exact=True).click()
        wait_for_url(sender, "parity=")
        receiver.goto(sender.url)
        receiver.locator('[data-testid="stDataFrame"]').last.wait_for()
        heads = analyze(DEFAULT_MODEL).heads
        kept = heads[(heads["energy"] >= 0.5) & (heads["parity"] != "I+")]
        assert len(kept) > 0
        expect_shown(sender, len(kept))
        expect_shown(receiver, len(kept))
        sort_by = receiver.locator('[data-testid="stSelectbox"]', has_text="Sort by")
        eventually(lambda: widget_text(sort_by), lambda text: "pairing" in text, what="sort by")
        expect(receiver.get_by_role("switch", name="Decreasing")).to_be_checked()
        assert receiver.url == sender.url
    finally:
        sender.context.close()
        receiver.context.close()


@pytest.mark.container
def test_a_bad_link_value_shows_its_notice(page, server: str) -> None:
    page.goto(f"{server}/?model={DEFAULT_MODEL}&head=-3&layer=abc")
    notice = page.get_by_text(f"The link's head=-3 is not a head of {DEFAULT_MODEL}")
    notice.wait_for()
    expect(notice).to_contain_text("showing head 0")
    expect(page.get_by_text("The link's layer=abc is not a layer")).to_have_count(1)
    page.locator('div[data-hf-plot="simplex"] canvas').first.wait_for()
    link = parse_qs(urlparse(page.url).query)
    assert (link["layer"], link["head"]) == (["0"], ["0"])  # in the link's own order


@pytest.mark.container
def test_a_bad_model_leaves_the_page_and_the_sidebar_usable(page, server: str) -> None:
    """A name typed in the model picker that is no model here: one line saying so, the page and
    the sidebar stay (on the model shown before)."""
    page.goto(f"{server}/overview?model=minilm-l6")
    page.locator("h1", has_text="Model overview").wait_for()
    picker = page.locator(SIDEBAR).locator('[data-testid="stSelectbox"]').first
    picker.click()
    page.keyboard.type("no-such-model-anywhere")
    page.keyboard.press("Enter")
    # A hosted server (the container) refuses the name before looking for it: off its hub
    # allow-list. A private one looks, and finds no such model.
    line = page.get_by_text(
        re.compile(
            r"no such model here: 'no-such-model-anywhere'"
            r"|hub model 'no-such-model-anywhere' is not allowed on this server"
        )
    )
    line.wait_for()
    expect(line).to_contain_text("(showing minilm-l6 instead)")
    expect(line).not_to_contain_text("cannot reach the Hugging Face hub")
    expect(page.locator("h1").first).to_have_text("Model overview")
    eventually(lambda: widget_text(picker), lambda text: "minilm-l6" in text, what="the picker")
    assert "model=minilm-l6" in page.url
    expect(page.locator(SIDEBAR).get_by_text("Layer", exact=True)).to_have_count(1)


@pytest.mark.container
def test_figures_export_as_svg_and_their_data_as_csv(page, server: str) -> None:
    page.goto(f"{server}/head?model={DEFAULT_MODEL}&layer=2&head=5")
    wait_for_head(page, 2, 5)
    plot = page.locator("div[data-hf-plot]").first
    plot.locator(".main-svg").first.wait_for()
    plot.hover()
    with page.expect_download() as download:
        plot.locator('.modebar-btn[data-title="Download SVG (vector)"]').click()
    svg = Path(download.value.path()).read_text()
    assert svg.lstrip().startswith("<svg") and "Eigenvalues of S" in svg
    assert "<image" not in svg  # vector: no raster picture inside
    assert download.value.suggested_filename.endswith(".svg")

    page.goto(f"{server}/?model={DEFAULT_MODEL}")
    page.locator('div[data-hf-plot="simplex"] canvas').first.wait_for()
    with page.expect_download() as download:
        # the simplex's own CSV (ui/plot.py keys it "<plot key>__csv"; the swarm beside it has one)
        page.locator(".st-key-simplex__csv").get_by_role("button", name="CSV").click()
    table = pd.read_csv(io.StringIO(Path(download.value.path()).read_text()))
    heads = analyze(DEFAULT_MODEL).heads
    assert len(table) == len(heads) and set(table["model"]) == {DEFAULT_MODEL}
    merged = table.merge(heads, on=["layer", "head"], suffixes=("", "_engine"))
    for column in ("a", "b", "c", "d", "energy", "pairing"):  # shares: compared absolutely
        assert_shares_close(merged[column], merged[f"{column}_engine"], err_msg=column)


@pytest.mark.container
def test_clicking_a_heatmap_cell_opens_its_head(page, server: str) -> None:
    page.goto(f"{server}/heatmaps")
    plot = page.locator('div[data-hf-plot="heatmap_energy"]')
    page.locator('div[data-hf-plot="heatmap_energy"] .scatterlayer .point').first.wait_for()
    wait_clickable(page, "heatmap_energy")
    points = plot.evaluate(CELL_POINTS_JS)
    target = next(p for p in points if (p["layer"], p["head"]) == (2, 3))
    click(page, target)
    wait_for_head(page, 2, 3)
    assert "layer=2&head=3" in page.url


DRAWN_POLL_MS = 250
DRAWN_STABLE_POLLS = 6
"""A page is drawn when its state holds over 6 polls 250 ms apart (1.5 s)."""


def wait_until_drawn(page, timeout_s: float = DEADLINE_S) -> int:
    """Wait until the page's script has finished and every figure it made has drawn its text,
    unchanged for 1.5 s (a script's first redraw can come after the page's title); the number
    of figures."""
    deadline = time.monotonic() + timeout_s
    last, stable = None, 0
    while time.monotonic() < deadline:
        state = page.evaluate(PAGE_STATE_JS)
        now = (state["components"], state["drawn"])
        done = not page.evaluate(SCRIPT_RUNNING_JS) and state["drawn"] == state["components"]
        stable = stable + 1 if done and now == last else 0
        if stable >= DRAWN_STABLE_POLLS:
            return state["components"]
        last = now
        page.wait_for_timeout(DRAWN_POLL_MS)
    raise AssertionError(f"{page.url}: not drawn within {timeout_s:.0f} s ({last})")


MIN_TEXT_PX = 11
"""The smallest text a figure may draw at 1280 px wide."""


@pytest.mark.container
def test_every_page_stays_on_loopback_and_draws_no_text_below_11_px(browser, server: str) -> None:
    """Every page of the navigation at 1280 x 800, loaded with no network: all requests stay
    on loopback (Streamlit would fetch each page's Material icon from fonts.gstatic.com as
    favicon), and no figure draws text smaller than 11 px as it appears on screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    small: dict[str, list] = {}
    with_figures = 0
    try:
        page.goto(server)
        page.locator('div[data-hf-plot="simplex"] canvas').first.wait_for()
        more = page.get_by_text(re.compile(r"^View \d+ more$"))
        nav = page.locator('[data-testid="stSidebarNav"] a')

        def listed() -> list[str]:
            if more.count():
                more.first.click()  # the navigation's collapsed pages too
            hrefs = nav.evaluate_all("(links) => links.map((a) => a.getAttribute('href'))")
            return sorted({urlparse(href).path for href in hrefs})

        # every page, the collapsed ones too (the navigation is drawn with the sidebar)
        paths = eventually(listed, lambda found: len(found) >= 15, what="the navigation")
        for path in paths:
            page.goto(f"{server}{path}")
            page.locator("h1").first.wait_for()
            # the page's script has finished (no run left behind to slow the next page)
            page.locator('[data-testid="stStatusWidget"]').wait_for(state="hidden")
            page.wait_for_load_state("networkidle")
            figures = wait_until_drawn(page)
            sizes = page.evaluate(SMALLEST_TEXT_JS)
            assert bool(sizes) == bool(figures), path
            with_figures += bool(figures)
            tiny = [entry for entry in sizes if entry[0] < MIN_TEXT_PX - 0.05]
            if tiny:
                small[path] = tiny[:5]
    finally:
        context.close()
    hosts = {
        urlparse(url).hostname for url in requests if urlparse(url).scheme in ("http", "https")
    }
    assert hosts == {"127.0.0.1"}, sorted(u for u in requests if "127.0.0.1" not in u)
    assert len(requests) > 20  # the pages really loaded
    assert with_figures >= 10  # the figures of most pages really drew their text
    assert not small, small


def redrawn(plot, before: bytes, timeout_s: float = DEADLINE_S) -> bytes:
    """The plot's picture once the scene has redrawn after a change: unlike ``before`` (the
    picture before the change) and the same in two shots 300 ms apart."""
    last: list[bytes] = [before]

    def shot() -> bytes:
        time.sleep(0.3)
        last.append(plot.screenshot())
        return last[-1]

    return eventually(
        shot, lambda now: now != before and now == last[-2], timeout_s, "the scene's redraw"
    )


LEGIBLE_MARKER_PX = 9
"""Smallest drawn extent (px) of a head marker in the 3D scene that reads as its glyph."""


@pytest.mark.parametrize("selected", [(0, 0), (2, 4)])
def test_every_head_marker_is_drawn_legibly_and_the_selected_one_larger(
    browser, server: str, selected: tuple[int, int]
) -> None:
    """At 1280 x 800, each head trace of the 3D simplex (one per parity type, whichever holds
    the selected head) draws its markers at a legible size, and the selected head's ring is
    drawn larger than any of them: measured on the pixels plotly.js draws."""
    from PIL import Image

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    url = f"{server}/?model={DEFAULT_MODEL}&layer={selected[0]}&head={selected[1]}"
    try:
        plot = open_simplex(page, url)
        probes = plot.evaluate(MARKER_PROBES_JS)
        assert len(probes) >= 3  # the parity types of the model, and the ring
        drawn = {}
        before = plot.screenshot()
        for probe in probes:
            top = plot.evaluate(ONE_MARKER_JS, probe)
            shot = redrawn(plot, before)
            before = shot
            pixels = np.asarray(Image.open(io.BytesIO(shot)).convert("L"))
            ys, xs = np.nonzero(pixels[int(top) :] < 160)  # below the title
            assert len(xs), probe
            extent = max(xs.max() - xs.min(), ys.max() - ys.min()) + 1
            drawn[(probe["role"], probe["parity"])] = extent
    finally:
        context.close()
    heads = {key: px for key, px in drawn.items() if key[0] == "heads"}
    assert len(heads) >= 2 and ("selected", None) in drawn, drawn
    assert min(heads.values()) >= LEGIBLE_MARKER_PX, drawn
    assert drawn[("selected", None)] > max(heads.values()), drawn


def test_the_whole_tetrahedron_is_in_the_default_view(browser, server: str) -> None:
    """The first view at 1280 x 800 shows all four vertices and every head inside the plot, as
    the drawn scene's camera projects them."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        plot = open_simplex(page, f"{server}/?model={DEFAULT_MODEL}")
        heads = settled_points(page, plot, "heads")
        edges = plot.evaluate(SCENE_POINTS_JS, "edges")
        box = plot.bounding_box()
    finally:
        context.close()
    assert len(edges) >= 10 and len(heads) == analyze(DEFAULT_MODEL).card.total_heads
    for point in edges + heads:  # the edges' ends are the vertices
        assert point["inView"], point
        assert box["x"] <= point["x"] <= box["x"] + box["width"], point
        assert box["y"] <= point["y"] <= box["y"] + box["height"], point


def test_the_3d_figure_exports_a_high_resolution_png_and_no_svg(page, server: str) -> None:
    """A WebGL scene's SVG would only wrap a picture: its toolbar offers a PNG at 4x the plot's
    pixels, labelled so, and no SVG."""
    from PIL import Image

    plot = open_simplex(page, f"{server}/?model={DEFAULT_MODEL}")
    plot.hover()
    button = plot.locator('.modebar-btn[data-title="Download PNG (high resolution, 4×)"]')
    expect(button).to_be_visible()  # the toolbar is drawn: it has no SVG button
    expect(plot.locator('.modebar-btn[data-title^="Download SVG"]')).to_have_count(0)
    with page.expect_download() as download:
        button.click()
    width, height = Image.open(download.value.path()).size
    box = plot.bounding_box()
    assert download.value.suggested_filename.endswith(".png")
    assert width >= 3.9 * box["width"] and height >= 3.9 * box["height"] * 0.9
