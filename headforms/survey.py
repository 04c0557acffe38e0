"""Surveys: many models analysed concurrently within a memory budget, or on a Dask cluster.

Each model is one task (:func:`analyse_one`) that runs :func:`headforms.analyze` (so the
engine's disk cache is reused) and writes the model's per-head rows, atomically, as a parquet
part in ``<out>.parts/``; a manifest ``<out>.survey.json`` (written atomically after every
model) records which models are done or failed. An interrupted survey run again with the same
``--out`` skips the models already done. On one machine the tasks run in a process pool (one
fresh process per model, so each model's memory is returned when it ends); a model starts only
when the sum of the estimated peaks (:func:`estimate_peak_bytes`) of the running models and its
own stays within the budget. With a scheduler address, each model is a task on an existing Dask
distributed cluster whose workers write the parts (the output's directory must be on a
filesystem they share).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import HeadformsError, OptionError
from .options import DEFAULT_OPTIONS, AnalysisOptions
from .settings import THREADS_ENV, usable_cpus
from .store import write_atomic

if TYPE_CHECKING:
    from .sources import Policy

MANIFEST_VERSION = 1
MiB = 1 << 20

BASE_BYTES = 512 * MiB
"""Estimated memory of a worker that reads a config.json model (Python, numpy, pandas, scipy,
transformers' config classes, torch and, for RoPE models, transformers' RoPE functions):
measured up to about 400 MiB (tests/integration/survey/test_survey.py checks the estimates bound
the peaks)."""

BASE_GGUF_BYTES = 250 * MiB
"""Estimated memory of a worker that reads a GGUF file (no transformers): measured 180 MiB."""

LAYER_COPIES = 3
"""Float64 copies of one layer's attention weights alive at once per layer in flight (read,
effective, factors); the engine keeps ``threads + 1`` layers in flight."""


@dataclass
class Outcome:
    """What became of one model of a survey."""

    spec: str
    status: str  # "done" or "failed"
    error: str | None = None
    heads: int = 0
    seconds: float = 0.0
    peak_rss_bytes: int | None = None
    estimate_bytes: int | None = None
    part: str | None = None
    started: float = 0.0
    ended: float = 0.0
    """Wall-clock times (``time.time()``) the model's analysis began and ended."""


@dataclass
class SurveyResult:
    """The outcomes of every model (input order) and the survey's two tables."""

    outcomes: list[Outcome]
    table: Any  # pandas DataFrame: per-head rows of the models done, with a model column
    summary: Any  # pandas DataFrame: one row per model done

    @property
    def failed(self) -> list[Outcome]:
        """The models that failed."""
        return [o for o in self.outcomes if o.status != "done"]


# ---------------------------------------------------------------------------------------------
# Which models


def read_model_list(path: Path) -> list[str]:
    """Model specs of a list file: one per line; blank lines and ``#`` comments ignored."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise OptionError(f"--list {path}: cannot read it ({type(exc).__name__})") from exc
    return [
        line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#")[0].strip()
    ]


def survey_specs(models: Iterable[str], policy: Policy | None = None) -> list[str]:
    """The specs of a survey, in order, without repeats; table files expand to their models
    (read where ``policy`` allows)."""
    from .tables import expand_table_spec

    specs: list[str] = []
    for model in models:
        specs.extend(expand_table_spec(model.strip(), policy))
    specs = list(dict.fromkeys(s for s in specs if s))
    if not specs:
        raise OptionError("no models to survey: give MODEL..., --list FILE or --preset NAME")
    return specs


# ---------------------------------------------------------------------------------------------
# Memory


def estimate_peak_bytes(spec: str, threads: int = 1, policy: Policy | None = None) -> int:
    """Estimated peak memory of analysing ``spec`` in a fresh process, from declared sizes only.

    The model is located (:func:`headforms.sources.locate`: config and file sizes, no weights).
    Config.json models (local directories, hub ids): a fixed base plus ``LAYER_COPIES`` float64
    copies of one layer's Q, K and V (fused layouts read V too) per layer in flight
    (``threads + 1``), from the config's shapes. GGUF files: a smaller base
    plus the file's size (the Q/K tensors are dequantized from it). Published tables, and
    models that cannot be located (their analysis reports why): the base.
    """
    from .architectures import shapes_from_config
    from .sources import TABLE_FORMAT, locate

    try:
        located = locate(spec, policy)
    except HeadformsError:
        return BASE_BYTES
    if located.format == TABLE_FORMAT:
        return BASE_GGUF_BYTES
    if located.format == "gguf":
        return BASE_GGUF_BYTES + (located.weight_bytes or 0)
    try:
        shapes = shapes_from_config(located.config or {})
    except HeadformsError:
        return BASE_BYTES
    per_layer = (shapes.n_heads + 2 * shapes.n_kv_heads) * shapes.head_dim * shapes.model_dim * 8
    return BASE_BYTES + LAYER_COPIES * (max(1, threads) + 1) * per_layer


def default_memory_budget() -> int:
    """Half of the memory available now (psutil), leaving room for everything else."""
    import psutil

    return int(psutil.virtual_memory().available * 0.5)


# ---------------------------------------------------------------------------------------------
# One model (runs in a worker process, local or on a Dask worker)


def part_name(spec: str) -> str:
    """The parquet part of one model: a readable stem and a hash of the exact spec."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", spec)[-60:].strip("._") or "model"
    return f"{stem}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}.parquet"


