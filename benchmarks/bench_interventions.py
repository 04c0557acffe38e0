"""Interventions: every head edited on its own, the library's sweep against the naive loop; and
one head's edit with its matched controls.

In one process, the model loaded once, thread counts pinned (torch and BLAS, ``--threads``):

* naive: for every head, one full forward pass of one sequence with that head's form edited
  (the same hooks and measures, no reuse: the layers below the head recomputed every time,
  one sequence a pass), then its delta_ce and KL;
* sweep: ``compute_intervention`` of the same edit with ``each=True`` over every head (the
  hidden state entering each layer computed once, the heads of one layer run as a batch from
  that layer up);
* single head: ``compute_intervention`` of one head's edit with K controls (its unedited pass,
  the edit and K controls), median over ``--heads`` heads.

The two routes' delta_ce agree to float32 rounding (printed). Run:
``.venv/bin/python benchmarks/bench_interventions.py [--model smollm2-135m] [--edit symmetric]
[--tokens 128] [--controls 8] [--threads 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import limit_threads, machine_line, print_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--edit", default="symmetric")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--controls", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--heads", type=int, default=5, help="single-head edits timed")
    args = parser.parse_args()

    import torch

    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import runnable
    from headforms.interventions import request_of
    from headforms.interventions.anatomy import anatomy_of
    from headforms.interventions.changes import FormChange
    from headforms.interventions.compute import compute_intervention
    from headforms.interventions.edits import edit_named
    from headforms.interventions.hooks import applied
    from headforms.interventions.measures import measure_batch
    from headforms.interventions.passes import clean_pass, run_base
    from headforms.interventions.text import DEFAULT_TEXT, text_tokens

    limit_threads(args.threads)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model = runnable(locate_runnable(args.model))
    torch.set_num_threads(args.threads)
    loaded = time.perf_counter() - start
    anatomy = anatomy_of(model)
    shapes = anatomy.shapes
    heads = [(layer, head) for layer in range(shapes.n_layers) for head in range(shapes.n_heads)]
    print(machine_line(args.threads))
    print(f"{args.model}: loaded in {loaded:.1f} s; {len(heads)} heads, T = {args.tokens}")

    edit = edit_named(args.edit)
    ids = text_tokens(model, DEFAULT_TEXT, args.tokens)
    window = np.arange(len(ids) - 1)

    start = time.perf_counter()
    clean = clean_pass(model, anatomy, ids, window)
    naive = []
    tokens = torch.tensor([ids])
    for layer, head in heads:
        plan = (FormChange(layer, head, anatomy.head_logit(layer, head), edit),)
        with applied(anatomy, [plan]):
            hidden = run_base(model, tokens)
        with torch.inference_mode():
            measured = measure_batch(
                model.causal_lm, hidden, ids, clean.final, clean.reference, window
            )
        naive.append(measured[0].ce - clean.ce)
    naive_seconds = time.perf_counter() - start

    request = request_of(args.edit, each=True, max_tokens=args.tokens, controls=0)
    start = time.perf_counter()
    swept = compute_intervention(model, request)
    sweep_seconds = time.perf_counter() - start
    difference = float(np.max(np.abs(swept.table["delta_ce"].to_numpy() - np.array(naive))))

    print_table(
        f"Every head edited on its own ({args.edit}, {len(heads)} heads, T = {len(ids)})",
        [
            {"route": "naive: one full pass per head", "seconds": naive_seconds, "ratio": 1.0},
            {
                "route": "sweep: prefix once, heads of a layer batched",
                "seconds": sweep_seconds,
                "ratio": naive_seconds / sweep_seconds,
            },
        ],
    )
    print(f"max |delta_ce sweep - delta_ce naive| = {difference:.2e} nats")

    rng = np.random.default_rng(0)
    chosen = [heads[i] for i in rng.choice(len(heads), size=args.heads, replace=False)]
    times = []
    for layer, head in chosen:
        single = request_of(
            args.edit, heads=f"{layer}.{head}", max_tokens=args.tokens, controls=args.controls
        )
        start = time.perf_counter()
        compute_intervention(model, single)
        times.append(time.perf_counter() - start)
    print_table(
        f"One head's edit with {args.controls} controls (model loaded), {args.heads} heads",
        [
            {
                "heads": " ".join(f"L{a}.H{b}" for a, b in chosen),
                "median s": statistics.median(times),
                "max s": max(times),
            }
        ],
    )


if __name__ == "__main__":
    main()
