"""Why a head attends where it does: its pre-softmax scores on a text split exactly into the
parts of its form.

A head's score of query i and key j is, up to the model's scale and QK-norm factors,
``x_j^T L_d x_i`` plus bias terms. With ``S_d = sum_k lambda_k v_k v_k^T`` (from the reduced
``2n x 2n`` form, at the pair's own RoPE distance d) it splits into the positive lobe, the
negative lobe, the antisymmetric part and the rest (biases, position biases); the four parts
sum to the model's own scores (:mod:`.split`). Per head and text: the share of each part's mean
square and of its spread within each query's row, against the shares the weights alone give
(:mod:`.shares`); the top eigen-directions of each lobe read out on the text's token pairs and
through the vocabulary (:mod:`.readout`).

    from headforms.why import why, why_table, request_of

    why_table("smollm2-135m")                         # DataFrame: one row per head
    result = why("smollm2-135m", request_of(heads="18.8", detail=True))
    result.detail.parts                  # (4, T, T): positive, negative, antisymmetric, rest
    result.pair_table, result.vocabulary_table

The computation is a pure function of a loaded model and a typed request (:func:`compute_why`,
:class:`WhyRequest`), so a contained worker can run it; results are stored like attention
patterns (:mod:`.run`). Definitions: docs/MATH.md, section 11; docs/why.md.
"""

from __future__ import annotations

import importlib
from typing import Any

from .request import DETAIL_PAIRS, DIRECTIONS, MAX_PAIRS, WhyRequest

_LAZY = {
    "why": "run",
    "why_table": "run",
    "why_key": "run",
    "request_of": "run",
    "compute_why": "compute",
    "WhyResult": "result",
    "HeadDetail": "result",
}
"""Imported when first used (the command line's parser needs only the names above)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DETAIL_PAIRS",
    "DIRECTIONS",
    "MAX_PAIRS",
    "HeadDetail",
    "WhyRequest",
    "WhyResult",
    "compute_why",
    "request_of",
    "why",
    "why_key",
    "why_table",
]
