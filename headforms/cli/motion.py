"""Heads in motion on the command line: ``headforms trajectory CHECKPOINT...`` (a training run's
checkpoints as one table with a step column) and ``headforms diff A B`` (two models of the same
shapes, head by head)."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .common import (
    SHOWN_POINTS,
    SURVEY_EXIT_FAILED,
    analysis_options,
    check_output_path,
    out_option,
    policy_in_force,
    print_frame,
    progress_bar,
    quiet_flag,
    runs_options,
    tolerance_of,
    type2_tolerance_option,
    with_parity,
    write_table,
    wrote,
)


def cmd_trajectory(args: argparse.Namespace) -> int:
    """``trajectory CHECKPOINT... --out FILE``: a training run's checkpoints as one table."""
    from .. import survey
    from ..options import AnalysisOptions
    from ..series import open_series, run_store_of, trajectory_table

    out = args.out
    check_output_path(out)
    options = AnalysisOptions(args.rope_position, not args.no_fold_qk_norm)
    tolerance = tolerance_of(args)
    policy = policy_in_force()
    if len(args.checkpoints) == 1:
        store = run_store_of(args.checkpoints[0], policy)
        if store is not None:
            return _run_store_trajectory(store, options, args)
    checkpoints = open_series(args.checkpoints, policy)

    def report(outcome: survey.Outcome, done: int, total: int) -> None:
        if outcome.status != "done":
            print(f"[{done}/{total}] {outcome.spec}: FAILED: {outcome.error}", file=sys.stderr)
        elif not args.quiet:
            line = f"{outcome.heads} heads in {outcome.seconds:.1f} s"
            print(f"[{done}/{total}] {outcome.spec}: {line}", file=sys.stderr, flush=True)

    result = survey.run_survey(
        [c.spec for c in checkpoints],
        out,
        options,
        jobs=args.jobs,
        memory_budget=args.memory_budget,
        report=report,
        policy=policy,
    )
    for outcome in result.failed:
        print(f"failed: {outcome.spec}: {outcome.error}", file=sys.stderr)
    if len(result.table):
        table = with_parity(trajectory_table(checkpoints, result.table), tolerance)
        write_table(table, out)
        wrote(f"wrote {len(table)} rows ({table['step'].nunique()} checkpoints) to {out}")
        _print_trajectory(table, tolerance)
    return SURVEY_EXIT_FAILED if result.failed else 0


def _run_store_trajectory(store: object, options: object, args: argparse.Namespace) -> int:
    """``trajectory DIR`` of a run store (records written while the model trained): its
    records' tables, read rather than analysed, in the same table as of checkpoints."""
    from ..run_store import run_state
    from ..series import check_run_options, run_series

    state = run_state(store)
    check_run_options(state, options)
    series = run_series(state, spectra=False)
    for record in series.damaged:
        print(f"skipped {record.path}: not a whole record", file=sys.stderr)
    tolerance = tolerance_of(args)
    table = with_parity(series.table, tolerance)
    write_table(table, args.out)
    live = " (the run has not ended)" if state.live else ""
    wrote(f"wrote {len(table)} rows ({series.n_points} records{live}) to {args.out}")
    _print_trajectory(table, tolerance)
    return 0


def _print_trajectory(table: object, tolerance: float | None) -> None:
    """Parity shares (Type II ``tolerance``) and mean profile at each step (evenly spread) of a
    trajectory table."""
    from ..analyses.survey import summary_table

    steps = list(dict.fromkeys(table["step"]))
    shown = sorted(set(np.linspace(0, len(steps) - 1, SHOWN_POINTS).round().astype(int)))
    by_step = {f"step {steps[i]}": table[table["step"] == steps[i]] for i in shown}
    summary_rows = summary_table(by_step, tolerance)
    summary_rows.index.name = "step"
    columns = [c for c in summary_rows.columns if c != "layers"][:9]
    print_frame(summary_rows[columns].round(3))


def cmd_diff(args: argparse.Namespace) -> int:
    """``diff A B [--out FILE]``: two models of the same shapes, head by head."""
    from ..analyses.motion import moved_most
    from ..diff import diff
    from ..options import AnalysisOptions

    if args.out is not None:
        check_output_path(args.out)
    options = AnalysisOptions(args.rope_position, not args.no_fold_qk_norm)
    options_b = AnalysisOptions(args.rope_position, False) if args.unfold_b else None
    with progress_bar(args.quiet) as progress:
        result = diff(args.first, args.second, options, progress, policy_in_force(), options_b)
    table = result.table()
    if args.out is not None:
        write_table(table, args.out)
        wrote(f"wrote {len(table)} heads to {args.out}")
        return 0
    flips = int(table["parity_flip"].sum())
    print(
        f"{args.first} -> {args.second}: {len(table)} heads, {flips} change parity, distance "
        f"moved on the simplex (unit edges): median {table['distance'].median():.4f}, "
        f"max {table['distance'].max():.4f}"
    )
    top = moved_most(result, 10)[["layer", "head", "distance", "parity_first", "parity_last"]]
    renamed = top.rename(columns={"parity_first": "parity_A", "parity_last": "parity_B"})
    print_frame(renamed.round(4), index=False)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``trajectory`` and ``diff`` subcommands."""
    t = sub.add_parser(
        "trajectory",
        help="the checkpoints of a training run as one table with a step column",
        description="Analyse the checkpoints of a training run (a run directory of "
        "checkpoint-STEP folders as transformers' Trainer saves them, or checkpoints that name "
        "their step: .../checkpoint-1500, org/name@step1000) and write one row per checkpoint "
        "and head with a step column, ordered by step. Each checkpoint is analysed once and "
        "cached; resumable like a survey (run it again with the same --out). A directory "
        "holding a run store (recorded while the model trained: headforms.integrations) gives "
        "its records, read as they are, as far as the run has gone. Exit status: 0 all done, 1 "
        "some failed (one line each), 2 bad arguments.",
        parents=[
            out_option(required=True),
            runs_options(),
            analysis_options(),
            type2_tolerance_option(),
            quiet_flag("report failed checkpoints only"),
        ],
    )
    t.add_argument(
        "checkpoints",
        nargs="+",
        metavar="CHECKPOINT",
        help="a run directory (checkpoint folders or a run store), or checkpoints naming their "
        "step",
    )
    t.set_defaults(func=cmd_trajectory)
    d = sub.add_parser(
        "diff",
        help="two models of the same shapes, head by head",
        description="Match two models of the same shapes head by head (base and fine-tune, two "
        "seeds, folded and unfolded norms) and write layer, head, both profiles, the "
        "differences (B - A), the distance moved on the simplex and both parities; without "
        "--out, print the parity flips and the heads that moved most.",
        parents=[out_option(), analysis_options(), quiet_flag()],
    )
    d.add_argument("first", metavar="A", help="a model spec (as for analyze)")
    d.add_argument("second", metavar="B", help="a model spec of the same shapes")
    d.add_argument(
        "--unfold-b",
        action="store_true",
        help="analyse B with its QK-norm gains unfolded (A B the same model: what folding them "
        "changes)",
    )
    d.set_defaults(func=cmd_diff)
