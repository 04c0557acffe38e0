"""What forward passes give back: a prompt's attention patterns, and every head's scores."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ..errors import OptionError
from .scores import SCORE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

PATTERN_KINDS = ("weights", "scores")
"""``weights``: attention after the softmax (rows sum to 1); ``scores``: its input."""


@dataclass(frozen=True)
class AttentionPattern:
    """Every head's attention on one token sequence.

    ``weights`` and ``scores`` have shape (layers, heads, T, T), float32, rows = query
    positions; ``scores`` (the pre-softmax scores, NaN where the mask hides a key) is None when
    the model's attention could not be tapped. ``tokens``: each token's text, ``pieces``: its
    vocabulary spelling, ``token_ids``: the ids, special tokens included.
    """

    model: str
    fingerprint: str
    token_ids: list[int]
    tokens: list[str]
    pieces: list[str]
    weights: np.ndarray
    scores: np.ndarray | None
    meta: dict[str, Any] = field(default_factory=dict)

    def named(self, model: str) -> Self:
        """The same result named ``model`` (a copy; its arrays are shared): a stored or shared
        result is never changed."""
        return self if model == self.model else replace(self, model=model)

    @property
    def n_layers(self) -> int:
        """Layers of the model."""
        return int(self.weights.shape[0])

    @property
    def n_heads(self) -> int:
        """Query heads per layer."""
        return int(self.weights.shape[1])

    @property
    def causal(self) -> bool:
        """True when no query attends to a later key (every weight above the diagonal is 0)."""
        return bool(np.all(np.triu(self.weights, 1) == 0))

    def check_head(self, layer: int | None, head: int | None) -> None:
        """A one-line :class:`OptionError` for a layer or head that does not exist."""
        check_layer_head(layer, head, self.n_layers, self.n_heads, self.model)

    def array(self, kind: str = "weights") -> np.ndarray:
        """``weights`` or ``scores`` (a one-line error when the scores are not available)."""
        if kind not in PATTERN_KINDS:
            raise OptionError(f"unknown pattern kind {kind!r}; accepted: weights, scores")
        values = self.weights if kind == "weights" else self.scores
        if values is None:
            raise OptionError(
                f"{self.model}: its pre-softmax scores could not be read (its attention does not "
                "call torch's softmax); the weights are available"
            )
        return values

    def head(self, layer: int, head: int, kind: str = "weights") -> np.ndarray:
        """One head's (T, T) matrix."""
        self.check_head(layer, head)
        return self.array(kind)[layer, head]


@dataclass(frozen=True)
class HeadTypeScores:
    """Every head's :data:`~headforms.behaviour.scores.SCORE_COLUMNS` (layer-major rows).

    ``meta`` says what they were measured on: the probe (R, seed, its token ids and where its
    copies start) and, when a prompt gave ``previous_token`` and ``first_token``, the prompt.
    """

    model: str
    fingerprint: str
    columns: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    def named(self, model: str) -> Self:
        """The same result named ``model`` (a copy; its arrays are shared): a stored or shared
        result is never changed."""
        return self if model == self.model else replace(self, model=model)

    @property
    def table(self) -> pd.DataFrame:
        """One row per head: ``layer, head`` and the scores."""
        import pandas as pd

        return pd.DataFrame(
            {name: self.columns[name] for name in ("layer", "head", *SCORE_COLUMNS)}
        )


def check_layer_head(
    layer: int | None, head: int | None, n_layers: int, n_heads: int, model: str
) -> None:
    """A one-line :class:`OptionError` for a layer or head that ``model`` (``n_layers`` layers
    of ``n_heads`` query heads) does not have; None asks for none."""
    for what, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise OptionError(f"{what} {value!r} is not a whole number")
        if not 0 <= value < count:
            raise OptionError(
                f"{what} {value} does not exist: {model} has {what}s 0 to {count - 1}"
            )


def score_columns(weights: np.ndarray, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Layer-major columns (``layer``, ``head``, then the scores) of (layers, heads) arrays."""
    layers, heads = weights.shape[:2]
    columns = {
        "layer": np.repeat(np.arange(layers), heads),
        "head": np.tile(np.arange(heads), layers),
    }
    columns.update({name: np.asarray(values[name], float).reshape(-1) for name in SCORE_COLUMNS})
    return columns
