"""Command line: ``headforms analyze MODEL`` (``--rope-positions A:B``: every position at once),
``models [FILE]``, ``survey MODEL...``, ``trajectory CHECKPOINT...``, ``diff A B``, ``serve``,
``attention MODEL``, ``behaviour MODEL``, ``intervene MODEL --edit EDIT``, ``why MODEL``,
``study MODEL --out DIR``,
``export MODEL --html FILE``, ``demo``; also
``python -m headforms ...``.

One module per family of commands, each with ``add_parsers(sub)``; the flags they share are
parent parsers of :mod:`.common`. Bad input gives one line on stderr and exit status 2, never a
traceback. In hosted mode (``HEADFORMS_HOSTED=1``) every command but ``serve`` runs contained,
within a worker's memory and time (:mod:`headforms.hosted.command`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import HeadformsError
from ..settings import settings
from . import analyze, behaviour, demo, export, intervene, motion, serve, study, survey, why
from .common import write_table

COMMANDS = (analyze, serve, survey, behaviour, intervene, study, why, motion, export, demo)
"""The modules of the subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(
        prog="headforms",
        description="Profiles of attention heads as bilinear forms (arXiv 2609.22990).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.add_parsers(sub)
    return parser


def _one_line_warning(message: Any, category: type, *_: Any, **__: Any) -> None:
    """A library's warning as one line on stderr, without the file and line it came from (they
    name the installation, and a user can do nothing with them)."""
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one line on stderr and exit code 2 for any bad input, never a traceback."""
    args = build_parser().parse_args(argv)
    if args.command != "serve" and settings().hosted:
        from ..hosted.command import run_contained

        return run_contained(sys.argv[1:] if argv is None else list(argv))
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command: its exit status, or one line on stderr and 2 for bad input."""
    import warnings

    warnings.showwarning = _one_line_warning
    try:
        return args.func(args)
    except HeadformsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "main", "run", "write_table"]
