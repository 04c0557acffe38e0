"""End to end: ``python -m headforms analyze MODEL --no-cache`` vs the usual transformers route.

For each bundled model, both routes run in a fresh subprocess (same thread count), measured by
wall time and peak RSS (``wait4`` rusage of the child):

* headforms: ``python -m headforms analyze MODEL --no-cache --quiet`` (every head's exact
  spectrum of S and the per-head table computed from it: profile, symmetric profile, parity,
  energy, pairing, ...; no store is read or written, and the baseline is not asked for), and
  the same without ``--no-cache`` from an empty store ("stored": the factors and the metrics are
  written as a first real run writes them);
* transformers: ``from_pretrained`` (GGUF models: ``from_pretrained(dir, gguf_file=...)``), then
  the dense spectrum of each head's ``N x N`` symmetric part, ``eigvalsh((L + L^T) / 2)``.

Both compute the same spectra (the headforms tests check them against dense ``eigvalsh`` to
1e-10); every cache directory starts empty.

``--checkout DIR`` (repeatable) measures the headforms routes of other working trees side by
side in the same run, interleaved (e.g. ``git worktree add --detach /tmp/main main``): their
medians and this tree's time over theirs. ``--out csv`` (or json, parquet) has the headforms
routes write the per-head table to a file, as ``analyze MODEL --out heads.csv`` does.

Run: ``.venv/bin/python benchmarks/bench_end_to_end.py [--models smollm2-135m ...]
[--checkout DIR ...] [--out csv]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    PYTHON,
    ROOT,
    Measured,
    machine_line,
    median_measured,
    print_table,
    run_measured,
    thread_env,
)

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


def measured_routes(
    name: str,
    checkouts: list[Path],
    env: dict[str, str],
    gguf: Path | None,
    repeat: int,
    out: str | None = None,
) -> dict[tuple[Path, str], Measured]:
    """Median ``--no-cache`` and from-an-empty-store runs of ``name`` per checkout, the runs of
    every checkout interleaved (so a drift of the machine's load hits all alike)."""
    runs: dict[tuple[Path, str], list[Measured]] = {
        (c, route): [] for c in checkouts for route in ("no-cache", "stored")
    }
    for _ in range(repeat):
        for checkout in checkouts:
            for route in ("no-cache", "stored"):
                with tempfile.TemporaryDirectory(prefix="headforms-bench-e2e-") as cache:
                    if gguf is not None:  # the assembled Gemma, not assembled again
                        (Path(cache) / "models").mkdir()
                        os.link(gguf, Path(cache) / "models" / gguf.name)
                    child = {**env, "HEADFORMS_CACHE_DIR": cache, "PYTHONPATH": str(checkout)}
                    flags = ["--no-cache"] if route == "no-cache" else []
                    if out is not None:
                        flags += ["--out", str(Path(cache) / f"heads.{out}")]
                    cmd = [PYTHON, "-m", "headforms", "analyze", name, *flags, "--quiet"]
                    run = run_measured(cmd, child, cwd=checkout)
                if run.returncode != 0:
                    raise RuntimeError(f"{checkout}: {' '.join(cmd)}:\n{run.stderr[-3000:]}")
                runs[(checkout, route)].append(run)
    return {
        key: Measured(
            statistics.median(r.wall for r in found),
            statistics.median(r.peak_rss_mb for r in found),
            0,
            found[-1].stdout,
            found[-1].stderr,
        )
        for key, found in runs.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs of the headforms route")
    parser.add_argument(
        "--baseline-repeat",
        type=int,
        default=1,
        help="runs of the (slow) transformers route (0: not run)",
    )
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another working tree whose headforms routes are measured side by side",
    )
    parser.add_argument(
        "--out",
        choices=["csv", "json", "parquet"],
        help="the headforms routes write the per-head table in this format",
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
    checkouts = [ROOT, *(c.resolve() for c in args.checkout)]
    rows, side_by_side = [], []
    try:
        for name in args.models:
            path = model_path(name)  # untimed: Gemma's assembly from its part packages
            gguf = Path(path) if name.startswith("gemma") else None
            routes = measured_routes(name, checkouts, env, gguf, args.repeat, args.out)
            ours = routes[(ROOT, "no-cache")]
            if args.baseline_repeat > 0:
                route = [PYTHON, __file__, "--transformers-route", path]
                theirs = median_measured(route, env, args.baseline_repeat)
                detail = theirs.stdout.strip().splitlines()[-1]
                rows.append(
                    {
                        "model": name,
                        "headforms s": ours.wall,
                        "stored s": routes[(ROOT, "stored")].wall,
                        "transformers s": theirs.wall,
                        "speedup": theirs.wall / ours.wall,
                        "headforms MB": ours.peak_rss_mb,
                        "transformers MB": theirs.peak_rss_mb,
                        "memory ratio": theirs.peak_rss_mb / ours.peak_rss_mb,
                        "transformers detail": detail,
                    }
                )
                print_table(f"so far ({args.threads} thread(s), medians)", rows[-1:])
            for other in checkouts[1:]:
                for kind in ("no-cache", "stored"):
                    here, there = routes[(ROOT, kind)], routes[(other, kind)]
                    side_by_side.append(
                        {
                            "model": name,
                            "route": kind,
                            "checkout": str(other),
                            "this s": here.wall,
                            "checkout s": there.wall,
                            "time ratio": here.wall / there.wall,
                            "this MB": here.peak_rss_mb,
                            "checkout MB": there.peak_rss_mb,
                        }
                    )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        f"End to end, cold (--no-cache), {args.threads} thread(s); headforms median of "
        f"{args.repeat}, transformers median of {args.baseline_repeat}",
        rows,
    )
    print_table(
        f"This tree against other checkouts, interleaved, medians of {args.repeat}", side_by_side
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
