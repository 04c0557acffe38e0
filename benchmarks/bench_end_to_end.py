"""End to end: ``python -m headforms analyze MODEL --no-cache`` vs the usual transformers route.

For each bundled model, both routes run in a fresh subprocess (same thread count), measured by
wall time and peak RSS (``wait4`` rusage of the child):

* headforms: ``python -m headforms analyze MODEL --no-cache --quiet`` (every head's exact
  spectrum of S and the per-head table computed from it: profile, symmetric profile, parity,
  energy, pairing, ...; no store is read or written, and the baseline is not asked for);
* transformers: ``from_pretrained`` (GGUF models: ``from_pretrained(dir, gguf_file=...)``), then
  the dense spectrum of each head's ``N x N`` symmetric part, ``eigvalsh((L + L^T) / 2)``.

Both compute the same spectra (the headforms tests check them against dense ``eigvalsh`` to
1e-10); every cache directory starts empty.

Run: ``.venv/bin/python benchmarks/bench_end_to_end.py [--models smollm2-135m ...]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, machine_line, median_measured, print_table, thread_env

MODELS = ("smollm2-135m", "minilm-l6", "gemma3-270m")


def transformers_route(path: str) -> None:
    """The usual route, in this (child) process: load the model, dense eigvalsh per head."""
    import numpy as np
    import torch
    from threadpoolctl import threadpool_limits

    threads = int(os.environ.get("HEADFORMS_THREADS", "1"))
    torch.set_num_threads(threads)
    start = time.perf_counter()
    p = Path(path)
    if p.suffix == ".gguf":
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name)
    else:
        from transformers import AutoModel

        model = AutoModel.from_pretrained(str(p))
    loaded = time.perf_counter()
    cfg = model.config.get_text_config()
    n_heads = cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", None) or n_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    params = dict(model.named_parameters())
    q_names = sorted(
        (n for n in params if re.search(r"(q_proj|\.query)\.weight$", n)),
        key=lambda n: int(re.search(r"\.(\d+)\.", n).group(1)),
    )
    count = 0
    with threadpool_limits(threads):
        for q_name in q_names:
            k_name = q_name.replace("q_proj", "k_proj").replace(".query.", ".key.")
            wq = params[q_name].detach().to(torch.float64).numpy()
            wk = params[k_name].detach().to(torch.float64).numpy()
            for h in range(n_heads):
                kv = h // (n_heads // n_kv)
                q = wq[h * head_dim : (h + 1) * head_dim]
                k = wk[kv * head_dim : (kv + 1) * head_dim]
                form = k.T @ q
                np.linalg.eigvalsh((form + form.T) / 2.0)
                count += 1
    done = time.perf_counter()
    print(f"heads={count} load_s={loaded - start:.2f} spectra_s={done - loaded:.2f}")


def model_path(name: str) -> str:
    """Where a bundled model lives (assembles Gemma once into the benchmark's cache dir)."""
    from headforms.sources import BUNDLED_MODELS

    return str(BUNDLED_MODELS[name].locate())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the headforms route")
    parser.add_argument(
        "--baseline-repeat", type=int, default=1, help="runs of the (slow) transformers route"
    )
    parser.add_argument("--transformers-route", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.transformers_route:
        transformers_route(args.transformers_route)
        return 0

    work = Path(tempfile.mkdtemp(prefix="headforms-bench-e2e-"))
    env = thread_env(args.threads, HEADFORMS_CACHE_DIR=str(work), HF_HUB_OFFLINE="1")
    os.environ["HEADFORMS_CACHE_DIR"] = str(work)
    print(machine_line(args.threads))
    rows = []
    try:
        for name in args.models:
            path = model_path(name)  # untimed: Gemma's assembly from its part packages
            cmd = [PYTHON, "-m", "headforms", "analyze", name, "--no-cache", "--quiet"]
            ours = median_measured(cmd, env, args.repeat)
            route = [PYTHON, __file__, "--transformers-route", path]
            theirs = median_measured(route, env, args.baseline_repeat)
            detail = theirs.stdout.strip().splitlines()[-1]
            rows.append(
                {
                    "model": name,
                    "headforms s": ours.wall,
                    "transformers s": theirs.wall,
                    "speedup": theirs.wall / ours.wall,
                    "headforms MB": ours.peak_rss_mb,
                    "transformers MB": theirs.peak_rss_mb,
                    "memory ratio": theirs.peak_rss_mb / ours.peak_rss_mb,
                    "transformers detail": detail,
                }
            )
            print_table(f"so far ({args.threads} thread(s), medians)", rows[-1:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        f"End to end, cold (--no-cache), {args.threads} thread(s); headforms median of "
        f"{args.repeat}, transformers median of {args.baseline_repeat}",
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
