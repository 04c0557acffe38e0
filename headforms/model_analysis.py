"""What an analysis returns: the model card, the per-head table, the spectra, and how they are
stored (an open-format :class:`headforms.store.Record`).

The per-head table is held as numpy columns; the pandas ``DataFrame`` (``.heads``) is built on
first use, so a command that only prints a summary never imports pandas. An analysis is plain
data: its Gaussian baseline is a computation of its own (:func:`model_baseline`), handed to
:meth:`ModelAnalysis.table` and :meth:`ModelAnalysis.arrays` by the caller that asked for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .baseline import Baseline, gaussian_baseline
from .card import ModelCard
from .columns import BASELINE_PREFIX, METRIC_COLUMNS, TABLE_COLUMNS, frame
from .errors import UnavailableDataError
from .store import Record

if TYPE_CHECKING:
    import pandas as pd

KIND = "analysis"
"""The kind of an analysis's store record."""


class ModelAnalysis:
    """One model's per-head table, spectra and card (plain data: nothing is computed or read
    on access).

    ``heads``: one row per query head, layer-major (columns
    :data:`headforms.columns.TABLE_COLUMNS`), a ``DataFrame`` built on first use from
    ``columns`` (numpy arrays). ``spectra``: arrays aligned with the rows: always ``eig_s``
    (the 2n eigenvalues of S that can be non-zero, decreasing), ``lobe_pos``/``lobe_neg``;
    ``sv_a`` (singular values of A) and ``eig_l_abs`` (moduli of the eigenvalues of L) when
    asked for (``analyze(spectra=...)``). The Gaussian baseline of the same shapes is
    :func:`model_baseline` (a computation, stored per shape).
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

    def table(self, baseline: Baseline | None = None) -> pd.DataFrame:
        """The per-head table; with a ``baseline`` (:func:`model_baseline`), its metrics as
        ``rand_*`` columns."""
        if baseline is None:
            return self.heads
        return frame(self.table_columns(baseline))

    def table_columns(self, baseline: Baseline | None = None) -> dict[str, np.ndarray]:
        """:meth:`table` as numpy columns (no pandas needed)."""
        columns = dict(self.columns)
        if baseline is not None:
            columns.update(
                {BASELINE_PREFIX + name: baseline.columns[name] for name in METRIC_COLUMNS}
            )
        return columns

    def arrays(self, baseline: Baseline | None = None) -> dict[str, np.ndarray]:
        """The spectra, rows aligned with the table; a ``baseline`` adds its spectra as
        ``rand_*``."""
        out = dict(self.spectra)
        if baseline is not None:
            out.update({BASELINE_PREFIX + k: v for k, v in baseline.spectra.items()})
        return out


def model_baseline(card: ModelCard) -> Baseline:
    """The Gaussian baseline of a model's shapes (:func:`headforms.baseline.gaussian_baseline`:
    computed once per shape, then read from the result store); a one-line
    :class:`UnavailableDataError` for a model without one (a published table that gives no
    model dim N or head dim n)."""
    if not card.has_baseline:
        raise UnavailableDataError(
            f"{card.name}: no Gaussian baseline: the table does not give the model dim N and "
            "head dim n it needs"
        )
    return gaussian_baseline(card.baseline_shapes)


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
