"""A loaded machine: the Gemma-3 analysis with its Gaussian baseline, quiet and beside two busy
processes, and the ratio of the two.

A shared (hosted) server is a loaded machine. Each measured run is a fresh
``python -m headforms analyze gemma3-270m --baseline --quiet`` process with an empty result
store (the assembled Gemma GGUF is linked into it, so assembling the file is not measured):
locating, reading the Q/K tensors, every head's exact spectra and the Gaussian baseline of the
same shapes. "Loaded" runs it while two other processes keep both cores busy (pure-Python
spinners, started just before and stopped just after, in the same session as the benchmark so
that the kernel shares the cores between all of them). Quiet and loaded runs alternate, so slow
drifts of the machine's own load hit both alike; the medians and their ratio are printed.

``--checkout DIR`` (repeatable) measures other working trees side by side in the same run (e.g.
``git worktree add /tmp/before <commit>``), so a change is judged against what came before
under the same conditions.

Run: ``.venv/bin/python benchmarks/bench_under_load.py [--repeat 3] [--checkout DIR ...]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import PYTHON, ROOT, machine_line, print_table, run_measured

MODEL = "gemma3-270m"
SPINNER = "while True: pass"


def assembled_gemma() -> Path:
    """The assembled Gemma-3 GGUF (assembled once into the default cache directory)."""
    sys.path.insert(0, str(ROOT))
    from headforms.sources import BUNDLED_MODELS

    return BUNDLED_MODELS[MODEL].locate()


def fresh_cache(gguf: Path) -> tempfile.TemporaryDirectory:
    """An empty cache directory holding only a link to the assembled GGUF."""
    tmp = tempfile.TemporaryDirectory(prefix="headforms-load-")
    models = Path(tmp.name) / "models"
    models.mkdir()
    target = models / gguf.name
    try:
        os.link(gguf, target)  # the store checks the file as its own: a hard link is the file
    except OSError:
        target.symlink_to(gguf)
    return tmp


def one_run(checkout: Path, gguf: Path, loaded: bool) -> float:
    """Wall seconds of one cold ``analyze --baseline`` with the code of ``checkout``."""
    with fresh_cache(gguf) as cache:
        env = dict(os.environ)
        env.update(HEADFORMS_CACHE_DIR=cache, PYTHONPATH=str(checkout), HF_HUB_OFFLINE="1")
        spinners = []
        if loaded:
            spinners = [subprocess.Popen([PYTHON, "-c", SPINNER]) for _ in range(2)]
        try:
            run = run_measured(
                [PYTHON, "-m", "headforms", "analyze", MODEL, "--baseline", "--quiet"],
                env=env,
                cwd=checkout,
            )
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
    if run.returncode != 0:
        raise RuntimeError(f"analyze failed in {checkout}:\n{run.stderr[-3000:]}")
    return run.wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per checkout and condition")
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another working tree to measure side by side (repeatable)",
    )
    args = parser.parse_args(argv)
    checkouts = [ROOT, *(c.resolve() for c in args.checkout)]
    gguf = assembled_gemma()
    times: dict[tuple[Path, bool], list[float]] = {
        (checkout, loaded): [] for checkout in checkouts for loaded in (False, True)
    }
    one_run(ROOT, gguf, loaded=False)  # warm the OS file cache and imports' bytecode
    for _ in range(args.repeat):
        for checkout in checkouts:
            for loaded in (False, True):
                times[(checkout, loaded)].append(one_run(checkout, gguf, loaded))
    rows = []
    for checkout in checkouts:
        quiet = statistics.median(times[(checkout, False)])
        busy = statistics.median(times[(checkout, True)])
        rows.append(
            {
                "checkout": str(checkout),
                "quiet s": quiet,
                "beside 2 busy s": busy,
                "ratio": busy / quiet,
                "runs": args.repeat,
            }
        )
    print(machine_line(int(os.environ.get("HEADFORMS_THREADS", "0")) or os.cpu_count() or 1))
    print_table(f"{MODEL}: analyze --baseline from an empty result store", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
