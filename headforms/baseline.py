"""The Gaussian baseline: independent standard normal ``K, Q`` of a model's shapes, per head.

Every metric depends on ``K, Q`` only through the Gram matrix ``G = U^T U`` of
``U = [K^T, Q^T]``, so the baseline samples ``G ~ Wishart(N, I_2n)`` through its Bartlett factor
(:func:`headforms.forms.wishart_factor`): the law of iid normal ``K, Q``, at ``O(n^2)`` per head.
It depends only on the seed and the shapes (layers, heads per layer H, head dim n, model dim N),
so one baseline serves every model of those shapes; layer ``i`` draws from
``default_rng([seed, i])``. Computed when a view asks for it, never on the command line's
cold path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .forms import FormBatch, forms_from_factor, wishart_factor

if TYPE_CHECKING:
    import pandas as pd

BASELINE_SEED = 20260929
"""Seed of the Gaussian baseline (per layer: ``default_rng([seed, layer])``)."""

BASELINE_SPECTRA = ("eig_s", "lobe_pos", "lobe_neg", "sv_a")
"""Spectra kept for the baseline (the eigenvalues of L are not needed)."""


@dataclass(frozen=True)
class BaselineShapes:
    """What a baseline depends on: layers, query heads per layer, head dim n, model dim N."""

    n_layers: int
    n_heads: int
    head_dim: int
    model_dim: int


@dataclass
class Baseline:
    """Per-head metrics (``columns``: layer, head and the metric columns of a model's table)
    and spectra of Gaussian forms, rows layer-major like a model's table."""

    shapes: BaselineShapes
    seed: int
    columns: dict[str, np.ndarray]
    spectra: dict[str, np.ndarray]

    @property
    def heads(self) -> pd.DataFrame:
        """The per-head table (pandas, built on first use)."""
        from .results import frame

        cached = self.__dict__.get("_heads")
        if cached is None:
            cached = self.__dict__["_heads"] = frame(self.columns)
        return cached


def baseline_layer(shapes: BaselineShapes, layer: int, seed: int = BASELINE_SEED) -> FormBatch:
    """The :class:`headforms.forms.FormBatch` of one layer's Gaussian heads."""
    rng = np.random.default_rng([seed, layer])
    factor = wishart_factor(rng, shapes.n_heads, shapes.head_dim, shapes.model_dim)
    return forms_from_factor(factor, shapes.model_dim, eig_l=False)


def compute_baseline(shapes: BaselineShapes, seed: int = BASELINE_SEED) -> Baseline:
    """Every layer's Gaussian heads (layer-major rows, like a model's table)."""
    from .results import metric_columns

    columns: list[dict[str, np.ndarray]] = []
    spectra: dict[str, list[np.ndarray]] = {name: [] for name in BASELINE_SPECTRA}
    for layer in range(shapes.n_layers):
        batch = baseline_layer(shapes, layer, seed)
        columns.append(metric_columns(layer, np.arange(shapes.n_heads), batch))
        for name in BASELINE_SPECTRA:
            spectra[name].append(getattr(batch, name))
    table = {c: np.concatenate([part[c] for part in columns]) for c in columns[0]}
    return Baseline(shapes, seed, table, {k: np.concatenate(v) for k, v in spectra.items()})
