"""Checkpoints of a training run as one ordered series: every head's path over training.

A series is given either as one run directory holding ``checkpoint-STEP/`` folders (as
transformers' ``Trainer`` saves them: ``checkpoint-500``, ``checkpoint-1000``, ...) or as several
model specs, each naming its step: a local folder ``.../checkpoint-1500`` or a hub revision
``org/name@step1000`` (as Pythia publishes them). The step is the number the folder name or
the revision is, after an optional word (checkpoint, step, global_step, ckpt, iter):
``checkpoint-1500`` -> 1500, ``@step1000`` -> 1000, ``@1000`` -> 1000 (``gpt2`` names no step);
checkpoints are ordered by it. Each checkpoint is an ordinary model: analysed once by the engine
and cached (a series run again reads them back from the store), so a series resumes where it
stopped; the command line runs it as a survey (:mod:`headforms.survey`: resumable, within a
memory budget).

A run directory may instead hold a run store (:mod:`headforms.run_store`: the records that
:mod:`headforms.integrations` wrote while the model trained, every head's forms at each recorded
step): its records are then the series' checkpoints, read rather than analysed (each record's
spec is its file), so a run that is still training reads as far as it has gone.

All checkpoints must have the same shapes. The result is a :class:`Trajectory`, a
:class:`headforms.head_paths.HeadPaths` along ``step``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .errors import ModelSpecError, OptionError
from .head_paths import HeadPaths
from .options import DEFAULT_OPTIONS, AnalysisOptions
from .run_store import RecordFile, RunState, is_run_store, read_records, run_state
from .sources import Policy, allow, parse_spec

if TYPE_CHECKING:
    import pandas as pd

    from .card import ModelCard
    from .model_analysis import ModelAnalysis
    from .streaming import Progress

MAX_CHECKPOINTS = 256
"""Most checkpoints of one series (Pythia publishes 154 per model): each is a whole analysis,
and the dashboard draws every head's path through all of them."""

MAX_RUN_ENTRIES = 10_000
"""Entries of a run directory looked at before it is refused (a directory of a million files
is not a training run)."""

AXIS = "step"
"""The column of a series' long table that holds the training step."""

CHECKPOINT_FOLDER = re.compile(r"^checkpoint-(\d+)$")
"""A ``Trainer`` checkpoint folder's name."""

STEP_NAME = re.compile(r"^(?:checkpoint|step|global_step|ckpt|iter|iteration)?[-_]?(\d+)$", re.I)
"""A folder name or a revision that names a training step (``checkpoint-1500``, ``step1000``,
``ckpt-20``, ``1500``); a model's own name ending in digits (``gpt2``, ``llama3``) does not."""

STEP_HELP = (
    "name each checkpoint by its step: a folder checkpoint-STEP (as transformers' Trainer saves "
    "them) or a hub revision naming the step (org/name@step1000)"
)


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of a series: its training step and its model spec."""

    step: int
    spec: str


def checkpoint_step(spec: str) -> int:
    """The training step a checkpoint's spec names (module doc), or a one-line error."""
    text = spec.strip().rstrip("/\\")
    repo, at, revision = text.partition("@")
    name = revision if at and "/" not in revision else Path(text).name
    match = STEP_NAME.match(name)
    if match is None:
        raise OptionError(f"cannot tell the training step of {spec}: {STEP_HELP}")
    return int(match.group(1))


def run_checkpoints(run: str, policy: Policy | None = None) -> list[Checkpoint] | None:
    """The ``checkpoint-STEP/`` folders of a run directory, or None if ``run`` is not a local
    directory without a model of its own (then it is one checkpoint's spec). A directory holding
    neither a model nor checkpoint folders (an empty one) is refused in one line."""
    parsed = parse_spec(run, policy)
    if parsed.kind != "path":
        return None
    guard = policy.path_guard(run) if policy is not None else allow
    directory = Path(parsed.value)
    guard(directory)
    if not directory.is_dir() or (directory / "config.json").exists():
        return None
    found: list[Checkpoint] = []
    try:
        entries = os.scandir(directory)
    except OSError as error:
        raise OptionError(f"cannot list {run}: {error.strerror or error}") from None
    with entries:
        for count, entry in enumerate(entries):
            if count >= MAX_RUN_ENTRIES:
                raise OptionError(
                    f"{run} holds more than {MAX_RUN_ENTRIES} entries: not a training run's "
                    "directory of checkpoint-STEP folders"
                )
            match = CHECKPOINT_FOLDER.match(entry.name)
            if match and entry.is_dir(follow_symlinks=False):
                found.append(Checkpoint(int(match.group(1)), os.path.join(run, entry.name)))
    if not found:
        raise OptionError(
            f"{run} holds no checkpoint-STEP folders (as transformers' Trainer saves them) and "
            "no model (config.json): nothing to analyse"
        )
    return found


