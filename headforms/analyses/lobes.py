"""Observation 5 at model level: the sorted spectral lobes are approximately proportional.

The per-head quantities are columns of every analysis (:func:`headforms.forms.lobe_metrics`):
``rho = ||lambda_-|| / ||lambda_+||``, the lobe departure ``||lambda_- - rho lambda_+|| /
||lambda_-||`` (0 for exactly proportional lobes), the pairing bound ``1 - |1 - rho| /
sqrt(1 + rho^2)`` with its gap to the pairing score (0 exactly when the lobes are proportional),
and the Theorem 5 point ``(theorem5_b, theorem5_c, theorem5_d)`` predicted from rho. This module
summarises them per model and measures how far each head's symmetric profile lies from its
predicted point.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..columns import SYMMETRIC_PROFILE

PREDICTED_PROFILE = ("theorem5_b", "theorem5_c", "theorem5_d")

NEAR = 0.1
"""A symmetric profile within this distance of its predicted point counts as near it."""

SUMMARY_COLUMNS = {
    "rho": "ρ",
    "lobe_departure": "departure",
    "pairing_gap": "bound − 𝒫",
    "theorem5_distance": "‖π(S) − T5‖",
}
"""Per-head quantity -> its label in :func:`observation5_summary`."""


def theorem5_distance(heads: pd.DataFrame) -> pd.Series:
    """Euclidean distance between each head's symmetric profile and its Theorem 5 point."""
    actual = heads[list(SYMMETRIC_PROFILE)].to_numpy(dtype=float)
    predicted = heads[list(PREDICTED_PROFILE)].to_numpy(dtype=float)
    return pd.Series(
        np.linalg.norm(actual - predicted, axis=1), index=heads.index, name="theorem5_distance"
    )


def observation5_frame(heads: pd.DataFrame) -> pd.DataFrame:
    """The Observation 5 columns of a per-head table, with ``theorem5_distance`` added."""
    columns = ["layer", "head", "parity", "pairing", "rho", "lobe_departure", "pairing_bound"]
    frame = heads[columns + ["pairing_gap", *SYMMETRIC_PROFILE, *PREDICTED_PROFILE]].copy()
    frame["theorem5_distance"] = theorem5_distance(heads)
    return frame.reset_index(drop=True)


def observation5_summary(
    models: Mapping[str, pd.DataFrame], baselines: Mapping[str, pd.DataFrame] | None = None
) -> pd.DataFrame:
    """Per model (and its Gaussian baseline): the median of each quantity of
    :data:`SUMMARY_COLUMNS` (columns named by their labels), and the percent of heads whose
    symmetric profile is within :data:`NEAR` of its Theorem 5 point."""
    rows = []
    for name, heads in models.items():
        sources = [("trained", heads)]
        if baselines is not None and name in baselines:
            sources.append(("Gaussian baseline", baselines[name]))
        for source, table in sources:
            frame = observation5_frame(table)
            row: dict[str, object] = {"model": name, "heads": source}
            for column, label in SUMMARY_COLUMNS.items():
                values = frame[column].to_numpy(dtype=float)
                values = values[~np.isnan(values)]  # a published table may not hold it
                row[f"median {label}"] = float(np.median(values)) if values.size else np.nan
            row[f"within {NEAR} (%)"] = 100.0 * float((frame["theorem5_distance"] < NEAR).mean())
            rows.append(row)
    return pd.DataFrame(rows)
