"""Geometry against behaviour: the joined frame, Spearman's rho and its bootstrap interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from headforms.analyses.behaviour import (
    GEOMETRY_COLUMNS,
    behaviour_frame,
    correlation_table,
    rank_correlation,
)
from headforms.analyses.theta import theta_projection


def heads_table(rng: np.random.Generator, layers: int = 4, heads: int = 5) -> pd.DataFrame:
    profiles = rng.dirichlet(np.ones(4), size=layers * heads)
    frame = pd.DataFrame(profiles, columns=["a", "b", "c", "d"])
    frame.insert(0, "head", np.tile(np.arange(heads), layers))
    frame.insert(0, "layer", np.repeat(np.arange(layers), heads))
    frame["parity"] = rng.choice(["I+", "II", "I-", "zero"], size=len(frame))
    frame["pairing"] = rng.uniform(size=len(frame))
    frame["energy"] = rng.uniform(size=len(frame))
    return frame


def test_the_frame_joins_scores_by_head_and_derives_the_geometry() -> None:
    rng = np.random.default_rng(0)
    heads = heads_table(rng)
    scores = heads[["layer", "head"]].sample(frac=1.0, random_state=1).reset_index(drop=True)
    scores["induction"] = scores["layer"] * 10 + scores["head"]  # known per head
    frame = behaviour_frame(heads, scores)
    assert (frame["induction"] == frame["layer"] * 10 + frame["head"]).all()
    np.testing.assert_allclose(frame["c_minus_d"], heads["c"] - heads["d"])
    _, distance, _ = theta_projection(heads[["a", "b", "c", "d"]].to_numpy())
    np.testing.assert_allclose(frame["theta_distance"], distance)
    ranks = frame.set_index(["layer", "head"])["parity_rank"]
    for row in heads.itertuples():
        want = {"I-": -1.0, "II": 0.0, "I+": 1.0}.get(row.parity, np.nan)
        got = ranks[(row.layer, row.head)]
        assert got == want or (np.isnan(want) and np.isnan(got))
    assert set(GEOMETRY_COLUMNS) <= set(frame.columns)


def test_rho_is_scipys_and_the_interval_holds_it() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=200)
    y = 0.5 * x + rng.normal(size=200)
    x[3], y[7] = np.nan, np.inf  # pairs with a missing value are left out
    found = rank_correlation(x, y)
    keep = np.isfinite(x) & np.isfinite(y)
    assert found.n == 198
    assert found.rho == pytest.approx(spearmanr(x[keep], y[keep]).statistic, abs=1e-12)
    assert found.low < found.rho < found.high
    assert rank_correlation(x, y) == found  # seeded
    # the interval is a bootstrap of the same statistic: about +-2 standard errors here
    assert 0.1 < found.high - found.low < 0.4


def test_a_monotone_relation_has_rho_one_and_no_spread() -> None:
    x = np.arange(30.0)
    found = rank_correlation(x, np.exp(x / 5))
    assert (found.rho, found.low, found.high) == (pytest.approx(1.0),) * 3


def test_ties_and_degenerate_inputs() -> None:
    # parity-like ordinal data with many ties: scipy's rho (average ranks) and a finite interval
    rng = np.random.default_rng(4)
    x = rng.choice([-1.0, 0.0, 1.0], size=100)
    y = x + rng.normal(size=100)
    found = rank_correlation(x, y)
    assert found.rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert np.isfinite(found.low) and np.isfinite(found.high)
    assert np.isnan(rank_correlation(np.ones(10), np.arange(10.0)).rho)  # constant
    assert np.isnan(rank_correlation(np.arange(2.0), np.arange(2.0)).rho)  # too few
    assert "undefined" in rank_correlation(np.ones(5), np.ones(5)).text()


def test_the_correlation_table_has_every_geometric_column() -> None:
    rng = np.random.default_rng(5)
    heads = heads_table(rng)
    scores = heads[["layer", "head"]].copy()
    scores["previous_token"] = heads["a"].to_numpy() * 2  # rank-identical to a
    frame = behaviour_frame(heads, scores)
    table = correlation_table(frame, "previous_token")
    assert list(table["geometry"]) == list(GEOMETRY_COLUMNS.values())
    assert table.set_index("geometry").loc[GEOMETRY_COLUMNS["a"], "rho"] == pytest.approx(1.0)
