"""Model-level tables of a survey: every model's heads in one table, and one summary row each.

The per-head survey table is :data:`headforms.engine.TABLE_COLUMNS` preceded by ``model``,
``head_dim`` and ``model_dim`` (so that a survey table read back as a published table,
:mod:`headforms.tables`, still has its Gaussian baseline). The summary has, per model, the
parity shares of Table 2 (:func:`headforms.analyses.parity.parity_table`), the mean profile
(a, b, c, d), mean and median symmetric energy and pairing score, and mean balance.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..columns import PROFILE
from .parity import parity_table

SURVEY_ID_COLUMNS = ("model", "head_dim", "model_dim")
"""Columns a survey table puts before each model's per-head columns."""

MEAN_COLUMNS = (*PROFILE, "energy", "pairing", "balance")
MEDIAN_COLUMNS = ("energy", "pairing")


def survey_rows(model: str, heads: pd.DataFrame, head_dim: int, model_dim: int) -> pd.DataFrame:
    """One model's per-head table with the survey's identifying columns in front."""
    rows = heads.reset_index(drop=True).copy()
    for column, value in reversed(
        list(zip(SURVEY_ID_COLUMNS, (model, int(head_dim), int(model_dim)), strict=True))
    ):
        rows.insert(0, column, value)
    return rows


def summary_table(
    models: Mapping[str, pd.DataFrame], tolerance: float | None = None
) -> pd.DataFrame:
    """One row per model: layers, heads, % I+ / II / I- (Type II ``tolerance``, default the
    paper's), mean profile, energy, pairing, balance."""
    if not models:
        return pd.DataFrame(columns=["model"]).set_index("model")
    table = parity_table(models, tolerance)
    layers = {name: int(heads["layer"].max()) + 1 for name, heads in models.items()}
    table.insert(0, "layers", pd.Series(layers))
    for column in MEAN_COLUMNS:
        table[column] = pd.Series({n: float(h[column].mean()) for n, h in models.items()})
    for column in MEDIAN_COLUMNS:
        table[f"{column}_median"] = pd.Series(
            {n: float(h[column].median()) for n, h in models.items()}
        )
    return table


def split_survey(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """A survey table's per-head rows by model, in the order the models first appear."""
    return {
        str(name): group.reset_index(drop=True)
        for name, group in table.groupby("model", sort=False)
    }
