"""What an intervention measures on a token sequence (torch, float32 passes, float64 sums).

- ``ce``: mean next-token cross-entropy in nats over prediction positions ``t`` (the
  prediction of token ``t + 1`` from tokens ``0 .. t``): ``0 .. T-2`` for a text, the probe's
  induction window for the induction loss. ``delta_ce = ce_edited - ce_original``.
- ``kl``: mean over positions ``0 .. T-2`` of ``KL(p_original || p_edited)`` over the whole
  vocabulary, in nats.
- ``cosine_distance``: mean over all T tokens of ``1 - cos(h_original, h_edited)`` of the final
  hidden states (the base model's output): the measure of a model without a language-modelling
  head (an encoder), given for every model.

The logits are the ``*ForCausalLM``'s own head applied to the base model's output (its output
embeddings, then its final soft-capping when the config sets one), computed for a few sequences
at a time within :data:`LOGIT_BYTES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

LOGIT_BYTES = 128 * 2**20
"""Bytes of float32 logits computed at once (rows of several sequences, or of one)."""


def next_token_logits(causal_lm: Any, hidden: Any) -> Any:
    """The model's logits of final hidden states ``hidden`` (``..., N``), as its forward pass
    computes them."""
    import torch

    logits = causal_lm.get_output_embeddings()(hidden)
    cap = getattr(causal_lm.config, "final_logit_softcapping", None)
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return logits


def log_probs(causal_lm: Any, hidden: Any) -> Any:
    """Next-token log-probabilities (float32) of the predictions at positions ``0 .. T-2`` of
    final hidden states ``hidden`` (``T, N``)."""
    import torch

    return torch.log_softmax(next_token_logits(causal_lm, hidden[:-1]).float(), dim=-1)


@dataclass(frozen=True)
class Measured:
    """One sequence's measures (NaN where the model has no language-modelling head)."""

    ce: float
    kl: float
    cosine_distance: float


def cross_entropy(logp: Any, token_ids: list[int], window: np.ndarray) -> float:
    """Mean of ``-log p(token t+1)`` over prediction positions ``window``."""
    import torch

    targets = torch.as_tensor([token_ids[t + 1] for t in window], dtype=torch.long)
    picked = logp[torch.as_tensor(window, dtype=torch.long), targets]
    return float(-picked.double().mean())


def cosine_distance(original: Any, edited: Any) -> float:
    """Mean over tokens of ``1 - cos`` between two sequences of final hidden states."""
    import torch

    cos = torch.nn.functional.cosine_similarity(original.double(), edited.double(), dim=-1)
    return float((1.0 - cos).clamp(0.0, 2.0).mean())  # 1 - cos lies in [0, 2]


def measure_batch(
    causal_lm: Any | None,
    hidden: Any,
    token_ids: list[int],
    original_final: Any,
    original_logp: Any | None,
    window: np.ndarray,
) -> list[Measured]:
    """The measures of each sequence of a batch of final hidden states (``B, T, N``) against
    the unedited pass (its final hidden states and log-probabilities)."""
    import torch

    batch, length = hidden.shape[0], hidden.shape[1]
    cosines = [cosine_distance(original_final, hidden[b]) for b in range(batch)]
    if causal_lm is None or original_logp is None:
        return [Measured(float("nan"), float("nan"), c) for c in cosines]
    vocab = original_logp.shape[-1]
    per_chunk = max(1, LOGIT_BYTES // (4 * vocab * max(length - 1, 1)))
    original_p = original_logp.exp()
    measured = []
    for start in range(0, batch, per_chunk):
        chunk = hidden[start : start + per_chunk]
        logp = torch.log_softmax(next_token_logits(causal_lm, chunk[:, :-1]).float(), dim=-1)
        kl = (original_p * (original_logp - logp)).sum(-1).double().mean(-1)
        for offset in range(len(chunk)):
            ce = cross_entropy(logp[offset], token_ids, window)
            measured.append(Measured(ce, float(kl[offset]), cosines[start + offset]))
    return measured
