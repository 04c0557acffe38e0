"""Model-level summaries of the per-head table: parity table (Table 2), parity by layer (Fig 12)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..forms import PARITY_LABELS

PAPER_TABLE2: dict[str, tuple[float, float, float]] = {
    "distilgpt2": (34.7, 26.4, 38.9),
    "gpt2": (36.8, 34.0, 29.2),
    "gpt2-medium": (54.2, 28.6, 17.2),
    "gpt2-large": (64.3, 22.6, 13.1),
    "facebook/opt-125m": (79.2, 16.7, 4.2),
    "facebook/opt-350m": (78.9, 20.8, 0.3),
}
"""The paper's published Table 2 rows: percent of heads of type I+, II, I- (SPEC.md)."""


def parity_shares(heads: pd.DataFrame, column: str = "parity") -> pd.Series:
    """Percent of heads of each parity type (I+, II, I-), in that order."""
    counts = heads[column].value_counts()
    total = int(counts.sum()) or 1
    return pd.Series({p: 100.0 * counts.get(p, 0) / total for p in PARITY_LABELS})


def parity_table(models: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 2: one row per model, percent of heads by parity, and the head count."""
    rows = {}
    for name, heads in models.items():
        row = parity_shares(heads)
        row["heads"] = len(heads)
        rows[name] = row
    table = pd.DataFrame(rows).T
    table["heads"] = table["heads"].astype(int)
    table.index.name = "model"
    return table


def paper_table2() -> pd.DataFrame:
    """The paper's Table 2 as a frame shaped like :func:`parity_table` (heads unknown: NaN)."""
    table = pd.DataFrame(PAPER_TABLE2, index=list(PARITY_LABELS)).T
    table["heads"] = float("nan")
    table.index.name = "model"
    return table


def parity_by_layer(heads: pd.DataFrame) -> pd.DataFrame:
    """Figure 12: percent of each layer's heads of each parity type (rows: layers)."""
    counts = pd.crosstab(heads["layer"], heads["parity"])
    counts = counts.reindex(columns=list(PARITY_LABELS), fill_value=0)
    return 100.0 * counts.div(counts.sum(axis=1), axis=0)


def layer_head_grid(heads: pd.DataFrame, column: str) -> pd.DataFrame:
    """A layer x head grid of one per-head column (for heatmaps)."""
    return heads.pivot(index="layer", columns="head", values=column)
