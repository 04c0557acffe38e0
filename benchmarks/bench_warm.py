"""Warm cache: how fast a cached model's per-head table comes back.

In-process: ``headforms.analyze(MODEL)`` after a first (cold) call filled a fresh cache, median
of ``--repeat``, with its parts: ``locate`` (find the files and fingerprint them; no weights),
the store read (checksum, zip, npz) and the size of the stored entry. The CLI
(``python -m headforms analyze MODEL --quiet``) on the same warm cache in a subprocess, beside the
bare interpreter start and the import of the CLI module (what no cache can save), and whether
the warm CLI imported torch, transformers or pandas (it must not).

Run: ``.venv/bin/python benchmarks/bench_warm.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from _common import (
    PYTHON,
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--cli-repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
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
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
