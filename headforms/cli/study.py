"""``headforms study MODEL [--texts ...] --out DIR``: every number of docs/interventions.md in one
command (:mod:`headforms.study`): CSV tables and one self-contained HTML report (its figures and
plotly.js inside, nothing fetched), the exact command, versions and seeds at its top."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..errors import OptionError
from .common import policy_in_force, progress_bar, quiet_flag, wrote

REPORT = "report.html"


def cmd_study(args: argparse.Namespace) -> int:
    from ..study import run_study
    from ..study_jobs import check_jobs, default_jobs
    from ..study_options import StudyOptions, texts_named
    from ..study_report import TABLES, report_html, summary_text

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise OptionError(f"--out {out}: not a directory")
    options = StudyOptions(
        texts=texts_named(args.texts.split(",")),
        max_tokens=args.max_tokens,
        controls=args.controls,
        seed=args.seed,
        match=args.match,
        head_controls=args.head_controls,
        sweep_edits=tuple(args.sweeps.split(",")) if args.sweeps else (),
        whole_edits=tuple(args.edits.split(",")) if args.edits else (),
    )
    policy_in_force()
    jobs = check_jobs(default_jobs() if args.jobs is None else args.jobs)
    if not args.quiet:
        wrote(
            f"cost: {len(options.texts)} texts x ({len(options.whole_edits)} whole-model edits "
            f"with K = {options.controls} controls + {len(options.sweep_edits)} per-head sweeps "
            f"with {options.head_controls} control(s) per head): every head of the model, "
            "counted in sequence passes on the progress bar"
            + (f"; {jobs} worker processes, each holding the model" if jobs > 1 else "")
        )
    with progress_bar(args.quiet, unit="pass") as progress:
        study = run_study(args.model, options, progress, jobs)
    study.meta["command"] = options.command(args.model).replace(" DIR", " " + shlex.quote(str(out)))
    out.mkdir(parents=True, exist_ok=True)
    for name in TABLES:
        getattr(study, name).to_csv(out / f"{name}.csv", index=False)
    (out / REPORT).write_text(report_html(study), encoding="utf-8")
    wrote(f"wrote {len(TABLES)} tables and {REPORT} to {out} in {study.meta['seconds']:.0f} s")
    print(summary_text(study))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``study`` subcommand."""
    from ..interventions.controls import MATCHES
    from ..interventions.text import TEXTS
    from ..study_options import (
        DEFAULT_STUDY_CONTROLS,
        HEAD_CONTROLS,
        SWEEP_EDITS,
        WHOLE_MODEL_EDITS,
    )

    p = sub.add_parser(
        "study",
        parents=[quiet_flag()],
        help="every intervention number of the docs in one run: tables and an HTML report",
        description="On each text: every whole-model edit against K matched controls, per-head "
        "sweeps against a dose-response of per-head controls, and the correlations of the "
        "per-head cost with the geometry and the form's size (Spearman's rho, bootstrap "
        "interval, p-value). Writes CSV tables and report.html (self-contained, offline) into "
        "DIR.",
    )
    p.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    p.add_argument(
        "--out", required=True, metavar="DIR", help="directory for the tables and report"
    )
    p.add_argument(
        "--texts",
        default=",".join(TEXTS),
        metavar="NAME|FILE,...",
        help="shipped texts (" + ", ".join(TEXTS) + ") or UTF-8 files (default: the three)",
    )
    p.add_argument("--max-tokens", type=int, default=128, metavar="T", help="tokens per text")
    p.add_argument(
        "--controls",
        type=int,
        default=DEFAULT_STUDY_CONTROLS,
        metavar="K",
        help=f"controls per whole-model edit (default {DEFAULT_STUDY_CONTROLS})",
    )
    p.add_argument(
        "--head-controls",
        type=int,
        default=HEAD_CONTROLS,
        metavar="K",
        help=f"controls per head, sweep edit and text (default {HEAD_CONTROLS})",
    )
    p.add_argument("--edits", default=",".join(WHOLE_MODEL_EDITS), help="whole-model edits")
    p.add_argument("--sweeps", default=",".join(SWEEP_EDITS), help="per-head sweep edits")
    p.add_argument("--match", default="scores", choices=MATCHES, help="how controls are matched")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="the one seed of the study")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="J",
        help="worker processes, each holding the model (default: the cores, at most 4; 1 in "
        "hosted mode); the results do not depend on it",
    )
    p.set_defaults(func=cmd_study)
