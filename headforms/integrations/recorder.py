"""Recording a live model's heads while it trains: its Q/K weights read where they live, every
head's forms computed by the engine's exact low-rank path, one record per step appended to a
run store (:mod:`headforms.run_store`), and a few scalars for the run's loggers.

Nothing is written but the record: no checkpoint, no copy of the weights. The model is read,
never changed (its tensors are copied to the CPU one at a time, detached, under ``no_grad``; no
random number is drawn), so the training is the same with and without recording. In a
distributed run only rank 0 computes and writes; every rank calls, since a sharded model's Q/K
tensors are gathered by all of its ranks together (:func:`headforms.models.module.gathered_source`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..analyses.training import record_scalars
from ..errors import OptionError
from ..models.module import gathered_source
from ..options import AnalysisOptions
from ..run_store import RunWriter, read_record, run_state
from ..streaming import compute_analysis

PROFILE_COLUMNS = ("layer", "head", "parity", "a", "b", "c", "d")
"""What the scalars of the next record need from the previous one."""


def rank_zero() -> bool:
    """Whether this process records: rank 0 of a ``torch.distributed`` run, or a run that is not
    distributed."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def check_step(step: object) -> int:
    """A training step (a whole number, 0 or more), or a one-line error."""
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 0:
        raise OptionError(f"step {step!r}: a whole number, 0 or more (the optimizer steps done)")
    return int(step)


class Recorder:
    """Records one run into the run store in ``out`` (module doc): :meth:`record` at each step
    to keep, :meth:`finish` when the run ends. ``every``: how often the caller records (kept in
    the store's manifest); ``name``: how records name the model (default: its config's)."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        rope_position: int = 0,
        every: int | None = None,
        name: str | None = None,
    ):
        if not isinstance(out, str | os.PathLike) or not str(out).strip():
            raise OptionError(f"out {out!r}: a directory for the run store")
        self.out = Path(out)
        self.options = AnalysisOptions(rope_position)
        self.every = every
        self.name = name
        self._writer: RunWriter | None = None
        self._previous: dict[str, np.ndarray] | None = None
        self.last_step: int | None = None

    def record(self, model: Any, step: int, write: bool | None = None) -> dict[str, float] | None:
        """Record ``model``'s heads at ``step`` and return the record's scalars
        (:func:`headforms.analyses.training.record_scalars`); None on the processes that do not
        write (``write``, default :func:`rank_zero`), which still take their part in gathering
        a sharded model's tensors."""
        step = check_step(step)
        source = gathered_source(model, self.name)
        if not (rank_zero() if write is None else write):
            return None
        analysis = compute_analysis(source, self.options)
        card = analysis.card
        if self._writer is None:
            shapes = {f: getattr(card, f) for f in ("n_layers", "n_heads", "n_kv_heads")}
            shapes.update(head_dim=card.head_dim, model_dim=card.model_dim)
            self._writer = RunWriter.open(self.out, card.name, shapes, self.options, self.every)
        previous = self._previous if self._previous is not None else self._stored_before(step)
        self._writer.write(step, analysis)
        columns = analysis.columns
        self._previous = {name: columns[name] for name in PROFILE_COLUMNS}
        self.last_step = step
        return record_scalars(columns, previous)

    def finish(self, step: int) -> None:
        """Say in the store that the run ended at ``step`` (a live page stops waiting)."""
        if self._writer is not None:
            self._writer.finish(check_step(step))

    def _stored_before(self, step: int) -> dict[str, np.ndarray] | None:
        """The profile columns of the store's last record before ``step`` (a loop that calls
        :func:`record` each time, or a resumed run), or None."""
        earlier = [r for r in run_state(self.out).records if r.step < step]
        found = read_record(earlier[-1], spectra=False) if earlier else None
        return None if found is None else {n: found.columns[n] for n in PROFILE_COLUMNS}


def record(
    model: Any,
    step: int,
    out: str | os.PathLike[str],
    rope_position: int = 0,
    name: str | None = None,
) -> dict[str, float] | None:
    """Record ``model``'s heads at training ``step`` into the run store in ``out`` (created on
    the first call), from a plain PyTorch loop; returns the record's scalars for the loop's own
    logger, None on ranks other than 0. Call it on every rank of a distributed run."""
    return Recorder(out, rope_position, name=name).record(model, step)
