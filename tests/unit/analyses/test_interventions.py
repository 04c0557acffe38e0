"""Interventions model-wide: per-head rows joined with the geometry, Spearman's rho of a measure
against a geometric column with its seeded bootstrap interval, the sweep's summary numbers and
the whole-model table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from headforms.analyses.behaviour import GEOMETRY_COLUMNS
from headforms.analyses.interventions import (
    COST_THRESHOLD,
    correlation_table,
    edit_correlation,
    edit_frame,
    sweep_summary,
    whole_model_table,
)


def heads_table(rng: np.random.Generator, layers: int = 4, heads: int = 5) -> pd.DataFrame:
    profiles = rng.dirichlet(np.ones(4), size=layers * heads)
    frame = pd.DataFrame(profiles, columns=["a", "b", "c", "d"])
    frame.insert(0, "head", np.tile(np.arange(heads), layers))
    frame.insert(0, "layer", np.repeat(np.arange(layers), heads))
    frame["parity"] = rng.choice(["I+", "II", "I-"], size=len(frame))
    frame["pairing"] = rng.uniform(size=len(frame))
    frame["energy"] = rng.uniform(size=len(frame))
    return frame


def sweep_rows(heads: pd.DataFrame, delta: np.ndarray) -> pd.DataFrame:
    """Rows as an intervention result's table gives them: nullable layer/head, shuffled."""
    rows = pd.DataFrame(
        {
            "layer": pd.array(heads["layer"], dtype="Int64"),
            "head": pd.array(heads["head"], dtype="Int64"),
            "delta_ce": delta,
            "kl": 2 * delta,
            "cosine_distance": np.full(len(delta), 0.1),
        }
    )
    return rows.sample(frac=1.0, random_state=3).reset_index(drop=True)


def test_the_frame_joins_each_heads_measures_with_its_geometry() -> None:
    rng = np.random.default_rng(0)
    heads = heads_table(rng)
    delta = heads["layer"].to_numpy() * 10.0 + heads["head"].to_numpy()
    frame = edit_frame(heads, sweep_rows(heads, delta).iloc[1:])  # one head without a row
    assert list(frame["layer"]) == list(heads["layer"]) and list(frame["head"]) == list(
        heads["head"]
    )
    known = frame["delta_ce"].notna()
    assert known.sum() == len(heads) - 1
    np.testing.assert_array_equal(
        frame.loc[known, "delta_ce"], frame.loc[known, "layer"] * 10.0 + frame.loc[known, "head"]
    )
    np.testing.assert_allclose(frame.loc[known, "kl"], 2 * frame.loc[known, "delta_ce"])
    np.testing.assert_allclose(frame["c_minus_d"], heads["c"] - heads["d"])
    assert set(GEOMETRY_COLUMNS) <= set(frame.columns)


def test_rho_is_scipys_and_its_interval_is_seeded_and_covers_it() -> None:
    rng = np.random.default_rng(1)
    heads = heads_table(rng, 10, 8)
    delta = heads["a"].to_numpy() + rng.normal(scale=0.2, size=len(heads))
    frame = edit_frame(heads, sweep_rows(heads, delta))
    found = edit_correlation(frame, "a", "delta_ce", seed=4)
    want = spearmanr(frame["a"], frame["delta_ce"]).statistic
    assert found.rho == pytest.approx(want) and found.n == 80
    assert found.low < found.rho < found.high
    assert edit_correlation(frame, "a", "delta_ce", seed=4) == found
    assert edit_correlation(frame, "a", "delta_ce", seed=5) != found  # another resampling
    table = correlation_table(frame, "kl")
    assert len(table) == len(GEOMETRY_COLUMNS)
    row = table[table["geometry"] == GEOMETRY_COLUMNS["a"]].iloc[0]
    assert row["rho"] == pytest.approx(want)  # kl = 2 delta: the same ranks
    with pytest.raises(ValueError, match="unknown geometric column 'norm'"):
        edit_correlation(frame, "norm")
    with pytest.raises(ValueError, match="unknown measure 'loss'"):
        edit_correlation(frame, "a", "loss")


def test_the_summary_quotes_median_count_and_costliest() -> None:
    rng = np.random.default_rng(2)
    heads = heads_table(rng, 3, 4)
    delta = np.linspace(-0.02, 0.2, len(heads))
    delta[5] = 3.0
    frame = edit_frame(heads, sweep_rows(heads, delta))
    summary = sweep_summary(frame, top=2)
    assert summary.heads == 12 and summary.over == int((delta > COST_THRESHOLD).sum())
    assert summary.median == pytest.approx(np.median(delta))
    assert summary.costliest[0] == (1, 1, 3.0)  # row 5: layer 1, head 1
    assert summary.costliest[1][2] == pytest.approx(0.2)
    assert "L1.H1 3" in summary.text()


def test_the_whole_model_table_has_one_row_per_edit_and_what_it_exceeds() -> None:
    def row(delta: float, controls: int, rank: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "delta_ce": [delta],
                "kl": [delta + 1],
                "cosine_distance": [0.5],
                "control_median": [1.0],
                "control_p10": [0.5],
                "control_p90": [1.5],
                "controls_smaller": [rank],
                "controls": [controls],
            }
        )

    table = whole_model_table(
        {"symmetric": row(2.0, 8, 5.0), "output_zero": row(7.0, 0, float("nan"))}
    )
    assert list(table["edit"]) == ["symmetric", "output_zero"]
    assert list(table["exceeds"]) == ["5 of 8", ""]
    assert table["delta_ce"].tolist() == [2.0, 7.0]
    with pytest.raises(ValueError, match="2 rows"):
        whole_model_table({"zero": pd.concat([row(1, 8, 1), row(1, 8, 1)])})
