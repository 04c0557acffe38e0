"""``headforms why MODEL``: each head's pre-softmax scores on a text split into its form's positive
lobe, negative lobe, antisymmetric part and the rest; the realised shares against the weights'
(:mod:`headforms.why`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import OptionError
from .common import (
    check_output_path,
    no_cache_flag,
    out_option,
    policy_in_force,
    print_frame,
    progress_bar,
    quiet_flag,
    write_table,
    wrote,
)

SHOWN_HEADS = 8
"""Heads listed on stdout by their antisymmetric share (``--out`` has every row)."""
SHOWN_PAIRS = 3
"""Top pairs shown per direction when one head is asked for."""


def _request(args: argparse.Namespace) -> Any:
    from ..interventions.text import read_text_file
    from ..why import request_of

    if args.text is not None and args.prompt is not None:
        raise OptionError("give the text as --text FILE or as --prompt TEXT, not both")
    text = read_text_file(args.text) if args.text is not None else args.prompt
    return request_of(
        heads=args.heads,
        layer=args.layer,
        parity=args.parity,
        text=text,
        max_tokens=args.max_tokens,
        pairs=args.pairs,
    )


def pairs_path(out: Path) -> Path:
    """Where ``--pairs`` writes its table without ``--pairs-out``: beside ``--out``."""
    return out.with_name(f"{out.stem}_pairs{out.suffix}")


def _print_summary(result: Any) -> None:
    """Median shares per parity type, the heads with the largest antisymmetric share and, for
    one head, what carries it and its top pairs."""
    from ..why.summary import carried_by, first_margins, parity_medians

    table = result.table
    print(
        f"{result.model}: {len(table)} head(s) on {table['tokens'].iloc[0]} tokens; realised "
        "shares (mean square, within-row spread) against the weights' (d = 0)"
    )
    print("median shares per parity type:")
    print_frame(parity_medians(table).round(3), index=False)
    columns = ["layer", "head", "parity", "share_pos", "share_neg", "share_anti", "spread_anti"]
    columns += ["weight_anti", "rest_share"]
    print(f"largest antisymmetric shares (of {len(table)}):")
    print_frame(table.nlargest(SHOWN_HEADS, "share_anti")[columns].round(3), index=False)
    print(
        f"largest gap between parts' sum and the model's scores: {table['split_error'].max():.2e}"
    )
    if len(table) == 1:
        row = table.iloc[0]
        print(f"L{row['layer']}.H{row['head']} ({row['parity']}) is carried by {carried_by(row)}")
        print(f"  the first key's margin over the row's other keys: {first_margins(row)}")
    pairs = result.pair_table
    if len(table) == 1 and len(pairs):
        shown = pairs[pairs["place"] <= SHOWN_PAIRS]
        columns = ["lobe", "rank", "eigenvalue", "query_position", "key_position"]
        columns += ["query_token", "key_token", "contribution", "score"]
        print("top pairs of each lobe direction (contribution at the pair's own d):")
        print_frame(shown[columns].round(4), index=False)
    print("(--out FILE writes every head's row; --pairs K the top pairs of each direction)")


def cmd_why(args: argparse.Namespace) -> int:
    from ..why import why

    if args.pairs_out is not None and not args.pairs:
        raise OptionError("--pairs-out needs --pairs K (the top pairs per direction)")
    if args.out is not None:
        check_output_path(args.out)
    pairs_out = args.pairs_out
    if pairs_out is None and args.pairs and args.out is not None:
        pairs_out = pairs_path(args.out)
    if pairs_out is not None:
        check_output_path(pairs_out)
    request = _request(args)
    with progress_bar(args.quiet, unit="head") as progress:
        result = why(
            args.model,
            request,
            use_cache=not args.no_cache,
            progress=progress,
            policy=policy_in_force(),
        )
    if args.out is None and pairs_out is None:
        _print_summary(result)
        return 0
    if args.out is not None:
        write_table(result.table, args.out)
        wrote(f"wrote {len(result.table)} row(s) to {args.out}")
    if pairs_out is not None:
        write_table(result.pair_table, pairs_out)
        wrote(f"wrote {len(result.pair_table)} pair(s) to {pairs_out}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``why`` subcommand."""
    from ..interventions import DEFAULT_MAX_TOKENS
    from ..why import DIRECTIONS, MAX_PAIRS

    p = sub.add_parser(
        "why",
        parents=[out_option(what="one row per head"), no_cache_flag(), quiet_flag()],
        help="split each head's scores on a text into its form's lobes and antisymmetric part",
        description="Run the model on a text (default: the Declaration of Independence, public "
        "domain) and split each head's pre-softmax scores exactly into its form's positive "
        "lobe, negative lobe and antisymmetric part (at each pair's own RoPE distance) and the "
        "rest (biases, position biases). One row per head: each part's share of the mean "
        "square (share_*) and of the within-row spread (spread_*), the rest's, against the "
        "shares the weights alone give at d = 0 (weight_*). Scope: --heads, --layer, --parity "
        "or every head (the default).",
    )
    p.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    p.add_argument("--heads", metavar="L.H,...", help="these heads (e.g. 3.1,18.8)")
    p.add_argument("--layer", type=int, metavar="L", help="every head of layer L")
    p.add_argument("--parity", metavar="TYPE", help="every head of parity I+, II or I- (d = 0)")
    p.add_argument("--text", type=Path, metavar="FILE", help="split on this UTF-8 text file")
    p.add_argument("--prompt", metavar="TEXT", help="split on this text")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        metavar="T",
        help=f"tokens of the text read (default {DEFAULT_MAX_TOKENS})",
    )
    p.add_argument(
        "--pairs",
        type=int,
        default=0,
        metavar="K",
        help=f"also the K token pairs (at most {MAX_PAIRS}) with the largest contribution of "
        f"each of the top {DIRECTIONS} directions of each lobe, per head (a second table)",
    )
    p.add_argument(
        "--pairs-out",
        type=Path,
        metavar="FILE",
        help="where --pairs writes its table (default: beside --out, as NAME_pairs.EXT)",
    )
    p.set_defaults(func=cmd_why)
