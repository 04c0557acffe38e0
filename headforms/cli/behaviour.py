"""Forward passes on the command line: ``headforms attention MODEL`` (a prompt's attention
weights or pre-softmax scores) and ``headforms behaviour MODEL`` (every head's head-type
scores)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OptionError
from .common import (
    check_output_path,
    no_cache_flag,
    out_option,
    policy_in_force,
    quiet_flag,
    say,
    write_file,
    write_table,
    wrote,
)

PATTERN_FORMATS = (".json", ".npz")


def _pattern_selection(pattern: Any, layer: int | None, head: int | None) -> list[tuple[int, int]]:
    """The (layer, head) pairs asked for: one head, one layer's heads, or every head."""
    pattern.check_head(layer, head)
    layers = [layer] if layer is not None else range(pattern.n_layers)
    heads = [head] if head is not None else range(pattern.n_heads)
    return [(int(lay), int(h)) for lay in layers for h in heads]


def _json_matrix(values: np.ndarray) -> list[list[float | None]]:
    """Rows of a float32 matrix as JSON numbers (exact float32 values; NaN -> null)."""
    rows = values.astype(np.float64)
    if not np.isnan(rows).any():
        return rows.tolist()
    return np.where(np.isnan(rows), None, rows).tolist()


def write_pattern(pattern: Any, pairs: list[tuple[int, int]], kind: str, out: Path | None) -> None:
    """Write the chosen heads' matrices: JSON (``tokens``, ``layer``, ``head``, ``weights`` as
    a list of rows; several heads: a ``heads`` list of such entries) or ``.npz``; stdout JSON
    when ``out`` is None."""
    values = pattern.array(kind)
    common = {
        "model": pattern.model,
        "kind": kind,
        "tokens": pattern.tokens,
        "token_ids": pattern.token_ids,
    }
    suffix = out.suffix.lower() if out is not None else ".json"
    if suffix == ".npz":
        layers = np.array([p[0] for p in pairs])
        heads = np.array([p[1] for p in pairs])
        arrays = {
            kind: values[layers, heads] if len(pairs) > 1 else values[layers[0], heads[0]],
            "layer": layers,
            "head": heads,
            "tokens": np.array(pattern.tokens, dtype=str),
            "token_ids": np.array(pattern.token_ids),
        }

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez(fh, **arrays)

        content: Any = write
    else:
        entries = [
            {"layer": lay, "head": h, kind: _json_matrix(values[lay, h])} for lay, h in pairs
        ]
        document = {**common, **entries[0]} if len(entries) == 1 else {**common, "heads": entries}
        content = json.dumps(document, allow_nan=False).encode()
    if out is None:
        sys.stdout.write(content.decode() + "\n")
        return
    write_file(out, content)


def cmd_attention(args: argparse.Namespace) -> int:
    from ..behaviour import attention

    if args.out is not None:
        check_output_path(args.out, PATTERN_FORMATS)
    if args.head is not None and args.layer is None:
        raise OptionError("--head needs --layer (the head's layer)")
    pattern = attention(
        args.model,
        args.prompt,
        use_cache=not args.no_cache,
        progress=say(args.quiet),
        policy=policy_in_force(),
        layer=args.layer,
        head=args.head,
    )
    pairs = _pattern_selection(pattern, args.layer, args.head)
    kind = "scores" if args.scores else "weights"
    write_pattern(pattern, pairs, kind, args.out)
    if args.out is not None:
        wrote(f"wrote {len(pairs)} head(s) x {len(pattern.tokens)} tokens ({kind}) to {args.out}")
    return 0


def cmd_behaviour(args: argparse.Namespace) -> int:
    from ..behaviour import SCORE_COLUMNS, head_type_scores

    if args.out is not None:
        check_output_path(args.out)
    scores = head_type_scores(
        args.model,
        prompt=args.prompt,
        probe_length=args.probe_length,
        seed=args.seed,
        use_cache=not args.no_cache,
        progress=say(args.quiet),
        policy=policy_in_force(),
    )
    table = scores.table
    if args.out is not None:
        write_table(table, args.out)
        wrote(f"wrote {len(table)} heads to {args.out}")
        return 0
    for column in SCORE_COLUMNS:
        top = table.nlargest(args.top, column)
        heads = ", ".join(f"L{r.layer}H{r.head} {getattr(r, column):.3f}" for r in top.itertuples())
        print(f"{column:<16} {heads}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``attention`` and ``behaviour`` subcommands (forward passes, transformers)."""
    from ..behaviour import DEFAULT_PROBE_LENGTH, DEFAULT_PROMPT, DEFAULT_SEED

    a = sub.add_parser(
        "attention",
        parents=[
            out_option(PATTERN_FORMATS, what="the weights (default: JSON on stdout)"),
            no_cache_flag(),
            quiet_flag(),
        ],
        help="attention weights of a model on a prompt (a forward pass)",
        description="Run the model (transformers, eager attention) on a prompt and write the "
        "attention weights of one head (--layer L --head H), of one layer's heads (--layer L) "
        "or of every head: JSON (tokens, layer, head, weights as a list of rows; several heads "
        "under 'heads') or .npz; JSON on stdout without --out.",
    )
    a.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    a.add_argument(
        "--prompt", default=DEFAULT_PROMPT, help="the text (default: a repeated passage)"
    )
    a.add_argument("--layer", type=int, metavar="L", help="only this layer's heads")
    a.add_argument("--head", type=int, metavar="H", help="only this head (needs --layer)")
    a.add_argument("--scores", action="store_true", help="pre-softmax scores instead of weights")
    a.set_defaults(func=cmd_attention)
    b = sub.add_parser(
        "behaviour",
        parents=[out_option(what="the per-head table"), no_cache_flag(), quiet_flag()],
        help="head-type scores of every head (previous-token, first-token, duplicate, induction)",
        description="Score every head on a probe of R seeded random tokens repeated twice "
        "(previous_token, first_token, duplicate_token, induction; docs/MATH.md); with "
        "--prompt, previous_token and first_token are measured on the prompt. Writes one row "
        "per head (layer, head, the scores) to .csv, .json or .parquet; without --out, prints "
        "the top heads of each score.",
    )
    b.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    b.add_argument("--prompt", help="measure previous_token and first_token on this text")
    b.add_argument(
        "--probe-length",
        type=int,
        default=DEFAULT_PROBE_LENGTH,
        metavar="R",
        help=f"tokens in each copy of the probe (default {DEFAULT_PROBE_LENGTH})",
    )
    b.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, metavar="S", help="seed of the probe's tokens"
    )
    b.add_argument("--top", type=int, default=5, metavar="K", help="heads shown per score (5)")
    b.set_defaults(func=cmd_behaviour)
