"""What an intervention measures on a token sequence (torch, float32 logits, float64 sums).

- ``ce``: mean next-token cross-entropy in nats over prediction positions ``t`` (the
  prediction of token ``t + 1`` from tokens ``0 .. t``): ``0 .. T-2`` for a text, the probe's
  induction window for the induction loss. ``delta_ce = ce_edited - ce_original``.
- ``kl``: mean over positions ``0 .. T-2`` of ``KL(p_original || p_edited)`` over the whole
  vocabulary, in nats.
- ``cosine_distance``: mean over all T tokens of ``1 - cos(h_original, h_edited)`` of the final
  hidden states (the base model's output): the measure of a model without a language-modelling
  head (an encoder), given for every model.

The logits are the ``*ForCausalLM``'s own head applied to the base model's output (its output
embeddings, then its final soft-capping when the config sets one). They are never held whole:
the vocabulary is taken in chunks (:data:`LOGIT_BYTES` of logits at once, every position of every
sequence of a batch together), and each chunk adds to three sums per position: the log-sum-exp
``lse'``, the logit of the next token, and ``sum_v p_v z'_v`` with ``p`` the unedited
probabilities (for a linear head without a final cap, ``h' . sum_v p_v w_v + sum_v p_v b_v``:
the weighted rows computed once per text, one dot product per position). Then
``ce = lse' - z'_next`` and ``KL(p || q) = sum_v p_v log p_v - sum_v p_v z'_v + lse'``, exactly
(the same operations on the unedited logits give exactly 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

VOCABULARY_CHUNK = 8192
"""Logits computed at once for each row: the same chunks for every pass, so that the unedited
logits give exactly the unedited sums."""
LOGIT_BYTES = 32 * 2**20
"""Bytes of float32 logits computed at once (rows of a batch times one vocabulary chunk)."""


def final_cap(causal_lm: Any) -> float | None:
    """The soft-cap a language model applies to its final logits (``tanh(z / cap) * cap``), or
    None."""
    return getattr(causal_lm.config, "final_logit_softcapping", None)


def next_token_logits(causal_lm: Any, hidden: Any) -> Any:
    """The model's logits of final hidden states ``hidden`` (``..., N``), as its forward pass
    computes them (the whole vocabulary: for checks and small models)."""
    import torch

    logits = causal_lm.get_output_embeddings()(hidden)
    cap = final_cap(causal_lm)
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return logits


@dataclass(frozen=True)
class VocabularySums:
    """Per prediction position (rows): ``lse`` of the logits, the logit of the next token, and
    ``sum_v p_v z_v`` against given probabilities (float64)."""

    lse: Any
    next_logit: Any
    expected: Any | None


def vocabulary_sums(
    causal_lm: Any,
    hidden: Any,
    targets: Any,
    probs: Any | None,
    pulled: tuple[Any, Any] | None = None,
) -> VocabularySums:
    """The sums of :class:`VocabularySums` for hidden states ``hidden`` (``B, P, N``: P
    prediction positions of B sequences), next tokens ``targets`` (``P``) and, when given,
    probabilities ``probs`` (``P, V``): a few sequences at a time, the vocabulary in
    :data:`VOCABULARY_CHUNK` chunks (float32 sums within a chunk, float64 across chunks).
    ``pulled``, the :func:`expected_rows` of ``probs`` when the head is linear, gives the
    expected logit as one dot product per row."""
    import torch

    batch, positions = hidden.shape[0], hidden.shape[1]
    per_group = max(1, LOGIT_BYTES // (4 * VOCABULARY_CHUNK * max(positions, 1)))
    head, cap = causal_lm.get_output_embeddings(), final_cap(causal_lm)
    parts = [
        _group_sums(head, cap, hidden[start : start + per_group], targets, probs, pulled)
        for start in range(0, batch, per_group)
    ]
    joined = [torch.cat([part[i] for part in parts]) for i in range(3)]
    return VocabularySums(joined[0], joined[1], None if probs is None else joined[2])


def expected_rows(causal_lm: Any, probs: Any) -> tuple[Any, Any] | None:
    """``sum_v p_v w_v`` (``P, N``) and ``sum_v p_v b_v`` (``P``) of a linear head, in float64
    (None when the head soft-caps its logits): its expected logit ``sum_v p_v z_v`` is then
    linear in the hidden state, ``h . sum_v p_v w_v + sum_v p_v b_v``, one dot product per row
    instead of a product and a sum over the whole vocabulary in every edited pass."""
    import torch

    if final_cap(causal_lm) is not None:
        return None
    head = causal_lm.get_output_embeddings()
    weight, bias = head.weight.detach(), getattr(head, "bias", None)
    pulled = torch.zeros((probs.shape[0], weight.shape[1]), dtype=torch.float64)
    offset = torch.zeros(probs.shape[0], dtype=torch.float64)
    for start in range(0, weight.shape[0], VOCABULARY_CHUNK):  # a chunk widened at a time
        end = start + VOCABULARY_CHUNK
        wide = probs[:, start:end].double()
        pulled += wide @ weight[start:end].double()
        if bias is not None:
            offset += wide @ bias[start:end].detach().double()
    return pulled, offset


def _group_sums(
    head: Any,
    cap: float | None,
    hidden: Any,
    targets: Any,
    probs: Any | None,
    pulled: tuple[Any, Any] | None,
) -> tuple:
    """One group's sums: each chunk's logits into one buffer, the exponentials taken in place
    (no chunk-sized temporaries), the expected logit from ``pulled`` when the head is linear."""
    import torch

    weight, bias = head.weight.detach(), getattr(head, "bias", None)
    bias = None if bias is None else bias.detach()
    batch, positions = hidden.shape[0], hidden.shape[1]
    rows = hidden.detach().reshape(batch * positions, -1)
    top = torch.full((batch, positions), -torch.inf, dtype=torch.float64)
    total = torch.zeros((batch, positions), dtype=torch.float64)
    expected = torch.zeros((batch, positions), dtype=torch.float64)
    next_logit = torch.zeros((batch, positions), dtype=torch.float64)
    where = torch.arange(positions)
    buffer = torch.empty((batch * positions, VOCABULARY_CHUNK), dtype=rows.dtype)
    for start in range(0, weight.shape[0], VOCABULARY_CHUNK):
        end = min(start + VOCABULARY_CHUNK, weight.shape[0])
        flat = buffer[:, : end - start]
        torch.matmul(rows, weight[start:end].t(), out=flat)
        if bias is not None:
            flat += bias[start:end]
        if cap is not None:
            flat.div_(cap).tanh_().mul_(cap)
        logits = flat.view(batch, positions, end - start)
        inside = (targets >= start) & (targets < end)
        if inside.any():
            next_logit[:, inside] = logits[:, where[inside], targets[inside] - start].double()
        if probs is not None and pulled is None:
            expected += (logits * probs[:, start:end]).sum(-1).double()
        new_top = torch.maximum(top, logits.amax(-1).double())
        shifted = logits.sub_(new_top.unsqueeze(-1).float()).exp_().sum(-1).double()
        total = total * torch.exp(top - new_top) + shifted
        top = new_top
    if pulled is not None:
        expected = (hidden.double() * pulled[0]).sum(-1) + pulled[1]
    return top + torch.log(total), next_logit, expected


@dataclass(frozen=True)
class Reference:
    """The unedited pass's next-token terms over positions ``0 .. T-2``: probabilities
    (float32, ``T-1, V``), ``sum_v p_v log p_v`` and ``sum_v p_v z_v`` (float64), each
    position's cross-entropy, and the :func:`expected_rows` of the probabilities (or None)."""

    probs: Any
    negentropy: Any
    expected: Any
    losses: Any
    pulled: tuple[Any, Any] | None


