"""Forward passes of an intervention: the unedited pass of a sequence, then batches of edited
sequences that start where their first edited layer does.

The unedited pass (:func:`clean_pass`) records the hidden state entering every layer. A batch
of edited sequences whose first edited layer is l (:func:`edited_passes`) is run with the layers
below l returning that state (:func:`headforms.interventions.hooks.applied`): every head of one
layer edited on its own costs one batched pass through the layers from l up, not one full pass
per head. Sequences are grouped by l and run :data:`BATCH` at a time; the deadline of the
request's limits is checked between batches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..bounded import ByteLRU
from ..errors import LimitError
from ..progress import Progress
from .anatomy import Anatomy
from .changes import SequencePlan
from .hooks import Recording, applied, recording
from .measures import Measured, Reference, measure_batch, reference_losses, reference_terms

if TYPE_CHECKING:
    from ..behaviour.runnable import Runnable

BATCH = 12
"""Edited sequences run in one pass (they share the layers below their first edited layer)."""


def run_base(model: Runnable, ids: Any) -> Any:
    """The base model's final hidden states (``B, T, N``) of token ids ``ids`` (``B, T``)."""
    import torch

    with torch.inference_mode():
        out = model.model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return out.last_hidden_state


@dataclass
class CleanPass:
    """The unedited model on one sequence: what :class:`Recording` holds, the final hidden
    states (``T, N``), the next-token terms (:class:`Reference`; None without a
    language-modelling head), the next-token losses at the ``window``'s positions and their
    mean ``ce``."""

    token_ids: list[int]
    recorded: Recording
    final: Any
    reference: Reference | None
    window: np.ndarray
    losses: np.ndarray
    ce: float

    def running_means(self, layer: int) -> np.ndarray:
        """Each position's mean of the heads' outputs of ``layer`` over itself and the
        positions before it (``T, H n``): ``output_mean`` without the future."""
        outputs = self.recorded.head_outputs[layer]
        return np.cumsum(outputs, axis=0) / np.arange(1, len(outputs) + 1)[:, None]


CLEAN_PASS_BYTES = 256 * 2**20
"""Bytes of unedited passes kept in memory (another edit on the same text skips its pass)."""


def _clean_bytes(clean: CleanPass) -> int:
    tensors = [*clean.recorded.entering, clean.final]
    if clean.reference is not None:
        tensors.append(clean.reference.probs)
    total = sum(t.numel() * t.element_size() for t in tensors)
    arrays = [*clean.recorded.head_outputs, *clean.recorded.attention]
    return total + sum(a.nbytes for a in arrays)


_KEPT: ByteLRU[CleanPass] = ByteLRU(CLEAN_PASS_BYTES, sizer=_clean_bytes)


def clean_pass(
    model: Runnable,
    anatomy: Anatomy,
    token_ids: list[int],
    window: np.ndarray,
    means: bool = False,
    attention: bool = False,
) -> CleanPass:
    """Run the unedited model on ``token_ids`` and record (module doc); kept in memory by the
    model's fingerprint and the tokens (:data:`CLEAN_PASS_BYTES`)."""
    key = (model.fingerprint, tuple(token_ids), tuple(int(t) for t in window))
    kept = _KEPT.get(key)
    if (
        kept is not None
        and (kept.recorded.head_outputs or not means)
        and (kept.recorded.attention or not attention)
    ):
        return kept
    clean = _unedited(model, anatomy, token_ids, window, means, attention)
    _KEPT.put(key, clean)
    return clean


def _unedited(
    model: Runnable,
    anatomy: Anatomy,
    token_ids: list[int],
    window: np.ndarray,
    means: bool,
    attention: bool,
) -> CleanPass:
    import torch

    ids = torch.tensor([token_ids], dtype=torch.long)
    with recording(anatomy, means, attention) as recorded:
        final = run_base(model, ids)[0]
    reference, losses = None, np.full(len(window), np.nan)
    if model.causal_lm is not None:
        with torch.inference_mode():
            reference = reference_terms(model.causal_lm, final, token_ids)
        losses = reference_losses(reference, window)
    return CleanPass(token_ids, recorded, final, reference, window, losses, float(losses.mean()))


@dataclass(frozen=True)
class Outcome:
    """One edited sequence: its measures, and its watched head's attention weights (or None)."""

    measured: Measured
    watched: np.ndarray | None


def start_layer(plan: SequencePlan) -> int:
    """The first layer a plan changes."""
    return min(change.layer for change in plan)


def edited_passes(
    model: Runnable,
    anatomy: Anatomy,
    clean: CleanPass,
    plans: Sequence[SequencePlan],
    watch: Sequence[tuple[int, int] | None],
    deadline: float | None = None,
    progress: Progress | None = None,
    done: int = 0,
    total: int | None = None,
) -> list[Outcome]:
    """The outcome of each plan (in order), grouped into batches by first edited layer."""
    import torch

    total = len(plans) if total is None else total
    order = sorted(range(len(plans)), key=lambda i: start_layer(plans[i]))
    outcomes: dict[int, Outcome] = {}
    batches: list[list[int]] = []
    for index in order:
        last = batches[-1] if batches else None
        same = last is not None and start_layer(plans[last[0]]) == start_layer(plans[index])
        if same and len(last) < BATCH:
            last.append(index)
        else:
            batches.append([index])
    length = len(clean.token_ids)
    for batch in batches:
        if deadline is not None and time.monotonic() > deadline:
            raise LimitError(
                f"stopped after the time allowed: {done} of {total} sequence passes were done"
            )
        start = start_layer(plans[batch[0]])
        ids = torch.tensor([clean.token_ids], dtype=torch.long).expand(len(batch), length)
        chosen = [plans[i] for i in batch]
        watched_heads = [watch[i] for i in batch]
        entering = clean.recorded.entering[start]
        as_tuple = clean.recorded.tuple_outputs
        with applied(anatomy, chosen, start, entering, watched_heads, as_tuple) as found:
            hidden = run_base(model, ids.contiguous())
        with torch.inference_mode():
            measured = measure_batch(
                model.causal_lm, hidden, clean.token_ids, clean.final, clean.reference, clean.window
            )
        for offset, index in enumerate(batch):
            outcomes[index] = Outcome(measured[offset], found.weights.get(offset))
        done += len(batch)
        if progress is not None:
            progress(done, total, f"edited passes from layer {start}")
    return [outcomes[i] for i in range(len(plans))]
