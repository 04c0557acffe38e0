"""Simplex page first paint in a real browser, this tree against an earlier one, side by side.

Starts two dashboards on free loopback ports, each with its own ``scripts/start.sh`` and the same
warmed cache: this working tree ("after") and an export of an earlier commit ("before", default:
the merge base with ``main``). For each, in alternation, times from ``page.goto`` to the
Streamlit page shell and to the drawn 3D simplex (plotly.js has its traces and a canvas):

* fresh browser: a new chromium with an empty profile (a user-data directory), nothing cached;
* repeat visits: the same browser opens the page again in a new tab, twice, as a user coming
  back: visit 2 finds plotly.js in the HTTP cache (chromium compiles it again and keeps the
  compiled code), visit 3 also finds V8's code cache, which chromium uses from a script's third
  load on.

For this tree the plot component's performance marks add when the plot mounted and when
plotly.js was ready (compiled and run), from the start of the navigation.

Headless chromium renders WebGL in software (SwiftShader): a desktop GPU draws faster.

Run: ``.venv/bin/python benchmarks/bench_first_paint.py [--before REV] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
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

DRAWN = """() => {
  const gd = document.querySelector('[data-hf-plot="simplex"]');
  return !!(gd && gd._fullData && gd._fullData.length && gd.querySelector('canvas'));
}"""
VISITS = 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_health(url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(url, timeout=2).read() == b"ok":
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server did not become healthy: {url}")


def export_tree(rev: str, into: Path) -> str:
    """``git archive`` of ``rev`` into ``into``; returns the commit's short hash."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return commit


def start_server(tree: Path, port: int, cache: str) -> subprocess.Popen:
    """``scripts/start.sh`` of ``tree`` on loopback, with this checkout's virtualenv."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        HEADFORMS_CACHE_DIR=cache,
        HEADFORMS_THREADS="1",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        HOST="127.0.0.1",
        PORT=str(port),
        VENV=str(ROOT / ".venv"),
    )
    return subprocess.Popen(
        [str(tree / "scripts/start.sh")],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


MARKS = """() => Object.fromEntries(performance.getEntriesByType('mark')
  .filter((m) => m.name.endsWith(':simplex')).map((m) => [m.name.split(':')[1], m.startTime]))"""
"""The plot component's own marks (this tree only): mounted, plotly.js ready, drawn."""


def visit(context, url: str) -> tuple[float, ...]:
    """Seconds to the page shell, to the drawn 3D simplex, and (this tree only, else NaN) to
    the plot component's mount and to plotly.js ready, of one navigation."""
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("[data-testid='stSidebar']", timeout=90_000)
    shell = time.perf_counter() - start
    page.wait_for_function(DRAWN, timeout=90_000, polling=20)
    drawn = time.perf_counter() - start
    marks = page.evaluate(MARKS)
    page.close()
    nan = float("nan")
    return shell, drawn, marks.get("mount", nan) / 1e3, marks.get("plotly", nan) / 1e3


def session(playwright, url: str) -> list[tuple[float, ...]]:
    """A fresh browser with its own profile on disk (as a real browser keeps its HTTP and code
    caches): the first visit, then the repeat visits, each in a new tab."""
    profile = tempfile.mkdtemp(prefix="hf-paint-profile-")
    context = playwright.chromium.launch_persistent_context(
        profile,
        executable_path=str(CHROMIUM),
        args=CHROMIUM_ARGS,
        viewport={"width": 1500, "height": 1000},
    )
    try:
        return [visit(context, url) for _ in range(VISITS)]
    finally:
        context.close()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--before", default=None, help="git revision to compare with (default: merge base, main)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    before_rev = (
        args.before
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    work = Path(tempfile.mkdtemp(prefix="hf-paint-"))
    cache = str(work / "cache")
    before_tree = work / "before"
    before_tree.mkdir()
    commit = export_tree(before_rev, before_tree)
    trees = {f"before ({commit})": before_tree, "after (this tree)": ROOT}
    subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-c", "import ui.loading as l; l.warm()"],
        cwd=ROOT,
        env={**os.environ, "HEADFORMS_CACHE_DIR": cache},
        check=True,
    )
    servers = {name: (tree, free_port()) for name, tree in trees.items()}
    processes = [start_server(tree, port, cache) for tree, port in servers.values()]
    runs: dict[str, list[list[tuple[float, ...]]]] = {name: [] for name in servers}
    try:
        urls = {
            name: f"http://127.0.0.1:{port}/?model={args.model}"
            for name, (_, port) in servers.items()
        }
        for _, port in servers.values():
            wait_health(f"http://127.0.0.1:{port}/_stcore/health")
        with sync_playwright() as pw:
            for url in urls.values():  # each server's first script run loads the model in memory
                session(pw, url)
            for _ in range(args.repeat):
                for name, url in urls.items():
                    runs[name].append(session(pw, url))
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)

    def median(name: str, visit_index: int, which: int) -> float:
        return statistics.median(r[visit_index][which] for r in runs[name])

    rows = []
    base = next(iter(runs))
    for name in runs:
        labels = ["fresh browser", "repeat, HTTP cache", "repeat, + code cache"]
        for index, label in enumerate(labels):
            drawn = median(name, index, 1)
            rows.append(
                {
                    "tree": name,
                    "visit": label,
                    "page shell s": f"{median(name, index, 0):.2f}",
                    "plot mounted s": f"{median(name, index, 2):.2f}",
                    "plotly.js ready s": f"{median(name, index, 3):.2f}",
                    "3D simplex drawn s": f"{drawn:.2f}",
                    "vs before, fresh": f"{drawn / median(base, 0, 1):.2f}x",
                    "vs before, same visit": f"{drawn / median(base, index, 1):.2f}x",
                    "runs": len(runs[name]),
                }
            )
    print(machine_line(1))
    print_table(f"Simplex first paint, {args.model}, headless chromium (software WebGL)", rows)


if __name__ == "__main__":
    main()
