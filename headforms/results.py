"""What an analysis returns: the model card, the per-head table, the spectra, and how they are
stored (an open-format :class:`headforms.store.Record`).

The per-head table is held as numpy columns; the pandas ``DataFrame`` (``.heads``) is built on
first use, so a command that only prints a summary never imports pandas.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from .architectures import ROTARY
from .baseline import Baseline, BaselineShapes
from .errors import OptionError
from .forms import FormBatch
from .store import Record

if TYPE_CHECKING:
    import pandas as pd

METRIC_COLUMNS = (
    "a",
    "b",
    "c",
    "d",
    "b_sym",
    "c_sym",
    "d_sym",
    "energy",
    "pairing",
    "parity",
    "n_pos",
    "n_neg",
    "n_zero",
    "norm_l",
    "balance",
    "participation_ratio",
    "stable_rank",
    "leading_share",
    "rho",
    "lobe_departure",
    "pairing_bound",
    "pairing_gap",
    "theorem5_b",
    "theorem5_c",
    "theorem5_d",
)
"""Per-head metrics of a form (:func:`headforms.forms.form_metrics`), in table order."""

TABLE_COLUMNS = ("layer", "head", "kv_head", *METRIC_COLUMNS, "q_bias_norm", "k_bias_norm")
"""Columns of a model's per-head table."""

BASELINE_PREFIX = "rand_"
"""Prefix of the baseline's columns and spectra when they are joined to a model's
(:meth:`ModelAnalysis.table`, :meth:`ModelAnalysis.arrays`): the only place they meet."""

CORE_SPECTRA = ("eig_s", "lobe_pos", "lobe_neg")
"""Spectra every analysis has (the per-head table is computed from them)."""

EXTRA_SPECTRA = ("sv_a", "eig_l_abs")
"""Spectra computed only when asked for: singular values of A, moduli of the eigenvalues of L."""

ALL_SPECTRA = CORE_SPECTRA + EXTRA_SPECTRA


def spectra_names(spectra: Iterable[str]) -> set[str]:
    """The spectra to compute: the core ones plus those asked for (unknown names: an error)."""
    names = set(spectra)
    unknown = names - set(ALL_SPECTRA)
    if unknown:
        raise OptionError(
            f"unknown spectra {sorted(unknown)}; accepted: {', '.join(EXTRA_SPECTRA)}"
        )
    return names | set(CORE_SPECTRA)


def metric_columns(layer: int, head: np.ndarray, batch: FormBatch) -> dict[str, np.ndarray]:
    """``layer``, ``head`` and every :data:`METRIC_COLUMNS` of one layer's batch of forms."""
    metrics = batch.metrics()
    columns = {"layer": np.full(len(head), layer), "head": np.asarray(head)}
    columns.update({name: metrics[name] for name in METRIC_COLUMNS})
    return columns


def frame(columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """A ``DataFrame`` of numpy columns (pandas imported here, on first use)."""
    import pandas as pd

    return pd.DataFrame({name: np.asarray(values) for name, values in columns.items()})


@dataclass
class ModelCard:
    """What the model is, as shown on the overview page and in exports."""

    spec: str
    name: str
    source_kind: str
    family: str
    model_type: str
    n_layers: int
    model_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    positional: str
    storage: str
    rope_position: int
    qk_norm: bool
    qk_norm_folded: bool
    has_qk_bias: bool
    rope: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fingerprint: str = ""
    weight_bytes: int = 0
    n_parameters: int | None = None

    @property
    def total_heads(self) -> int:
        """Number of query heads in the model."""
        return self.n_layers * self.n_heads

    @property
    def rotary(self) -> bool:
        """Whether positions enter the form as a RoPE rotation (a RoPE position applies)."""
        return self.positional == ROTARY

    @property
    def baseline_shapes(self) -> BaselineShapes:
        """The shapes the Gaussian baseline of this model depends on."""
        return BaselineShapes(self.n_layers, self.n_heads, self.head_dim, self.model_dim)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON and the overview table)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCard:
        """The card of :meth:`as_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class ModelAnalysis:
    """One model's per-head table, spectra and card; its Gaussian baseline on demand.

    ``heads``: one row per query head, layer-major (columns :data:`TABLE_COLUMNS`), a
    ``DataFrame`` built on first use from ``columns`` (numpy arrays). ``spectra``: arrays aligned
    with the rows: always ``eig_s`` (the 2n eigenvalues of S that can be non-zero, decreasing),
    ``lobe_pos``/``lobe_neg``; ``sv_a`` (singular values of A) and ``eig_l_abs`` (moduli of the
    eigenvalues of L) when asked for (``analyze(spectra=...)``). ``baseline``:
    :class:`headforms.baseline.Baseline` of the same shapes, computed (and cached) on first use.
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
        """Independent Gaussian ``K, Q`` of this model's shapes (cached on disk per shape)."""
        if self._baseline is None:
            from .engine import gaussian_baseline

            self._baseline = gaussian_baseline(self.card.baseline_shapes)
        return self._baseline

    def table(self, baseline: bool = False) -> pd.DataFrame:
        """The per-head table; with ``baseline``, the baseline's metrics as ``rand_*`` columns."""
        if not baseline:
            return self.heads
        columns = dict(self.columns)
        base = self.baseline.columns
        columns.update({BASELINE_PREFIX + name: base[name] for name in METRIC_COLUMNS})
        return frame(columns)

    def arrays(self, baseline: bool = False) -> dict[str, np.ndarray]:
        """The spectra, rows aligned with the table; ``baseline`` adds its spectra as ``rand_*``."""
        out = dict(self.spectra)
        if baseline:
            out.update({BASELINE_PREFIX + k: v for k, v in self.baseline.spectra.items()})
        return out


def analysis_record(analysis: ModelAnalysis) -> Record:
    """An analysis as a store record (card as JSON, table columns and spectra as arrays)."""
    return Record(
        kind="analysis",
        meta={"card": analysis.card.as_dict()},
        tables={"heads": analysis.columns},
        arrays=dict(analysis.spectra),
    )


def analysis_from_record(record: Record) -> ModelAnalysis:
    """The analysis of :func:`analysis_record`."""
    columns = record.tables["heads"]
    columns = {name: _column(columns[name]) for name in TABLE_COLUMNS}
    return ModelAnalysis(ModelCard.from_dict(record.meta["card"]), columns, dict(record.arrays))


def baseline_record(baseline: Baseline) -> Record:
    """A baseline as a store record."""
    return Record(
        kind="baseline",
        meta={"shapes": asdict(baseline.shapes), "seed": baseline.seed},
        tables={"heads": baseline.columns},
        arrays=dict(baseline.spectra),
    )


def baseline_from_record(record: Record) -> Baseline:
    """The baseline of :func:`baseline_record`."""
    columns = {name: _column(values) for name, values in record.tables["heads"].items()}
    return Baseline(
        BaselineShapes(**record.meta["shapes"]),
        int(record.meta["seed"]),
        columns,
        dict(record.arrays),
    )


def _column(values: np.ndarray) -> np.ndarray:
    """Stored label columns (fixed-width unicode) back to the object arrays computed ones use."""
    return values.astype(object) if values.dtype.kind == "U" else values