def open_series(inputs: Sequence[str], policy: Policy | None = None) -> list[Checkpoint]:
    """The checkpoints of a series, ordered by step: one run directory, or several specs that
    each name their step (module doc). One-line errors: no input, a step that cannot be told,
    two checkpoints at one step, more than :data:`MAX_CHECKPOINTS`."""
    inputs = [text.strip() for text in inputs if text and text.strip()]
    if not inputs:
        raise OptionError(
            "no checkpoints given: a run directory of checkpoint-STEP folders, or checkpoints "
            "(org/name@step1000 ...)"
        )
    found: list[Checkpoint] = []
    for text in inputs:
        if len(found) > MAX_CHECKPOINTS:
            break
        run = run_checkpoints(text, policy) if len(inputs) == 1 else None
        found.extend(run if run is not None else [Checkpoint(checkpoint_step(text), text)])
    if len(found) > MAX_CHECKPOINTS:
        raise OptionError(
            f"more than {MAX_CHECKPOINTS} checkpoints in one series (at most {MAX_CHECKPOINTS}; "
            "take every k-th one)"
        )
    found.sort(key=lambda c: c.step)
    for before, after in zip(found, found[1:], strict=False):
        if before.step == after.step:
            raise OptionError(
                f"two checkpoints at step {after.step}: {before.spec} and {after.spec}"
            )
    return found


def series_label(inputs: Sequence[str], checkpoints: Sequence[Checkpoint]) -> str:
    """How a series is named: its run directory, or its first and last checkpoints."""
    if len(inputs) == 1 and len(checkpoints) > 1:
        return inputs[0].strip()
    first, last = checkpoints[0].spec, checkpoints[-1].spec
    return first if first == last else f"{first} … {last}"


SHAPE_NAMES = (
    ("n_layers", "layers"),
    ("n_heads", "heads"),
    ("n_kv_heads", "kv heads"),
    ("head_dim", "head dim n"),
    ("model_dim", "model dim N"),
)
"""The shapes two models must share to be matched head by head (card field, name)."""


def check_same_shapes(first: ModelCard | Any, second: ModelCard | Any, what: str) -> None:
    """Refuse, in one line naming the shapes that differ, two models whose heads do not
    correspond one to one (``what``: what was asked, e.g. ``"diff a and b"``); ``first`` and
    ``second``: model cards, or anything with their shape fields (:data:`SHAPE_NAMES`)."""
    differ = [
        f"{name} {getattr(first, field)} vs {getattr(second, field)}"
        for field, name in SHAPE_NAMES
        if getattr(first, field) != getattr(second, field)
    ]
    if differ:
        raise ModelSpecError(
            f"cannot {what}: their shapes differ ({', '.join(differ)}); heads are matched one "
            "to one, so both need the same layers, heads, kv heads and dims"
        )


class Trajectory(HeadPaths):
    """Every head at each checkpoint of a series (ordered by ``step``); ``checkpoints`` and the
    per-point column ``checkpoint`` name each one's spec, ``analyses`` are theirs."""

    run: RunState | None = None
    """The run store the series was read from (None: checkpoints analysed)."""
    damaged: tuple[RecordFile, ...] = ()
    """The run store's records that could not be read (left out)."""

    def __init__(
        self, label: str, checkpoints: Sequence[Checkpoint], analyses: Sequence[ModelAnalysis]
    ):
        import numpy as np

        from .columns import TABLE_COLUMNS

        cards = [a.card for a in analyses]
        for checkpoint, card in zip(checkpoints[1:], cards[1:], strict=True):
            check_same_shapes(cards[0], card, f"follow {checkpoints[0].spec} to {checkpoint.spec}")
        columns = {
            name: np.concatenate([np.asarray(a.columns[name]) for a in analyses])
            for name in TABLE_COLUMNS
        }
        card = replace(cards[-1], spec=label)
        specs = [c.spec for c in checkpoints]
        super().__init__(AXIS, [c.step for c in checkpoints], card, columns, {"checkpoint": specs})
        self.label = label
        self.checkpoints = list(checkpoints)
        self.analyses = list(analyses)

    @property
    def steps(self) -> tuple[int, ...]:
        """The training steps, increasing."""
        return self.values  # type: ignore[return-value]


Analyze = Callable[[Checkpoint, int, int], "ModelAnalysis"]
"""``analyze(checkpoint, index, total)``: one checkpoint's analysis (the engine's, or the
dashboard's contained one)."""


