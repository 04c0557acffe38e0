"""Head-type scores: pure functions of attention weights (see docs/MATH.md, "Behaviour").

Each takes ``weights`` of shape ``(..., T, T)`` (rows are query positions and sum to 1; positions
are those of the tokens as the tokenizer encodes the text, special tokens included) and returns
one score per leading index (e.g. per layer and head), the mean of one attention weight per
query position:

- ``previous_token``: mean over i >= 1 of ``A[i, i - 1]``;
- ``first_token``: mean over i >= 1 of ``A[i, 0]`` (attention to the first position: the sink);
- on a probe whose two copies of R tokens start at position ``start`` (after the tokenizer's own
  leading special tokens), over the positions i of the second copy
  (``start + R <= i < start + 2R``): ``duplicate_token`` the mean of ``A[i, i - R]`` (the same
  token in the first copy), ``induction`` the mean of ``A[i, i - R + 1]`` (the token after it).

A sequence of one token has no query position i >= 1: its scores are NaN.
"""

from __future__ import annotations

import numpy as np

SCORE_COLUMNS = ("previous_token", "first_token", "duplicate_token", "induction")
"""The head-type score columns, in table order."""


def _mean_of(weights: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    if rows.size == 0:
        return np.full(weights.shape[:-2], np.nan)
    return weights[..., rows, cols].astype(np.float64).mean(axis=-1)


def previous_token(weights: np.ndarray) -> np.ndarray:
    """Mean over query positions i >= 1 of the weight on position i - 1."""
    rows = np.arange(1, weights.shape[-2])
    return _mean_of(weights, rows, rows - 1)


def first_token(weights: np.ndarray) -> np.ndarray:
    """Mean over query positions i >= 1 of the weight on position 0."""
    rows = np.arange(1, weights.shape[-2])
    return _mean_of(weights, rows, np.zeros_like(rows))


def _second_copy(weights: np.ndarray, start: int, length: int) -> np.ndarray:
    if length < 1 or start < 0 or start + 2 * length > weights.shape[-2]:
        raise ValueError(
            f"a probe of two copies of {length} tokens from position {start} does not fit "
            f"{weights.shape[-2]} positions"
        )
    return np.arange(start + length, start + 2 * length)


def duplicate_token(weights: np.ndarray, start: int, length: int) -> np.ndarray:
    """Mean over the second copy's positions i of the weight on i - R (the same token)."""
    rows = _second_copy(weights, start, length)
    return _mean_of(weights, rows, rows - length)


def induction(weights: np.ndarray, start: int, length: int) -> np.ndarray:
    """Mean over the second copy's positions i of the weight on i - R + 1 (the token that
    followed the same token in the first copy)."""
    rows = _second_copy(weights, start, length)
    return _mean_of(weights, rows, rows - length + 1)


def head_type_scores(weights: np.ndarray, start: int, length: int) -> dict[str, np.ndarray]:
    """All four scores of a probe's weights, by :data:`SCORE_COLUMNS` name."""
    return {
        "previous_token": previous_token(weights),
        "first_token": first_token(weights),
        "duplicate_token": duplicate_token(weights, start, length),
        "induction": induction(weights, start, length),
    }
