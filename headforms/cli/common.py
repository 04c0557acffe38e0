"""What the commands share: the flags every command spells the same way (parent parsers), output
paths and table files, the progress bar, plain text tables, the policy a command is held to."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OptionError
from ..progress import Progress

TABLE_FORMATS = (".csv", ".json", ".parquet")
"""What ``--out`` of a per-head table accepts."""

SURVEY_EXIT_FAILED = 1
"""Exit status of a run of many models in which some model failed (bad arguments: 2)."""

SHOWN_POINTS = 9
"""Points of a sweep or a series summarised on stdout (evenly spread; ``--out`` has them all)."""


# ---------------------------------------------------------------------------------------------
# Shared flags, as parent parsers (argparse's ``parents=``): one spelling, one help text


def _parent() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(add_help=False)


def quiet_flag(what: str = "no progress on stderr") -> argparse.ArgumentParser:
    """``--quiet``: what the command leaves out (errors are always printed)."""
    parent = _parent()
    parent.add_argument("--quiet", action="store_true", help=what)
    return parent


def out_option(
    formats: Sequence[str] = TABLE_FORMATS, required: bool = False, what: str = "the table"
) -> argparse.ArgumentParser:
    """``--out FILE``: where the command writes ``what``, in one of ``formats``."""
    parent = _parent()
    kinds = ", ".join(f.lstrip(".") for f in formats)
    parent.add_argument(
        "--out", type=Path, required=required, metavar="FILE", help=f"write {what} ({kinds})"
    )
    return parent


def analysis_options() -> argparse.ArgumentParser:
    """``--rope-position D`` and ``--no-fold-qk-norm``: how a model's forms are taken."""
    parent = _parent()
    parent.add_argument(
        "--rope-position",
        type=int,
        default=0,
        metavar="D",
        help="relative position d = query - key for RoPE models (default 0)",
    )
    parent.add_argument(
        "--no-fold-qk-norm",
        action="store_true",
        help="analyse raw Q/K without folding QK-norm gains",
    )
    return parent


def no_cache_flag() -> argparse.ArgumentParser:
    """``--no-cache``: recompute, neither reading nor trusting the result cache."""
    parent = _parent()
    parent.add_argument("--no-cache", action="store_true", help="recompute, ignore the cache")
    return parent


def runs_options() -> argparse.ArgumentParser:
    """``--jobs`` and ``--memory-budget`` of the commands that analyse many models at once."""
    parent = _parent()
    parent.add_argument(
        "--jobs", type=int, default=None, metavar="J", help="models at once (default: cores)"
    )
    parent.add_argument(
        "--memory-budget",
        type=parse_bytes,
        default=None,
        metavar="SIZE",
        help="the estimated peaks of the models running at once stay below this (e.g. 6G; "
        "default: half the available memory)",
    )
    return parent


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


def type2_tolerance_option() -> argparse.ArgumentParser:
    """``--type2-tolerance T``: the Type II tolerance of the parity the command reports."""
    from ..forms import PARITY_TYPE_II_TEXT

    parent = _parent()
    parent.add_argument(
        "--type2-tolerance",
        metavar="T",
        help="a head is Type II when c_S + d_S <= T (a number or a fraction like 1/50; default "
        f"the paper's {PARITY_TYPE_II_TEXT}); the parity shares printed and the parity column "
        "written use it",
    )
    return parent


def tolerance_of(args: argparse.Namespace) -> float | None:
    """The ``--type2-tolerance`` of a command as a number in [0, 1] (None: the paper's); a
    value that is not one is one line."""
    from fractions import Fraction

    from ..forms import check_tolerance

    text = getattr(args, "type2_tolerance", None)
    if text is None:
        return None
    try:
        value = float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError):
        raise OptionError(
            f"--type2-tolerance {text!r} is not a number; accepted: a number or a fraction in "
            "[0, 1] like 0.02 or 1/50"
        ) from None
    return check_tolerance(value)


def with_parity(table: Any, tolerance: float | None) -> Any:
    """A per-head table (a DataFrame, or a mapping of numpy columns) with its parity column at
    ``tolerance`` (None: as it is); columns stay columns, so no pandas is imported for them."""
    from ..forms import parity_labels

    if tolerance is None:
        return table
    labels = parity_labels(table["c_sym"], table["d_sym"], tolerance)
    if isinstance(table, Mapping):
        return {**table, "parity": labels}
    return table.assign(parity=labels)


