"""Command line: ``headforms analyze MODEL`` (``--rope-positions A:B``: every position at once),
``models``, ``survey MODEL...``, ``trajectory CHECKPOINT...``, ``diff A B``, ``serve``,
``attention MODEL``, ``behaviour MODEL``.

Also ``python -m headforms ...``. Bad input gives one line on stderr and exit status 2, never a
traceback. The summary printed by ``analyze`` needs no pandas; pandas is imported only to write
a table file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import HeadformsError, OptionError

OUTPUT_FORMATS = (".csv", ".json", ".parquet")


def check_output_path(path: Path, formats: Sequence[str] = OUTPUT_FORMATS) -> str:
    """The format of ``path`` (its lower-case suffix, one of ``formats``: by default the table
    formats); a clear error before any work."""
    suffix = path.suffix.lower()
    if suffix not in formats:
        raise OptionError(
            f"--out {path}: unknown extension {suffix or '(none)'}; accepted: " + ", ".join(formats)
        )
    if not path.parent.is_dir():
        raise OptionError(f"--out {path}: directory {path.parent} does not exist")
    return suffix


def _json_records(table: Any) -> str:
    """JSON records with every float exact (shortest round-trip repr; NaN -> null).

    ``DataFrame.to_json`` keeps at most 15 decimals, which loses small values' digits.
    """
    records = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return json.dumps(records, indent=1, allow_nan=False, default=lambda v: v.item())


def write_table(table: Any, path: Path) -> None:
    """Write a table (a ``DataFrame``) by extension: csv, json records or parquet, atomically."""
    from .store import write_atomic

    suffix = check_output_path(path)

    def write(tmp: Path) -> None:
        if suffix == ".csv":
            table.to_csv(tmp, index=False)
        elif suffix == ".json":
            tmp.write_text(_json_records(table))
        else:
            table.to_parquet(tmp, index=False)

    try:
        write_atomic(path, write)
    except OSError as exc:
        raise OptionError(f"--out {path}: cannot write: {exc.strerror or exc}") from exc


class _Progress:
    """Per-layer progress on stderr (a tqdm bar), closed before any error line."""

    def __init__(self) -> None:
        self.bar: Any = None

    def __call__(self, done: int, total: int, message: str) -> None:
        from tqdm import tqdm

        if self.bar is None or self.bar.total != total:
            self.close()
            self.bar = tqdm(total=total, unit="layer", file=sys.stderr, leave=False, disable=None)
        self.bar.set_description_str(message[:40])
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[_Progress | None]:
    """A command's progress bar (None with ``--quiet``), closed however the command ends."""
    progress = None if quiet else _Progress()
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()


def format_table(rows: Mapping[str, Sequence[Any]], header: Sequence[str], digits: int) -> str:
    """A plain text table: row label, then right-aligned cells; floats with ``digits`` places."""

    def cell(value: Any) -> str:
        if isinstance(value, (float, np.floating)):
            return "—" if not np.isfinite(value) else f"{value:.{digits}f}"
        return str(value)

    cells = {label: [cell(v) for v in values] for label, values in rows.items()}
    label_width = max([len(label) for label in cells] + [0])
    widths = [
        max([len(h)] + [len(values[i]) for values in cells.values()]) for i, h in enumerate(header)
    ]
    cells_of_header = "  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))
    lines = [" " * label_width + "  " + cells_of_header]
    for label, values in cells.items():
        lines.append(
            label.ljust(label_width)
            + "  "
            + "  ".join(v.rjust(w) for v, w in zip(values, widths, strict=True))
        )
    return "\n".join(lines)


def summary(columns: Mapping[str, np.ndarray], name: str, baseline: Mapping | None = None) -> str:
    """The text summary of an analysis: parity shares (Table 2) and metric statistics."""
    from .columns import BASELINE_PREFIX
    from .forms import parity_counts

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


def options_of(args: argparse.Namespace) -> Any:
    """The :class:`headforms.options.AnalysisOptions` of ``analyze`` or ``survey``'s flags."""
    from .columns import EXTRA_SPECTRA
    from .options import AnalysisOptions

    spectra = getattr(args, "spectra", ())
    spectra = EXTRA_SPECTRA if "all" in spectra else tuple(spectra)
    return AnalysisOptions(args.rope_position, not args.no_fold_qk_norm, spectra)


def policy_in_force() -> Any:
    """The policy a command is held to (hosted mode's, or None): the hosted package is imported
    only when hosted mode is on, so a private command pays nothing for it."""
    from .settings import settings

    if not settings().hosted:
        return None
    from .hosted.policy import policy_in_force as hosted_policy

    return hosted_policy()


