"""Simplex page first paint in a real browser: navigation to the drawn 3D plot, in seconds.

Starts the dashboard (``scripts/start.sh``) on a free loopback port with a warmed cache, opens
the simplex page in headless Debian chromium (Playwright) and times, from ``page.goto``: the
Streamlit page shell, the simplex plot's div, and the drawn 3D scene (plotly.js has its
traces). Repeated with a fresh browser (plotly.js not cached) and a reused one (cached).
Headless chromium renders WebGL in software (SwiftShader): a desktop GPU is faster.

Run: ``.venv/bin/python benchmarks/bench_first_paint.py [--model smollm2-135m] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request

from _common import ROOT, machine_line, print_table

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DRAWN = """() => {
  const gd = document.querySelector('[data-hf-plot="simplex"] .js-plotly-plot')
    || document.querySelector('.js-plotly-plot');
  return !!(gd && gd._fullData && gd._fullData.length && gd.querySelector('canvas'));
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_health(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server did not become healthy: {url}")


def paint_times(browser, url: str) -> tuple[float, float]:
    """(seconds to the page shell, seconds to the drawn 3D simplex) for one navigation."""
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("[data-testid='stSidebar']", timeout=60_000)
    shell = time.perf_counter() - start
    page.wait_for_function(DRAWN, timeout=60_000, polling=50)
    drawn = time.perf_counter() - start
    page.close()
    return shell, drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cache = tempfile.mkdtemp(prefix="hf-paint-cache-")
    env = {**os.environ, "HEADFORMS_CACHE_DIR": cache, "HEADFORMS_THREADS": "1"}
    subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-m", "headforms", "analyze", args.model, "--quiet"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    server = subprocess.Popen(
        [str(ROOT / "scripts/start.sh")],
        cwd=ROOT,
        env={**env, "HOST": "127.0.0.1", "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    try:
        base = f"http://127.0.0.1:{port}"
        wait_health(f"{base}/_stcore/health")
        url = f"{base}/?model={args.model}"
        with sync_playwright() as pw:
            warm_up = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            paint_times(warm_up, url)  # the server's first script run loads the model in memory
            warm_up.close()
            fresh, reused = [], []
            for _ in range(args.repeat):
                browser = pw.chromium.launch(
                    executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
                )
                fresh.append(paint_times(browser, url))
                reused.append(paint_times(browser, url))
                browser.close()
        for label, runs in (("fresh browser", fresh), ("plotly.js cached", reused)):
            rows.append(
                {
                    "browser": label,
                    "page shell s": f"{statistics.median(r[0] for r in runs):.2f}",
                    "3D simplex drawn s": f"{statistics.median(r[1] for r in runs):.2f}",
                    "runs": len(runs),
                }
            )
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(machine_line(1))
    print_table(f"Simplex first paint, {args.model}, headless chromium (software WebGL)", rows)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
