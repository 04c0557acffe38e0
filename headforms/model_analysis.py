"""What an analysis returns: the model card, the per-head table, the spectra, and how they are
stored (an open-format :class:`headforms.store.Record`).

The per-head table is held as numpy columns; the pandas ``DataFrame`` (``.heads``) is built on
first use, so a command that only prints a summary never imports pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .baseline import Baseline, gaussian_baseline
from .card import ModelCard
from .columns import BASELINE_PREFIX, METRIC_COLUMNS, TABLE_COLUMNS, frame
from .store import Record

if TYPE_CHECKING:
    import pandas as pd

KIND = "analysis"
"""The kind of an analysis's store record."""


class ModelAnalysis:
    """One model's per-head table, spectra and card; its Gaussian baseline on demand.

    ``heads``: one row per query head, layer-major (columns
    :data:`headforms.columns.TABLE_COLUMNS`), a ``DataFrame`` built on first use from
    ``columns`` (numpy arrays). ``spectra``: arrays aligned with the rows: always ``eig_s``
    (the 2n eigenvalues of S that can be non-zero, decreasing), ``lobe_pos``/``lobe_neg``;
    ``sv_a`` (singular values of A) and ``eig_l_abs`` (moduli of the eigenvalues of L) when
    asked for (``analyze(spectra=...)``). ``baseline``: :class:`headforms.baseline.Baseline` of
    the same shapes, computed (and stored) on first use.
    """

    def __init__(
        self,
        card: ModelCard,
        heads: pd.DataFrame | Mapping[str, np.ndarray],
        spectra: dict[str, np.ndarray],
    ):
        self.card = card
        self.spectra = spectra
        if isinstance(heads, Mapping):
            self._columns: dict[str, np.ndarray] | None = {
                k: np.asarray(v) for k, v in heads.items()
            }
            self._heads: pd.DataFrame | None = None
        else:
            self._columns, self._heads = None, heads
        self._baseline: Baseline | None = None

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The per-head table as numpy columns (no pandas needed)."""
        if self._columns is None:
            assert self._heads is not None
            self._columns = {str(c): self._heads[c].to_numpy() for c in self._heads.columns}
        return self._columns

    @property
    def heads(self) -> pd.DataFrame:
        """The per-head table (pandas)."""
        if self._heads is None:
            self._heads = frame(self.columns)
        return self._heads

    def row(self, layer: int, head: int) -> int:
        """Row index of a head (layer-major order)."""
        if not (0 <= layer < self.card.n_layers and 0 <= head < self.card.n_heads):
            raise IndexError(f"no head L{layer}H{head} in {self.card.name}")
        return layer * self.card.n_heads + head

    @property
    def baseline(self) -> Baseline:
        """Independent Gaussian ``K, Q`` of this model's shapes (stored on disk per shape)."""
        if self._baseline is None:
            self._baseline = gaussian_baseline(self.card.baseline_shapes)
        return self._baseline

    def table(self, baseline: bool = False) -> pd.DataFrame:
        """The per-head table; with ``baseline``, the baseline's metrics as ``rand_*`` columns."""
        if not baseline:
            return self.heads
        return frame(self.table_columns(baseline=True))

    def table_columns(self, baseline: bool = False) -> dict[str, np.ndarray]:
        """:meth:`table` as numpy columns (no pandas needed)."""
        columns = dict(self.columns)
        if baseline:
            base = self.baseline.columns
            columns.update({BASELINE_PREFIX + name: base[name] for name in METRIC_COLUMNS})
        return columns

    def arrays(self, baseline: bool = False) -> dict[str, np.ndarray]:
        """The spectra, rows aligned with the table; ``baseline`` adds its spectra as ``rand_*``."""
        out = dict(self.spectra)
        if baseline:
            out.update({BASELINE_PREFIX + k: v for k, v in self.baseline.spectra.items()})
        return out


def analysis_record(analysis: ModelAnalysis) -> Record:
    """An analysis as a store record (card as JSON, table columns and spectra as arrays)."""
    return Record(
        kind=KIND,
        meta={"card": analysis.card.as_dict()},
        tables={"heads": analysis.columns},
        arrays=dict(analysis.spectra),
    )


def analysis_from_record(record: Record) -> ModelAnalysis:
    """The analysis of :func:`analysis_record`."""
    columns = record.tables["heads"]
    columns = {name: columns[name] for name in TABLE_COLUMNS}
    return ModelAnalysis(ModelCard.from_dict(record.meta["card"]), columns, dict(record.arrays))