def cmd_analyze(args: argparse.Namespace) -> int:
    from .engine import analyze

    if args.out is not None:
        check_output_path(args.out)
    if args.rope_positions is not None:
        return _analyze_positions(args)
    options = options_of(args)
    with _progress(args.quiet) as progress:
        result = analyze(
            args.model,
            options=options,
            progress=progress,
            use_cache=not args.no_cache,
            policy=policy_in_force(),
        )
    card = result.card
    if args.out is not None:
        table = result.table(baseline=args.baseline)
        write_table(table, args.out)
        print(f"wrote {len(table)} heads to {args.out}", file=sys.stderr)
    else:
        print(
            f"{card.name}: {card.family}, {card.n_layers} layers x {card.n_heads} heads "
            f"({card.n_kv_heads} kv), N={card.model_dim}, n={card.head_dim}, {card.storage}"
        )
        base = result.baseline.columns if args.baseline else None
        print(summary(result.columns, card.name, base))
    return 0


SHOWN_POINTS = 9
"""Points of a sweep or a series summarised on stdout (evenly spread; ``--out`` has them all)."""


def _analyze_positions(args: argparse.Namespace) -> int:
    """``analyze MODEL --rope-positions A:B``: every head at every position, one sweep."""
    from .engine import sweep
    from .options import SweepOptions

    if args.rope_position:
        raise OptionError("give --rope-position D or --rope-positions A:B, not both")
    if args.spectra:
        raise OptionError(
            "--spectra applies to one position; a sweep over --rope-positions writes the "
            "per-head rows of every position"
        )
    options = SweepOptions(args.rope_positions, not args.no_fold_qk_norm)
    with _progress(args.quiet) as progress:
        result = sweep(
            args.model,
            options=options,
            progress=progress,
            use_cache=not args.no_cache,
            policy=policy_in_force(),
        )
    card = result.card
    if args.out is not None:
        table = result.table
        if args.baseline:
            table = _with_baseline(table, result)
        write_table(table, args.out)
        print(
            f"wrote {len(table)} rows ({len(result.positions)} RoPE positions x "
            f"{card.total_heads} heads) to {args.out}",
            file=sys.stderr,
        )
        return 0
    print(
        f"{card.name}: {card.n_layers} layers x {card.n_heads} heads at "
        f"{len(result.positions)} RoPE positions ({result.positions[0]} to "
        f"{result.positions[-1]})"
    )
    _print_points(result, "d")
    return 0


def _with_baseline(table: Any, result: Any) -> Any:
    """A sweep's long table with the Gaussian baseline's metrics (which no position changes) as
    ``rand_*`` columns beside every position's row of the same head."""
    from .baseline import gaussian_baseline
    from .columns import BASELINE_PREFIX, METRIC_COLUMNS

    base = gaussian_baseline(result.card.baseline_shapes).columns
    table = table.copy()
    for name in METRIC_COLUMNS:
        table[BASELINE_PREFIX + name] = np.tile(np.asarray(base[name]), result.n_points)
    return table


def _print_points(paths: Any, label: str) -> None:
    """A few points of a sweep or series (parity shares and means per point), then how many
    heads change parity along it."""
    import pandas as pd

    from .analyses.paths import changes_by_head
    from .analyses.survey import summary_table

    shown = sorted(set(np.linspace(0, paths.n_points - 1, SHOWN_POINTS).round().astype(int)))
    table = summary_table({f"{label} = {paths.values[i]}": paths.heads_at(i) for i in shown})
    table.index.name = paths.axis
    columns = [c for c in table.columns if c not in ("layers",)][:9]
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[columns].round(3).to_string())
    changing = changes_by_head(paths)
    print(
        f"{len(changing)} of {paths.card.total_heads} heads change parity at least once along "
        f"{paths.axis} (--out FILE writes every row)"
    )


def cmd_models(args: argparse.Namespace) -> int:
    from .sources import BUNDLED_MODELS, DEFAULT_MODEL

    for name, model in BUNDLED_MODELS.items():
        mark = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {model.title}{mark}\n{'':<14} {model.description}")
    return 0


