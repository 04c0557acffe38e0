"""``headforms analyze MODEL`` (one position, or every RoPE position of a range at once) and
``headforms models``. Neither the summary printed by ``analyze`` nor its CSV or JSON file needs
pandas (the tables are held as numpy columns); pandas is imported only to write parquet."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..columns import PROFILE
from ..errors import OptionError
from .common import (
    analysis_options,
    check_output_path,
    format_table,
    no_cache_flag,
    options_of,
    out_option,
    policy_in_force,
    print_points,
    progress_bar,
    quiet_flag,
    tolerance_of,
    type2_tolerance_option,
    with_parity,
    write_table,
    wrote,
)


def summary(
    columns: Mapping[str, np.ndarray],
    name: str,
    baseline: Mapping | None = None,
    tolerance: float | None = None,
) -> str:
    """The text summary of an analysis: parity shares (Table 2, Type II ``tolerance``: default
    the paper's) and metric statistics."""
    from ..columns import BASELINE_PREFIX
    from ..forms import parity_counts, parity_labels

    labels = columns["parity"]
    if tolerance is not None:
        labels = parity_labels(columns["c_sym"], columns["d_sym"], tolerance)
    counts = parity_counts(labels)
    total = len(labels)
    shares = [100.0 * counts[p] / total if total else float("nan") for p in counts]
    parity = format_table({name: [*shares, total]}, [*(f"{p} %" for p in counts), "heads"], 1)
    metrics = [*PROFILE, "energy", "pairing"]
    values = {m: np.asarray(columns[m], dtype=float) for m in metrics}
    if baseline is not None:
        for m in ("energy", "pairing"):
            values[BASELINE_PREFIX + m] = np.asarray(baseline[m], dtype=float)
    stats = {
        name: [_of_present(statistic, v) for v in values.values()]
        for name, statistic in (
            ("mean", np.mean),
            ("median", np.median),
            ("min", np.min),
            ("max", np.max),
        )
    }
    return parity + "\n\n" + format_table(stats, list(values), 4)


def _of_present(statistic: Any, values: np.ndarray) -> float:
    """``statistic`` of the values that are present (not NaN); NaN when none is (a published
    table may lack a column: shown as a dash, without numpy's warning naming its own files)."""
    present = values[~np.isnan(values)]
    return float(statistic(present)) if present.size else float("nan")


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..engine import analyze
    from ..model_analysis import model_baseline

    if args.out is not None:
        check_output_path(args.out)
    tolerance = tolerance_of(args)
    if args.rope_positions is not None:
        return _analyze_positions(args, tolerance)
    options = options_of(args)
    with progress_bar(args.quiet) as progress:
        result = analyze(
            args.model,
            options=options,
            progress=progress,
            use_cache=not args.no_cache,
            policy=policy_in_force(),
        )
    card = result.card
    baseline = model_baseline(card) if args.baseline else None
    if args.out is not None:
        columns = with_parity(result.table_columns(baseline), tolerance)
        write_table(columns, args.out)
        wrote(f"wrote {len(columns['layer'])} heads to {args.out}")
    else:
        print(
            f"{card.name}: {card.family}, {card.n_layers} layers x {card.n_heads} heads "
            f"({card.n_kv_heads} kv), N={card.model_dim}, n={card.head_dim}, {card.storage}"
        )
        base = baseline.columns if baseline is not None else None
        print(summary(result.columns, card.name, base, tolerance))
    return 0


def _analyze_positions(args: argparse.Namespace, tolerance: float | None) -> int:
    """``analyze MODEL --rope-positions A:B``: every head at every position, one sweep."""
    from ..engine import sweep
    from ..options import SweepOptions

    if args.rope_position:
        raise OptionError("give --rope-position D or --rope-positions A:B, not both")
    if args.spectra:
        raise OptionError(
            "--spectra applies to one position; a sweep over --rope-positions writes the "
            "per-head rows of every position"
        )
    options = SweepOptions(args.rope_positions, not args.no_fold_qk_norm)
    with progress_bar(args.quiet) as progress:
        result = sweep(
            args.model,
            options=options,
            progress=progress,
            use_cache=not args.no_cache,
            policy=policy_in_force(),
        )
    card = result.card
    if args.out is not None:
        columns = with_parity(result.columns, tolerance)
        if args.baseline:
            columns = _with_baseline(columns, result)
        write_table(columns, args.out)
        wrote(
            f"wrote {len(columns['layer'])} rows ({len(result.positions)} RoPE positions x "
            f"{card.total_heads} heads) to {args.out}"
        )
        return 0
    print(
        f"{card.name}: {card.n_layers} layers x {card.n_heads} heads at "
        f"{len(result.positions)} RoPE positions ({result.positions[0]} to "
        f"{result.positions[-1]})"
    )
    print_points(result, "d", tolerance)
    return 0


def _with_baseline(columns: dict[str, np.ndarray], result: Any) -> dict[str, np.ndarray]:
    """A sweep's long table (numpy columns) with the Gaussian baseline's metrics (which no
    position changes) as ``rand_*`` columns beside every position's row of the same head."""
    from ..baseline import gaussian_baseline
    from ..columns import BASELINE_PREFIX, METRIC_COLUMNS

    base = gaussian_baseline(result.card.baseline_shapes).columns
    tiled = {
        BASELINE_PREFIX + name: np.tile(np.asarray(base[name]), result.n_points)
        for name in METRIC_COLUMNS
    }
    return {**columns, **tiled}


def cmd_models(args: argparse.Namespace) -> int:
    """The bundled models, or (``models FILE``) the models of a published table."""
    if args.source is not None:
        return _table_listing(args.source)
    from ..sources import BUNDLED_MODELS, DEFAULT_MODEL

    for name, model in BUNDLED_MODELS.items():
        mark = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {model.title}{mark}\n{'':<14} {model.description}")
    return 0


def _table_listing(source: str) -> int:
    """One line per model of a published table: its spec, heads, and whether its spectra file
    is beside the table (nothing but the table is read)."""
    from ..sources import locate, parse_spec
    from ..tables import table_listing

    parsed = parse_spec(source, policy_in_force())
    if parsed.kind != "table":
        raise OptionError(
            f"{source!r} is not a published table; `headforms models FILE` lists the models of a "
            "table file (.csv, .parquet, .json) or of a directory holding head_statistics.csv"
        )
    for entry in table_listing(locate(parsed)):
        spectra = f"spectra: {entry.spectra}" if entry.spectra else "no spectra file"
        print(f"{entry.spec}\n    {entry.heads} heads ({entry.layers} layers), {spectra}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``analyze`` and ``models`` subcommands."""
    from ..options import MAX_ROPE_POSITIONS

    p = sub.add_parser(
        "analyze",
        help="per-head table of a model",
        parents=[
            analysis_options(),
            type2_tolerance_option(),
            out_option(),
            no_cache_flag(),
            quiet_flag(),
        ],
    )
    p.add_argument(
        "model",
        help="bundled name, local dir, .gguf file, hub id[@revision], or a published table: "
        "FILE::MODEL, DIR::MODEL (the author's head_statistics.csv and <model>_spectra.npz)",
    )
    p.add_argument(
        "--rope-positions",
        metavar="A:B",
        help="every RoPE position of a range at once, one row per head and position with a "
        "rope_position column: A:B (both included), A:B:STEP or a comma list; at most "
        f"{MAX_ROPE_POSITIONS} positions (RoPE models only)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="add the Gaussian baseline of the same shapes (rand_* columns)",
    )
    p.add_argument(
        "--spectra",
        nargs="+",
        default=[],
        choices=["sv_a", "eig_l_abs", "all"],
        help="also compute and store these spectra (singular values of A, |eigenvalues of L|; "
        "all: both), as the dashboard does: a later dashboard visit is then a cache read",
    )
    p.set_defaults(func=cmd_analyze)
    m = sub.add_parser(
        "models",
        help="list the bundled (offline) models, or the models of a published table",
    )
    m.add_argument(
        "source",
        nargs="?",
        metavar="FILE",
        help="a published table (.csv, .parquet, .json) or a directory of the author's files "
        "(head_statistics.csv, <model>_spectra.npz): list its models",
    )
    m.set_defaults(func=cmd_models)
