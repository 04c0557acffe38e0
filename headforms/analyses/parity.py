"""Model-level summaries of the per-head table: parity table (Table 2), parity by layer (Fig 12),
and the Theorem 3 balance summary.

Parity is the per-head label of :func:`headforms.forms.parity_labels`; every function here takes
an optional Type II ``tolerance`` (default: the paper's 1/50, the table's own ``parity`` column)
and relabels the heads from their symmetric profiles with that one rule.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..forms import PARITY_LABELS, PARITY_TYPE_II_THRESHOLD, check_tolerance, parity_labels

PAPER_TABLE2: dict[str, tuple[float, float, float]] = {
    "distilgpt2": (34.7, 26.4, 38.9),
    "gpt2": (36.8, 34.0, 29.2),
    "gpt2-medium": (54.2, 28.6, 17.2),
    "gpt2-large": (64.3, 22.6, 13.1),
    "facebook/opt-125m": (79.2, 16.7, 4.2),
    "facebook/opt-350m": (78.9, 20.8, 0.3),
}
"""The paper's published Table 2 rows: percent of heads of type I+, II, I- (the paper's Table 2)."""

PAPER_TABLE2_HEADS: dict[str, int] = {
    "distilgpt2": 72,
    "gpt2": 144,
    "gpt2-medium": 384,
    "gpt2-large": 720,
    "facebook/opt-125m": 144,
    "facebook/opt-350m": 384,
}
"""The head counts of the paper's Table 2 rows."""


def parities(heads: pd.DataFrame, tolerance: float | None = None) -> pd.Series:
    """Each head's parity with Type II tolerance ``tolerance`` (None: the table's own labels)."""
    if tolerance is None or check_tolerance(tolerance) == PARITY_TYPE_II_THRESHOLD:
        return heads["parity"]
    labels = parity_labels(heads["c_sym"].to_numpy(), heads["d_sym"].to_numpy(), tolerance)
    return pd.Series(labels, index=heads.index, name="parity")


def parity_shares(heads: pd.DataFrame, tolerance: float | None = None) -> pd.Series:
    """Percent of heads of each parity type (I+, II, I-), in that order."""
    counts = parities(heads, tolerance).value_counts()
    total = int(counts.sum()) or 1
    return pd.Series({p: 100.0 * counts.get(p, 0) / total for p in PARITY_LABELS})


def parity_table(
    models: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> pd.DataFrame:
    """Table 2: one row per model, percent of heads by parity, and the head count."""
    rows = {}
    for name, heads in models.items():
        row = parity_shares(heads, tolerance)
        row["heads"] = len(heads)
        rows[name] = row
    table = pd.DataFrame(rows).T
    table["heads"] = table["heads"].astype(int)
    table.index.name = "model"
    return table


def paper_table2() -> pd.DataFrame:
    """The paper's Table 2 as a frame shaped like :func:`parity_table`, with its head counts."""
    table = pd.DataFrame(PAPER_TABLE2, index=list(PARITY_LABELS)).T
    table["heads"] = pd.Series(PAPER_TABLE2_HEADS).astype(int)
    table.index.name = "model"
    return table


def parity_by_layer(heads: pd.DataFrame, tolerance: float | None = None) -> pd.DataFrame:
    """Figure 12: percent of each layer's heads of each parity type (rows: layers)."""
    counts = pd.crosstab(heads["layer"], parities(heads, tolerance))
    counts = counts.reindex(columns=list(PARITY_LABELS), fill_value=0)
    counts.columns.name = "parity"
    return 100.0 * counts.div(counts.sum(axis=1), axis=0)


def theorem3_summary(models: Mapping[str, tuple[pd.DataFrame, int]]) -> pd.DataFrame:
    """Theorem 3 per model: percent of heads whose S is balanced (``n_pos = n_neg``) and of those
    with exactly ``n_pos = n_neg = n`` (the generic case), with ``n`` and the head count.

    ``models``: name -> (per-head table, head dim n). Counts a table does not hold (a published
    table without ``n_pos``/``n_neg``, or without n) are NaN, never 0%.
    """
    rows = {}
    for name, (heads, head_dim) in models.items():
        n_pos = heads["n_pos"].to_numpy(dtype=float)
        n_neg = heads["n_neg"].to_numpy(dtype=float)
        known = np.isfinite(n_pos) & np.isfinite(n_neg)
        total = np.count_nonzero(known)
        balanced = np.count_nonzero(known & (n_pos == n_neg))
        generic = np.count_nonzero(known & (n_pos == head_dim) & (n_neg == head_dim))
        rows[name] = {
            "heads": len(heads),
            "n": int(head_dim) if head_dim else np.nan,
            "balanced": 100.0 * balanced / total if total else np.nan,
            "generic": 100.0 * generic / total if total and head_dim else np.nan,
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "model"
    return table
