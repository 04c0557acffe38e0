"""``headforms analyze MODEL`` (one position, or every RoPE position of a range at once) and
``headforms models``. Neither the summary printed by ``analyze`` nor its CSV or JSON file needs
pandas (the tables are held as numpy columns); pandas is imported only to write parquet."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import numpy as np

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
    write_table,
    wrote,
)


def summary(columns: Mapping[str, np.ndarray], name: str, baseline: Mapping | None = None) -> str:
    """The text summary of an analysis: parity shares (Table 2) and metric statistics."""
    from ..columns import BASELINE_PREFIX
    from ..forms import parity_counts

    counts = parity_counts(columns["parity"])
    total = len(columns["parity"])
    shares = [100.0 * counts[p] / total if total else float("nan") for p in counts]
    parity = format_table({name: [*shares, total]}, [*(f"{p} %" for p in counts), "heads"], 1)
    metrics = ["a", "b", "c", "d", "energy", "pairing"]
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
    if args.rope_positions is not None:
        return _analyze_positions(args)
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
    if args.out is not None:
        columns = result.table_columns(model_baseline(card) if args.baseline else None)
        write_table(columns, args.out)
        wrote(f"wrote {len(columns['layer'])} heads to {args.out}")
    else:
        print(
            f"{card.name}: {card.family}, {card.n_layers} layers x {card.n_heads} heads "
            f"({card.n_kv_heads} kv), N={card.model_dim}, n={card.head_dim}, {card.storage}"
        )
        base = model_baseline(card).columns if args.baseline else None
        print(summary(result.columns, card.name, base))
    return 0


def _analyze_positions(args: argparse.Namespace) -> int:
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
        columns = result.columns
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
    print_points(result, "d")
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
    from ..sources import BUNDLED_MODELS, DEFAULT_MODEL

    for name, model in BUNDLED_MODELS.items():
        mark = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {model.title}{mark}\n{'':<14} {model.description}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``analyze`` and ``models`` subcommands."""
    from ..options import MAX_ROPE_POSITIONS

    p = sub.add_parser(
        "analyze",
        help="per-head table of a model",
        parents=[analysis_options(), out_option(), no_cache_flag(), quiet_flag()],
    )
    p.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
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
    m = sub.add_parser("models", help="list the bundled (offline) models")
    m.set_defaults(func=cmd_models)
