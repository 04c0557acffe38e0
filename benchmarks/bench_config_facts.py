"""A cold ``headforms analyze`` of a config.json checkpoint: the config read by transformers vs
its facts kept in the store from an earlier checkpoint of the same config.

The bundled MiniLM (safetensors, config.json) is copied to a temporary directory (a new
fingerprint: no stored factors or metrics), and analysed in a fresh process (``python -m
headforms analyze DIR --quiet --out heads.csv``, all threads 1) with an empty cache directory,
and with a cache directory where another copy was analysed before (its config facts kept, no
factors of this copy). Routes alternate, median of ``--repeat``; both tables must be equal.

Run: ``.venv/bin/python benchmarks/bench_config_facts.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from _common import PYTHON, machine_line, median_measured, print_table, thread_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from headforms import BUNDLED_MODELS

    print(machine_line(1))
    model = Path(BUNDLED_MODELS["minilm-l6"].locate())
    model = model if model.is_dir() else model.parent
    times: dict[str, list[float]] = {"empty cache": [], "config facts kept": []}
    tables: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        earlier, copy = root / "earlier", root / "copy"
        shutil.copytree(model, earlier)
        shutil.copytree(model, copy)
        for _ in range(args.repeat):
            for route in times:
                cache = root / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                if route == "config facts kept":
                    median_measured(
                        [PYTHON, "-m", "headforms", "analyze", str(earlier), "--quiet"],
                        thread_env(1, HEADFORMS_CACHE_DIR=str(cache)),
                        1,
                    )
                out = root / "heads.csv"
                run = median_measured(
                    [PYTHON, "-m", "headforms", "analyze", str(copy), "--quiet", "--out", str(out)],
                    thread_env(1, HEADFORMS_CACHE_DIR=str(cache)),
                    1,
                )
                times[route].append(run.wall)
                tables[route] = out.read_text()
    if len(set(tables.values())) != 1:
        raise SystemExit("the two routes wrote different tables")
    empty = statistics.median(times["empty cache"])
    rows = [
        {
            "route": route,
            "s": statistics.median(values),
            "x empty": statistics.median(values) / empty,
        }
        for route, values in times.items()
    ]
    print_table("cold analyze of a copy of MiniLM (fresh process, median)", rows)


if __name__ == "__main__":
    main()