def reference_terms(causal_lm: Any, final: Any, token_ids: list[int]) -> Reference:
    """The :class:`Reference` of the unedited final hidden states ``final`` (``T, N``)."""
    import torch

    targets = torch.as_tensor(token_ids[1:], dtype=torch.long)
    logp = torch.log_softmax(next_token_logits(causal_lm, final[:-1]).float(), dim=-1)
    probs = logp.exp()
    pulled = expected_rows(causal_lm, probs)
    sums = vocabulary_sums(causal_lm, final[None, :-1], targets, probs, pulled)
    lse, expected = sums.lse[0], sums.expected[0]
    negentropy = expected - lse  # sum_v p_v (z_v - lse) = sum_v p_v log p_v
    return Reference(probs, negentropy, expected, lse - sums.next_logit[0], pulled)


@dataclass(frozen=True)
class Measured:
    """One sequence's measures (NaN where the model has no language-modelling head) and their
    per-position terms (float64): ``losses`` over the window (their mean is ``ce``), ``kls``
    over positions ``0 .. T-2`` and ``cosines`` over all T tokens (NaN arrays likewise)."""

    ce: float
    kl: float
    cosine_distance: float
    losses: np.ndarray
    kls: np.ndarray
    cosines: np.ndarray


def cosine_distances(original: Any, edited: Any) -> np.ndarray:
    """``1 - cos`` between two sequences of final hidden states, per token (float64)."""
    import torch

    cos = torch.nn.functional.cosine_similarity(original.double(), edited.double(), dim=-1)
    return (1.0 - cos).clamp(0.0, 2.0).numpy()  # 1 - cos lies in [0, 2]


def cosine_distance(original: Any, edited: Any) -> float:
    """Mean over tokens of ``1 - cos`` between two sequences of final hidden states."""
    return float(cosine_distances(original, edited).mean())


def measure_batch(
    causal_lm: Any | None,
    hidden: Any,
    token_ids: list[int],
    original_final: Any,
    reference: Reference | None,
    window: np.ndarray,
) -> list[Measured]:
    """The measures of each sequence of a batch of final hidden states (``B, T, N``) against
    the unedited pass (its final hidden states and :class:`Reference`); ``ce`` over the
    prediction positions ``window``."""
    import torch

    batch = hidden.shape[0]
    cosines = [cosine_distances(original_final, hidden[b]) for b in range(batch)]
    if causal_lm is None or reference is None:
        nothing = float("nan")
        empty = np.full(len(window), nothing)
        gaps = np.full(len(token_ids) - 1, nothing)
        return [Measured(nothing, nothing, float(c.mean()), empty, gaps, c) for c in cosines]
    targets = torch.as_tensor(token_ids[1:], dtype=torch.long)
    sums = vocabulary_sums(causal_lm, hidden[:, :-1], targets, reference.probs, reference.pulled)
    chosen = torch.as_tensor(window, dtype=torch.long)
    losses = (sums.lse - sums.next_logit)[:, chosen].numpy()
    kls = (reference.negentropy - sums.expected + sums.lse).numpy()
    return [
        Measured(
            float(losses[b].mean()),
            float(kls[b].mean()),
            float(cosines[b].mean()),
            losses[b],
            kls[b],
            cosines[b],
        )
        for b in range(batch)
    ]


def reference_losses(reference: Reference, window: np.ndarray) -> np.ndarray:
    """The unedited next-token losses at prediction positions ``window`` (float64)."""
    return reference.losses[np.asarray(window, dtype=np.int64)].numpy()


def reference_loss(reference: Reference, window: np.ndarray) -> float:
    """The unedited cross-entropy over prediction positions ``window``."""
    return float(reference_losses(reference, window).mean())
