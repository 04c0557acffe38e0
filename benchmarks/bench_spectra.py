"""Exact low-rank spectra (``headforms.forms.head_forms``) vs dense ``O(N^3)`` LAPACK, per head.

For each shape, one layer of random heads (Gaussian ``Q, K``; grouped-query where the model has
it) goes through ``head_forms`` as the engine does (the whole layer batched; cost divided by the
number of heads). A few of its heads are redone densely: ``eigvalsh`` of the ``N x N`` symmetric
part ``S`` (what ``eig_s`` replaces) and ``svd`` of the antisymmetric part ``A`` (with it, the
full output). Both are timed in the same run with the same thread count; the maximum relative
difference of the eigenvalues of S and the singular values of A is printed.

Run: ``.venv/bin/python benchmarks/bench_spectra.py [--threads 1] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _common import limit_threads, machine_line, median_time, print_table

from headforms.forms import head_forms

SHAPES = {
    # name: (N, n, query heads per layer, key heads per layer, dense heads timed)
    "gpt2": (768, 64, 12, 12, 3),
    "gpt2-large": (1280, 64, 20, 20, 2),
    "SmolLM2-135M": (576, 64, 9, 3, 3),
    "Mistral-Small-24B": (5120, 128, 32, 8, 1),
}


def random_layer(
    rng: np.random.Generator, n_dim: int, head_dim: int, heads: int, kv_heads: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A layer of Gaussian heads with uneven scales (a spread-out spectrum, as in trained heads)."""
    scale = np.exp(rng.uniform(-1.0, 1.0, size=(1, head_dim, 1)))
    q = rng.standard_normal((heads, head_dim, n_dim)) * scale / np.sqrt(n_dim)
    k = rng.standard_normal((kv_heads, head_dim, n_dim)) * scale[:, ::-1] / np.sqrt(n_dim)
    kv_of_head = np.arange(heads) // (heads // kv_heads)
    return q, k, kv_of_head


def dense_time(fn, repeat: int) -> tuple[float, object]:
    """Median time of ``fn`` and its last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def nonzero_part(dense_desc: np.ndarray, n_pos: int, size: int) -> np.ndarray:
    """The ``size`` eigenvalues of S that can be non-zero: ``n_pos`` largest, the rest smallest."""
    return np.concatenate([dense_desc[:n_pos], dense_desc[len(dense_desc) - (size - n_pos) :]])


def bench_shape(name: str, shape: tuple, repeat: int, dense_repeat: int) -> dict:
    n_dim, head_dim, heads, kv_heads, dense_heads = shape
    rng = np.random.default_rng(0)
    q, k, kv = random_layer(rng, n_dim, head_dim, heads, kv_heads)
    head_forms(q, k, kv)  # warm-up
    low = median_time(lambda: head_forms(q, k, kv), repeat) / heads
    batch = head_forms(q, k, kv)
    t_eig, t_svd, err_eig, err_sv = [], [], 0.0, 0.0
    for h in np.linspace(0, heads - 1, dense_heads).astype(int):
        form = k[kv[h]].T @ q[h]
        sym, skew = (form + form.T) / 2.0, (form - form.T) / 2.0
        te, eig = dense_time(lambda sym=sym: np.linalg.eigvalsh(sym)[::-1], dense_repeat)
        ts, sv = dense_time(lambda skew=skew: np.linalg.svd(skew, compute_uv=False), dense_repeat)
        t_eig.append(te)
        t_svd.append(ts)
        ours = batch.eig_s[h]
        ref = nonzero_part(eig, int(np.count_nonzero(ours > 0)), ours.size)
        err_eig = max(err_eig, float(np.max(np.abs(ours - ref) / np.abs(ref))))
        ours_sv = batch.sv_a[h]
        ref_sv = sv[: ours_sv.size]
        err_sv = max(err_sv, float(np.max(np.abs(ours_sv - ref_sv) / ref_sv)))
    dense_eig = statistics.median(t_eig)
    dense_full = dense_eig + statistics.median(t_svd)
    return {
        "shape": name,
        "N": n_dim,
        "n": head_dim,
        "heads/layer": f"{heads}/{kv_heads}",
        "low-rank ms/head": low * 1e3,
        "dense eigvalsh ms": dense_eig * 1e3,
        "ratio eig": dense_eig / low,
        "dense eigvalsh+svd ms": dense_full * 1e3,
        "ratio full": dense_full / low,
        "max rel diff eig_s": err_eig,
        "max rel diff sv_a": err_sv,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=7, help="runs of the low-rank path")
    parser.add_argument("--dense-repeat", type=int, default=1, help="runs of each dense head")
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = parser.parse_args()
    with limit_threads(args.threads):
        print(machine_line(args.threads))
        rows = []
        for name in args.shapes:
            rows.append(bench_shape(name, SHAPES[name], args.repeat, args.dense_repeat))
            print_table("so far", rows[-1:])
    print_table(
        f"Per-head cost, exact low-rank (head_forms, whole layer batched: eig_s, sv_a, eig_l, "
        f"norms) vs dense LAPACK on N x N; {args.threads} thread(s), medians",
        rows,
    )
    worst = max(max(r["max rel diff eig_s"], r["max rel diff sv_a"]) for r in rows)
    print(f"\nlargest elementwise relative difference: {worst:.1e} (target <= 1e-10)")
    return 0 if worst <= 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main())
