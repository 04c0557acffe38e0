"""``headforms demo``: build (once) the demo training run and fine-tuned pair
(:mod:`headforms.demo`) and print where they are, with the commands that read them."""

from __future__ import annotations

import argparse
import shlex

from .common import progress_bar, quiet_flag


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo [--seed N]``: the demo's folders on stdout (built now if they are not yet)."""
    from ..demo import DESCRIPTION, build_demo, check_seed

    seed = check_seed(args.seed)
    with progress_bar(args.quiet, unit="step") as progress:
        demo = build_demo(seed, progress)
    run, base, finetuned = (shlex.quote(str(p)) for p in (demo.run, demo.base, demo.finetuned))
    print(f"The headforms demo (seed {seed}): {DESCRIPTION}.")
    print(f"training run: {demo.run}")
    print(f"  a run store of {len(demo.steps)} records, steps {', '.join(map(str, demo.steps))}")
    print(f"model A:      {demo.base}")
    print(f"model B:      {demo.finetuned}")
    print(f"fingerprint:  {demo.fingerprint}")
    print("Try:")
    print(f"  headforms trajectory {run} --out demo_run.csv")
    print(f"  headforms diff {base} {finetuned}")
    print("  or the dashboard's Training run and Model diff pages: Try the demo")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``demo`` subcommand."""
    from ..demo import CHECKPOINT_EVERY, DEMO_SEED, FINETUNE_STEPS, TRAIN_STEPS

    p = sub.add_parser(
        "demo",
        help="build a tiny demo training run and model pair (seconds, about a MB)",
        description="Build, once, into the cache directory: a tiny llama-family model (2 "
        f"layers x 4 heads) trained by transformers' Trainer for {TRAIN_STEPS} steps on the "
        f"shipped text, its heads recorded every {CHECKPOINT_EVERY} steps by headforms' Trainer "
        f"callback (a training run's store), its last weights (model A) and those weights "
        f"fine-tuned {FINETUNE_STEPS} more steps (model B: a pair of the same shapes); print "
        "their folders, for `headforms trajectory` and `headforms diff`. Seeded: the same seed "
        "gives the same weights on one machine. A toy, not a real model.",
        parents=[quiet_flag()],
    )
    p.add_argument("--seed", type=int, default=DEMO_SEED, help=f"the seed (default {DEMO_SEED})")
    p.set_defaults(func=cmd_demo)