def analyse_one(
    spec: str,
    options: AnalysisOptions,
    parts_dir: str,
    threads: int | None = None,
    policy: Policy | None = None,
) -> Outcome:
    """Analyse one model (within ``policy``) and write its per-head rows to ``parts_dir``;
    never raises.

    Failures come back as an outcome with the one-line message (a :class:`HeadformsError`'s
    own text, or the exception's type and text for anything else).
    """
    if threads:  # this worker process's own setting
        os.environ[THREADS_ENV] = str(threads)
    start, started = time.perf_counter(), time.time()
    try:
        from .analyses.survey import survey_rows
        from .engine import analyze

        result = analyze(spec, options=options, policy=policy)
        card = result.card
        rows = survey_rows(spec, result.heads, card.head_dim, card.model_dim)
        target = Path(parts_dir) / part_name(spec)
        write_atomic(target, lambda tmp: rows.to_parquet(tmp, index=False))
        outcome = Outcome(spec, "done", heads=len(rows), part=target.name)
    except HeadformsError as exc:
        outcome = Outcome(spec, "failed", error=" ".join(str(exc).split()))
    except Exception as exc:  # an engine bug in one model must not stop the others
        outcome = Outcome(
            spec, "failed", error=f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        )
    outcome.seconds = time.perf_counter() - start
    outcome.started, outcome.ended = started, time.time()
    outcome.peak_rss_bytes = peak_rss_bytes()
    return outcome


def peak_rss_bytes() -> int:
    """This process's peak resident memory since it started its program.

    ``VmHWM`` of ``/proc/self/status`` (Linux): unlike ``ru_maxrss``, which keeps the high-water
    mark of the parent that forked a spawned worker, it starts afresh at ``exec``.
    """
    import resource

    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ---------------------------------------------------------------------------------------------
# The manifest


