"""Command line: ``python -m headforms analyze MODEL`` and ``python -m headforms models``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pandas as pd

from .errors import HeadformsError, OptionError

OUTPUT_FORMATS = (".csv", ".json", ".parquet")


def check_output_path(path: Path) -> str:
    """The table format of ``path`` (its lower-case suffix); a clear error before any work."""
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise OptionError(
            f"--out {path}: unknown extension {suffix or '(none)'}; accepted: "
            + ", ".join(OUTPUT_FORMATS)
        )
    if not path.parent.is_dir():
        raise OptionError(f"--out {path}: directory {path.parent} does not exist")
    return suffix


def _json_records(table: pd.DataFrame) -> str:
    """JSON records with every float exact (shortest round-trip repr; NaN -> null).

    ``DataFrame.to_json`` keeps at most 15 decimals, which loses small values' digits.
    """
    records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return json.dumps(records, indent=1, allow_nan=False, default=lambda v: v.item())


def write_table(table: pd.DataFrame, path: Path) -> None:
    """Write the per-head table by extension (csv, json records, parquet), atomically."""
    suffix = check_output_path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if suffix == ".csv":
            table.to_csv(tmp, index=False)
        elif suffix == ".json":
            tmp.write_text(_json_records(table))
        else:
            table.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as exc:
        raise OptionError(f"--out {path}: cannot write: {exc.strerror or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


_progress_line_open = False


def _progress(done: int, total: int, message: str) -> None:
    global _progress_line_open
    _progress_line_open = done < total
    print(
        f"\r[{done:>4}/{total}] {message:<40}",
        end="" if done < total else "\n",
        file=sys.stderr,
        flush=True,
    )


def cmd_analyze(args: argparse.Namespace) -> int:
    from .analyses.parity import parity_table
    from .engine import analyze

    if args.out is not None:
        check_output_path(args.out)
    result = analyze(
        args.model,
        rope_position=args.rope_position,
        fold_qk_norm=not args.no_fold_qk_norm,
        progress=None if args.quiet else _progress,
        use_cache=not args.no_cache,
    )
    card = result.card
    table = result.table(baseline=args.baseline)
    if args.out is not None:
        write_table(table, args.out)
        print(f"wrote {len(table)} heads to {args.out}", file=sys.stderr)
    else:
        print(
            f"{card.name}: {card.family}, {card.n_layers} layers x {card.n_heads} heads "
            f"({card.n_kv_heads} kv), N={card.model_dim}, n={card.head_dim}, {card.storage}"
        )
        print(parity_table({card.name: result.heads}).to_string(float_format="{:.1f}".format))
        cols = ["a", "b", "c", "d", "energy", "pairing"]
        if args.baseline:
            cols += [c for c in table.columns if c in ("rand_energy", "rand_pairing")]
        print(table[cols].describe().loc[["mean", "50%", "min", "max"]].to_string())
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from .sources import BUNDLED_MODELS, DEFAULT_MODEL

    for name, model in BUNDLED_MODELS.items():
        mark = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {model.title}{mark}\n{'':<14} {model.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(
        prog="python -m headforms",
        description="Profiles of attention heads as bilinear forms (arXiv 2609.22990).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("analyze", help="per-head table of a model")
    p.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    p.add_argument(
        "--rope-position",
        type=int,
        default=0,
        metavar="D",
        help="relative position d = query - key for RoPE models (default 0)",
    )
    p.add_argument("--out", type=Path, help="write the table (.csv, .json or .parquet)")
    p.add_argument(
        "--no-fold-qk-norm",
        action="store_true",
        help="analyse raw Q/K without folding QK-norm gains",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="add the Gaussian baseline of the same shapes as rand_* columns",
    )
    p.add_argument("--no-cache", action="store_true", help="recompute, ignore the cache")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_analyze)
    m = sub.add_parser("models", help="list the bundled (offline) models")
    m.set_defaults(func=cmd_models)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line on stderr and exit code 2 for any bad input, never a traceback."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except HeadformsError as exc:
        print(("\n" if _progress_line_open else "") + f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
