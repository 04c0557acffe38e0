"""``headforms intervene MODEL --edit EDIT``: edit heads' forms (or outputs) and measure what the
model loses on a text, against matched random controls (:mod:`headforms.interventions`)."""

from __future__ import annotations

import argparse
import math
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

SHOWN_HEADS = 10
"""Heads listed on stdout after a per-head sweep (``--out`` has every row)."""


def text_argument(value: str | None, prompt: str | None = None) -> str | None:
    """``--text NAME|FILE`` (a shipped text by name, else a UTF-8 file) or ``--prompt TEXT``."""
    from ..interventions.text import TEXTS, read_text_file

    if value is not None and prompt is not None:
        raise OptionError("give the text as --text NAME|FILE or as --prompt TEXT, not both")
    if value is None:
        return prompt
    if value in TEXTS:
        return TEXTS[value].text
    return read_text_file(Path(value))


def _request(args: argparse.Namespace) -> Any:
    from ..interventions import request_of

    scopes = [flag for flag in ("heads", "layer", "parity") if getattr(args, flag) is not None]
    if args.all and scopes:
        raise OptionError(f"--all and --{scopes[0]} name two scopes: give one")
    text = text_argument(args.text, args.prompt)
    probe: bool | int = args.probe_length if args.probe_length is not None else args.probe
    return request_of(
        args.edit,
        heads=args.heads,
        layer=args.layer,
        parity=args.parity,
        each=args.each,
        text=text,
        max_tokens=args.max_tokens,
        controls=args.controls,
        seed=args.seed,
        probe=probe,
        match=args.match,
    )


