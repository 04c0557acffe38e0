"""Shared helpers of the benchmarks: thread limits, medians, measured subprocesses, tables.

Benchmarks are run by hand (``.venv/bin/python benchmarks/bench_x.py``), never by the test suite.
Timings on a shared 2-core machine are noisy: every script compares routes measured side by side
in the same run, repeats them and reports medians.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
if str(ROOT) not in sys.path:  # run from a checkout: import the working tree's headforms
    sys.path.insert(0, str(ROOT))


def limit_threads(threads: int) -> Any:
    """Pin BLAS (threadpoolctl) and torch to ``threads``; returns the threadpoolctl limiter."""
    from threadpoolctl import threadpool_limits

    limiter = threadpool_limits(limits=threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    return limiter


def thread_env(threads: int, **extra: str) -> dict[str, str]:
    """Environment for a child process with every thread pool pinned to ``threads``."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "HEADFORMS_THREADS"):
        env[var] = str(threads)
    env["PYTHONPATH"] = str(ROOT) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    env.update(extra)
    return env


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@dataclass
class Measured:
    """One child process: wall time, peak resident memory, exit status and output."""

    wall: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


TIME = Path("/usr/bin/time")


def run_measured(
    cmd: Sequence[str],
    env: dict[str, str] | None = None,
    timeout: float = 900,
    cwd: Path | None = None,
) -> Measured:
    """Run ``cmd`` and measure its wall time and peak RSS.

    Peak RSS comes from GNU time's ``%M`` (its child is forked from a small process): the
    ``ru_maxrss`` of a child forked directly from a large Python parent starts at the parent's
    RSS (Linux carries the forked copy's high-water mark across ``exec``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out, err, rss = (Path(tmp) / name for name in ("out", "err", "rss"))
        full = [str(TIME), "-f", "%M", "-o", str(rss), *cmd] if TIME.exists() else list(cmd)
        start = time.perf_counter()
        with out.open("wb") as fo, err.open("wb") as fe:
            proc = subprocess.Popen(full, stdout=fo, stderr=fe, env=env, cwd=cwd or ROOT)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            wall = time.perf_counter() - start
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            peak_kb = float(rss.read_text().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            peak_kb = float(usage.ru_maxrss)  # no GNU time: an upper bound
        return Measured(
            wall=wall,
            peak_rss_mb=peak_kb / 1024.0,
            returncode=proc.returncode,
            stdout=out.read_text(errors="replace"),
            stderr=err.read_text(errors="replace"),
        )


def median_measured(
    cmd: Sequence[str], env: dict[str, str], repeat: int, cwd: Path | None = None
) -> Measured:
    """Median wall time and median peak RSS over ``repeat`` runs; fails loudly on an error."""
    runs = []
    for _ in range(repeat):
        run = run_measured(cmd, env, cwd=cwd)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr[-3000:]}")
        runs.append(run)
    return Measured(
        wall=statistics.median(r.wall for r in runs),
        peak_rss_mb=statistics.median(r.peak_rss_mb for r in runs),
        returncode=0,
        stdout=runs[-1].stdout,
        stderr=runs[-1].stderr,
    )


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    """Print rows (dicts with the same keys) as an aligned text table."""
    if not rows:
        return
    cols = list(rows[0])

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
                return f"{v:.2e}"
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        return str(v)

    cells = [[fmt(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print(f"\n{title}")
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))
    sys.stdout.flush()


def machine_line(threads: int) -> str:
    """One line describing where and how the figures were measured."""
    import platform

    import numpy as np

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{threads} thread(s), numpy {np.__version__}, python {platform.python_version()}, "
        f"load avg {os.getloadavg()[0]:.1f}"
    )
