"""One forward pass: every layer's attention weights, and the scores they are the softmax of.

The weights are the model's own (transformers, eager attention, ``output_attentions=True``). The
pre-softmax scores are the inputs of the softmax that eager attention applies (scaled ``q . k``
plus the causal or padding mask and any position bias): every eager attention implementation in
transformers calls ``torch.nn.functional.softmax`` on them, so the pass taps that function.
Positions a query cannot see (the mask) are NaN in the scores. Forward passes of one process run
one at a time (the tap is process-wide; two cores gain nothing from running them together).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import OptionError
from .limits import check_token_count

if TYPE_CHECKING:
    from .runnable import Runnable

PASS_LOCK = threading.RLock()
"""Held by every forward pass of the process, and by whatever changes a loaded model for the
duration of some passes (the hooks of an intervention): re-entrant, so a pass may run inside."""

MASKED_BELOW = -1e30
"""Scores at or below this are the mask's (transformers adds the dtype's lowest value)."""


@dataclass(frozen=True)
class Pass:
    """What a forward pass returns: ``weights`` and ``scores`` of shape (layers, heads, T, T)
    in float32 (``scores`` None when the model's attention could not be tapped)."""

    weights: np.ndarray
    scores: np.ndarray | None


@contextlib.contextmanager
def _softmax_tap(length: int) -> Iterator[list[Any]]:
    """Record the inputs of ``torch.nn.functional.softmax`` over (batch, heads, T, T) scores."""
    import torch.nn.functional as functional

    original = functional.softmax
    seen: list[Any] = []

    def tap(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - torch's own name
        if input.dim() == 4 and input.shape[-1] == input.shape[-2] == length:
            seen.append(input.detach().float().clone())
        return original(input, *args, **kwargs)

    functional.softmax = tap
    try:
        yield seen
    finally:
        functional.softmax = original


def check_length(token_ids: list[int], what: str, model: Runnable) -> None:
    """Refuse, in one line, a sequence the pass cannot take: longer than the token cap, the
    model's position table or what its pattern may hold (:func:`.limits.token_limit`), or with a
    token id past the model's embeddings."""
    check_token_count(len(token_ids), what, model.name, model.n_heads_all, model.max_positions)
    largest = max(token_ids, default=0)
    if largest >= model.vocab_size:
        raise OptionError(
            f"{what} has token id {largest}, but {model.name} has {model.vocab_size} token "
            "embeddings (its tokenizer does not match its weights)"
        )


def run(model: Any, token_ids: list[int], n_layers: int) -> Pass:
    """Run ``model`` (a base transformers model) on one sequence of token ids."""
    import torch

    ids = torch.tensor([token_ids], dtype=torch.long)
    with PASS_LOCK, torch.inference_mode(), _softmax_tap(len(token_ids)) as seen:
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    attentions = out.attentions
    if attentions is None or len(attentions) != n_layers or any(a is None for a in attentions):
        raise OptionError("the model did not return its attention weights (output_attentions)")
    weights = np.stack([a[0].float().numpy() for a in attentions])
    scores = None
    if len(seen) == n_layers and all(s.shape[1] == weights.shape[1] for s in seen):
        scores = np.stack([s[0].numpy() for s in seen])
        scores[scores <= MASKED_BELOW] = np.nan
    return Pass(weights, scores)
