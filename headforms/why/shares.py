"""How much of a head's scores each part of its form carries: realised on a text, and from the
weights alone (pure numpy).

- **Realised share** of a bilinear part X (positive lobe, negative lobe, antisymmetric part):
  its mean square over the visible pairs, ``mean(X_ij^2)``, divided by the sum of the three
  parts' mean squares (the three shares sum to 1; the parts are in the model's units, scale and
  QK-norm factors included).
- **Spread share**: the same with each part's spread within each query's row, ``mean over
  visible pairs of (X_ij - mean_j X_ij)^2`` (the row mean over the keys the query sees): what
  the softmax feels, since it ignores what is constant along a row.
- ``rest_share`` / ``rest_spread``: the rest's mean square (spread) over the whole score's.
- **Weight share** (at d = 0, from the weights alone): ``sum lambda_+^2``, ``sum lambda_-^2``
  and ``||A||^2`` over ``||L||^2`` (they sum to 1: ``||L||^2 = ||S||^2 + ||A||^2``).

For independent isotropic Gaussian query and key inputs the parts are uncorrelated and
``E[(x_j^T X x_i)^2] = ||X||_F^2``, so the realised shares tend to the weight shares; their gap
on a text is how the text's anisotropy uses the form.
"""

from __future__ import annotations

import numpy as np

from ..columns import REALISED_SHARE_COLUMNS, SPREAD_SHARE_COLUMNS, WEIGHT_SHARE_COLUMNS
from ..forms import share
from .split import BILINEAR_PARTS, ScoreSplit

REALISED_COLUMNS = REALISED_SHARE_COLUMNS
SPREAD_COLUMNS = SPREAD_SHARE_COLUMNS
WEIGHT_COLUMNS = WEIGHT_SHARE_COLUMNS
"""The shares' columns (:mod:`headforms.columns`), in :data:`.split.BILINEAR_PARTS` order."""
REST_COLUMNS = ("rest_share", "rest_spread")
SHARE_COLUMNS = (*REALISED_COLUMNS, *SPREAD_COLUMNS, *REST_COLUMNS)
"""The realised columns of a head on a text (:func:`realised_shares`)."""
MARGIN_COLUMNS = ("first_margin_pos", "first_margin_neg", "first_margin_anti", "first_margin_rest")
"""How much each part (the three bilinear ones, then the rest) lifts the first key above the
other keys of its row (:func:`first_key_margins`): what carries an attention sink."""


def _mean_square(values: np.ndarray, visible: np.ndarray) -> float:
    return float(np.mean(np.square(values[visible])))


def _row_spread(values: np.ndarray, visible: np.ndarray) -> float:
    """Mean over the visible pairs of the squared deviation from the row's mean (over the keys
    that row sees)."""
    counts = visible.sum(axis=1)
    filled = np.where(visible, values, 0.0)
    means = np.divide(filled.sum(axis=1), counts, out=np.zeros(len(counts)), where=counts > 0)
    deviation = np.where(visible, values - means[:, None], 0.0)
    return float(np.sum(deviation**2) / max(int(counts.sum()), 1))


def _shares(amounts: list[float]) -> list[float]:
    total = sum(amounts)
    if not total > 0:
        return [float("nan")] * len(amounts)
    return [float(share(np.float64(a / total))) for a in amounts]


def realised_shares(split: ScoreSplit) -> dict[str, float]:
    """The :data:`SHARE_COLUMNS` of one head's split (module doc); NaN when every bilinear
    part vanishes on the text."""
    visible = split.visible
    parts = [getattr(split, name) for name in BILINEAR_PARTS]
    squares = [_mean_square(part, visible) for part in parts]
    spreads = [_row_spread(part, visible) for part in parts]
    total = split.total
    whole_square, whole_spread = _mean_square(total, visible), _row_spread(total, visible)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest_square = np.float64(_mean_square(split.rest, visible)) / whole_square
        rest_spread = np.float64(_row_spread(split.rest, visible)) / whole_spread
    return {
        **dict(zip(REALISED_COLUMNS, _shares(squares), strict=True)),
        **dict(zip(SPREAD_COLUMNS, _shares(spreads), strict=True)),
        "rest_share": float(rest_square),
        "rest_spread": float(rest_spread),
    }


def first_key_margins(split: ScoreSplit) -> dict[str, float]:
    """:data:`MARGIN_COLUMNS`: for each part X, the mean over the queries that see the first key
    and another of ``X[i, 0] - mean_{j != 0} X[i, j]`` (the mean over the other keys the query
    sees), in the model's units; the four add up to the whole score's margin. NaN when no query
    sees two keys."""
    visible = split.visible
    others = visible.copy()
    others[:, 0] = False
    rows = visible[:, 0] & others.any(axis=1)
    found = {}
    for column, name in zip(MARGIN_COLUMNS, (*BILINEAR_PARTS, "rest"), strict=True):
        part = getattr(split, name)
        if not rows.any():
            found[column] = float("nan")
            continue
        rest = np.where(others, part, 0.0)[rows].sum(axis=1) / others[rows].sum(axis=1)
        found[column] = float(np.mean(part[rows, 0] - rest))
    return found


def weight_shares(
    lobe_pos: np.ndarray, lobe_neg: np.ndarray, norm_a2: np.ndarray, norm_l2: np.ndarray
) -> dict[str, np.ndarray]:
    """:data:`WEIGHT_COLUMNS` of heads (rows) from their lobes (``lambda_+``, ``|lambda_-|``)
    and norms (:class:`headforms.forms.FormBatch`); NaN for a vanishing form."""
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (
            np.sum(np.square(lobe_pos), axis=-1) / norm_l2,
            np.sum(np.square(lobe_neg), axis=-1) / norm_l2,
            norm_a2 / norm_l2,
        )
    return {name: share(value) for name, value in zip(WEIGHT_COLUMNS, values, strict=True)}


def split_error(split: ScoreSplit, scores: np.ndarray) -> float:
    """``max |sum of the parts - the model's score| / max |the model's score|`` over the visible
    pairs: how exactly the parts add up to what the model computed."""
    visible = split.visible
    want = np.asarray(scores, np.float64)[visible]
    scale = float(np.max(np.abs(want), initial=0.0))
    gap = float(np.max(np.abs(split.total[visible] - want), initial=0.0))
    return gap / scale if scale > 0 else gap