def dashboard_app() -> Path:
    """The dashboard's ``server.py`` (``app.py`` behind the server's HTTP rules), in a source
    checkout or an installed ``headforms_dashboard``."""
    checkout = Path(__file__).resolve().parents[1] / "server.py"
    if checkout.is_file():
        return checkout
    import importlib.util

    installed = importlib.util.find_spec("headforms_dashboard")  # a wheel's dashboard files
    if installed is None or not installed.submodule_search_locations:
        raise OptionError(
            "the dashboard's files (server.py, app.py, pages/, ui/) are not installed next to "
            "this package"
        )
    return Path(list(installed.submodule_search_locations)[0]) / "server.py"


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the dashboard with Streamlit (headless, no file watcher), replacing this process."""
    app = dashboard_app()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.headless=true",
        f"--server.address={args.host}",
        f"--server.port={args.port}",
        "--server.fileWatcherType=none",
        "--server.runOnSave=false",
        "--browser.gatherUsageStats=false",
    ]
    print(f"headforms dashboard on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    os.chdir(app.parent)
    os.execv(sys.executable, command)
    return 0  # not reached


SURVEY_EXIT_FAILED = 1
"""Exit status of a survey in which some model failed (bad arguments: 2, as everywhere)."""


def parse_bytes(text: str) -> int:
    """A memory size: bytes, or a number with K, M, G or T (binary units), e.g. ``6G``."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = value[-1:] if value[-1:] in units else ""
    try:
        number = float(value[: len(value) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size like 6G, 512M or 1000000"
        ) from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the memory budget must be positive")
    return int(number * units[unit])


def cmd_survey(args: argparse.Namespace) -> int:
    from . import survey
    from .presets import preset

    out = args.out
    check_output_path(out)
    models = list(args.models)
    if args.list is not None:
        models += survey.read_model_list(args.list)
    if args.preset is not None:
        models += preset(args.preset)
    options = options_of(args)
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
        write_table(result.table, out)
        summary_out = survey_summary_path(out)
        write_table(result.summary.reset_index(), summary_out)
        print(
            f"wrote {len(result.table)} heads of {len(result.summary)} models to {out}, the "
            f"summary to {summary_out}",
            file=sys.stderr,
        )
        import pandas as pd

        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(result.summary.round(3).to_string())
    for outcome in result.failed:
        print(f"failed: {outcome.spec}: {outcome.error}", file=sys.stderr)
    return SURVEY_EXIT_FAILED if result.failed else 0


def survey_summary_path(out: Path) -> Path:
    """The summary table written beside a survey's per-head table: ``heads.summary.csv``."""
    return out.with_name(f"{out.stem}.summary{out.suffix}")


def add_survey_parser(sub: argparse._SubParsersAction) -> None:
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
        "--out", type=Path, required=True, help="the per-head table (.csv, .json or .parquet)"
    )
    p.add_argument(
        "--jobs", type=int, default=None, metavar="J", help="models at once (default: cores)"
    )
    p.add_argument(
        "--memory-budget",
        type=parse_bytes,
        default=None,
        metavar="SIZE",
        help="the estimated peaks of the models running at once stay below this (e.g. 6G; "
        "default: half the available memory)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run each model as a task on this Dask distributed scheduler (tcp://host:8786); "
        "its workers must see --out's directory",
    )
    p.add_argument("--rope-position", type=int, default=0, metavar="D", help="as for analyze")
    p.add_argument("--no-fold-qk-norm", action="store_true", help="as for analyze")
    p.add_argument("--quiet", action="store_true", help="report failed models only")
    p.set_defaults(func=cmd_survey)


# ---------------------------------------------------------------------------------------------
# Forward passes: attention patterns and head-type scores (headforms.behaviour)

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
    from .store import write_atomic

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
    try:
        write_atomic(out, content)
    except OSError as exc:
        raise OptionError(f"--out {out}: cannot write: {exc.strerror or exc}") from exc


def _say(quiet: bool) -> Any:
    if quiet:
        return None
    return lambda message: print(message, file=sys.stderr, flush=True)


def cmd_attention(args: argparse.Namespace) -> int:
    from .behaviour import attention

    if args.out is not None:
        check_output_path(args.out, PATTERN_FORMATS)
    if args.head is not None and args.layer is None:
        raise OptionError("--head needs --layer (the head's layer)")
    pattern = attention(
        args.model,
        args.prompt,
        use_cache=not args.no_cache,
        progress=_say(args.quiet),
        policy=policy_in_force(),
    )
    pairs = _pattern_selection(pattern, args.layer, args.head)
    kind = "scores" if args.scores else "weights"
    write_pattern(pattern, pairs, kind, args.out)
    if args.out is not None:
        print(
            f"wrote {len(pairs)} head(s) x {len(pattern.tokens)} tokens ({kind}) to {args.out}",
            file=sys.stderr,
        )
    return 0


