"""Head-type scores (docs/MATH.md, "Behaviour") on attention matrices with known answers, and
against a loop over positions written from the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from headforms.behaviour.scores import (
    duplicate_token,
    first_token,
    head_type_scores,
    induction,
    previous_token,
)


def causal_uniform(length: int) -> np.ndarray:
    """Each query attends uniformly to itself and every earlier key: A[i, j] = 1 / (i + 1)."""
    rows = np.arange(length)[:, None]
    return np.where(np.arange(length)[None, :] <= rows, 1.0 / (rows + 1), 0.0)


def shifted(length: int, shift: int, start: int = 0) -> np.ndarray:
    """Every query i >= start + shift attends only to i - shift (earlier ones to themselves)."""
    weights = np.eye(length)
    for i in range(start + shift, length):
        weights[i] = 0.0
        weights[i, i - shift] = 1.0
    return weights


def random_stochastic(rng: np.random.Generator, shape: tuple[int, ...], causal: bool) -> np.ndarray:
    logits = rng.normal(size=shape) * 3
    if causal:
        length = shape[-1]
        logits = np.where(np.tril(np.ones((length, length), bool)), logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def test_an_exact_previous_token_pattern_scores_one() -> None:
    weights = shifted(12, 1)
    assert previous_token(weights) == pytest.approx(1.0)
    # only query 1 looks at position 0, which is also its previous token
    assert first_token(weights) == pytest.approx(1 / 11)


def test_uniform_attention_scores_the_mean_of_one_over_i_plus_one() -> None:
    length = 20
    weights = causal_uniform(length)
    expected = np.mean([1 / (i + 1) for i in range(1, length)])
    assert previous_token(weights) == pytest.approx(expected)
    assert first_token(weights) == pytest.approx(expected)


def test_an_attention_sink_scores_one_on_first_token() -> None:
    weights = np.zeros((9, 9))
    weights[:, 0] = 1.0
    assert first_token(weights) == pytest.approx(1.0)
    assert previous_token(weights) == pytest.approx(1 / 8)  # only i = 1 has i - 1 = 0


@pytest.mark.parametrize("start", [0, 1, 2])
def test_induction_and_duplicate_patterns_on_a_probe(start: int) -> None:
    """A head that looks R - 1 back (the token after the earlier copy) is an induction head;
    one that looks R back (the same token) a duplicate-token head; the tokenizer's leading
    special tokens (start) shift both."""
    length = 7
    total = start + 2 * length + 1  # a trailing special token, as BERT's [SEP]
    ind = shifted(total, length - 1, start)
    dup = shifted(total, length, start)
    assert induction(ind, start, length) == pytest.approx(1.0)
    assert duplicate_token(ind, start, length) == pytest.approx(0.0)
    assert duplicate_token(dup, start, length) == pytest.approx(1.0)
    assert induction(dup, start, length) == pytest.approx(0.0)


def test_scores_against_a_loop_over_positions() -> None:
    """Vectorised over (layers, heads) exactly as one loop per head computes the definitions."""
    rng = np.random.default_rng(3)
    start, length = 1, 6
    total = start + 2 * length + 1
    weights = random_stochastic(rng, (3, 4, total, total), causal=True)
    got = head_type_scores(weights, start, length)
    for layer in range(3):
        for head in range(4):
            a = weights[layer, head]
            second = range(start + length, start + 2 * length)
            want = {
                "previous_token": np.mean([a[i, i - 1] for i in range(1, total)]),
                "first_token": np.mean([a[i, 0] for i in range(1, total)]),
                "duplicate_token": np.mean([a[i, i - length] for i in second]),
                "induction": np.mean([a[i, i - length + 1] for i in second]),
            }
            for name, value in want.items():
                assert got[name][layer, head] == pytest.approx(value, abs=1e-15)


def test_encoder_weights_above_the_diagonal_count_nowhere() -> None:
    """The definitions read the weights at i - 1, 0, i - R and i - R + 1 only, so a full
    (bidirectional) matrix scores the same as its causal part would at those positions."""
    rng = np.random.default_rng(5)
    weights = random_stochastic(rng, (10, 10), causal=False)
    assert previous_token(weights) == pytest.approx(np.mean(np.diag(weights, -1)))


def test_one_token_has_no_scores_and_a_probe_must_fit() -> None:
    assert np.isnan(previous_token(np.ones((1, 1))))
    assert np.isnan(first_token(np.ones((2, 3, 1, 1)))).all()
    with pytest.raises(ValueError, match="does not fit"):
        induction(np.eye(10), 1, 5)
