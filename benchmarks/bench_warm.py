"""Warm cache: how fast a cached model's per-head table comes back.

In-process: ``headforms.analyze(MODEL)`` after a first (cold) call filled a fresh cache, median
of ``--repeat``, with its parts: ``locate`` (find the files and fingerprint them; no weights),
the store read (checksum, zip, npz) and the size of the stored entry. The CLI
(``python -m headforms analyze MODEL --quiet``) on the same warm cache in a subprocess, beside the
bare interpreter start and the import of the CLI module (what no cache can save), and whether
the warm CLI imported torch, transformers or pandas (it must not).

``--checkout DIR`` (repeatable) measures other working trees side by side: each fills its own
store cold, then the warm in-process call (in a child of each tree, median of ``--repeat``) and
the warm CLI of every tree are run interleaved; this tree's time over theirs is printed.

Run: ``.venv/bin/python benchmarks/bench_warm.py [--checkout DIR ...]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import (
    PYTHON,
    ROOT,
    Measured,
    limit_threads,
    machine_line,
    median_measured,
    median_time,
    print_table,
    thread_env,
)

MODELS = ("smollm2-135m", "minilm-l6", "gemma3-270m")

IMPORTS = (
    "import contextlib, io, sys; from headforms.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()): main(['analyze', sys.argv[1], '--quiet'])\n"
    "print(','.join(m for m in ('torch', 'transformers', 'pandas') if m in sys.modules))"
)


IN_PROCESS = (
    "import statistics, sys, time\n"
    "from headforms import analyze\n"
    "analyze(sys.argv[1])\n"
    "times = []\n"
    "for _ in range(int(sys.argv[2])):\n"
    "    start = time.perf_counter()\n"
    "    analyze(sys.argv[1])\n"
    "    times.append(time.perf_counter() - start)\n"
    "print(statistics.median(times))"
)
"""A child of a checkout: its warm in-process ``analyze`` call, median seconds."""


def side_by_side(
    names: list[str], checkouts: list[Path], env: dict[str, str], repeat: int, cli_repeat: int
) -> list[dict]:
    """Warm in-process and CLI times of every checkout, each on its own store, interleaved."""
    caches = {c: tempfile.mkdtemp(prefix="headforms-bench-warm-co-") for c in checkouts}
    envs = {c: {**env, "HEADFORMS_CACHE_DIR": caches[c], "PYTHONPATH": str(c)} for c in checkouts}
    rows = []
    try:
        for name in names:
            cli = [PYTHON, "-m", "headforms", "analyze", name, "--quiet"]
            for checkout in checkouts:  # cold: fills its store
                subprocess.run(cli, env=envs[checkout], cwd=checkout, check=True)
            warm: dict[Path, list[float]] = {c: [] for c in checkouts}
            runs: dict[Path, list[Measured]] = {c: [] for c in checkouts}
            for _ in range(cli_repeat):
                for checkout in checkouts:
                    out = subprocess.run(
                        [PYTHON, "-c", IN_PROCESS, name, str(repeat)],
                        env=envs[checkout],
                        cwd=checkout,
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                    warm[checkout].append(float(out.split()[-1]))
                    runs[checkout].append(median_measured(cli, envs[checkout], 1, cwd=checkout))
            here = checkouts[0]
            for other in checkouts[1:]:
                this_ms = statistics.median(warm[here]) * 1e3
                that_ms = statistics.median(warm[other]) * 1e3
                this_s = statistics.median(r.wall for r in runs[here])
                that_s = statistics.median(r.wall for r in runs[other])
                rows.append(
                    {
                        "model": name,
                        "checkout": str(other),
                        "warm ms": this_ms,
                        "checkout warm ms": that_ms,
                        "ratio": this_ms / that_ms,
                        "CLI s": this_s,
                        "checkout CLI s": that_s,
                        "CLI ratio": this_s / that_s,
                    }
                )
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--cli-repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another working tree measured side by side (repeatable)",
    )
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="headforms-bench-warm-")
    os.environ["HEADFORMS_CACHE_DIR"] = work
    env = thread_env(args.threads, HEADFORMS_CACHE_DIR=work, HF_HUB_OFFLINE="1")
    try:
        from headforms import analyze
        from headforms.options import DEFAULT_OPTIONS
        from headforms.sources import locate
        from headforms.store import ResultStore, metrics_key

        rows = []
        with limit_threads(args.threads):
            print(machine_line(args.threads))
            for name in args.models:
                analyze(name)  # cold: fills the cache
                warm = median_time(lambda name=name: analyze(name), args.repeat)
                t_locate = median_time(lambda name=name: locate(name), args.repeat)
                store = ResultStore()
                key = metrics_key(locate(name).fingerprint, DEFAULT_OPTIONS.key())
                t_get = median_time(
                    lambda store=store, key=key: store.get(key, "analysis"), args.repeat
                )
                size = len(store._cache.get(key, read=False))
                cli = median_measured(
                    [PYTHON, "-m", "headforms", "analyze", name, "--quiet"], env, args.cli_repeat
                )
                heavy = subprocess.run(
                    [PYTHON, "-c", IMPORTS, name], env=env, capture_output=True, text=True
                ).stdout.strip()
                rows.append(
                    {
                        "model": name,
                        "analyze warm ms": warm * 1e3,
                        "locate ms": t_locate * 1e3,
                        "store read ms": t_get * 1e3,
                        "entry MB": size / 1e6,
                        "target ms": 50,
                        "met": warm < 0.05,
                        "CLI warm s": cli.wall,
                        "CLI MB": cli.peak_rss_mb,
                        "CLI heavy imports": heavy or "none",
                    }
                )
                print_table("so far", rows[-1:])
        bare = median_measured([PYTHON, "-c", "pass"], env, args.cli_repeat)
        imp = median_measured([PYTHON, "-c", "import headforms.cli"], env, args.cli_repeat)
        full = median_measured(
            [PYTHON, "-c", "import headforms.engine, pandas, transformers.configuration_utils"],
            env,
            args.cli_repeat,
        )
        print_table(
            f"Warm cache, in-process median of {args.repeat}, CLI median of {args.cli_repeat}",
            rows,
        )
        print_table(
            "Fixed start-up costs of a CLI call (subprocess)",
            [
                {"step": "python -c pass", "s": bare.wall, "MB": bare.peak_rss_mb},
                {"step": "import headforms.cli", "s": imp.wall, "MB": imp.peak_rss_mb},
                {
                    "step": "+ pandas, transformers (never on a hit)",
                    "s": full.wall,
                    "MB": full.peak_rss_mb,
                },
            ],
        )
        if args.checkout:
            checkouts = [ROOT, *(c.resolve() for c in args.checkout)]
            print_table(
                "This tree against other checkouts, interleaved (in-process: median of "
                f"{args.repeat} per child; CLI and children: medians of {args.cli_repeat})",
                side_by_side(args.models, checkouts, env, args.repeat, args.cli_repeat),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
