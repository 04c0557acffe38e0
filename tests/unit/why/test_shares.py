"""Realised, spread and weight shares: their definitions on constructed splits, against a loop
written from the definitions; the weight shares of the forms' lobes and norms; and the test of
the definition: on independent isotropic Gaussian inputs the realised shares tend to the weight
shares."""

from __future__ import annotations

import numpy as np
import pytest

from headforms.forms import head_forms
from headforms.interventions.algebra import HeadFactors
from headforms.why.shares import (
    MARGIN_COLUMNS,
    REALISED_COLUMNS,
    SPREAD_COLUMNS,
    WEIGHT_COLUMNS,
    first_key_margins,
    realised_shares,
    split_error,
    weight_shares,
)
from headforms.why.split import ScoreSplit, split_scores


def constructed(seed: int = 0, length: int = 7) -> ScoreSplit:
    rng = np.random.default_rng(seed)
    visible = np.tril(np.ones((length, length), bool))
    parts = [np.where(visible, rng.standard_normal((length, length)), np.nan) for _ in range(4)]
    return ScoreSplit(*parts, visible=visible)


def loop_shares(split: ScoreSplit) -> dict[str, float]:
    """The shares by explicit loops over rows and pairs."""
    names = ("positive", "negative", "antisymmetric")
    squares, spreads = {}, {}
    for name in (*names, "rest", "total"):
        part = split.total if name == "total" else getattr(split, name)
        values, deviations = [], []
        for i in range(len(part)):
            row = [part[i, j] for j in range(len(part)) if split.visible[i, j]]
            values += row
            deviations += [(v - sum(row) / len(row)) ** 2 for v in row]
        squares[name] = sum(v * v for v in values) / len(values)
        spreads[name] = sum(deviations) / len(deviations)
    out = {}
    for column, name in zip(REALISED_COLUMNS, names, strict=True):
        out[column] = squares[name] / sum(squares[p] for p in names)
    for column, name in zip(SPREAD_COLUMNS, names, strict=True):
        out[column] = spreads[name] / sum(spreads[p] for p in names)
    out["rest_share"] = squares["rest"] / squares["total"]
    out["rest_spread"] = spreads["rest"] / spreads["total"]
    return out


def test_shares_follow_their_definitions() -> None:
    split = constructed(1)
    got = realised_shares(split)
    want = loop_shares(split)
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-12)
    assert sum(got[c] for c in REALISED_COLUMNS) == pytest.approx(1.0)
    assert sum(got[c] for c in SPREAD_COLUMNS) == pytest.approx(1.0)


def test_a_part_constant_along_rows_has_no_spread() -> None:
    """What the softmax ignores: a part that is the same for every key of a row."""
    split = constructed(2)
    constant = np.where(split.visible, np.arange(7.0)[:, None], np.nan)
    shares = realised_shares(
        ScoreSplit(constant, split.negative, split.antisymmetric, split.rest, split.visible)
    )
    assert shares["spread_pos"] == 0.0
    assert shares["share_pos"] > 0.1


def test_a_vanishing_form_has_no_shares() -> None:
    length = 4
    visible = np.ones((length, length), bool)
    zero = np.zeros((length, length))
    shares = realised_shares(ScoreSplit(zero, zero, zero, np.ones((length, length)), visible))
    assert all(np.isnan(shares[c]) for c in (*REALISED_COLUMNS, *SPREAD_COLUMNS))
    assert shares["rest_share"] == 1.0


def test_weight_shares_are_lobe_energies_and_a() -> None:
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((5, 4, 30)), rng.standard_normal((5, 4, 30))
    batch = head_forms(q, k)
    shares = weight_shares(batch.lobe_pos, batch.lobe_neg, batch.norm_a2, batch.norm_l2)
    for h in range(5):
        form = k[h].T @ q[h]
        values = np.linalg.eigvalsh((form + form.T) / 2)
        total = np.sum(form**2)
        assert shares["weight_pos"][h] == pytest.approx(np.sum(values[values > 0] ** 2) / total)
        assert shares["weight_neg"][h] == pytest.approx(np.sum(values[values < 0] ** 2) / total)
        skew = (form - form.T) / 2
        assert shares["weight_anti"][h] == pytest.approx(np.sum(skew**2) / total)
    assert np.allclose(sum(shares[c] for c in WEIGHT_COLUMNS), 1.0)


def gaussian_gap(length: int, seed: int) -> float:
    """The largest gap between a head's realised and weight shares on ``length`` independent
    standard Gaussian tokens (every pair of distinct tokens: a query and a key independent)."""
    rng = np.random.default_rng(seed)
    n, model_dim = 3, 12
    q = rng.standard_normal((n, model_dim)) * rng.uniform(0.2, 2.0, model_dim)
    k = rng.standard_normal((n, model_dim))
    factors = HeadFactors(q, k)
    x = rng.standard_normal((length, model_dim))
    visible = ~np.eye(length, dtype=bool)
    split = split_scores(factors, x, np.ones((length, length)), visible)
    realised = realised_shares(split)
    batch = head_forms(q[None], k[None])
    weights = weight_shares(batch.lobe_pos, batch.lobe_neg, batch.norm_a2, batch.norm_l2)
    return max(
        abs(realised[r] - float(weights[w][0]))
        for r, w in zip(REALISED_COLUMNS, WEIGHT_COLUMNS, strict=True)
    )


def test_isotropic_gaussian_inputs_give_the_weight_shares() -> None:
    """The parts are orthogonal: ``E[(x_j^T X x_i)^2] = ||X||_F^2`` for independent isotropic
    x_i, x_j, so the realised shares tend to the weight shares as tokens grow (seeded)."""
    small = np.mean([gaussian_gap(50, seed) for seed in range(4)])
    large = np.mean([gaussian_gap(1500, seed) for seed in range(4)])
    assert large < 0.015
    assert large < small / 4


def test_split_error_is_the_largest_gap_over_the_largest_score() -> None:
    split = constructed(4)
    scores = np.where(split.visible, split.total, np.nan)
    assert split_error(split, scores) < 1e-15
    moved = scores.copy()
    moved[3, 1] += 0.5
    biggest = np.nanmax(np.abs(moved))
    assert split_error(split, moved) == pytest.approx(0.5 / biggest)


def test_first_key_margins_follow_their_definition() -> None:
    split = constructed(5, length=6)
    found = first_key_margins(split)
    names = ("positive", "negative", "antisymmetric", "rest")
    for column, name in zip(MARGIN_COLUMNS, names, strict=True):
        part = getattr(split, name)
        margins = [part[i, 0] - np.mean([part[i, j] for j in range(1, i + 1)]) for i in range(1, 6)]
        assert found[column] == pytest.approx(np.mean(margins), rel=1e-12)
    total = np.mean(
        [
            split.total[i, 0] - np.mean([split.total[i, j] for j in range(1, i + 1)])
            for i in range(1, 6)
        ]
    )
    assert sum(found.values()) == pytest.approx(total, rel=1e-12)
    lone = ScoreSplit(*(np.ones((1, 1)),) * 4, visible=np.ones((1, 1), bool))
    assert all(np.isnan(v) for v in first_key_margins(lone).values())
