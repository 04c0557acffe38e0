"""What a lobe's top eigen-directions read on a text and through the vocabulary (pure numpy).

- :func:`top_pairs`: for each ranked direction of each lobe (:class:`.split.ScoreSplit`'s
  ``ranked``), the token pairs of the text with the largest |contribution| ``lambda_k (v_k .
  x_j)(v_k . x_i)`` at the pair's own d.
- :func:`top_directions`: the columns of the eigenvalues at d = 0 (ascending, as
  ``eigh`` returns them) that are the top directions of each lobe.
- :func:`vocabulary_readout`: for each direction ``v_k`` at d = 0, the tokens whose attention
  input (along the path the caller names) projects most onto ``+v_k`` and onto ``-v_k``. In a
  lobe's term a pair of tokens at the same end scores ``lambda_k`` times a positive number
  (raised by the positive lobe, lowered by the negative one), a pair at opposite ends the
  reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .split import LOBES

PAIR_FIELDS = (
    "lobe",
    "rank",
    "eigenvalue",
    "place",
    "query_position",
    "key_position",
    "distance",
    "query_token",
    "key_token",
    "contribution",
    "score",
)
"""A top pair's columns as this module finds them (a result's table adds ``layer, head``)."""


def top_directions(eigenvalues: np.ndarray, count: int) -> list[tuple[int, int, int]]:
    """``(lobe, rank, column)`` of the top ``count`` directions of each lobe: the largest
    positive eigenvalues (lobe 0) and the most negative (lobe 1), rank 0 first, only those of
    the lobe's sign (``eigenvalues`` ascending)."""
    values = np.asarray(eigenvalues)
    found = []
    size = len(values)
    for rank in range(min(count, size)):
        if values[size - 1 - rank] > 0:
            found.append((0, rank, size - 1 - rank))
    for rank in range(min(count, size)):
        if values[rank] < 0:
            found.append((1, rank, rank))
    return found


def top_pairs(
    ranked: np.ndarray,
    total: np.ndarray,
    eigenvalues: np.ndarray,
    directions: list[tuple[int, int, int]],
    count: int,
    tokens: Sequence[str],
) -> dict[str, list]:
    """Columns (``lobe``, ``rank`` from 1, ``eigenvalue`` at d = 0, ``place``, positions,
    ``distance``, tokens, ``contribution``, ``score``) of the ``count`` pairs of largest
    |contribution| of each direction (``ranked``: ``(2, J, T, T)``, NaN where masked;
    ``total``: the pair's whole score)."""
    columns: dict[str, list] = {name: [] for name in PAIR_FIELDS}
    length = ranked.shape[-1]
    for lobe, rank, column in directions:
        values = ranked[lobe, rank]
        magnitude = np.where(np.isfinite(values), np.abs(values), -1.0).ravel()
        shown = min(count, int(np.count_nonzero(magnitude >= 0)))
        order = np.argsort(-magnitude, kind="stable")[:shown]
        for place, flat in enumerate(order, start=1):
            query, key = divmod(int(flat), length)
            columns["lobe"].append(LOBES[lobe])
            columns["rank"].append(rank + 1)
            columns["eigenvalue"].append(float(eigenvalues[column]))
            columns["place"].append(place)
            columns["query_position"].append(query)
            columns["key_position"].append(key)
            columns["distance"].append(query - key)
            columns["query_token"].append(str(tokens[query]))
            columns["key_token"].append(str(tokens[key]))
            columns["contribution"].append(float(values[query, key]))
            columns["score"].append(float(total[query, key]))
    return columns


def vocabulary_readout(
    projections: np.ndarray,
    token_ids: np.ndarray,
    eigenvalues: np.ndarray,
    directions: list[tuple[int, int, int]],
    count: int,
    texts: Callable[[list[int]], list[str]],
) -> dict[str, np.ndarray]:
    """The :data:`~.result.VOCABULARY_COLUMNS` of each direction: ``projections`` ``(V,
    len(directions))`` the tokens' attention inputs on the unit directions (row ``i`` is token
    ``token_ids[i]``), the ``count`` largest (``+``) and smallest (``-``) of each column;
    ``texts(ids)`` spells the tokens listed."""
    rows: dict[str, list] = {
        name: []
        for name in (
            "lobe",
            "rank",
            "eigenvalue",
            "end",
            "place",
            "token_id",
            "token",
            "projection",
        )
    }
    shown = min(count, len(token_ids))
    for index, (lobe, rank, column) in enumerate(directions):
        values = projections[:, index]
        for end, order in (("+", _largest(values, shown)), ("-", _largest(-values, shown))):
            for place, at in enumerate(order, start=1):
                rows["lobe"].append(LOBES[lobe])
                rows["rank"].append(rank + 1)
                rows["eigenvalue"].append(float(eigenvalues[column]))
                rows["end"].append(end)
                rows["place"].append(place)
                rows["token_id"].append(int(token_ids[at]))
                rows["token"].append(None)
                rows["projection"].append(float(values[at]))
    rows["token"] = [str(text) for text in texts([int(i) for i in rows["token_id"]])]
    return {
        name: np.asarray(values, dtype=object if name in ("lobe", "end", "token") else None)
        for name, values in rows.items()
    }


def _largest(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest values, largest first (ties by index)."""
    if count <= 0:
        return np.empty(0, np.int64)
    if count < len(values):
        values_part = np.argpartition(-values, count - 1)[:count]
    else:
        values_part = np.arange(len(values))
    order = np.lexsort((values_part, -values[values_part]))
    return values_part[order]