@dataclass
class Manifest:
    """A survey's progress: its options and each model's outcome (``<out>.survey.json``)."""

    path: Path
    options: AnalysisOptions
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path, options: AnalysisOptions) -> Manifest:
        """The manifest at ``path`` (new if absent); an error if made with other options."""
        if not path.exists():
            return cls(path, options)
        try:
            raw = json.loads(path.read_text())
            if raw.get("version") != MANIFEST_VERSION:
                raise ValueError(f"version {raw.get('version')!r}")
            saved = AnalysisOptions(**raw["options"])
            outcomes = {o["spec"]: Outcome(**o) for o in raw["models"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OptionError(
                f"{path}: not a survey manifest ({type(exc).__name__}); delete it to start over"
            ) from exc
        if saved != options:
            raise OptionError(
                f"{path}: this survey was made with {saved.key()}, not {options.key()}; use "
                "another --out, or delete the manifest to start over"
            )
        return cls(path, options, outcomes)

    def done(self, parts_dir: Path) -> set[str]:
        """Models already done whose part is still there."""
        return {
            spec
            for spec, o in self.outcomes.items()
            if o.status == "done" and o.part and (parts_dir / o.part).exists()
        }

    def record(self, outcome: Outcome) -> None:
        """Remember one outcome and write the manifest atomically."""
        self.outcomes[outcome.spec] = outcome
        payload = {
            "version": MANIFEST_VERSION,
            "options": self.options.key(),
            "models": [asdict(o) for o in self.outcomes.values()],
        }
        write_atomic(self.path, json.dumps(payload, indent=1).encode())


def manifest_path(out: Path) -> Path:
    """Where the survey writing ``out`` keeps its progress."""
    return out.with_name(out.name + ".survey.json")


def parts_dir(out: Path) -> Path:
    """Where the survey writing ``out`` keeps each model's per-head rows."""
    return out.with_name(out.name + ".parts")


# ---------------------------------------------------------------------------------------------
# Running


Report = Callable[[Outcome, int, int], None]
"""``report(outcome, finished, total)``: called as each model ends."""


def run_survey(
    specs: list[str],
    out: Path,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    jobs: int | None = None,
    memory_budget: int | None = None,
    scheduler: str | None = None,
    report: Report | None = None,
    policy: Policy | None = None,
) -> SurveyResult:
    """Analyse every model not already done (see the module docstring), within ``policy``;
    return the tables."""
    out = Path(out)
    parts = parts_dir(out)
    parts.mkdir(parents=True, exist_ok=True)
    manifest = Manifest.open(manifest_path(out), options)
    done = manifest.done(parts)
    todo = [s for s in specs if s not in done]
    finished = [len(specs) - len(todo)]

    def record(outcome: Outcome) -> None:
        manifest.record(outcome)
        finished[0] += 1
        if report:
            report(outcome, finished[0], len(specs))

    if todo:
        if scheduler:
            _run_dask(todo, options, parts, scheduler, record, policy)
        else:
            _run_local(todo, options, parts, jobs, memory_budget, record, policy)
    return collect(specs, manifest, parts)


def collect(specs: list[str], manifest: Manifest, parts: Path) -> SurveyResult:
    """The survey's tables from the parts of the models done, in the order of ``specs``."""
    import pandas as pd

    from .analyses.survey import split_survey, summary_table

    outcomes = [manifest.outcomes.get(s) or Outcome(s, "failed", error="not run") for s in specs]
    frames = [pd.read_parquet(parts / o.part) for o in outcomes if o.status == "done" and o.part]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    summary = summary_table(split_survey(table)) if frames else summary_table({})
    return SurveyResult(outcomes, table, summary)


def _run_local(
    todo: list[str],
    options: AnalysisOptions,
    parts: Path,
    jobs: int | None,
    budget: int | None,
    record: Callable[[Outcome], None],
    policy: Policy | None = None,
) -> None:
    """A process pool: at most ``jobs`` models at once, their estimated peaks within budget."""
    import multiprocessing

    cores = usable_cpus()
    jobs = max(1, jobs or cores)
    threads = max(1, cores // jobs)
    budget = budget or default_memory_budget()
    estimates = {spec: estimate_peak_bytes(spec, threads, policy) for spec in todo}
    pending = list(todo)
    running: dict[Future, str] = {}
    context = multiprocessing.get_context("spawn")

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(jobs, mp_context=context, max_tasks_per_child=1)

    pool = new_pool()
    try:
        while pending or running:
            used = sum(estimates[s] for s in running.values())
            for spec in list(pending):
                if len(running) >= jobs:
                    break
                if estimates[spec] > budget:
                    pending.remove(spec)
                    record(
                        Outcome(
                            spec,
                            "failed",
                            error=f"estimated peak memory {estimates[spec] / MiB:.0f} MiB exceeds "
                            f"the memory budget {budget / MiB:.0f} MiB (--memory-budget)",
                            estimate_bytes=estimates[spec],
                        )
                    )
                    continue
                if used + estimates[spec] <= budget:
                    pending.remove(spec)
                    future = pool.submit(analyse_one, spec, options, str(parts), threads, policy)
                    running[future] = spec
                    used += estimates[spec]
            if not running:
                continue
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
            for future in finished:
                spec = running.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:  # the worker process died (killed, out of memory)
                    broken = True
                    outcome = Outcome(
                        spec,
                        "failed",
                        error=f"the worker process died ({type(exc).__name__}); killed or out "
                        "of memory?",
                    )
                outcome.estimate_bytes = estimates[spec]
                record(outcome)
            if broken:  # a dead worker breaks the pool: start a new one for the rest
                for future, spec in running.items():
                    pending.insert(0, spec)
                    future.cancel()
                running.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                pool = new_pool()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(
    todo: list[str],
    options: AnalysisOptions,
    parts: Path,
    address: str,
    record: Callable[[Outcome], None],
    policy: Policy | None = None,
) -> None:
    """Each model a task on the Dask cluster at ``address``; workers write the parts."""
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - distributed is in requirements.txt
        raise OptionError("--scheduler needs the 'distributed' package") from exc
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise OptionError(
            f"--scheduler {address}: cannot connect to a Dask scheduler there "
            f"({type(exc).__name__})"
        ) from exc
    try:
        futures = {
            client.submit(
                analyse_one,
                spec,
                options,
                str(parts.resolve()),
                None,
                policy,
                pure=False,
            ): spec
            for spec in todo
        }
        for future in as_completed(futures):
            spec = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # the task itself failed (a worker died, ...)
                outcome = Outcome(
                    spec, "failed", error=f"Dask task failed: {type(exc).__name__}: {exc}"
                )
            record(outcome)
    finally:
        client.close()
