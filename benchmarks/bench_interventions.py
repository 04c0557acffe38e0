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

The routes run interleaved layer by layer (order alternating), so the load of other jobs falls
on both alike; wall and CPU seconds of the process are printed. The two routes' delta_ce agree
to float32 rounding (printed). Run:
``.venv/bin/python benchmarks/bench_interventions.py [--model smollm2-135m] [--edit symmetric]
[--tokens 128] [--controls 8] [--threads 1]``.

``--study``: instead, the whole study (:func:`headforms.study.run_study`: the three shipped texts,
``--tokens`` each, whole-model edits with K = 32, per-head sweeps of zero, symmetric and flip with
one control per head; on ``--jobs`` worker processes of ``--threads`` threads each), timed (its
CPU seconds with its workers'), beside the naive loop: one full forward pass per sequence of the
study (no prefix reused, one sequence a pass), timed on ``--naive-sample`` of the study's
sequences and scaled to all of them (printed as an estimate).
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--study", action="store_true", help="time the study (module doc)")
    parser.add_argument("--naive-sample", type=int, default=20, help="naive passes timed")
    parser.add_argument(
        "--jobs", type=int, default=1, help="the study's worker processes (--threads each)"
    )
    args = parser.parse_args()
    # the library's forward passes take their threads from here (Settings.forward_threads)
    os.environ["HEADFORMS_THREADS"] = str(args.threads)
    if args.study:
        study(args)
        return

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
    clean = clean_pass(model, anatomy, ids, window)
    tokens = torch.tensor([ids])

    def naive(layer: int) -> list[float]:
        """Every head of ``layer``, one full pass each."""
        changes = []
        for head in range(shapes.n_heads):
            plan = (FormChange(layer, head, anatomy.head_logit(layer, head), edit),)
            with applied(anatomy, [plan]):
                hidden = run_base(model, tokens)
            with torch.inference_mode():
                measured = measure_batch(
                    model.causal_lm, hidden, ids, clean.final, clean.reference, window
                )
            changes.append(measured[0].ce - clean.ce)
        return changes

    def swept(layer: int) -> list[float]:
        """The library's sweep of ``layer`` (its unedited pass kept from before)."""
        request = request_of(args.edit, layer=layer, each=True, max_tokens=args.tokens, controls=0)
        return list(compute_intervention(model, request).table["delta_ce"])

    # Interleaved layer by layer (the order alternating), so that the load of other jobs on a
    # shared machine falls on both routes alike; wall and CPU seconds of this process.
    totals = {"naive": [0.0, 0.0], "sweep": [0.0, 0.0]}
    values: dict[str, list[float]] = {"naive": [], "sweep": []}
    for layer in range(shapes.n_layers):
        routes = [("naive", naive), ("sweep", swept)]
        for name, route in routes if layer % 2 == 0 else routes[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            values[name].extend(route(layer))
            totals[name][0] += time.perf_counter() - wall
            totals[name][1] += time.process_time() - cpu
    difference = float(np.max(np.abs(np.array(values["sweep"]) - np.array(values["naive"]))))
    whole = request_of(args.edit, each=True, max_tokens=args.tokens, controls=0)
    wall, cpu = time.perf_counter(), time.process_time()
    compute_intervention(model, whole)
    whole_wall, whole_cpu = time.perf_counter() - wall, time.process_time() - cpu

    naive_wall, naive_cpu = totals["naive"]
    sweep_wall, sweep_cpu = totals["sweep"]
    print_table(
        f"Every head edited on its own ({args.edit}, {len(heads)} heads, T = {len(ids)}), "
        "interleaved by layer",
        [
            {
                "route": "naive: one full pass per head",
                "wall s": naive_wall,
                "cpu s": naive_cpu,
                "ratio (cpu)": 1.0,
            },
            {
                "route": "sweep: prefix once, heads of a layer batched",
                "wall s": sweep_wall,
                "cpu s": sweep_cpu,
                "ratio (cpu)": naive_cpu / sweep_cpu,
            },
            {
                "route": "sweep of every head in one call",
                "wall s": whole_wall,
                "cpu s": whole_cpu,
                "ratio (cpu)": naive_cpu / whole_cpu,
            },
        ],
    )
    print(f"max |delta_ce sweep - delta_ce naive| = {difference:.2e} nats")
    print(machine_line(args.threads))

    rng = np.random.default_rng(0)
    chosen = [heads[i] for i in rng.choice(len(heads), size=args.heads, replace=False)]
    times, cpus = [], []
    for layer, head in chosen:
        single = request_of(
            args.edit, heads=f"{layer}.{head}", max_tokens=args.tokens, controls=args.controls
        )
        wall, cpu = time.perf_counter(), time.process_time()
        compute_intervention(model, single)
        times.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    print_table(
        f"One head's edit with {args.controls} controls (model loaded, its text's unedited pass "
        f"kept), {args.heads} heads",
        [
            {
                "heads": " ".join(f"L{a}.H{b}" for a, b in chosen),
                "median wall s": statistics.median(times),
                "median cpu s": statistics.median(cpus),
                "max wall s": max(times),
            }
        ],
    )
    print(machine_line(args.threads))


def all_cpu() -> float:
    """CPU seconds of this process and of its children that ended (the study's workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def study(args: argparse.Namespace) -> None:
    """The study, and the naive loop's estimate (module doc)."""
    import torch

    from headforms.behaviour.run import locate_runnable
    from headforms.behaviour.runnable import runnable
    from headforms.interventions.anatomy import anatomy_of
    from headforms.interventions.changes import FormChange
    from headforms.interventions.edits import edit_named
    from headforms.interventions.hooks import applied
    from headforms.interventions.measures import measure_batch
    from headforms.interventions.passes import clean_pass, run_base
    from headforms.interventions.text import DEFAULT_TEXT, text_tokens
    from headforms.settings import usable_cpus
    from headforms.study import run_study
    from headforms.study_options import StudyOptions
    from headforms.study_report import summary_text

    limit_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(machine_line(args.threads))
    options = StudyOptions(max_tokens=args.tokens)
    wall, cpu = time.perf_counter(), all_cpu()
    found = run_study(args.model, options, jobs=args.jobs)
    study_wall, study_cpu = time.perf_counter() - wall, all_cpu() - cpu
    print(summary_text(found))
    model = runnable(locate_runnable(args.model))
    anatomy = anatomy_of(model)
    shapes = anatomy.shapes
    heads = shapes.n_layers * shapes.n_heads
    passes = options.passes(heads)
    ids = text_tokens(model, DEFAULT_TEXT, args.tokens)
    window = np.arange(len(ids) - 1)
    clean = clean_pass(model, anatomy, ids, window)
    rng = np.random.default_rng(0)
    times, cpus = [], []
    for _ in range(args.naive_sample):
        layer, head = divmod(int(rng.integers(heads)), shapes.n_heads)
        plan = (FormChange(layer, head, anatomy.head_logit(layer, head), edit_named("flip")),)
        wall, cpu = time.perf_counter(), time.process_time()
        with applied(anatomy, [plan]):
            hidden = run_base(model, torch.tensor([ids]))
        with torch.inference_mode():
            measure_batch(model.causal_lm, hidden, ids, clean.final, clean.reference, window)
        times.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    # worker processes take the cores between them (headforms.study_jobs)
    threads_each = args.threads if args.jobs == 1 else max(1, usable_cpus() // args.jobs)
    naive_wall = passes * statistics.median(times)
    naive_cpu = passes * statistics.median(cpus)
    print_table(
        f"The study of {args.model} ({len(options.texts)} texts, T = {args.tokens}, whole-model "
        f"K = {options.controls}, sweeps {', '.join(options.sweep_edits)} with "
        f"{options.head_controls} control per head): {passes} sequences",
        [
            {
                "route": f"naive: one full pass per sequence (estimate from {args.naive_sample})",
                "wall s": naive_wall,
                "cpu s": naive_cpu,
                "ratio (cpu)": 1.0,
            },
            {
                "route": f"the study (prefix reused, batched; {args.jobs} process(es), "
                f"{threads_each} thread(s) each)",
                "wall s": study_wall,
                "cpu s": study_cpu,
                "ratio (cpu)": naive_cpu / study_cpu,
            },
        ],
    )
    print(machine_line(args.threads))


if __name__ == "__main__":
    main()
