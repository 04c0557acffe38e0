"""Dashboard page speed: one script run of each page with the model already loaded (AppTest).

For each page: the first run on a new head (its figures built, and the computations from results
at hand: fits, clusterings, summaries, bootstraps) and the median of reruns (everything kept), in
milliseconds of wall-clock time and of the process's CPU time (every thread: the script's, the
gateway's; less sensitive than wall time to a machine shared with other jobs); the target is
well under 300 ms for reruns. The model's analysis, its baseline,
its head-type scores and its default RoPE sweep are computed before any timing.

``--checkout DIR`` (repeatable) measures other working trees side by side: each tree runs in a
child process of its own (its own cache directory, warmed first), the trees taking turns round
by round (``--rounds``), so a drift of the machine's load hits all alike; the medians over the
rounds and this tree's time over theirs are printed.

Run: ``.venv/bin/python benchmarks/bench_pages.py [--model smollm2-135m] [--repeat 7]
[--checkout DIR ...] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, ROOT, machine_line, print_table

PAGES = (
    "simplex",
    "head",
    "heatmaps",
    "overview",
    "spectra",
    "fits",
    "observations",
    "theorem5",
    "pairing",
    "compare",
    "behaviour",
    "positions",
)


def measure(model: str, repeat: int, root: Path) -> dict[str, tuple[float, ...]]:
    """Each page's first run and median rerun, wall-clock and CPU seconds, in this process, for
    the tree at ``root`` (its ``app.py``)."""
    from streamlit.testing.v1 import AppTest

    from headforms import analyze
    from headforms.behaviour import head_type_scores
    from headforms.engine import sweep
    from headforms.options import DEFAULT_ROPE_POSITIONS, SweepOptions

    card = analyze(model).card  # fills the disk cache outside the timings
    head_type_scores(model)
    sweep(model, options=SweepOptions(DEFAULT_ROPE_POSITIONS))
    at = AppTest.from_file(str(root / "app.py"), default_timeout=600)
    at.query_params["model"] = model
    at.run()  # loads the model into the app's in-memory store
    found = {}
    for index, page in enumerate(PAGES):
        layer, head = index % card.n_layers, (3 * index) % card.n_heads
        at.session_state["hf_layer"], at.session_state["hf_head"] = layer, head
        at.switch_page(f"pages/{page}.py")
        gc.collect()  # a collection the pages before left due is not this page's cost
        start, cpu = time.perf_counter(), time.process_time()
        at.run()
        first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
        reruns, reruns_cpu = [], []
        for _ in range(repeat):
            start, cpu = time.perf_counter(), time.process_time()
            at.run()
            reruns.append(time.perf_counter() - start)
            reruns_cpu.append(time.process_time() - cpu)
        if at.exception:
            raise SystemExit(f"{page}: {at.exception[0].message}")
        found[page] = (first, statistics.median(reruns), first_cpu, statistics.median(reruns_cpu))
    return found


def _child(tree: Path, model: str, repeat: int, cache: str) -> dict[str, tuple[float, ...]]:
    """One round of ``tree`` in a child process (its own imports and cache)."""
    env = {**os.environ, "HEADFORMS_CACHE_DIR": cache, "PYTHONPATH": str(tree)}
    env.setdefault("HEADFORMS_THREADS", "1")
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        f"sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
        "import bench_pages\n"
        "sys.path.insert(0, sys.argv[1])  # the tree's own packages first (_common adds ours)\n"
        "print(json.dumps(bench_pages.measure(sys.argv[2], int(sys.argv[3]), Path(sys.argv[1]))))"
    )
    done = subprocess.run(
        [PYTHON, "-c", script, str(tree), model, str(repeat)],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        timeout=3600,
    )
    if done.returncode:
        raise SystemExit(f"{tree}: {done.stderr[-3000:]}")
    return {page: tuple(v) for page, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--checkout", type=Path, action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3, help="turns of every tree (--checkout)")
    args = parser.parse_args()
    os.environ.setdefault("HEADFORMS_THREADS", "1")
    print(machine_line(1))
    if not args.checkout:
        found = measure(args.model, args.repeat, ROOT)
        rows = [
            {
                "page": p,
                "first run, new head (ms)": 1000 * a,
                "rerun median (ms)": 1000 * b,
                "first, CPU (ms)": 1000 * c,
                "rerun, CPU (ms)": 1000 * d,
            }
            for p, (a, b, c, d) in found.items()
        ]
        print_table(f"Page script runs, {args.model} loaded (AppTest, in-process)", rows)
        return
    trees = [ROOT, *(c.resolve() for c in args.checkout)]
    caches = {tree: tempfile.mkdtemp(prefix="bench-pages-") for tree in trees}
    runs: dict[Path, list[dict[str, tuple[float, ...]]]] = {tree: [] for tree in trees}
    for round_ in range(args.rounds):
        for tree in trees if round_ % 2 == 0 else reversed(trees):
            runs[tree].append(_child(tree, args.model, args.repeat, caches[tree]))
    for clock, offset in (("wall-clock", 0), ("CPU", 2)):
        rows = []
        for page in PAGES:
            row: dict[str, object] = {"page": page}
            medians = {
                tree: [statistics.median(r[page][offset + i] for r in runs[tree]) for i in (0, 1)]
                for tree in trees
            }
            for tree in trees:
                name = "this" if tree == ROOT else tree.name
                row[f"{name} first (ms)"] = 1000 * medians[tree][0]
                row[f"{name} rerun (ms)"] = 1000 * medians[tree][1]
            for tree in trees[1:]:
                row[f"first / {tree.name}"] = medians[ROOT][0] / medians[tree][0]
                row[f"rerun / {tree.name}"] = medians[ROOT][1] / medians[tree][1]
            rows.append(row)
        title = f"Page script runs, {clock}, {args.model}, medians of {args.rounds} rounds"
        print_table(title, rows)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