def options_of(args: argparse.Namespace) -> Any:
    """The :class:`headforms.options.AnalysisOptions` of a command's flags."""
    from ..columns import EXTRA_SPECTRA
    from ..options import AnalysisOptions

    spectra = getattr(args, "spectra", ())
    spectra = EXTRA_SPECTRA if "all" in spectra else tuple(spectra)
    return AnalysisOptions(args.rope_position, not args.no_fold_qk_norm, spectra)


def policy_in_force() -> Any:
    """The policy a command is held to (hosted mode's, or None): the hosted package is imported
    only when hosted mode is on, so a private command pays nothing for it."""
    from ..settings import settings

    if not settings().hosted:
        return None
    from ..hosted.policy import policy_in_force as hosted_policy

    return hosted_policy()


# ---------------------------------------------------------------------------------------------
# Output files


def check_output_path(path: Path, formats: Sequence[str] = TABLE_FORMATS) -> str:
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


def write_table(table: Any, path: Path) -> None:
    """Write a table by extension, atomically: csv, json records or parquet.

    ``table`` is a ``DataFrame`` or a mapping of numpy columns; the columns' CSV and JSON are
    written without pandas (the same bytes, :mod:`headforms.cli.column_files`), so a command
    that holds its table as columns never imports it for them. Parquet is pandas' and pyarrow's.
    """
    from .column_files import csv_text, json_records, json_records_of_frame, plain_columns

    suffix = check_output_path(path)
    if isinstance(table, Mapping) and (suffix == ".parquet" or not plain_columns(table)):
        from ..columns import frame

        table = frame(table)

    def write(tmp: Path) -> None:
        if isinstance(table, Mapping):
            text = csv_text(table) if suffix == ".csv" else json_records(table)
            tmp.write_text(text, encoding="utf-8", newline="")
        elif suffix == ".csv":
            table.to_csv(tmp, index=False)
        elif suffix == ".json":
            tmp.write_text(json_records_of_frame(table))
        else:
            table.to_parquet(tmp, index=False)

    write_file(path, write)


def write_file(path: Path, content: Any) -> None:
    """``content`` (bytes, or a function writing a temporary path) to ``path``, atomically; a
    path that cannot be written is one line."""
    from ..store import write_atomic

    try:
        write_atomic(path, content)
    except OSError as exc:
        raise OptionError(f"--out {path}: cannot write: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------------------------------------
# Progress and text


class ProgressBar:
    """Progress on stderr (a tqdm bar counting ``unit``s: layers, passes), closed before any
    error line."""

    def __init__(self, unit: str = "layer") -> None:
        self.bar: Any = None
        self.unit = unit

    def __call__(self, done: int, total: int, message: str) -> None:
        from tqdm import tqdm

        if self.bar is None or self.bar.total != total:
            self.close()
            self.bar = tqdm(total=total, unit=self.unit, file=sys.stderr, leave=False, disable=None)
        self.bar.set_description_str(message[:40])
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextlib.contextmanager
def progress_bar(quiet: bool, unit: str = "layer") -> Iterator[ProgressBar | None]:
    """A command's progress bar (None with ``--quiet``), closed however the command ends."""
    progress = None if quiet else ProgressBar(unit)
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()


def say(quiet: bool) -> Progress | None:
    """Progress as one line per message on stderr (None with ``--quiet``)."""
    if quiet:
        return None
    return lambda done, total, message: print(message, file=sys.stderr, flush=True)


def wrote(message: str) -> None:
    """What a command wrote, on stderr (stdout stays the command's output)."""
    print(message, file=sys.stderr)


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


def print_frame(table: Any, **to_string: Any) -> None:
    """A DataFrame on stdout, wide enough for its columns."""
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table.to_string(**to_string))


def print_points(paths: Any, label: str, tolerance: float | None = None) -> None:
    """A few points of a sweep or series (parity shares at the Type II ``tolerance`` and means
    per point), then how many heads change parity along it."""
    from ..analyses.motion import changes_by_head
    from ..analyses.survey import summary_table

    shown = sorted(set(np.linspace(0, paths.n_points - 1, SHOWN_POINTS).round().astype(int)))
    points = {f"{label} = {paths.values[i]}": paths.heads_at(i) for i in shown}
    table = summary_table(points, tolerance)
    table.index.name = paths.axis
    columns = [c for c in table.columns if c not in ("layers",)][:9]
    print_frame(table[columns].round(3))
    changing = changes_by_head(paths)
    print(
        f"{len(changing)} of {paths.card.total_heads} heads change parity at least once along "
        f"{paths.axis} (--out FILE writes every row)"
    )
