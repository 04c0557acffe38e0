"""A step of the RoPE position slider in a real browser: how long until every marker is redrawn.

Starts the dashboard (``scripts/start.sh``, free loopback port, a cache in which SmolLM2's sweep
d = 0..128 is computed first), opens the RoPE positions page in headless Debian chromium at
1280 x 800 and, once the 3D simplex is drawn, moves the slider ``--steps`` times to random
positions, two ways:

* **click**: a mouse click on the slider's rail (the visitor's way), timed from the click to
  the second animation frame after plotly.js reports the frame drawn (``plotly_animated``);
* **animate**: ``Plotly.animate`` to the frame directly, timed the same way (what one step
  costs plotly.js, without the pointer events).

``--figure triangle`` measures the 2D triangle (SVG) instead of the 3D simplex (WebGL).

Headless chromium draws WebGL in software (SwiftShader): a desktop GPU draws faster. Also
printed: the figure's JSON size (every frame travels once, with the figure).

Run: ``.venv/bin/python benchmarks/bench_slider.py [--steps 40]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import ROOT, machine_line, print_table

sys.path.insert(0, str(ROOT / "tests" / "helpers"))
from chromium_launch import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the tests' launch)

MODEL = "smollm2-135m"
KEY = "motion_simplex"
GD = f"document.querySelector('div[data-hf-plot=\"{KEY}\"]')"

ANIMATE = f"""async (name) => {{
  const gd = {GD};
  const done = new Promise((resolve) => gd.once("plotly_animated", resolve));
  const start = performance.now();
  gd.hfPlotly.animate(gd, [name], {{
    mode: "immediate", frame: {{duration: 0, redraw: true}}, transition: {{duration: 0}}
  }});
  await done;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return performance.now() - start;
}}"""

ARM = f"""() => {{
  // A click on the step already shown animates nothing: it counts as no measurement (null).
  const gd = {GD};
  window.hfStep = new Promise((resolve) => {{
    const start = performance.now();
    gd.once("plotly_animated", () =>
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)))
    );
    setTimeout(() => resolve(null), 5000);
  }});
}}"""


def start_server(cache: Path) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "HEADFORMS_CACHE_DIR": str(cache),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "VENV": str(ROOT / ".venv"),
    }
    proc = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "start.sh")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    raise SystemExit("the dashboard did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--cache", type=Path, help="a cache to reuse (default: a new one)")
    parser.add_argument(
        "--figure",
        choices=("simplex", "triangle"),
        default="simplex",
        help="the 3D simplex (WebGL) or the 2D triangle (SVG)",
    )
    args = parser.parse_args()
    import signal

    from playwright.sync_api import sync_playwright

    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-slider-"))
    os.environ["HEADFORMS_CACHE_DIR"] = str(cache)
    from headforms.engine import sweep
    from headforms.figures import animated

    result = sweep(MODEL)  # what the page shows, computed before it is opened
    figure = animated.animated_figure(result, args.figure, selected=(MODEL, 3, 2), frame="heads")
    size = len(figure.to_json())
    print(machine_line(2))
    proc, url = start_server(cache)
    rng = random.Random(0)
    times: dict[str, list[float]] = {"click": [], "animate": []}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            started = time.perf_counter()
            page.goto(f"{url}/positions?model={MODEL}&layer=3&head=2&figure={args.figure}")
            page.locator(f'div[data-hf-plot="{KEY}"]').wait_for(timeout=180_000)
            drawn = (
                f"() => {{ const s = ({GD}._fullLayout || {{}}).scene; return !!(s && s._scene "
                "&& s._scene.glplot); }"
                if args.figure == "simplex"
                else f"() => {GD}._fullData && {GD}.querySelector('.slider-rail-rect')"
            )
            page.wait_for_function(drawn, timeout=180_000)
            first = time.perf_counter() - started
            page.wait_for_timeout(2000)
            rail = page.locator(f'div[data-hf-plot="{KEY}"] .slider-rail-rect')
            rail.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            box = rail.bounding_box()
            positions = result.positions
            for _ in range(args.steps):
                page.evaluate(ARM)
                share = rng.random()
                page.mouse.click(box["x"] + share * box["width"], box["y"] + box["height"] / 2)
                step = page.evaluate("() => window.hfStep")
                if step is not None:
                    times["click"].append(step)
                name = str(positions[rng.randrange(len(positions))])
                times["animate"].append(page.evaluate(ANIMATE, name))
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    rows = [
        {
            "slider step": way,
            "steps": len(values),
            "median ms": statistics.median(values),
            "p95 ms": sorted(values)[int(0.95 * (len(values) - 1))],
            "max ms": max(values),
        }
        for way, values in times.items()
    ]
    title = (
        f"{MODEL}, {args.figure}: {len(result.positions)} frames x {result.card.total_heads} heads"
    )
    print_table(title, rows)
    print(
        f"figure JSON {size / 1e6:.1f} MB; page open to drawn 3D scene {first:.1f} s; load "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
