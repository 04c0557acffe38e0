"""A sweep over RoPE positions: every head's row at every relative position d of a range, from
one pass over the model's layers (:func:`headforms.heads.layer_sweep`), and how it is stored.

A :class:`PositionSweep` is :class:`headforms.head_paths.HeadPaths` along ``rope_position``: its
rows at any d are the single-position analysis's table at d (tests check it to 1e-9). The
eigenvalues of S at every position are kept only when asked (``SweepOptions(spectra=True)``):
positions x heads x 2n values. Both sizes are bounded before any layer is read
(:func:`check_sweep_size`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .architectures import Shapes
from .card import ModelCard
from .columns import TABLE_COLUMNS
from .errors import OptionError
from .forms import lobes
from .head_paths import HeadPaths
from .options import SweepOptions
from .store import Record

KIND = "sweep"
"""The kind of a sweep's store record."""

AXIS = "rope_position"
"""The column of a sweep's long table that holds d."""

MAX_SWEEP_ROWS = 2**21
"""Rows (positions x heads) a sweep may have: 2.1 M rows of about 30 columns, 0.5 GB; SmolLM2's
270 heads at the 1024 positions of :data:`headforms.options.MAX_ROPE_POSITIONS` are 276 k."""

MAX_SWEEP_SPECTRA = 2**26
"""Eigenvalues of S (positions x heads x 2n) a sweep may keep when asked for them: 512 MiB."""


def check_sweep_size(shapes: Shapes, options: SweepOptions) -> None:
    """Refuse, in one line, a sweep whose table (or kept spectra) would pass the bounds."""
    heads = shapes.n_layers * shapes.n_heads
    rows = len(options.positions) * heads
    if rows > MAX_SWEEP_ROWS:
        most = max(1, MAX_SWEEP_ROWS // heads)
        raise OptionError(
            f"{len(options.positions)} RoPE positions x {heads} heads = {rows} rows, more than "
            f"a sweep may have ({MAX_SWEEP_ROWS}); take at most {most} positions (a step)"
        )
    values = rows * 2 * shapes.head_dim
    if options.spectra and values > MAX_SWEEP_SPECTRA:
        most = max(1, MAX_SWEEP_SPECTRA // (heads * 2 * shapes.head_dim))
        raise OptionError(
            f"keeping the eigenvalues of S at {len(options.positions)} positions of {heads} "
            f"heads would need {values} values, more than {MAX_SWEEP_SPECTRA}; keep them for at "
            f"most {most} positions, or drop the spectra"
        )


class PositionSweep(HeadPaths):
    """Every head at every RoPE position of ``options`` (rows position-major, then layer-major
    heads); ``eig_s`` (rows aligned with the table) when the options kept the spectra."""

    def __init__(
        self,
        card: ModelCard,
        options: SweepOptions,
        columns: Mapping[str, np.ndarray],
        eig_s: np.ndarray | None = None,
    ):
        super().__init__(AXIS, options.positions, card, columns)
        self.options = options
        self.eig_s = eig_s

    @property
    def positions(self) -> tuple[int, ...]:
        """The RoPE positions d, increasing."""
        return self.values  # type: ignore[return-value]

    def spectra_at(self, point: int) -> dict[str, np.ndarray]:
        """The core spectra (eigenvalues of S and their lobes) at the ``point``-th position, as
        one analysis holds them; only for a sweep that kept them."""
        if self.eig_s is None:
            raise OptionError("this sweep kept no spectra (ask for them: spectra=True)")
        heads = self.card.total_heads
        eig_s = self.eig_s[point * heads : (point + 1) * heads]
        lobe_pos, lobe_neg = lobes(eig_s)
        return {"eig_s": eig_s, "lobe_pos": lobe_pos, "lobe_neg": lobe_neg}


def sweep_record(sweep: PositionSweep) -> Record:
    """A sweep as a store record: card and options as JSON, the long table, the spectra."""
    arrays = {} if sweep.eig_s is None else {"eig_s": sweep.eig_s}
    return Record(
        kind=KIND,
        meta={"card": sweep.card.as_dict(), "options": sweep.options.as_dict()},
        tables={"heads": {name: sweep._columns[name] for name in TABLE_COLUMNS}},
        arrays=arrays,
    )


def sweep_from_record(record: Record) -> PositionSweep:
    """The sweep of :func:`sweep_record`."""
    options = SweepOptions.from_dict(record.meta["options"])
    columns = record.tables["heads"]
    return PositionSweep(
        ModelCard.from_dict(record.meta["card"]),
        options,
        {name: columns[name] for name in TABLE_COLUMNS},
        record.arrays.get("eig_s"),
    )
