"""``headforms survey MODEL...``: many models into one per-head table and a model summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import (
    SURVEY_EXIT_FAILED,
    analysis_options,
    check_output_path,
    options_of,
    out_option,
    policy_in_force,
    print_frame,
    quiet_flag,
    runs_options,
    tolerance_of,
    type2_tolerance_option,
    with_parity,
    write_table,
    wrote,
)


def cmd_survey(args: argparse.Namespace) -> int:
    from .. import survey
    from ..presets import preset

    out = args.out
    check_output_path(out)
    models = list(args.models)
    if args.list is not None:
        models += survey.read_model_list(args.list)
    if args.preset is not None:
        models += preset(args.preset)
    options = options_of(args)
    tolerance = tolerance_of(args)
    policy = policy_in_force()
    specs = survey.survey_specs(models, policy)

    def report(outcome: survey.Outcome, done: int, total: int) -> None:
        if outcome.status == "done":
            line = f"{outcome.heads} heads in {outcome.seconds:.1f} s"
        else:
            line = f"FAILED: {outcome.error}"
        if not args.quiet or outcome.status != "done":
            print(f"[{done}/{total}] {outcome.spec}: {line}", file=sys.stderr, flush=True)

    result = survey.run_survey(
        specs,
        out,
        options,
        jobs=args.jobs,
        memory_budget=args.memory_budget,
        scheduler=args.scheduler,
        report=report,
        policy=policy,
    )
    if len(result.table):
        table, summary = result.table, result.summary
        if tolerance is not None:
            from ..analyses.survey import split_survey, summary_table

            table = with_parity(table, tolerance)
            summary = summary_table(split_survey(table), tolerance)
        write_table(table, out)
        summary_out = survey_summary_path(out)
        write_table(summary.reset_index(), summary_out)
        wrote(
            f"wrote {len(table)} heads of {len(summary)} models to {out}, the "
            f"summary to {summary_out}"
        )
        print_frame(summary.round(3))
    for outcome in result.failed:
        print(f"failed: {outcome.spec}: {outcome.error}", file=sys.stderr)
    return SURVEY_EXIT_FAILED if result.failed else 0


def survey_summary_path(out: Path) -> Path:
    """The summary table written beside a survey's per-head table: ``heads.summary.csv``."""
    return out.with_name(f"{out.stem}.summary{out.suffix}")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``survey`` subcommand."""
    p = sub.add_parser(
        "survey",
        help="many models into one per-head table and a model summary",
        description="Analyse many models (concurrently within a memory budget, or as tasks on "
        "a Dask cluster) into one per-head table with a model column, and print the model "
        "summary (parity shares as in Table 2, mean profile, energy, pairing, balance), also "
        "written beside it as OUT.summary.EXT. Resumable: run it again with the same --out and "
        "the models already done are skipped. Exit status: 0 all models done, 1 some failed "
        "(one line each), 2 bad arguments.",
        parents=[
            out_option(required=True, what="the per-head table"),
            runs_options(),
            analysis_options(),
            type2_tolerance_option(),
            quiet_flag("report failed models only"),
        ],
    )
    p.add_argument(
        "models",
        nargs="*",
        metavar="MODEL",
        help="bundled name, local dir, .gguf, hub id[@revision], or a published table file "
        "(all its models) / FILE::MODEL",
    )
    p.add_argument(
        "--list", type=Path, metavar="FILE", help="more models, one per line (#: comment)"
    )
    p.add_argument("--preset", metavar="NAME", help="a named list of models: paper (its 14 models)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run each model as a task on this Dask distributed scheduler (tcp://host:8786); "
        "its workers must see --out's directory",
    )
    p.set_defaults(func=cmd_survey)
