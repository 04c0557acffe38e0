"""Scale: every head of a checkpoint with Mistral-Small-24B-Base's attention shapes.

Writes a synthetic sharded bf16 safetensors checkpoint under /tmp (random weights, only
``q_proj``/``k_proj``: 40 layers, N 5120, 32 query heads, 8 key heads, n 128, about 2.1 GB in
10 shards with ``model.safetensors.index.json`` and a ``config.json`` of model_type mistral),
then runs the whole analysis cold (``--no-cache``) in a subprocess: wall time and peak RSS.
``--profile`` adds a cProfile breakdown (read + bf16 conversion, Gram, Cholesky, eigvalsh, svd,
eigvals, baseline) from a second child. The checkpoint is deleted at exit.

The files were just written, so they are in the page cache: the figures exclude disk reads
(2.1 GB at the disk's sequential speed on a real cold start).

Run: ``.venv/bin/python benchmarks/bench_scale.py [--threads 1] [--profile]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import PYTHON, machine_line, median_measured, print_table, thread_env

LAYERS, MODEL_DIM, HEADS, KV_HEADS, HEAD_DIM, SHARDS = 40, 5120, 32, 8, 128, 10

CONFIG = {
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": MODEL_DIM,
    "intermediate_size": 32768,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-05,
    "rope_theta": 100000000.0,
    "sliding_window": None,
    "vocab_size": 131072,
    "torch_dtype": "bfloat16",
}


def write_checkpoint(directory: Path, v_o: bool = False) -> int:
    """Write the synthetic checkpoint; returns its size in bytes."""
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(0)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(CONFIG, indent=1))
    weight_map, total = {}, 0
    per_shard = LAYERS // SHARDS
    for shard in range(SHARDS):
        fname = f"model-{shard + 1:05d}-of-{SHARDS:05d}.safetensors"
        tensors = {}
        for layer in range(shard * per_shard, (shard + 1) * per_shard):
            prefix = f"model.layers.{layer}.self_attn."
            shapes = {"q_proj": HEADS * HEAD_DIM, "k_proj": KV_HEADS * HEAD_DIM}
            if v_o:
                shapes["v_proj"] = KV_HEADS * HEAD_DIM
            for proj, rows in shapes.items():
                w = torch.randn(rows, MODEL_DIM, generator=gen) * MODEL_DIM**-0.5
                tensors[prefix + proj + ".weight"] = w.to(torch.bfloat16)
            if v_o:
                w = torch.randn(MODEL_DIM, HEADS * HEAD_DIM, generator=gen) * MODEL_DIM**-0.5
                tensors[prefix + "o_proj.weight"] = w.to(torch.bfloat16)
        save_file(tensors, str(directory / fname), metadata={"format": "pt"})
        total += (directory / fname).stat().st_size
        weight_map.update({name: fname for name in tensors})
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=1))
    return total


PROFILE_CHILD = r"""
import cProfile, pstats, sys, time
from headforms.streaming import compute_analysis
from headforms.models.source import open_model
t0 = time.perf_counter()
source = open_model(sys.argv[1])
t1 = time.perf_counter()
prof = cProfile.Profile()
prof.enable()
compute_analysis(source)
prof.disable()
t2 = time.perf_counter()
stats = pstats.Stats(prof).stats
wanted = {
    "read + bf16->float32 (SafetensorsReader.read_exact)": ("readers/safetensors.py", "read_exact"),
    "finite check + split (extract)": ("extract.py", "read_layer"),
    "Gram matrices": ("forms.py", "gram_matrices"),
    "Cholesky": ("_linalg.py", "cholesky"),
    "eigvalsh (S, 2n x 2n)": ("_linalg.py", "eigvalsh"),
    "svd (A, 2n x 2n)": ("_linalg.py", "svd"),
    "eigvals (L, n x n)": ("_linalg.py", "eigvals"),
    "forms_from_factor (heads + baseline)": ("forms.py", "forms_from_factor"),
    "Wishart factor (baseline)": ("forms.py", "wishart_factor"),
    "metrics": ("forms.py", "form_metrics"),
}
print(f"resolve_s={t1 - t0:.3f} compute_s={t2 - t1:.3f}")
for label, (fname, func) in wanted.items():
    cum = sum(v[3] for k, v in stats.items() if k[0].endswith(fname) and k[2] == func)
    calls = sum(v[1] for k, v in stats.items() if k[0].endswith(fname) and k[2] == func)
    print(f"PROFILE\t{label}\t{cum:.3f}\t{calls}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="also a cProfile breakdown")
    parser.add_argument("--v-o", action="store_true", help="also write v_proj/o_proj (4.2 GB)")
    parser.add_argument("--keep", metavar="DIR", help="write the checkpoint here and keep it")
    parser.add_argument(
        "--before",
        metavar="TREE",
        help="also run a copy of an older headforms (TREE/headforms) side by side",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headforms-bench-scale-", dir="/tmp"))
    model = Path(args.keep) if args.keep else work / "mistral-small-24b-synthetic"
    try:
        print(machine_line(args.threads[0]))
        start = time.perf_counter()
        if not (model / "config.json").exists():
            size = write_checkpoint(model, args.v_o)
        else:
            size = sum(p.stat().st_size for p in model.glob("*.safetensors"))
        print(
            f"checkpoint: {size / 1e9:.2f} GB in {SHARDS} shards, written in "
            f"{time.perf_counter() - start:.1f} s ({model})"
        )
        rows = []
        trees = [("current", None)] + ([("before", Path(args.before))] if args.before else [])
        for threads, (label, tree) in itertools.product(args.threads, trees):
            env = thread_env(threads, HEADFORMS_CACHE_DIR=str(work / "cache"))
            if tree is not None:
                env["PYTHONPATH"] = str(tree)
            cmd = [PYTHON, "-m", "headforms", "analyze", str(model), "--no-cache", "--quiet"]
            run = median_measured(cmd, env, args.repeat, cwd=tree)
            rows.append(
                {
                    "code": label,
                    "threads": threads,
                    "heads": LAYERS * HEADS,
                    "wall s": run.wall,
                    "ms/head": run.wall / (LAYERS * HEADS) * 1e3,
                    "peak RSS MB": run.peak_rss_mb,
                    "target": "< 60 s, < 1536 MB",
                    "met": run.wall < 60 and run.peak_rss_mb < 1536,
                }
            )
            print_table("so far", rows[-1:])
        print_table(
            f"Mistral-Small-24B attention shapes, {LAYERS * HEADS} heads, cold analysis "
            f"(subprocess, median of {args.repeat})",
            rows,
        )
        if args.profile:
            env = thread_env(args.threads[0], HEADFORMS_CACHE_DIR=str(work / "cache"))
            run = median_measured([PYTHON, "-c", PROFILE_CHILD, str(model)], env, 1)
            lines = run.stdout.strip().splitlines()
            print(f"\n{lines[0]}")
            prof = []
            for line in lines[1:]:
                _, label, cum, calls = line.split("\t")
                prof.append({"step": label, "cumulative s": float(cum), "calls": int(calls)})
            print_table(f"cProfile breakdown, {args.threads[0]} thread(s)", prof)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # with --keep, the checkpoint lives elsewhere
    return 0


if __name__ == "__main__":
    sys.exit(main())
