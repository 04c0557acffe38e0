"""Survey concurrency: several models one at a time vs concurrently, side by side in one run.

Models: the three bundled ones (SmolLM2 GGUF, MiniLM safetensors, Gemma-3 GGUF) and three tiny
random transformers models (gpt2, opt, gpt_neox). Each survey starts from an empty engine cache
(cold analyses); the sequential survey runs ``--jobs 1`` (2 BLAS threads per model), the
concurrent one ``--jobs 2`` (1 thread per model), alternating, REPEATS times; medians and their
ratio. Memory: the summed resident memory of the survey's process tree sampled every 20 ms
(peak), against the budget and the estimates the scheduler used.

    .venv/bin/python benchmarks/bench_survey.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401  (puts the working tree on sys.path)

REPEATS = 2
BUDGET = 3 << 30
MiB = 1 << 20


def tree_rss(process) -> int:
    """Resident memory of a process and its children, summed."""
    total = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except Exception:  # a child that just ended
            pass
    return total


def run(specs: list[str], jobs: int, work: Path) -> tuple[float, int, list]:
    """One cold survey: seconds, peak summed RSS of the process tree, outcomes."""
    import psutil

    from headforms.survey import run_survey

    cache = Path(tempfile.mkdtemp(dir=work))
    os.environ["HEADFORMS_CACHE_DIR"] = str(cache)
    me, peak, stop = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], tree_rss(me))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    result = run_survey(specs, cache / "survey.csv", jobs=jobs, memory_budget=BUDGET)
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    failed = result.failed
    if failed:
        raise SystemExit(f"a model failed: {failed[0].spec}: {failed[0].error}")
    return seconds, peak[0], result.outcomes


def main() -> None:
    sys.path.insert(0, str(_common.ROOT / "tests" / "helpers"))
    import tiny_models as tm

    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # BLAS threads come from HEADFORMS_THREADS via threadpoolctl
    work = Path(tempfile.mkdtemp(prefix="bench-survey-"))
    specs = ["smollm2-135m", "minilm-l6", "gemma3-270m"]
    for seed, family in enumerate(("gpt2", "opt", "gpt_neox")):
        tm.build(family, work / family, seed=seed)
        specs.append(str(work / family))
    run(specs[:1], 1, work)  # warm the OS page cache and the assembled Gemma file
    times: dict[int, list[float]] = {1: [], 2: []}
    peaks: dict[int, list[int]] = {1: [], 2: []}
    outcomes = []
    for _ in range(REPEATS):
        for jobs in (1, 2):
            seconds, peak, outcomes_run = run(specs, jobs, work)
            times[jobs].append(seconds)
            peaks[jobs].append(peak)
            if jobs == 2:
                outcomes = outcomes_run
    seq, conc = statistics.median(times[1]), statistics.median(times[2])
    print(f"{len(specs)} models, cold cache, {os.cpu_count()} cores, budget {BUDGET / MiB:.0f} MiB")
    print(f"one at a time (--jobs 1): {seq:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[1])})")
    print(f"concurrent   (--jobs 2): {conc:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[2])})")
    print(f"speed-up: {seq / conc:.2f}x")
    print(
        f"peak RSS of the survey's process tree: jobs 1 {max(peaks[1]) / MiB:.0f} MiB, "
        f"jobs 2 {max(peaks[2]) / MiB:.0f} MiB (budget {BUDGET / MiB:.0f} MiB)"
    )
    print("per model (concurrent run): measured peak / estimate")
    for o in outcomes:
        print(
            f"  {Path(o.spec).name:<14} {o.peak_rss_bytes / MiB:6.0f} / "
            f"{o.estimate_bytes / MiB:6.0f} MiB  {o.seconds:5.1f} s"
        )


if __name__ == "__main__":
    main()
