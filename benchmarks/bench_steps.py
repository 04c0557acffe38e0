"""A step from one head to another in a real browser: from the input to the last plot drawn.

Starts the dashboard (``scripts/start.sh`` on a loopback port, a fresh cache unless ``--cache``),
opens it in headless Debian chromium at 1280 x 800 and times ``--steps`` steps of each kind on
the bundled default model:

* **next**: the Head page's "Next" button;
* **sidebar**: a new layer or head typed into the sidebar (Enter), on the Head page;
* **marker**: a click on a marker of the Simplex page's 3D scene, which opens the Head page;
* **cell**: a click on a cell of the Heatmaps page, which opens the Head page.

A step is timed in the page, from the input's ``pointerdown`` (or the Enter key's ``keydown``)
to the later of the last plot drawn after it (``performance.mark("hf:drawn:<key>")``, set by
ui/plot.js after ``Plotly.react``) and the end of the last script run it caused (the app's
``data-test-script-state`` back to ``notRunning``); it counts once the page has been quiet for
1.2 s and shows the head asked for. Between marker and cell steps the page goes back to the
Simplex or Heatmaps page (not timed).

``--checkout DIR`` (repeatable) also serves another working tree (e.g. the tree before a change:
``git archive COMMIT | tar -x -C DIR``) and measures it step by step in turn with this one, in
its own browser context, so that both share the machine's load alike.

``--load N`` runs every kind again beside N busy processes (``python -c "while True: pass"``),
started here and stopped by their ids. Headless chromium draws WebGL in software (SwiftShader).

Run: ``.venv/bin/python benchmarks/bench_steps.py [--steps 20] [--load 2] [--port PORT]
[--checkout DIR]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from _common import ROOT, machine_line, print_table

sys.path.insert(0, str(ROOT / "tests" / "helpers"))
from chromium_launch import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (the tests' launch)
from plotly_scene import settled_points  # noqa: E402

MODEL = "smollm2-135m"
QUIET_MS = 1200
STEP_TIMEOUT_S = 90

INIT_JS = """
window.hfBench = {t0: null, armed: false, ranAt: null, runningSeen: false};
const arm = (event) => {
  if (event.type === "keydown" && event.key !== "Enter") return;
  if (window.hfBench.armed && window.hfBench.t0 === null) window.hfBench.t0 = performance.now();
};
document.addEventListener("pointerdown", arm, true);
document.addEventListener("keydown", arm, true);
const watch = () => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return setTimeout(watch, 20);
  new MutationObserver(() => {
    const state = app.getAttribute("data-test-script-state");
    if (state === "notRunning") window.hfBench.ranAt = performance.now();
    else window.hfBench.runningSeen = true;
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
};
watch();
"""

ARM_JS = """() => {
  Object.assign(window.hfBench, {t0: null, armed: true, ranAt: null, runningSeen: false});
}"""

STATUS_JS = """() => {
  const b = window.hfBench;
  const marks = b.t0 === null ? [] : performance.getEntriesByType("mark").filter(
    (m) => m.name.startsWith("hf:drawn:") && m.startTime > b.t0);
  const reg = window.__headformsPlotly;
  const app = document.querySelector('[data-testid="stApp"]');
  const h1 = document.querySelector('[data-testid="stMain"] h1');
  return {
    t0: b.t0, ranAt: b.ranAt, runningSeen: b.runningSeen,
    state: app && app.getAttribute("data-test-script-state"),
    lastMark: marks.length ? Math.max(...marks.map((m) => m.startTime)) : null,
    drawn: marks.map((m) => m.name.slice(9)),
    busy: Boolean(reg && ((reg.queue && reg.queue.length) || reg.drawing)),
    title: h1 ? h1.textContent : "",
    now: performance.now(),
  };
}"""

CELLS_JS = """(gd) => {
  // Screen positions of the heatmap's cells of the model (traces with customdata).
  const rect = gd.getBoundingClientRect();
  const out = [];
  for (const trace of gd._fullData) {
    if (!trace.customdata || trace.visible !== true) continue;
    const xa = gd._fullLayout[(trace.xaxis || "x").replace("x", "xaxis")];
    const ya = gd._fullLayout[(trace.yaxis || "y").replace("y", "yaxis")];
    for (let i = 0; i < trace.x.length; i++) {
      out.push({
        x: rect.left + xa._offset + xa.c2p(trace.x[i]),
        y: rect.top + ya._offset + ya.c2p(trace.y[i]),
        model: trace.customdata[i][0], layer: trace.customdata[i][1], head: trace.customdata[i][2],
      });
    }
  }
  return out;
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def label(layer: int, head: int) -> str:
    return f"Layer {layer} · Head {head}"


def start_server(cache: Path, port: int, tree: Path = ROOT) -> subprocess.Popen:
    env = {
        **os.environ,
        "HEADFORMS_CACHE_DIR": str(cache),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "VENV": str(ROOT / ".venv"),
    }
    proc = subprocess.Popen(
        ["bash", str(tree / "scripts" / "start.sh")],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            url = f"http://127.0.0.1:{port}/_stcore/health"
            if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                return proc
        except OSError:
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit("the dashboard did not start")


def settle(page, title: str | None, timed: bool = True) -> tuple[float, list[str]]:
    """Wait until the step has ended (see the module doc); its time in ms and the plots drawn."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while True:
        s = page.evaluate(STATUS_JS)
        ended = [t for t in (s["lastMark"], s["ranAt"]) if t is not None]
        if (
            (s["t0"] is not None or not timed)
            and (s["runningSeen"] or not timed)
            and s["state"] == "notRunning"
            and not s["busy"]
            and (title is None or title in s["title"])
            and ended
            and s["now"] - max(ended) > QUIET_MS
        ):
            return (max(ended) - s["t0"] if timed else 0.0), s["drawn"]
        if time.monotonic() > deadline:
            raise SystemExit(f"no step end within {STEP_TIMEOUT_S} s (waiting for {title!r}): {s}")
        page.wait_for_timeout(100)


def quiet_page(page) -> None:
    """Wait until no script runs and no plot draws for a while (before arming a step)."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while time.monotonic() < deadline:
        s = page.evaluate(STATUS_JS)
        if s["state"] == "notRunning" and not s["busy"]:
            page.wait_for_timeout(QUIET_MS)
            s2 = page.evaluate(STATUS_JS)
            if s2["state"] == "notRunning" and not s2["busy"]:
                return
        page.wait_for_timeout(100)


def nav(page, title: str) -> None:
    """Open a page through the sidebar's navigation (as a visitor does; not timed)."""
    page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()


class Steps:
    """The four kinds of step on one browser page; each method does one timed step."""

    def __init__(self, page, url: str, rng: random.Random, n_layers: int, n_heads: int) -> None:
        self.page, self.url, self.rng = page, url, rng
        self.n_layers, self.n_heads = n_layers, n_heads
        self.layer, self.head = 3, 2
        self.where = ""

    def _head_page(self) -> None:
        if self.where != "head":
            nav(self.page, "Head")
            quiet_page(self.page)
            settle(self.page, label(self.layer, self.head), timed=False)
            self.where = "head"

    def next(self) -> tuple[float, list[str]]:
        self._head_page()
        quiet_page(self.page)
        index = (self.layer * self.n_heads + self.head + 1) % (self.n_layers * self.n_heads)
        self.layer, self.head = divmod(index, self.n_heads)
        self.page.evaluate(ARM_JS)
        self.page.get_by_role("button", name="Next").click()
        return settle(self.page, label(self.layer, self.head))

    def sidebar(self) -> tuple[float, list[str]]:
        self._head_page()
        quiet_page(self.page)
        change_layer = self.rng.random() < 0.5
        if change_layer:
            self.layer = self.rng.choice([x for x in range(self.n_layers) if x != self.layer])
            box, value = "Layer", self.layer
        else:
            self.head = self.rng.choice([x for x in range(self.n_heads) if x != self.head])
            box, value = "Head", self.head
        field = self.page.locator('section[data-testid="stSidebar"]').get_by_label(box, exact=True)
        field.fill(str(value))
        self.page.evaluate(ARM_JS)
        field.press("Enter")
        return settle(self.page, label(self.layer, self.head))

    def marker(self) -> tuple[float, list[str]]:
        nav(self.page, "Simplex")
        self.where = "simplex"
        quiet_page(self.page)
        plot = self.page.locator('div[data-hf-plot="simplex"]')
        points = settled_points(self.page, plot)
        point = self._isolated([p for p in points if p["inView"]], (self.layer, self.head))
        self.layer, self.head = point["layer"], point["head"]
        self.page.mouse.move(point["x"], point["y"])
        self.page.evaluate(ARM_JS)
        self.page.mouse.click(point["x"], point["y"])
        self.where = "head"
        return settle(self.page, label(self.layer, self.head))

    def cell(self) -> tuple[float, list[str]]:
        nav(self.page, "Heatmaps")
        self.where = "heatmaps"
        quiet_page(self.page)
        plot = self.page.locator('div[data-hf-plot="heatmap_energy"]')
        plot.scroll_into_view_if_needed()
        quiet_page(self.page)
        cells = [
            c
            for c in plot.evaluate(CELLS_JS)
            if c["model"] == MODEL and (c["layer"], c["head"]) != (self.layer, self.head)
        ]
        cell = self.rng.choice(cells)
        self.layer, self.head = cell["layer"], cell["head"]
        self.page.mouse.move(cell["x"], cell["y"])
        self.page.wait_for_timeout(150)  # plotly.js finds the hovered point as the button goes down
        self.page.evaluate(ARM_JS)
        self.page.mouse.click(cell["x"], cell["y"])
        self.where = "head"
        return settle(self.page, label(self.layer, self.head))

    def _isolated(self, points: list[dict], current: tuple[int, int]) -> dict:
        """A random marker at least 12 px from every other (one click, no chooser), not the
        selected head."""

        def gap(p: dict) -> float:
            return min(
                ((p["x"] - q["x"]) ** 2 + (p["y"] - q["y"]) ** 2) ** 0.5
                for q in points
                if q is not p
            )

        free = [p for p in points if gap(p) > 12 and (p["layer"], p["head"]) != current]
        return self.rng.choice(free)


KINDS = ("next", "sidebar", "marker", "cell")


def run_kinds(
    trees: dict[str, Steps], kinds: list[str], n: int, warm: int
) -> dict[tuple[str, str], list[float]]:
    """``n`` timed steps of each kind on each tree, the trees taking turns step by step (so
    that they share the machine's load alike)."""
    times: dict[tuple[str, str], list[float]] = {}
    for kind in kinds:
        for steps in trees.values():
            for _ in range(warm):
                getattr(steps, kind)()
        for i in range(n):
            for name, steps in trees.items():
                do: Callable[[], tuple[float, list[str]]] = getattr(steps, kind)
                ms, drawn = do()
                times.setdefault((name, kind), []).append(ms)
                if i == 0:
                    print(f"  {name} {kind}: {ms:.0f} ms, drawn {sorted(drawn)}", flush=True)
    return times


def busy(count: int) -> list[subprocess.Popen]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]


def rows_of(times: dict[tuple[str, str], list[float]], condition: str) -> list[dict]:
    return [
        {
            "step": kind,
            "tree": tree,
            "machine": condition,
            "steps": len(values),
            "median ms": statistics.median(values),
            "p95 ms": sorted(values)[round(0.95 * (len(values) - 1))],
            "max ms": max(values),
        }
        for (tree, kind), values in sorted(times.items(), key=lambda item: item[0][::-1])
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps of each kind")
    parser.add_argument("--warm", type=int, default=2, help="untimed steps of each kind first")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument(
        "--edit",
        default=None,
        help="an edit selected on the Head page (edit=EDIT in its link) while stepping: its "
        "result is shown when kept, else offered on request, never recomputed by a step",
    )
    parser.add_argument("--load", type=int, default=2, help="busy processes (0: quiet only)")
    parser.add_argument(
        "--port", type=int, help="the first server's port (default: free loopback ports)"
    )
    parser.add_argument("--cache", type=Path, help="a cache to reuse (default: a new one)")
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another working tree (e.g. `git archive COMMIT | tar -x -C DIR`), measured "
        "step by step in turn with this one (ports --port + 1, ...)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from headforms.engine import analyze

    cache = args.cache or Path(tempfile.mkdtemp(prefix="bench-steps-"))
    os.environ["HEADFORMS_CACHE_DIR"] = str(cache)
    card = analyze(MODEL).card  # stored before the server starts: the steps, not the first load
    print(machine_line(2))
    trees = {"this tree": ROOT, **{str(tree): tree.resolve() for tree in args.checkout}}
    ports = [args.port + i if args.port else free_port() for i in range(len(trees))]
    procs = [
        start_server(cache, port, tree) for port, tree in zip(ports, trees.values(), strict=True)
    ]
    rows: list[dict] = []
    hogs: list[subprocess.Popen] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            steps: dict[str, Steps] = {}
            for i, name in enumerate(trees):
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.add_init_script(INIT_JS)
                url = f"http://127.0.0.1:{ports[i]}"
                edit = f"&edit={args.edit}" if args.edit else ""
                page.goto(f"{url}/head?model={MODEL}&layer=3&head=2{edit}")
                page.locator('div[data-hf-plot="behaviour_head_pattern"]').wait_for(timeout=300_000)
                steps[name] = Steps(page, url, random.Random(0), card.n_layers, card.n_heads)
                steps[name].where = "head"
                quiet_page(page)
            print("quiet", flush=True)
            rows += rows_of(run_kinds(steps, args.kinds, args.steps, args.warm), "quiet")
            if args.load:
                hogs = busy(args.load)
                print(f"beside {args.load} busy processes", flush=True)
                times = run_kinds(steps, args.kinds, args.steps, 1)
                rows += rows_of(times, f"{args.load} busy")
            browser.close()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    print_table(f"{MODEL}: steps between heads, input to last plot drawn", rows)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
