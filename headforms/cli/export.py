"""``headforms export MODEL --html FILE``: the model's gallery as one self-contained HTML file
that opens offline with no server (:mod:`headforms.gallery`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import OptionError
from .common import (
    check_output_path,
    no_cache_flag,
    policy_in_force,
    progress_bar,
    quiet_flag,
    write_file,
    wrote,
)

HTML = (".html",)


def cmd_export(args: argparse.Namespace) -> int:
    """Analyse the model (every RoPE position of ``--rope-positions`` for a RoPE model), its
    Gaussian baseline when its shapes are known, and write the gallery."""
    from ..engine import analyze, sweep
    from ..gallery import gallery_html
    from ..model_analysis import model_baseline
    from ..options import AnalysisOptions, SweepOptions
    from ..sources import locate

    check_output_path(args.html, HTML)
    if args.no_frames and args.rope_positions:
        raise OptionError("give --rope-positions A:B (the frames) or --no-frames, not both")
    policy = policy_in_force()
    use_cache = not args.no_cache
    with progress_bar(args.quiet) as progress:
        located = locate(args.model, policy)
        analysis = analyze(
            located, options=AnalysisOptions(), progress=progress, use_cache=use_cache
        )
        paths = None
        if analysis.card.rotary and not args.no_frames:
            options = SweepOptions(args.rope_positions or ())
            paths = sweep(located, options=options, progress=progress, use_cache=use_cache)
        elif args.rope_positions:
            raise OptionError(
                f"{args.model} has no RoPE positions to animate (its positions: "
                f"{analysis.card.positional}; a published table holds d = 0 only); leave out "
                "--rope-positions"
            )
        # a published table without N has no baseline: the heatmaps stand alone
        baseline = model_baseline(analysis.card) if analysis.card.has_baseline else None
    page = gallery_html(analysis, paths, baseline)
    write_file(args.html, page.encode("utf-8"))
    size = len(page.encode("utf-8")) / 1e6
    frames = f", {paths.n_points} RoPE positions as frames" if paths is not None else ""
    wrote(f"wrote the gallery of {analysis.card.name} ({size:.1f} MB{frames}) to {args.html}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``export`` subcommand."""
    p = sub.add_parser(
        "export",
        help="a model's gallery as one HTML file that opens offline",
        description="Write one self-contained HTML file (plotly.js embedded; no server, no "
        "network): the 3D simplex and the triangle (for a RoPE model, every RoPE position as "
        "frames with a slider), the energy and pairing heatmaps beside their Gaussian baseline, "
        "parity by layer and a head table; clicking a head shows its numbers and its spectrum.",
        parents=[no_cache_flag(), quiet_flag()],
    )
    p.add_argument(
        "model",
        help="bundled name, local dir, .gguf file, hub id[@revision] or a published table "
        "(FILE::MODEL, DIR::MODEL)",
    )
    p.add_argument("--html", type=Path, required=True, metavar="FILE", help="the page to write")
    p.add_argument(
        "--rope-positions",
        metavar="A:B",
        help="the RoPE positions of the frames (default 0:128); RoPE models only",
    )
    p.add_argument(
        "--no-frames",
        action="store_true",
        help="a RoPE model at position 0 only (a smaller file, no slider)",
    )
    p.set_defaults(func=cmd_export)
