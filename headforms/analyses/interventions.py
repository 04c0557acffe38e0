"""What interventions say about the geometry, model-wide (pure pandas and scipy, no model).

- :func:`edit_frame`: one edit applied to every head on its own (the rows of
  :func:`headforms.interventions.sweep`) joined with each head's geometric columns
  (:func:`.behaviour.geometry_frame`: ``a``, ``c - d``, pairing, energy, distance to Theta,
  parity), on ``layer, head``.
- :func:`edit_correlation` / :func:`correlation_table`: Spearman's rho of a measure (``delta_ce``,
  ``kl``, ``cosine_distance``) against a geometric column, with the seeded percentile bootstrap
  interval over heads of :func:`.behaviour.rank_correlation`.
- :func:`sweep_summary`: the numbers a paper quotes of a per-head sweep (median, heads over a
  threshold, the costliest heads).
- :func:`whole_model_table`: several edits of every head at once, one row each, with their
  matched controls' median, spread and the edit's rank among them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import behaviour
from .behaviour import (
    CORRELATION_COLUMNS,
    Correlation,
    geometry_frame,
    rank_correlation,
)

MEASURES: dict[str, str] = {
    "delta_ce": "ΔCE (nats)",
    "kl": "KL (nats)",
    "cosine_distance": "cosine distance of the final states",
}
"""The measures of an intervention a view may show, by column: their titles."""

COST_THRESHOLD = 0.01
"""A head's edit "costs something" when its measure passes this (nats, or cosine distance)."""

WHOLE_MODEL_COLUMNS = (
    "edit",
    "delta_ce",
    "kl",
    "cosine_distance",
    "score_rms",
    "control_score_rms",
    "control_median",
    "control_p10",
    "control_p90",
    "controls_smaller",
    "p_value",
    "effect",
    "low",
    "high",
    "kl_control_median",
    "kl_p_value",
    "controls",
)
"""The whole-model table's columns (the controls' verdict is of the result's measure, and of
``kl`` with ``kl_``)."""


def check_measure(measure: str) -> str:
    """``measure`` if it is one of :data:`MEASURES`, else a one-line ValueError."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; accepted: " + ", ".join(MEASURES))
    return measure


def edit_frame(heads: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per head of ``heads`` (layer-major): its geometric columns and the measures of
    ``rows`` (one edited head each, on ``layer, head``; a head without a row has NaN)."""
    wanted = ["layer", "head", *(m for m in MEASURES if m in rows.columns)]
    single = rows[rows["layer"].notna() & rows["head"].notna()][wanted].copy()
    single["layer"] = single["layer"].astype(int)
    single["head"] = single["head"].astype(int)
    frame = geometry_frame(heads)
    frame["layer"] = frame["layer"].astype(int)
    frame["head"] = frame["head"].astype(int)
    joined = frame.merge(single, on=["layer", "head"], how="left", validate="one_to_one")
    for measure in MEASURES:
        if measure not in joined:
            joined[measure] = np.nan
        joined[measure] = joined[measure].astype(float)
    return joined.sort_values(["layer", "head"], ignore_index=True)


def edit_correlation(
    frame: pd.DataFrame, column: str, measure: str = "delta_ce", seed: int = 0
) -> Correlation:
    """Spearman's rho of ``measure`` against the geometric ``column`` (or a realised share of
    :data:`.behaviour.SHARE_COLUMNS`, joined by :func:`.behaviour.with_shares`) over the heads
    of :func:`edit_frame` with both finite, and its bootstrap interval (seeded by ``seed``)."""
    if column not in CORRELATION_COLUMNS:
        raise ValueError(
            f"unknown geometric column {column!r}; accepted: " + ", ".join(CORRELATION_COLUMNS)
        )
    check_measure(measure)
    return rank_correlation(frame[column].to_numpy(), frame[measure].to_numpy(), seed=seed)


def correlation_table(
    frame: pd.DataFrame, measure: str = "delta_ce", seed: int = 0
) -> pd.DataFrame:
    """Rho and its interval of ``measure`` against every geometric column, one row each
    (:func:`.behaviour.correlation_table` of the measure)."""
    return behaviour.correlation_table(frame, check_measure(measure), seed)


@dataclass(frozen=True)
class SweepSummary:
    """A per-head sweep in a few numbers: the median of the measure over ``heads`` heads, how
    many pass :data:`COST_THRESHOLD` and the costliest ``(layer, head, value)``."""

    measure: str
    median: float
    over: int
    heads: int
    costliest: tuple[tuple[int, int, float], ...]

    def text(self) -> str:
        """``median ΔCE 0.046; 206 of 270 heads over 0.01; costliest L18.H8 3.16, ...``."""
        if not self.heads:
            return "no head has a value"
        worst = ", ".join(f"L{layer}.H{head} {value:.3g}" for layer, head, value in self.costliest)
        return (
            f"median {MEASURES[self.measure]} {self.median:.3g}; {self.over} of {self.heads} heads "
            f"over {COST_THRESHOLD:g}; costliest {worst}"
        )


def sweep_summary(frame: pd.DataFrame, measure: str = "delta_ce", top: int = 4) -> SweepSummary:
    """The :class:`SweepSummary` of ``measure`` in :func:`edit_frame`'s rows."""
    check_measure(measure)
    values = frame[measure].to_numpy(dtype=float)
    finite = np.isfinite(values)
    if not finite.any():
        return SweepSummary(measure, float("nan"), 0, 0, ())
    order = np.argsort(-np.where(finite, values, -np.inf), kind="stable")[: min(top, finite.sum())]
    layers, heads = frame["layer"].to_numpy(), frame["head"].to_numpy()
    costliest = tuple((int(layers[i]), int(heads[i]), float(values[i])) for i in order)
    return SweepSummary(
        measure,
        float(np.median(values[finite])),
        int((values[finite] > COST_THRESHOLD).sum()),
        int(finite.sum()),
        costliest,
    )


def whole_model_table(rows: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per edit of ``rows`` (edit name -> its result's one-row table, every head edited
    together), in the order given: :data:`WHOLE_MODEL_COLUMNS` and ``exceeds`` ("5 of 8": how
    many matched controls changed the measure less, in absolute value, than the edit; empty
    without controls)."""
    records = []
    for edit, table in rows.items():
        if len(table) != 1:
            raise ValueError(f"the {edit} result has {len(table)} rows; one was expected")
        row = table.iloc[0]
        record = {name: row.get(name, np.nan) for name in WHOLE_MODEL_COLUMNS if name != "edit"}
        record["edit"] = edit
        controls = int(row["controls"])
        rank = row["controls_smaller"]
        record["exceeds"] = f"{int(rank)} of {controls}" if controls and np.isfinite(rank) else ""
        records.append(record)
    columns = [*WHOLE_MODEL_COLUMNS, "exceeds"]
    table = pd.DataFrame(records, columns=columns)
    for name in columns[1:-1]:
        table[name] = table[name].astype(float)
    table["controls"] = table["controls"].astype(int)
    return table
