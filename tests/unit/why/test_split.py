"""The score split from the factors against dense ``N x N`` forms (tests/helpers/dense_edits.py):
each lobe is ``x_j^T S_d^{+/-} x_i`` from a dense eigendecomposition of ``S_d`` at the pair's own
d, the antisymmetric part ``x_j^T A_d x_i``, the rest the biases' terms and the extra terms, all
times the factor; the ranked directions are the dense eigenpairs by rank."""

from __future__ import annotations

import numpy as np
import pytest
from dense_edits import dense_form, rotation

from headforms.interventions.algebra import HeadFactors
from headforms.why.split import PART_NAMES, directions_at, split_scores

N, n, T = 20, 4, 9
ROTARY = {"full": np.array([0.9, 0.3]), "partial": np.array([0.7]), "none": None}


def head(seed: int = 0, rotary: str = "full") -> HeadFactors:
    rng = np.random.default_rng(seed)
    return HeadFactors(rng.standard_normal((n, N)), rng.standard_normal((n, N)), ROTARY[rotary])


def tokens(seed: int = 5, length: int = T) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((length, N))


def dense_parts(factors: HeadFactors, x: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """``(3, T, T)``: positive lobe, negative lobe, antisymmetric part from dense ``N x N``
    eigendecompositions (NaN where not visible)."""
    length = len(x)
    out = np.full((3, length, length), np.nan)
    for i in range(length):
        for j in range(length):
            if not visible[i, j]:
                continue
            d = i - j if factors.rotary else 0
            form = dense_form(factors.q, factors.k, factors.inv_freq, d)
            values, vectors = np.linalg.eigh((form + form.T) / 2.0)
            pos = (vectors * np.clip(values, 0, None)) @ vectors.T
            neg = (vectors * np.clip(values, None, 0)) @ vectors.T
            out[:, i, j] = [
                x[j] @ pos @ x[i],
                x[j] @ neg @ x[i],
                x[j] @ ((form - form.T) / 2) @ x[i],
            ]
    return out


def close(got: np.ndarray, want: np.ndarray) -> None:
    assert np.array_equal(np.isnan(got), np.isnan(want))
    seen = ~np.isnan(want)
    np.testing.assert_allclose(got[seen], want[seen], rtol=0, atol=1e-10 * np.abs(want[seen]).max())


@pytest.mark.parametrize("rotary", list(ROTARY))
@pytest.mark.parametrize("causal", [True, False])
def test_lobes_and_antisymmetric_part_are_the_dense_ones(rotary: str, causal: bool) -> None:
    factors, x = head(1, rotary), tokens(2)
    visible = np.tril(np.ones((T, T), bool)) if causal else np.ones((T, T), bool)
    split = split_scores(factors, x, np.ones((T, T)), visible)
    want = dense_parts(factors, x, visible)
    for index, name in enumerate(PART_NAMES[:3]):
        close(getattr(split, name), want[index])
    assert np.nanmax(np.abs(split.rest)) == 0.0  # no biases, no extra terms


def test_the_parts_sum_to_the_scores_with_biases_factor_and_extra_terms() -> None:
    """``scale * (q_i . k_j) / (r_q r_k) + extra`` with ``q_i = R(i)(Q x_i + b_q)``: the four
    parts add up to it, the rest is everything but the form."""
    factors, x = head(3, "partial"), tokens(4)
    rng = np.random.default_rng(9)
    q_bias, k_bias = rng.standard_normal(n), rng.standard_normal(n)
    factor = rng.uniform(0.5, 2.0, (T, T))
    extra = rng.standard_normal((T, T))
    visible = np.tril(np.ones((T, T), bool))
    visible[5, 2] = False  # a pair the model's mask hides
    split = split_scores(factors, x, factor, visible, extra, (q_bias, k_bias))
    want = np.full((T, T), np.nan)
    for i in range(T):
        for j in range(T):
            if visible[i, j]:
                rot_i = rotation(factors.inv_freq, n, i)
                rot_j = rotation(factors.inv_freq, n, j)
                q_i = rot_i @ (factors.q @ x[i] + q_bias)
                k_j = rot_j @ (factors.k @ x[j] + k_bias)
                want[i, j] = factor[i, j] * (q_i @ k_j) + extra[i, j]
    close(split.total, want)
    bilinear = dense_parts(factors, x, visible).sum(0) * np.where(visible, factor, np.nan)
    close(split.rest, want - bilinear)


@pytest.mark.parametrize("rotary", ["full", "none"])
def test_ranked_directions_are_the_dense_eigenpairs_by_rank(rotary: str) -> None:
    """Rank k of the positive lobe: the k-th largest eigenvalue of ``S_d`` at the pair's d; of
    the negative lobe the k-th most negative; all n of a lobe sum to the lobe."""
    factors, x = head(6, rotary), tokens(7)
    visible = np.tril(np.ones((T, T), bool))
    split = split_scores(factors, x, np.ones((T, T)), visible, ranks=n)
    assert split.ranked is not None
    for i, j in [(0, 0), (4, 1), (8, 0), (8, 7)]:
        d = i - j if factors.rotary else 0
        form = dense_form(factors.q, factors.k, factors.inv_freq, d)
        values, vectors = np.linalg.eigh((form + form.T) / 2.0)
        for k in range(n):
            for lobe, column in ((0, -1 - k), (1, k)):
                lam, v = values[column], vectors[:, column]
                want = lam * (v @ x[j]) * (v @ x[i])
                assert split.ranked[lobe, k, i, j] == pytest.approx(want, abs=1e-9)
    np.testing.assert_allclose(
        np.nansum(split.ranked[0], 0)[visible], split.positive[visible], atol=1e-9
    )
    np.testing.assert_allclose(
        np.nansum(split.ranked[1], 0)[visible], split.negative[visible], atol=1e-9
    )


def test_directions_at_are_the_dense_spectrum_and_eigenvectors() -> None:
    factors = head(8, "full")
    for step in (0, 3):
        values, vectors = directions_at(factors, step)
        form = dense_form(factors.q, factors.k, factors.inv_freq, step)
        sym = (form + form.T) / 2.0
        dense = np.linalg.eigvalsh(sym)
        nonzero = dense[np.abs(dense) > 1e-9]
        np.testing.assert_allclose(np.sort(values[np.abs(values) > 1e-9]), nonzero, atol=1e-9)
        np.testing.assert_allclose(vectors.T @ vectors, np.eye(2 * n), atol=1e-12)
        np.testing.assert_allclose(sym @ vectors, vectors * values, atol=1e-9)