def _number(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _print_row(result: Any) -> None:
    """One row (a joint edit, or one head) as lines of text."""
    row = result.table.iloc[0]
    request = result.request
    print(f"{result.model}: {request.edit} of {row['scope']} ({row['heads']} head(s))")
    print(
        f"  text: {result.meta.get('text', '')}, {row['tokens']} tokens; controls: "
        f"{row['controls']}, matched on {row['match']} (seed {request.seed})"
    )
    if result.measure == "delta_ce":
        print(
            f"  cross-entropy {_number(row['ce_original'])} -> {_number(row['ce_edited'])} nats: "
            f"delta_ce {_number(row['delta_ce'], 5)}, KL {_number(row['kl'], 5)}"
        )
    print(f"  cosine distance of the final hidden states {_number(row['cosine_distance'], 6)}")
    if math.isfinite(row["score_rms"]):
        print(
            f"  score change (RMS over visible pairs): edit {_number(row['score_rms'], 5)}, "
            f"controls' median {_number(row['control_score_rms'], 5)}"
        )
    print(f"  {verdict_line(row, result.measure, '')}")
    if result.measure == "delta_ce":
        print(f"  {verdict_line(row, 'kl', 'kl_')}")
    if "induction_loss_edited" in row:
        print(
            f"  induction loss (probe R={row['probe_length']}) "
            f"{_number(row['induction_loss_original'])} -> "
            f"{_number(row['induction_loss_edited'])}"
        )
        print(f"  {verdict_line(row, 'delta_induction_loss', 'induction_')}")
    if "induction_before" in row and not math.isnan(row["induction_before"]):
        scores = ", ".join(
            f"{name} {_number(row[f'{name}_before'], 3)} -> {_number(row[f'{name}_after'], 3)}"
            for name in ("previous_token", "first_token", "duplicate_token", "induction")
        )
        print(f"  head-type scores: {scores}")
    if "a_edited" in row and row["parity_edited"]:
        coords = ", ".join(f"{c} {_number(row[f'{c}_edited'], 3)}" for c in "abcd")
        print(f"  edited form at d = 0: {coords} ({row['parity_edited']}; was {row['parity']})")
    for note in result.notes:
        print(f"  note: {note}")


def verdict_line(row: Any, measure: str, prefix: str) -> str:
    """``delta_ce 4.11 [3.9, 4.3]; controls' median 0.02 [10-90%: ...]; p 0.03 (K = 32), 7/32
    smaller, 205x the median`` (the verdict's columns of one row)."""
    value = row["delta_induction_loss"] if prefix == "induction_" else row[measure]
    text = (
        f"{measure} {_number(value, 5)} [95%: {_number(row[prefix + 'low'], 5)}, "
        f"{_number(row[prefix + 'high'], 5)}]"
    )
    controls = int(row["controls"])
    if not controls:
        return text + "; no controls"
    effect = row[prefix + "effect"]
    return (
        text + f"; controls' median {_number(row[prefix + 'control_median'], 5)} "
        f"(10-90% {_number(row[prefix + 'control_p10'], 5)} .. "
        f"{_number(row[prefix + 'control_p90'], 5)}); p = {_number(row[prefix + 'p_value'], 4)} "
        f"(K = {controls}); {int(row[prefix + 'controls_smaller'])} of {controls} controls "
        f"changed it less; effect {_number(effect, 3)}x the controls' median; edit minus median "
        f"[95%: {_number(row[prefix + 'excess_low'], 5)}, "
        f"{_number(row[prefix + 'excess_high'], 5)}]"
    )


def cost_line(request: Any, heads: int | None) -> str:
    """What a request costs, said before it runs: its sequence passes (``heads``: the scope's
    size when known)."""
    if heads is None:
        return f"{request.edit}: K = {request.controlled} controls per row"
    passes = request.passes(heads)
    return (
        f"{request.edit} on {request.scope.label}: {passes} sequence passes "
        f"({'each head' if request.each else 'one row'}, 1 edit + {request.controlled} controls"
        f"{', on the text and the probe' if request.probe_length else ''})"
    )


def _print_sweep(result: Any) -> None:
    """A per-head sweep: the heads whose edit changed the measure most, and the spread."""
    table = result.table
    measure = result.measure
    request = result.request
    print(
        f"{result.model}: {request.edit} of each head of {request.scope.label} on its own "
        f"({len(table)} heads, {table['tokens'].iloc[0]} tokens, "
        f"{table['controls'].iloc[0]} controls each)"
    )
    values = table[measure]
    print(
        f"  {measure}: median {_number(float(values.median()), 5)}, "
        f"max {_number(float(values.max()), 5)}, min {_number(float(values.min()), 5)}"
    )
    columns = [
        "layer", "head", "parity", measure, "kl", "score_rms", "control_median", "p_value",
    ]  # fmt: skip
    columns = [c for c in columns if c in table]
    print_frame(table.nlargest(SHOWN_HEADS, measure)[columns].round(5), index=False)
    for note in result.notes:
        print(f"  note: {note}")
    print(f"(--out FILE writes every row: {len(table)})")


def cmd_intervene(args: argparse.Namespace) -> int:
    from ..interventions import intervention

    if args.out is not None:
        check_output_path(args.out)
    request = _request(args)
    from ..behaviour.run import locate_runnable

    locate_runnable(args.model, policy_in_force(), what="interventions")  # refusals first
    if not args.quiet:
        scope = request.scope
        heads = len(scope.heads) if scope.kind == "heads" else (None if request.each else 1)
        wrote("cost: " + cost_line(request, heads))
    with progress_bar(args.quiet, unit="pass") as progress:
        result = intervention(
            args.model,
            request,
            use_cache=not args.no_cache,
            progress=progress,
            policy=policy_in_force(),
        )
    if args.out is not None:
        write_table(result.table, args.out)
        wrote(f"wrote {len(result.table)} row(s) to {args.out}")
        return 0
    if request.each:
        _print_sweep(result)
    else:
        _print_row(result)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``intervene`` subcommand."""
    from ..behaviour.limits import DEFAULT_PROBE_LENGTH
    from ..interventions import DEFAULT_CONTROLS, DEFAULT_MAX_TOKENS, EDITS
    from ..interventions.controls import MATCHES
    from ..interventions.text import TEXTS

    p = sub.add_parser(
        "intervene",
        parents=[
            out_option(what="one row per edit (or per head with --each)"),
            no_cache_flag(),
            quiet_flag(),
        ],
        help="edit heads' forms and measure the change of the model's loss (against controls)",
        description="Replace the form of the chosen heads by an edited one at every relative "
        "position (or set their output to zero or its mean), run the model on a text (default: "
        "the Declaration of Independence, public domain) and measure the change of the "
        "next-token cross-entropy (delta_ce, nats) and the KL divergence, against K matched "
        "controls: random changes of the head's form in its span that move its pre-softmax "
        "scores as much as the edit does (--match). Scope: --heads, --layer, "
        "--parity or --all (default); together (one row) or --each on its own (one row per "
        "head). Edits: " + "; ".join(f"{e.name}: {e.summary}" for e in EDITS.values()) + ".",
    )
    p.add_argument("model", help="bundled name, local dir, .gguf file, or hub id[@revision]")
    p.add_argument("--edit", required=True, metavar="EDIT", help="one of: " + ", ".join(EDITS))
    p.add_argument("--heads", metavar="L.H,...", help="these heads (e.g. 3.1,4.2)")
    p.add_argument("--layer", type=int, metavar="L", help="every head of layer L")
    p.add_argument("--parity", metavar="TYPE", help="every head of parity I+, II or I- (d = 0)")
    p.add_argument("--all", action="store_true", help="every head of the model (the default)")
    p.add_argument(
        "--each", action="store_true", help="edit each head of the scope on its own (one row each)"
    )
    p.add_argument(
        "--text",
        metavar="NAME|FILE",
        help="measure on a shipped text (" + ", ".join(TEXTS) + ") or a UTF-8 text file",
    )
    p.add_argument("--prompt", metavar="TEXT", help="measure on this text")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        metavar="T",
        help=f"tokens of the text read (default {DEFAULT_MAX_TOKENS})",
    )
    p.add_argument(
        "--controls",
        type=int,
        default=DEFAULT_CONTROLS,
        metavar="K",
        help=f"matched random controls per edit (default {DEFAULT_CONTROLS}; 0: none)",
    )
    p.add_argument(
        "--match",
        default="scores",
        choices=MATCHES,
        help="what a control has of the edit: scores (default: a random form in the head's "
        "span with the edit's RMS change of the head's scores on the text), span (its Frobenius "
        "size, in the span), frobenius (its Frobenius size, over all N input dimensions)",
    )
    p.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of controls, probe and bootstrap"
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="also the induction loss and head-type scores on the repeated-token probe",
    )
    p.add_argument(
        "--probe-length",
        type=int,
        metavar="R",
        help=f"tokens in each copy of the probe (default {DEFAULT_PROBE_LENGTH}; implies --probe)",
    )
    p.set_defaults(func=cmd_intervene)