def cmd_behaviour(args: argparse.Namespace) -> int:
    from .behaviour import SCORE_COLUMNS, head_type_scores

    if args.out is not None:
        check_output_path(args.out)
    scores = head_type_scores(
        args.model,
        prompt=args.prompt,
        probe_length=args.probe_length,
        seed=args.seed,
        use_cache=not args.no_cache,
        progress=_say(args.quiet),
        policy=policy_in_force(),
    )
    table = scores.table
    if args.out is not None:
        write_table(table, args.out)
        print(f"wrote {len(table)} heads to {args.out}", file=sys.stderr)
        return 0
    for column in SCORE_COLUMNS:
        top = table.nlargest(args.top, column)
        heads = ", ".join(f"L{r.layer}H{r.head} {getattr(r, column):.3f}" for r in top.itertuples())
        print(f"{column:<16} {heads}")
    return 0


def add_behaviour_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``attention`` and ``behaviour`` subcommands (forward passes, transformers)."""
    from .behaviour import DEFAULT_PROBE_LENGTH, DEFAULT_PROMPT, DEFAULT_SEED

    a = sub.add_parser(
        "attention",
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
    a.add_argument("--out", type=Path, help="write .json or .npz (default: JSON on stdout)")
    a.add_argument("--no-cache", action="store_true", help="recompute, ignore the cache")
    a.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a.set_defaults(func=cmd_attention)
    b = sub.add_parser(
        "behaviour",
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
    b.add_argument("--out", type=Path, help="the per-head table (.csv, .json or .parquet)")
    b.add_argument("--top", type=int, default=5, metavar="K", help="heads shown per score (5)")
    b.add_argument("--no-cache", action="store_true", help="recompute, ignore the cache")
    b.add_argument("--quiet", action="store_true", help="no progress on stderr")
    b.set_defaults(func=cmd_behaviour)


def cmd_trajectory(args: argparse.Namespace) -> int:
    """``trajectory CHECKPOINT... --out FILE``: a training run's checkpoints as one table."""
    from . import survey
    from .options import AnalysisOptions
    from .series import open_series, trajectory_table

    out = args.out
    check_output_path(out)
    options = AnalysisOptions(args.rope_position, not args.no_fold_qk_norm)
    policy = policy_in_force()
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
        table = trajectory_table(checkpoints, result.table)
        write_table(table, out)
        steps = table["step"].nunique()
        print(f"wrote {len(table)} rows ({steps} checkpoints) to {out}", file=sys.stderr)
        _print_trajectory(table)
    return SURVEY_EXIT_FAILED if result.failed else 0


def _print_trajectory(table: Any) -> None:
    """Parity shares and mean profile at each step (evenly spread) of a trajectory table."""
    import pandas as pd

    from .analyses.survey import summary_table

    steps = list(dict.fromkeys(table["step"]))
    shown = sorted(set(np.linspace(0, len(steps) - 1, SHOWN_POINTS).round().astype(int)))
    by_step = {f"step {steps[i]}": table[table["step"] == steps[i]] for i in shown}
    summary_rows = summary_table(by_step)
    summary_rows.index.name = "step"
    columns = [c for c in summary_rows.columns if c != "layers"][:9]
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(summary_rows[columns].round(3).to_string())


def cmd_diff(args: argparse.Namespace) -> int:
    """``diff A B [--out FILE]``: two models of the same shapes, head by head."""
    from .analyses.paths import moved_most
    from .diff import diff
    from .options import AnalysisOptions

    if args.out is not None:
        check_output_path(args.out)
    options = AnalysisOptions(args.rope_position, not args.no_fold_qk_norm)
    options_b = AnalysisOptions(args.rope_position, False) if args.unfold_b else None
    with _progress(args.quiet) as progress:
        result = diff(args.first, args.second, options, progress, policy_in_force(), options_b)
    table = result.table()
    if args.out is not None:
        write_table(table, args.out)
        print(f"wrote {len(table)} heads to {args.out}", file=sys.stderr)
        return 0
    import pandas as pd

    flips = int(table["parity_flip"].sum())
    print(
        f"{args.first} -> {args.second}: {len(table)} heads, {flips} change parity, distance "
        f"moved on the simplex (unit edges): median {table['distance'].median():.4f}, "
        f"max {table['distance'].max():.4f}"
    )
    top = moved_most(result, 10)[["layer", "head", "distance", "parity_first", "parity_last"]]
    with pd.option_context("display.width", 200):
        print(
            top.rename(columns={"parity_first": "parity_A", "parity_last": "parity_B"})
            .round(4)
            .to_string(index=False)
        )
    return 0


