"""The Gaussian baseline: independent standard normal ``K, Q`` of a model's shapes, per head,
computed here and stored here, once per shape.

Every metric depends on ``K, Q`` only through the Gram matrix ``G = U^T U`` of
``U = [K^T, Q^T]``, so the baseline samples ``G ~ Wishart(N, I_2n)`` through its Bartlett factor
(:func:`headforms.forms.wishart_factor`): the law of iid normal ``K, Q``, at ``O(n^2)`` per head.
It depends only on the seed and the shapes (layers, heads per layer H, head dim n, model dim N:
:attr:`headforms.card.ModelCard.baseline_shapes`), so one baseline serves every model of those
shapes; layer ``i`` draws from ``default_rng([seed, i])``. Computed when a view asks for it,
never on the command line's cold path, and kept in the result store under
:func:`baseline_key`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from .architectures import Shapes
from .columns import BASELINE_SPECTRA, frame
from .forms import FormBatch, forms_from_factor, wishart_factor
from .heads import metric_columns
from .store import Record, ResultStore, cache_key, key_lock

if TYPE_CHECKING:
    import pandas as pd

BASELINE_SEED = 20260929
"""Seed of the Gaussian baseline (per layer: ``default_rng([seed, layer])``)."""

KIND = "baseline"
"""The kind of a baseline's store record."""


@dataclass
class Baseline:
    """Per-head metrics (``columns``: layer, head and the metric columns of a model's table)
    and spectra of Gaussian forms, rows layer-major like a model's table."""

    shapes: Shapes
    seed: int
    columns: dict[str, np.ndarray]
    spectra: dict[str, np.ndarray]

    @property
    def heads(self) -> pd.DataFrame:
        """The per-head table (pandas, built on first use)."""
        cached = self.__dict__.get("_heads")
        if cached is None:
            cached = self.__dict__["_heads"] = frame(self.columns)
        return cached


def baseline_layer(shapes: Shapes, layer: int, seed: int = BASELINE_SEED) -> FormBatch:
    """The :class:`headforms.forms.FormBatch` of one layer's Gaussian heads."""
    rng = np.random.default_rng([seed, layer])
    factor = wishart_factor(rng, shapes.n_heads, shapes.head_dim, shapes.model_dim)
    return forms_from_factor(factor, shapes.model_dim, eig_l=False)


def compute_baseline(shapes: Shapes, seed: int = BASELINE_SEED) -> Baseline:
    """Every layer's Gaussian heads (layer-major rows, like a model's table)."""
    columns: list[dict[str, np.ndarray]] = []
    spectra: dict[str, list[np.ndarray]] = {name: [] for name in BASELINE_SPECTRA}
    for layer in range(shapes.n_layers):
        batch = baseline_layer(shapes, layer, seed)
        columns.append(metric_columns(layer, shapes.n_heads, batch))
        for name in BASELINE_SPECTRA:
            spectra[name].append(getattr(batch, name))
    table = {c: np.concatenate([part[c] for part in columns]) for c in columns[0]}
    return Baseline(shapes, seed, table, {k: np.concatenate(v) for k, v in spectra.items()})


def baseline_key(shapes: Shapes, seed: int = BASELINE_SEED) -> str:
    """The store key of the Gaussian baseline of ``shapes``."""
    subject = {k: v for k, v in asdict(shapes).items() if k != "n_kv_heads"}
    return cache_key("gaussian-baseline", {"shapes": subject, "seed": int(seed)})


def stored_baseline(
    shapes: Shapes, seed: int = BASELINE_SEED, store: ResultStore | None = None
) -> Baseline | None:
    """The stored baseline of ``shapes``, or None (nothing is computed)."""
    store = store or ResultStore()
    record = store.get(baseline_key(shapes, seed), KIND)
    if record is None:
        return None
    try:
        return baseline_from_record(record)
    except (KeyError, TypeError, ValueError):  # an entry of other result classes: a miss
        store.delete(baseline_key(shapes, seed))
        return None


def gaussian_baseline(
    shapes: Shapes, seed: int = BASELINE_SEED, store: ResultStore | None = None
) -> Baseline:
    """The Gaussian baseline of ``shapes``, computed once per shape and stored."""
    store = store or ResultStore()
    found = stored_baseline(shapes, seed, store)
    if found is None:
        key = baseline_key(shapes, seed)
        with key_lock(key):
            found = stored_baseline(shapes, seed, store)
            if found is None:
                found = compute_baseline(shapes, seed)
                store.put(key, baseline_record(found))
    return found


def baseline_record(baseline: Baseline) -> Record:
    """A baseline as a store record."""
    return Record(
        kind=KIND,
        meta={"shapes": asdict(baseline.shapes), "seed": baseline.seed},
        tables={"heads": baseline.columns},
        arrays=dict(baseline.spectra),
    )


def baseline_from_record(record: Record) -> Baseline:
    """The baseline of :func:`baseline_record`."""
    return Baseline(
        Shapes(**record.meta["shapes"]),
        int(record.meta["seed"]),
        dict(record.tables["heads"]),
        dict(record.arrays),
    )
