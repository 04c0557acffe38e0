"""``python -m headforms.cli.contained ARGS``: one command of the command line in hosted mode,
within a worker's limits (started by :func:`headforms.hosted.command.run_contained`, never by
hand): the limits on this process, the command, running out of memory one line, then the hub
cache within its bound."""

from __future__ import annotations

import sys

from ..hosted.child import out_of_memory
from ..hosted.command import bound_hub_cache, contain_this_process, out_of_memory_line
from . import build_parser, run


def main(argv: list[str]) -> int:
    """Run the command ``argv`` within the limits; its exit status (2 after one line when it
    ran out of memory)."""
    limits = contain_this_process()
    try:
        code = run(build_parser().parse_args(argv))
    except BaseException as exc:
        if not out_of_memory(exc):
            raise
        print(f"error: {out_of_memory_line(limits)}", file=sys.stderr)
        return 2
    bound_hub_cache(limits)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