def add_motion_parsers(sub: argparse._SubParsersAction) -> None:
    """The ``trajectory`` and ``diff`` subcommands."""
    t = sub.add_parser(
        "trajectory",
        help="the checkpoints of a training run as one table with a step column",
        description="Analyse the checkpoints of a training run (a run directory of "
        "checkpoint-STEP folders as transformers' Trainer saves them, or checkpoints that name "
        "their step: .../checkpoint-1500, org/name@step1000) and write one row per checkpoint "
        "and head with a step column, ordered by step. Each checkpoint is analysed once and "
        "cached; resumable like a survey (run it again with the same --out). Exit status: 0 "
        "all done, 1 some failed (one line each), 2 bad arguments.",
    )
    t.add_argument(
        "checkpoints",
        nargs="+",
        metavar="CHECKPOINT",
        help="a run directory, or checkpoints naming their step",
    )
    t.add_argument("--out", type=Path, required=True, help="the table (.csv, .json or .parquet)")
    t.add_argument("--jobs", type=int, default=None, metavar="J", help="as for survey")
    t.add_argument(
        "--memory-budget", type=parse_bytes, default=None, metavar="SIZE", help="as for survey"
    )
    t.add_argument("--rope-position", type=int, default=0, metavar="D", help="as for analyze")
    t.add_argument("--no-fold-qk-norm", action="store_true", help="as for analyze")
    t.add_argument("--quiet", action="store_true", help="report failed checkpoints only")
    t.set_defaults(func=cmd_trajectory)
    d = sub.add_parser(
        "diff",
        help="two models of the same shapes, head by head",
        description="Match two models of the same shapes head by head (base and fine-tune, two "
        "seeds, folded and unfolded norms) and write layer, head, both profiles, the "
        "differences (B - A), the distance moved on the simplex and both parities; without "
        "--out, print the parity flips and the heads that moved most.",
    )
    d.add_argument("first", metavar="A", help="a model spec (as for analyze)")
    d.add_argument("second", metavar="B", help="a model spec of the same shapes")
    d.add_argument("--out", type=Path, help="write the table (.csv, .json or .parquet)")
    d.add_argument("--rope-position", type=int, default=0, metavar="D", help="as for analyze")
    d.add_argument("--no-fold-qk-norm", action="store_true", help="as for analyze (both)")
    d.add_argument(
        "--unfold-b",
        action="store_true",
        help="analyse B with its QK-norm gains unfolded (A B the same model: what folding them "
        "changes)",
    )
    d.add_argument("--quiet", action="store_true", help="no progress on stderr")
    d.set_defaults(func=cmd_diff)


def _port(text: str) -> int:
    """A TCP port from ``--port`` or ``$PORT``: a whole number from 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port (from --port or $PORT): a whole number from 1 to 65535"
        )
    return port


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    from .options import MAX_ROPE_POSITIONS

    parser = argparse.ArgumentParser(
        prog="headforms",
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
    p.add_argument(
        "--rope-positions",
        metavar="A:B",
        help="every RoPE position of a range at once, one row per head and position with a "
        "rope_position column: A:B (both included), A:B:STEP or a comma list; at most "
        f"{MAX_ROPE_POSITIONS} positions (RoPE models only)",
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
    p.add_argument("--no-cache", action="store_true", help="recompute, ignore the cache")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_analyze)
    m = sub.add_parser("models", help="list the bundled (offline) models")
    m.set_defaults(func=cmd_models)
    s = sub.add_parser("serve", help="run the dashboard (Streamlit)")
    s.add_argument(
        "--host",
        default=os.environ.get("HOST", "127.0.0.1"),
        help="address to listen on (default: $HOST, else 127.0.0.1; here %(default)s); "
        "0.0.0.0 serves the network",
    )
    s.add_argument(
        "--port",
        type=_port,
        default=os.environ.get("PORT", "8501"),  # a string: argparse checks it with _port
        help="port to listen on (default: $PORT, else 8501; here %(default)s)",
    )
    s.set_defaults(func=cmd_serve)
    add_survey_parser(sub)
    add_behaviour_parsers(sub)
    add_motion_parsers(sub)
    return parser


def _one_line_warning(message: Any, category: type, *_: Any, **__: Any) -> None:
    """A library's warning as one line on stderr, without the file and line it came from (they
    name the installation, and a user can do nothing with them)."""
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line on stderr and exit code 2 for any bad input, never a traceback."""
    import warnings

    warnings.showwarning = _one_line_warning
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except HeadformsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
