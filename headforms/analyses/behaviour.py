"""Geometry against behaviour: each head's place on the simplex beside its head-type scores, and
how strongly the two are rank-correlated across heads.

The geometric columns are the per-head table's (``a``, ``pairing``, ``energy``), ``c - d`` (the
signed symmetric bias: positive towards the PSD vertex, negative towards NSD), the distance to
Theta (:mod:`.theta`) and parity as an ordinal (I- = -1, II = 0, I+ = +1: Observation 4's
question is whether Type I+ heads attend to tokens like the query and Type I- away from them).
The rank correlation is Spearman's rho with a percentile bootstrap interval over heads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..columns import PROFILE, REALISED_SHARE_COLUMNS, SHARE_TITLES, SPREAD_SHARE_COLUMNS
from .theta import theta_projection

GEOMETRY_COLUMNS: dict[str, str] = {
    "c_minus_d": "c − d (PSD share minus NSD share)",
    "a": "a (antisymmetric share)",
    "pairing": "pairing score",
    "energy": "symmetric energy ‖S‖²/‖L‖²",
    "theta_distance": "distance to Θ",
    "parity_rank": "parity (I− = −1, II = 0, I+ = +1)",
}
"""Geometric per-head columns, by name: what the axis is titled."""

BEHAVIOUR_COLUMNS: dict[str, str] = {
    "previous_token": "previous-token score",
    "first_token": "first-token score (attention sink)",
    "duplicate_token": "duplicate-token score",
    "induction": "induction score",
}
"""Head-type score columns (:data:`headforms.behaviour.SCORE_COLUMNS`), by name: their titles."""

SHARE_COLUMNS: dict[str, str] = {
    name: SHARE_TITLES[name] for name in (*REALISED_SHARE_COLUMNS, *SPREAD_SHARE_COLUMNS)
}
"""The realised shares of a score split (:mod:`headforms.why`: each part's share of a head's
scores on a text), by name: their titles. A frame gets them from :func:`with_shares`; they may
stand where a geometric column does in a correlation."""

CORRELATION_COLUMNS: dict[str, str] = {**GEOMETRY_COLUMNS, **SHARE_COLUMNS}
"""Every per-head column a correlation may set against a score or an edit's measure: titles."""

PARITY_RANK = {"I-": -1.0, "II": 0.0, "I+": 1.0}
"""Parity as an ordinal; other labels (a vanishing form) are missing."""

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95


def geometry_frame(heads: pd.DataFrame) -> pd.DataFrame:
    """One row per head of the per-head table: ``layer, head, parity`` and every column of
    :data:`GEOMETRY_COLUMNS` (the one place they are derived)."""
    frame = heads[["layer", "head", "parity", "a", "c", "d", "pairing", "energy"]].copy()
    frame = frame.reset_index(drop=True)
    frame["c_minus_d"] = frame["c"] - frame["d"]
    _, distance, _ = theta_projection(heads[list(PROFILE)].to_numpy(dtype=float))
    frame["theta_distance"] = distance
    frame["parity_rank"] = frame["parity"].map(PARITY_RANK).astype(float)
    return frame


def behaviour_frame(heads: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """One row per head (layer-major): ``layer, head, parity``, every geometric column and every
    score present in ``scores`` (joined on layer and head)."""
    frame = geometry_frame(heads)
    wanted = ["layer", "head", *(c for c in BEHAVIOUR_COLUMNS if c in scores.columns)]
    joined = frame.merge(scores[wanted], on=["layer", "head"], how="left", validate="one_to_one")
    return joined.sort_values(["layer", "head"], ignore_index=True)


def with_shares(frame: pd.DataFrame, shares: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per head) with the :data:`SHARE_COLUMNS` of ``shares`` (a score
    split's per-head table) joined on layer and head; a head without a row has NaN."""
    wanted = ["layer", "head", *(c for c in SHARE_COLUMNS if c in shares.columns)]
    kept = frame.drop(columns=[c for c in SHARE_COLUMNS if c in frame.columns])
    right = shares[wanted].astype({"layer": int, "head": int})
    joined = kept.astype({"layer": int, "head": int}).merge(
        right, on=["layer", "head"], how="left", validate="one_to_one"
    )
    for name in SHARE_COLUMNS:
        if name not in joined:
            joined[name] = np.nan
    return joined


@dataclass(frozen=True)
class Correlation:
    """Spearman's rho of ``n`` heads and its bootstrap interval ``(low, high)`` at
    :data:`CONFIDENCE` (NaN when fewer than 3 heads have both values, or one is constant)."""

    rho: float
    low: float
    high: float
    n: int

    def text(self) -> str:
        """``ρ = 0.42 [0.31, 0.52], n = 270`` (what figure titles and tables show)."""
        if not np.isfinite(self.rho):
            return f"ρ undefined (n = {self.n})"
        return f"ρ = {self.rho:+.2f} [{self.low:+.2f}, {self.high:+.2f}], n = {self.n}"


def _ranks(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=-1)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=-1, keepdims=True)
    y = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(-1) / np.sqrt((x * x).sum(-1) * (y * y).sum(-1))


def rank_correlation(
    x: np.ndarray, y: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0
) -> Correlation:
    """Spearman's rho of the pairs where both are finite (``scipy.stats.spearmanr``), and its
    percentile bootstrap interval: heads resampled with replacement ``samples`` times (seeded),
    rho of each resample (average ranks for ties), the central :data:`CONFIDENCE` of them."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(keep.sum())
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(np.nan, np.nan, np.nan, n)
    rho = float(spearmanr(x, y).statistic)
    index = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    boot = _pearson_rows(_ranks(x[index]), _ranks(y[index]))
    tail = (1.0 - CONFIDENCE) / 2 * 100
    low, high = np.nanpercentile(boot, [tail, 100 - tail])
    return Correlation(rho, float(low), float(high), n)


def correlation_table(
    frame: pd.DataFrame,
    column: str,
    seed: int = 0,
    against: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Rho, its interval (seeded by ``seed``) and scipy's p-value of every column of ``against``
    (by name: its title; default :data:`GEOMETRY_COLUMNS`) against ``column`` (a head-type
    score, an intervention's measure), one row each: the one such table. Its columns:
    ``column`` (the name), ``geometry`` (the title), ``rho, low, high, p_value, heads``."""
    from scipy.stats import spearmanr

    rows = []
    y = frame[column].to_numpy(float)
    for name, title in (GEOMETRY_COLUMNS if against is None else against).items():
        x = frame[name].to_numpy(float)
        found = rank_correlation(x, y, seed=seed)
        keep = np.isfinite(x) & np.isfinite(y)
        p = float(spearmanr(x[keep], y[keep]).pvalue) if np.isfinite(found.rho) else np.nan
        rows.append(
            {
                "column": name,
                "geometry": title,
                "rho": found.rho,
                "low": found.low,
                "high": found.high,
                "p_value": p,
                "heads": found.n,
            }
        )
    return pd.DataFrame(rows)


def table_correlation(table: pd.DataFrame, geometry: str) -> Correlation:
    """The :class:`Correlation` of the geometric column ``geometry`` in a
    :func:`correlation_table` (the same numbers as :func:`rank_correlation` of that column with
    the table's seed)."""
    row = table.loc[table["geometry"] == GEOMETRY_COLUMNS[geometry]].iloc[0]
    return Correlation(float(row["rho"]), float(row["low"]), float(row["high"]), int(row["heads"]))