def trajectory(
    inputs: Sequence[str] | str,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    policy: Policy | None = None,
    analyze: Analyze | None = None,
) -> Trajectory:
    """The series of ``inputs`` (:func:`open_series`), each checkpoint analysed at ``options``
    through the engine (cached: a checkpoint analysed before is a store read) in step order.
    ``analyze`` replaces the engine's analysis of one checkpoint (e.g. a contained worker's)."""
    from . import engine

    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    store = run_store_of(inputs[0], policy) if len(inputs) == 1 else None
    if store is not None:
        state = run_state(store)
        check_run_options(state, options)
        return run_series(state)
    checkpoints = open_series(inputs, policy)
    total = len(checkpoints)

    def one(checkpoint: Checkpoint, index: int, total: int) -> ModelAnalysis:
        def relay(done: int, layers: int, message: str) -> None:
            if progress:
                progress(
                    index * layers + done, total * layers, f"step {checkpoint.step}: {message}"
                )

        return engine.analyze(checkpoint.spec, options=options, progress=relay, policy=policy)

    analyses = [(analyze or one)(c, i, total) for i, c in enumerate(checkpoints)]
    return Trajectory(series_label(inputs, checkpoints), checkpoints, analyses)


def run_store_of(text: str, policy: Policy | None = None) -> Path | None:
    """The directory ``text`` names if it holds a run store (:mod:`headforms.run_store`), else
    None (a checkpoint, a run directory of checkpoint folders, a hub id...)."""
    parsed = parse_spec(text, policy)
    if parsed.kind != "path":
        return None
    directory = Path(parsed.value)
    (policy.path_guard(text) if policy is not None else allow)(directory)
    return directory if directory.is_dir() and is_run_store(directory) else None


def check_run_options(state: RunState, options: AnalysisOptions) -> None:
    """Refuse, in one line, options other than those the run store's records were made at."""
    kept = state.manifest
    if (options.rope_position, options.fold_qk_norm) != (kept.rope_position, kept.fold_qk_norm):
        folded = "folded" if kept.fold_qk_norm else "unfolded"
        raise OptionError(
            f"{state.directory} holds records made at RoPE position {kept.rope_position} with "
            f"QK-norm gains {folded}: ask for those (the records hold no weights to analyse "
            "again)"
        )


def run_series(
    state: RunState, spectra: bool = True, records: Sequence[RecordFile] | None = None
) -> Trajectory:
    """The series of a run store's whole records (``records``: those of ``state`` to read,
    default all), each one a checkpoint whose spec is its file; without ``spectra`` only the
    tables are read. A store without a whole record yet is a one-line error."""
    chosen = RunState(state.directory, state.manifest, tuple(records or state.records))
    whole, damaged = read_records(chosen, spectra)
    if not whole:
        what = "no record yet" if not damaged else f"no whole record ({len(damaged)} damaged)"
        raise OptionError(f"{state.directory} holds a run store with {what}: nothing to show")
    checkpoints = [Checkpoint(record.step, str(record.path)) for record, _ in whole]
    series = Trajectory(str(state.directory), checkpoints, [analysis for _, analysis in whole])
    series.run, series.damaged = state, tuple(damaged)
    return series


def table_shapes(heads: pd.DataFrame, head_dim: int, model_dim: int) -> SimpleNamespace:
    """The shapes (:data:`SHAPE_NAMES`) of a model as its per-head table shows them."""
    return SimpleNamespace(
        n_layers=int(heads["layer"].max()) + 1,
        n_heads=int(heads["head"].max()) + 1,
        n_kv_heads=int(heads["kv_head"].max()) + 1,
        head_dim=int(head_dim),
        model_dim=int(model_dim),
    )


def trajectory_table(checkpoints: Sequence[Checkpoint], survey_table: pd.DataFrame) -> pd.DataFrame:
    """The long table of a series run as a survey (:mod:`headforms.survey`: a ``model`` column
    naming each checkpoint's spec): ``step, checkpoint`` and the per-head columns, ordered by
    step, the heads of each checkpoint layer-major (as :attr:`Trajectory.table`); checkpoints
    of other shapes than the first done are refused in one line."""
    import pandas as pd

    from .analyses.survey import SURVEY_ID_COLUMNS
    from .columns import TABLE_COLUMNS

    parts = []
    first: tuple[str, SimpleNamespace] | None = None
    for checkpoint in checkpoints:
        rows = survey_table[survey_table["model"] == checkpoint.spec]
        if rows.empty:  # failed: reported by the survey
            continue
        shapes = table_shapes(rows, rows["head_dim"].iloc[0], rows["model_dim"].iloc[0])
        if first is None:
            first = (checkpoint.spec, shapes)
        else:
            check_same_shapes(first[1], shapes, f"follow {first[0]} to {checkpoint.spec}")
        rows = rows.drop(columns=list(SURVEY_ID_COLUMNS)).sort_values(["layer", "head"])
        rows.insert(0, "checkpoint", checkpoint.spec)
        rows.insert(0, AXIS, checkpoint.step)
        parts.append(rows[[AXIS, "checkpoint", *TABLE_COLUMNS]])
    return pd.concat(parts, ignore_index=True)
