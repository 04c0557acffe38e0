"""What a score split says in a few numbers (pure pandas): the median shares per parity type, the
heads whose realised geometry differs most from their weights', and one head in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..forms import PARITY_LABELS
from .shares import REALISED_COLUMNS, SPREAD_COLUMNS, WEIGHT_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_COLUMNS = (*REALISED_COLUMNS, *SPREAD_COLUMNS, *WEIGHT_COLUMNS, "rest_share")


def parity_medians(table: pd.DataFrame) -> pd.DataFrame:
    """Median of each share per parity type (I+, II, I-, then every head), with the head
    counts: one row per group."""
    import pandas as pd

    rows = []
    for label in (*PARITY_LABELS, "all"):
        group = table if label == "all" else table[table["parity"] == label]
        if not len(group):
            continue
        row = {"parity": label, "heads": len(group)}
        row.update({name: float(group[name].median()) for name in SUMMARY_COLUMNS})
        rows.append(row)
    return pd.DataFrame(rows)


def realised_gap(table: pd.DataFrame) -> np.ndarray:
    """Each head's distance between its realised and its weight shares (on the triangle of the
    three shares, scaled so that one vertex to another is 1)."""
    realised = table[list(REALISED_COLUMNS)].to_numpy(float)
    weights = table[list(WEIGHT_COLUMNS)].to_numpy(float)
    return np.linalg.norm(realised - weights, axis=1) / np.sqrt(2.0)


def carried_by(row: pd.Series) -> str:
    """Which part carries a head's scores on the text, in words (its largest realised share,
    and its largest share of the within-row spread)."""
    names = {"pos": "positive lobe", "neg": "negative lobe", "anti": "antisymmetric part"}
    square = max(REALISED_COLUMNS, key=lambda name: row[name])
    spread = max(SPREAD_COLUMNS, key=lambda name: row[name])
    return (
        f"the {names[square.split('_')[1]]} ({row[square]:.3f} of the mean square; "
        f"the {names[spread.split('_')[1]]} {row[spread]:.3f} of the within-row spread)"
    )


def first_margins(row: pd.Series) -> str:
    """How much each part lifts the first key above the row's other keys (mean over queries,
    the model's units), in words: what carries an attention sink."""
    names = {"pos": "positive lobe", "neg": "negative lobe", "anti": "antisymmetric part"}
    parts = [f"{names[p]} {row[f'first_margin_{p}']:+.3f}" for p in ("pos", "neg", "anti")]
    total = sum(row[f"first_margin_{p}"] for p in ("pos", "neg", "anti", "rest"))
    return ", ".join([*parts, f"the rest {row['first_margin_rest']:+.3f}"]) + f" (sum {total:+.3f})"
