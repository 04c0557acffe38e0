"""Every RoPE position at once: one sweep over d = 0..128 of SmolLM2 against 129 single-position
analyses in one process, side by side in one run.

Each route runs in a fresh child process with an empty cache directory (so "cold": nothing of
the model is stored yet; the weights themselves are in the OS page cache, read once before),
with ``HEADFORMS_THREADS`` (and every BLAS pool) set to ``--threads``:

* **sweep**: ``headforms.engine.sweep(MODEL, "0:128")``: extraction of the factors and every
  head at every position in one pass over the layers;
* **loop**: ``analyze(MODEL, rope_position=d)`` for d = 0..128 in one process: the first call
  extracts (and stores) the factors, each next one computes its position from them (what a user
  typing positions into the dashboard's box, or a script, does today);
* **loop from the weights**: the same with ``use_cache=False``: every analysis reads and
  extracts the weights again (how every position was computed before the factor store).

The routes alternate (sweep, loop, sweep, ...); each prints its own compute time (from the
call, imports excluded) and the run's wall time and peak RSS are measured around the child.
The sweep's rows are checked against the loop's analyses (to 1e-9) in the same run.

Run: ``.venv/bin/python benchmarks/bench_rope_sweep.py [--threads 2] [--repeat 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from _common import PYTHON, machine_line, print_table, run_measured, thread_env

MODEL = "smollm2-135m"
POSITIONS = "0:128"

SWEEP = """
import json, time
t = time.perf_counter()
from headforms.engine import sweep
result = sweep({model!r}, {positions!r})
seconds = time.perf_counter() - t
result.table.to_parquet({out!r})
print(json.dumps({{"seconds": seconds, "rows": len(result.table)}}))
"""

LOOP = """
import json, time
import pandas as pd
t = time.perf_counter()
from headforms import analyze
from headforms.options import SweepOptions
tables = []
for d in SweepOptions({positions!r}).positions:
    result = analyze({model!r}, rope_position=d, use_cache={cache!r})
    tables.append(result.heads.assign(rope_position=d))
seconds = time.perf_counter() - t
pd.concat(tables).to_parquet({out!r})
print(json.dumps({{"seconds": seconds, "rows": sum(len(t) for t in tables)}}))
"""


def run(route: str, threads: int, work: Path) -> dict:
    """One route in a fresh process with an empty cache; its timings and peak RSS."""
    cache = Path(tempfile.mkdtemp(prefix="bench-sweep-cache-", dir=work))
    out = work / f"{route}.parquet"
    code = (SWEEP if route == "sweep" else LOOP).format(
        model=MODEL, positions=POSITIONS, out=str(out), cache=route == "loop"
    )
    env = thread_env(threads, HEADFORMS_CACHE_DIR=str(cache))
    measured = run_measured([PYTHON, "-c", code], env=env, timeout=3600)
    if measured.returncode:
        raise SystemExit(f"{route} failed:\n{measured.stderr[-2000:]}")
    result = json.loads(measured.stdout.strip().splitlines()[-1])
    shutil.rmtree(cache, ignore_errors=True)
    return {**result, "wall": measured.wall, "rss": measured.peak_rss_mb, "table": out}


def agreement(sweep_table: Path, loop_table: Path) -> float:
    """Largest difference between the sweep's rows and the loop's, over every numeric column."""
    import numpy as np
    import pandas as pd

    a = pd.read_parquet(sweep_table).sort_values(["rope_position", "layer", "head"])
    b = pd.read_parquet(loop_table).sort_values(["rope_position", "layer", "head"])
    worst = 0.0
    for column in ("a", "b", "c", "d", "b_sym", "c_sym", "d_sym", "energy", "pairing"):
        worst = max(worst, float(np.nanmax(np.abs(a[column].to_numpy() - b[column].to_numpy()))))
    assert (a["parity"].to_numpy() == b["parity"].to_numpy()).mean() > 0.999
    return worst


def warm_page_cache() -> None:
    """Read the model's weight file once, so that both routes find it in the OS page cache."""
    from headforms.sources import locate

    for weight in locate(MODEL).weights:
        with open(weight.path, "rb") as fh:
            while fh.read(1 << 24):
                pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1, help="loop runs (sweeps: one more)")
    parser.add_argument(
        "--no-weights-loop", action="store_true", help="skip the loop from the weights"
    )
    args = parser.parse_args()
    print(machine_line(args.threads))
    warm_page_cache()
    work = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        sweeps, loops, reads = [run("sweep", args.threads, work)], [], []
        for _ in range(args.repeat):
            loops.append(run("loop", args.threads, work))
            if not args.no_weights_loop:
                reads.append(run("loop-weights", args.threads, work))
            sweeps.append(run("sweep", args.threads, work))
        worst = agreement(sweeps[-1]["table"], loops[-1]["table"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sweep_s = statistics.median(r["seconds"] for r in sweeps)
    loop_s = statistics.median(r["seconds"] for r in loops)
    rows = [
        {
            "route": name,
            "compute s": statistics.median(r["seconds"] for r in runs),
            "process wall s": statistics.median(r["wall"] for r in runs),
            "peak RSS MB": max(r["rss"] for r in runs),
            "rows": runs[0]["rows"],
            "runs": len(runs),
        }
        for name, runs in (
            ("one sweep, d = 0..128", sweeps),
            ("129 analyses, one per d", loops),
            ("129 analyses from the weights", reads),
        )
        if runs
    ]
    print_table(f"{MODEL}, every head at d = {POSITIONS}, cold (empty cache)", rows)
    print(
        f"sweep {loop_s / sweep_s:.1f}x faster than the loop ({args.threads} threads); "
        f"largest difference of their rows {worst:.1e}; load: {os.getloadavg()[0]:.1f}"
    )
    if reads:
        read_s = statistics.median(r["seconds"] for r in reads)
        print(f"sweep {read_s / sweep_s:.1f}x faster than the loop from the weights")


if __name__ == "__main__":
    main()
