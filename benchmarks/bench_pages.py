"""Dashboard page speed: one script run of each page with the model already loaded (AppTest).

For each page: the first run on a new head (figures built) and the median of reruns (figures
served from ``st.cache_resource``), in milliseconds; the target is well under 300 ms.

Run: ``.venv/bin/python benchmarks/bench_pages.py [--model smollm2-135m] [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _common import ROOT, machine_line, print_table

PAGES = ("simplex", "head", "heatmaps", "overview", "spectra", "fits", "pairing", "compare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("HEADFORMS_THREADS", "1")
    from streamlit.testing.v1 import AppTest

    from headforms import analyze

    card = analyze(args.model).card  # fills the disk cache outside the timings
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params["model"] = args.model
    at.run()  # loads the model into the app's in-memory store
    rows = []
    for index, page in enumerate(PAGES):
        layer, head = index % card.n_layers, (3 * index) % card.n_heads
        at.session_state["hf_layer"], at.session_state["hf_head"] = layer, head
        at.switch_page(f"pages/{page}.py")
        start = time.perf_counter()
        at.run()
        first = time.perf_counter() - start
        reruns = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            at.run()
            reruns.append(time.perf_counter() - start)
        if at.exception:
            raise SystemExit(f"{page}: {at.exception[0].message}")
        rows.append(
            {
                "page": page,
                "first run, new head (ms)": 1000 * first,
                "rerun median (ms)": 1000 * statistics.median(reruns),
            }
        )
    print(machine_line(1))
    print_table(f"Page script runs, {args.model} loaded (AppTest, in-process)", rows)


if __name__ == "__main__":
    main()
